"""Numbers in a query are evidence only where an entry states them beside another asked word.

A number says nothing about what it counts. "GET /api/orders 200 in 35ms", "exit status 1" or
"retry 3 of 5" pasted from a log share "200", "1" or "3" and "5" with any entry that states
that number of something else ("batches of 200 events", "takes 1-4 s"), and a number is rare in
a store, so its weight made such an entry a confident answer. Asked about, a number comes with
what it is of ("why are scanner batches 200 events?", "what is the 90-second drain for?"), and
the entry that answers states it in the same sentence as one of those words.

A year is not such a number: "2025" says when on its own ("the 2025 runbook", "what did we
store in mid-2025?"), and an entry true in 2025 is about that time whatever words surround it.

So a number (``is_value``) the entry has counts toward its relevance only when one of the
entry's sentences holds it together with a word of the query that is not a number, or a
related term standing in for one (``partners``). Otherwise the entry is scored as if it did
not have the number: the number stays in the perfect match's score, as any asked word the entry
lacks. A query with no other word ("9100") is all number, and its numbers count as before. The
order of entries is not changed, only relevance.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from context_keeper.search.fields import group_texts
from context_keeper.search.tokenize import terms

# A number, or a number with the unit it is glued to ("500ms", "2gb"), a decimal ("0.5", one term
# of tokenize): a value, not a topic. A version with two dots or more ("1.5.0", one term of tokenize) names a
# release on its own, as a year says when.
_VALUE = re.compile(r"\d+(?:\.\d+)?(?:ms|us|ns|s|sec|secs|m|min|mins|h|hr|hrs|d|kb|mb|gb|tb|kib|mib|gib|k|x|px)?")
_YEAR = re.compile(r"(?:19|20)\d\d")
# Where a sentence ends in an entry's text; each list item and field is a line of its own
# (fields.group_texts). Not at a colon: "Page size limit: at most 200 items per page." is one
# statement, its heading naming what the number is of. Nor at a semicolon, which joins the
# clauses of one sentence ("pages were unbounded; 200 keeps them under 1 MB"). answer_type
# splits at both, on purpose (see there).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")
# A number written with thousands separators ("1,500", "$2,000"): one number, not "1" and "500".
# The tokenizer splits it at the commas, so an entry stating "1,500 users" has the term "500":
# only here, where what matters is which number a sentence states, is it read whole.
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])")


def is_value(term: str) -> bool:
    """Whether an index term is a number that needs a word beside it, a year aside (``tokenize``
    keeps digits unstemmed)."""
    return term[:1].isdigit() and _VALUE.fullmatch(term) is not None and _YEAR.fullmatch(term) is None


def value_sentences(entry: Mapping[str, Any]) -> tuple[frozenset[str], ...]:
    """The terms of each sentence of ``entry``'s searchable text that states a number, a number
    with thousands separators read whole ("1,500" -> "1500")."""
    out = []
    for text in group_texts(entry):
        if not any(c.isdigit() for c in text):
            continue
        for sentence in _SENTENCE_END.split(text):
            if any(c.isdigit() for c in sentence):
                whole = _GROUPED.sub(_whole, sentence)
                found = frozenset(terms(whole))
                # "$2,000" is a value, though "2000" alone would be a year
                if whole != sentence or any(is_value(t) for t in found):
                    out.append(found)
    return tuple(out)


def value_forms(query: str) -> dict[str, frozenset[str]]:
    """For each term that a number of ``query`` written with thousands separators splits into
    ("$2,000" -> "2", "000"), how a sentence stating that number holds it (``value_sentences``:
    "2000"), and the term itself when the query also has it on its own."""
    grouped = _GROUPED.findall(query)
    if not grouped:
        return {}
    alone = set(terms(_GROUPED.sub(" ", query)))
    forms: dict[str, set[str]] = {}
    for number in grouped:
        whole = terms(number.replace(",", ""))
        for piece in terms(number):
            forms.setdefault(piece, {piece} if piece in alone else set()).update(whole)
    return {piece: frozenset(written) for piece, written in forms.items()}


def _whole(number: re.Match[str]) -> str:
    return number.group(0).replace(",", "")


def unbound(values: Iterable[str], partners: frozenset[str], sentences: tuple[frozenset[str], ...],
            forms: Mapping[str, frozenset[str]] | None = None) -> list[str]:
    """Those of ``values`` (numbers an entry has) that no sentence of it states beside one of
    ``partners`` (the query's other words and their stand-ins); ``forms`` (``value_forms``)
    says how a sentence holds a value the query wrote with thousands separators."""
    forms = forms or {}

    def stated(value: str, sentence: frozenset[str]) -> bool:
        return any(form in sentence for form in forms.get(value, (value,)))

    return [v for v in values if not any(stated(v, s) and not partners.isdisjoint(s) for s in sentences)]
