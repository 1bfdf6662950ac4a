"""What kind of value a question asks for, and whether an entry states one.

"How long do we keep delivery photos?" asks for a duration. When the entry that matches such a
question best has no duration in any sentence sharing a word with the question, the store most
likely records the thing asked about but not the value asked for: the typical unanswered
question next to a recorded topic, which matches every content word but one and so looks
answered to a word-matching score. The engine then lowers the relevance of the whole answer
(``Tuning.answer_type_factor``); the order is unchanged. When the only sentences with such a value
share just one word with a question of several, the value may well be about something else, and
relevance is lowered less (``Tuning.answer_type_partial_factor``). When the question names what
its value is of right after asking for it ("how many mid-roll slots …"), the sentence stating the
value has to share one of those words (``focus_terms``): a number of something else does not
answer it.

A how-to question is checked the same way for the operation it asks about: "How do we rotate
the signing key?" answered by an entry about the signing key that never says "rotate" is most
likely the key recorded and its rotation not (``asked_action``; ``Tuning.answer_type_action``).

Only four kinds of value are recognised, each by its question words and by how a value of that
kind is written (a number with a unit of time, an amount of money or a share, any number, a
version number). A question for a name ("which geocoder do we use?") has no written form to
check, so it is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from context_keeper.search.fields import group_texts
from context_keeper.search.generic import is_generic
from context_keeper.search.tokenize import terms

_NUMBER = r"(?:\d|\b(?:an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve|dozen|half)\b)"
_TIME_UNIT = (r"(?:ms|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?"
              r"|quarters?|nights?)\b")
# "what's the [up to three words of a noun phrase] …": the value's noun comes next. Not a clause
# ("what happens when the rate limiter trips?").
_WHAT_THE = (r"\bwhat(?:'s| is| are)? (?:the |our )?"
             r"(?:(?!(?:happens?|happened|when|if|does|do|did|is|are|was|were|the|an?)\b)[\w-]+ ){0,3}")
# A setting whose value is a duration: asked for after "what …", or as a bare noun phrase ("pdf
# export job timeout?"); named in a symptom ("the importer hits a timeout") it asks for none.
_LASTING = r"(?:timeouts?|time-outs?|lifetime|grace period)"


class _Then:
    """A cue of two patterns, the second after the first on the same line: "what … charge". One
    regex with ``.*`` between them scanned the rest of the line from every "what", quadratic in a
    question of many of them (benchmarks/bench_answer_type.py times it); here each line is
    scanned once, from its first "what"."""

    def __init__(self, first: re.Pattern[str], then: re.Pattern[str]) -> None:
        self.first, self.then = first, then

    def search(self, text: str) -> bool:
        pos = 0
        while (found := self.first.search(text, pos)) is not None:
            end = text.find("\n", found.end())
            end = len(text) if end < 0 else end
            if self.then.search(text, found.end(), end) is not None:
                return True
            pos = end + 1
        return False


class _AnyOf:
    """A cue that is any of several."""

    def __init__(self, *cues: re.Pattern[str] | _Then) -> None:
        self.cues = cues

    def search(self, text: str) -> bool:
        return any(cue.search(text) for cue in self.cues)


# (kind, what the question says, how the value is written). Questions are matched lowered; the
# first kind whose cue matches is the one asked for.
_KINDS: tuple[tuple[str, re.Pattern[str] | _Then | _AnyOf, re.Pattern[str]], ...] = (
    (
        "duration",
        re.compile(r"\bhow (?:long|soon|quickly|often|frequently)\b"
                   r"|\b(?:retention|retain|ttl|expiry|turnaround|interval)\b"
                   r"|" + _WHAT_THE + _LASTING + r"\b"
                   r"|^\s*(?:[\w-]+ ){0,4}" + _LASTING + r"(?: length)?\s*\?\s*$"
                   r"|\bhow many (?:seconds|minutes|hours|days|weeks|months|years)\b"),
        re.compile(_NUMBER + r"[\s-]*" + _TIME_UNIT
                   + r"|\b(?:hourly|daily|nightly|weekly|monthly|yearly|annually)\b"
                   + r"|\bevery (?:minute|hour|day|night|week|month|year)\b", re.IGNORECASE),
    ),
    (
        "amount of money",
        # A verb of paying asks for an amount after "how much", or as what we pay or spend: not
        # after any "what" ("what stops us from paying the courier twice?" is about the fix).
        _AnyOf(
            _Then(re.compile(r"\b(?:what|how much)\b"), re.compile(r"\b(?:charges?|charged|costs?|price|fees?|pay)\b")),
            _Then(re.compile(r"\bhow much\b"), re.compile(r"\b(?:pays|paying|paid|spend|spending|spent)\b")),
            re.compile(r"\bwhat (?:do|does|did|are|were|will|would|should) (?:we|you|they|i|it) (?:\w+ )?"
                       r"(?:pay|paying|spend|spending)\b"),
        ),
        re.compile(r"[$€£¥]\s?\d|\d\s?(?:%|percent\b|eur\b|usd\b|gbp\b|cents?\b|dollars?\b|euros?\b)"
                   r"|\b(?:eur|usd|gbp)\s?\d|\bfree\b", re.IGNORECASE),
    ),
    (
        "number",
        re.compile(r"\bhow many\b|\b(?:max|maximum|minimum|min|limit|cap|threshold|quota|percentage|size)\b"
                   # "what's the false positive rate of …", "what uptime do we promise"; not the first
                   # half of a name ("what rate limiter do we use?"; "rate limit" is caught above)
                   r"|" + _WHAT_THE + r"(?:rate|target|budget|allowance|uptime)\b(?![ -]limit)"
                   r"|\bhow (?:big|large)\b|" + _WHAT_THE + r"(?:biggest|largest)\b"),
        re.compile(r"(?<![A-Za-z])\d"),  # not the digit of a name: S3, H100, OAuth2
    ),
    (
        "version",
        re.compile(r"\b(?:which|what) (?:\w+ )?version\b|\bmajor version\b"),
        # A dotted number starts where its digits start: tried at every digit of a long run, the
        # match backtracked over the rest of it (a 20,000-digit run cost 12 s).
        re.compile(r"(?<!\d)\d+(?:\.\d+)+|\bv\d|\b\d{2,}\b"),
    ),
)

# Where a sentence ends for this check: at a semicolon and a colon too, unlike numbers.py, where
# they join the clauses of one statement. Read that way here, a value in one clause counted as
# stated beside the words of the other ("refunds go to cold storage; the archive holds them for
# 7 years"), and on the eval's dev split fewer unanswered questions were flagged, recalibrated to
# the same share of answered ones flagged or not (tried in round 20 and not kept; evals/README.md).
_SENTENCE_END = re.compile(r"(?<=[.;:!?])\s+|\n")

# Where a question names what its value is of: the words right after it asks ("how many mid-roll
# slots …", "at what wind speed …", "what's the maximum stacking height …"). Not after a noun
# that names a value ("the cache size I configured", "ttl is required"): what follows it is
# rarely what the value is of, and on the eval's dev split those cues flagged more answerable
# questions.
_FOCUS_CUE = re.compile(
    r"\bhow (?:many|much|long|often|soon|quickly|big|large|far)\b|\bat what\b|\bwhich\b"
    r"|\bwhat(?:'s| is| are)?(?: the| our)?\b")


def asked_kind(query: str) -> str | None:
    """The kind of value ``query`` asks for ("duration", "amount of money", "number",
    "version"), or None."""
    lowered = query.lower().replace("\u2019", "'")  # "what’s", as priors.py reads it
    for kind, cue, _ in _KINDS:
        if cue.search(lowered):
            return kind
    return None


def focus_terms(query: str, topical: Iterable[str], reach: int) -> set[str]:
    """The ``topical`` terms among the ``reach`` words after ``query`` first asks for a value
    (``_FOCUS_CUE``), leaving out words that name the value itself ("maximum", "number"): what
    the value asked for is of.
    "How many mid-roll slots can an episode have?" asks for a count of slots; an entry stating
    only a number of episodes shares a word with the question but does not answer it. Empty when
    there is no cue or only everyday words follow it ("how long do we keep …"): the question's
    topical words are then all there is to go on."""
    if reach <= 0:
        return set()
    lowered = query.lower().replace("\u2019", "'")
    found = _FOCUS_CUE.search(lowered)
    if found is None:
        return set()
    # The first words only: further on they say where or when ("... on the RTG blocks"). On the
    # eval's dev split, three words, or the first two content words past the value's own, each
    # flagged fewer unanswered questions at the same share of answerable ones.
    words = [w for w in lowered[found.end():].split()[:reach] if not _VALUE_WORD.fullmatch(w.strip(".,;:!?()\"'"))]
    return set(terms(" ".join(words))).intersection(topical)


_VALUE_WORD = re.compile(r"max|maximum|minimum|min|limit|cap|threshold|quota|size|rate|amount|number|count|value"
                         r"|percentage|percent|total|most|least|longest|shortest|largest|biggest|smallest|default")


# "How do we rotate …", "how can I purge …": the action a how-to question asks about.
_HOW_TO = re.compile(r"\bhow (?:do|can|should|would|could|will) (?:i|we|you|they) ([a-z][\w-]*)")
# Verbs that say "solve it" rather than name an operation ("how do we fix it?", "how do I dig into
# it?"): an entry about the cure need not use them.
_SOLVING = frozenset(terms("fix stop solve deal handle sort prevent avoid dig debug troubleshoot investigate "
                           "make go find check see work"))


def asked_action(query: str) -> set[str]:
    """The terms of the operation a how-to question asks about ("how do I rotate the API key"
    -> rotat), or an empty set: not a how-to question, or its verb is an everyday or a solving
    one. ``topical`` words only, as the engine weighs them (``is_generic`` decides)."""
    found = _HOW_TO.search(query.lower().replace("\u2019", "'"))
    if found is None:
        return set()
    return {t for t in terms(found.group(1)) if t not in _SOLVING and not is_generic(t)}


def mentions(entry: Mapping[str, Any], wanted: Iterable[str]) -> bool:
    """Whether ``entry``'s searchable text has any of ``wanted`` (analysed terms)."""
    wanted = set(wanted)
    return any(not wanted.isdisjoint(terms(text)) for text in group_texts(entry))


def states_value(kind: str, query_terms: Iterable[str], entry: Mapping[str, Any]) -> bool:
    """Whether some sentence of ``entry``'s searchable text holds a value of ``kind`` and one of
    ``query_terms`` (analysed terms, as ``tokenize.terms`` gives them)."""
    return value_overlap(kind, query_terms, entry, enough=1) > 0


def value_overlap(kind: str, query_terms: Iterable[str], entry: Mapping[str, Any], enough: int = 2) -> int:
    """The most of ``query_terms`` that one sentence of ``entry`` holding a value of ``kind``
    shares (0: no such sentence shares any), counted up to ``enough``."""
    written = next(pattern for name, _, pattern in _KINDS if name == kind)
    wanted = set(query_terms)
    best = 0
    for text in group_texts(entry):
        for sentence in _SENTENCE_END.split(text):
            if written.search(sentence):
                best = max(best, len(wanted.intersection(terms(sentence))))
                if best >= enough:
                    return best
    return best
