"""British spellings folded onto American ones before stemming, so both meet.

The Snowball stemmer strips "-ize" but not "-ise" ("normalize" → "normal", "normalise" →
"normalis"), and it leaves "colour"/"color", "centre"/"center", "licence"/"license" apart. A
store written in one spelling and a question asked in the other (an agent writes "authorize",
the team wrote "authorise") then share no term. The rules below are the regular British
patterns; the exception lists hold the ordinary words that only look like them ("promise",
"exercise", "otherwise", "hour", "detour"), so those are left as they are.
"""

from __future__ import annotations

# -ise / -isation / -iser / -ising: the verb suffix, not the words ending in "ise" by root.
_ISE_WORDS = frozenset(
    """
    advise anise arise bruise cerise chastise circumcise concise cruise demise despise devise
    disguise excise exercise expertise franchise incise merchandise mortise noise paradise
    poise premise remise reprise rise tortoise treatise turquoise valise
    """.split()
)
# ... and the endings that make such words of longer ones ("fundraise", "likewise",
# "imprecise", "surprise", "supervise").
_ISE_TAILS = ("wise", "raise", "praise", "precise", "promise", "prise", "vise", "compromise")
_ISE_ENDINGS = (
    ("isations", "izations"), ("isation", "ization"), ("isable", "izable"), ("isers", "izers"), ("iser", "izer"),
    ("ising", "izing"), ("ised", "ized"), ("ises", "izes"), ("ise", "ize"),
)
# Roots whose British form ends in "-our" (behaviour, colours, favoured, honourable...).
_OUR_ROOTS = frozenset(
    """
    arbour ardour armour behaviour candour clamour colour demeanour endeavour favour fervour
    flavour harbour honour humour labour neighbour odour parlour rancour rigour rumour saviour
    savour splendour tumour valour vapour vigour
    """.split()
)
_OUR_SUFFIXES = ("", "s", "ed", "ing", "al", "ally", "able", "ably", "er", "ers", "ite", "ites", "ful", "less", "hood", "ly")
# Units: "metre"/"litre" and every prefixed form.
_UNIT_ENDINGS = (("metres", "meters"), ("metre", "meter"), ("litres", "liters"), ("litre", "liter"))
# Whole-word spellings.
_WORDS = {
    "centre": "center", "centres": "centers", "centred": "centered", "centring": "centering",
    "metre": "meter", "metres": "meters", "litre": "liter", "litres": "liters",
    "fibre": "fiber", "fibres": "fibers", "calibre": "caliber", "theatre": "theater",
    "licence": "license", "licences": "licenses", "defence": "defense", "offence": "offense",
    "pretence": "pretense", "catalogue": "catalog", "catalogues": "catalogs", "catalogued": "cataloged",
    "dialogue": "dialog", "dialogues": "dialogs", "analogue": "analog", "programme": "program",
    "programmes": "programs", "grey": "gray", "greyed": "grayed", "artefact": "artifact",
    "artefacts": "artifacts", "judgement": "judgment", "judgements": "judgments",
    "acknowledgement": "acknowledgment", "ageing": "aging", "cheque": "check", "cheques": "checks",
    "aluminium": "aluminum", "sceptical": "skeptical", "mould": "mold", "plough": "plow",
    "draught": "draft", "kerb": "curb", "storey": "story", "storeys": "stories",
    "analyse": "analyze", "analysed": "analyzed", "analyses": "analyzes", "analysing": "analyzing",
    "analyser": "analyzer", "analysers": "analyzers", "paralyse": "paralyze", "paralysed": "paralyzed",
    "catalyse": "catalyze", "catalysed": "catalyzed",
    "practise": "practice", "practised": "practiced", "practises": "practices", "practising": "practicing",
}


def american(word: str) -> str:
    """The American spelling of a lowercase word, or the word itself."""
    mapped = _WORDS.get(word)
    if mapped is not None:
        return mapped
    if len(word) < 5 or not word.isalpha():
        return word
    for british, us in _UNIT_ENDINGS:  # millimetres, kilometre, millilitre
        if word.endswith(british):
            return word[: -len(british)] + us
    if "is" in word:
        for british, us in _ISE_ENDINGS:
            if word.endswith(british):
                root = word[: -len(british)]
                # "-ise" verbs have a root of 4+ letters ("normal-ise", "author-ise");
                # shorter ones are roots of their own ("rise", "wise", "vise").
                base = root + "ise"
                if len(root) >= 4 and base not in _ISE_WORDS and not base.endswith(_ISE_TAILS):
                    return root + us
                return word
    if "our" in word:
        for suffix in _OUR_SUFFIXES:
            if word.endswith(suffix) and word[: len(word) - len(suffix)] in _OUR_ROOTS:
                root = word[: len(word) - len(suffix)]
                return root[:-2] + "r" + suffix
    return word
