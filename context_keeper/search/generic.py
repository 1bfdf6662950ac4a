"""Everyday English words that say little about *which* entry a question is about.

A store of fifty entries cannot tell how informative a word is: a word it never uses gets the
highest IDF, whether it is "GDPR" (a topic nobody recorded) or "easier" (the asker's phrasing).
This list is a small background vocabulary — frequent verbs, adjectives, adverbs and vague
nouns of ordinary English — whose query weight is discounted (``Tuning.generic_weight``), in
the relevance denominator as in the score. Not stop words: they still match, they just count
less. Nothing here is specific to software or to any store.
"""

from __future__ import annotations

from context_keeper.search.tokenize import stem

_WORDS = """
able accept across act actual add added adding after afternoon again ago agree ahead allow
allowed almost alone along already although always among another answer anyway apart appear
appears around ask asked asking away back bad basic basically become becomes before began
begin behind believe best better beyond bit both bring brings broke brought came care
careful carry case cases cause caused certain certainly chance change changed changes
changing choose clear clearly close come comes coming common completely consider correct
couldn course current currently day days deal decide decided despite different difficult
directly does done doubt during each early easier easily easy either else end ended enough
entire especially even evening eventually every everyone exact exactly example except expect
expected explain extra fact fair fairly far feel felt few figure fine finally find finding
first fit follow following forever forget form forward found four full fully gave general
generally give given gives giving go goes going gone good great guess half handle handled
handling happen happened happening happens hard hear help helps high hope huge idea
important instead issue issues keep keeps kept kind kinds last late later least leave left
less likely little long look looked looking looks lot lots low made main mainly make makes
making many matter maybe mean means meant might mind minute minutes month months morning
much near nearly necessary never new next nice night nobody none normal normally nothing
notice often okay old ones others otherwise part particular past people perhaps person place
point possible pretty probably problem problems proper properly pull put quick quickly quite
rather reach ready real reason recent recently right same saw second see seem seemed seems
seen sense set several short show showed shown shows side simple simply since small soon
sort sound start started starting starts still straight strange sudden suddenly suppose
supposed sure take taken takes taking talk team tell than thanks third though thought three
through time times today together took top total toward tried tries true try trying turn
turned turns twice two under understand unless until usual usually use used uses using
various via wait want week weeks weird well went whole wide will wish work worked working
works worry worse worst wrong year years yesterday
""".split()

GENERIC: frozenset[str] = frozenset(stem(w) for w in _WORDS)


def is_generic(term: str) -> bool:
    return term in GENERIC
