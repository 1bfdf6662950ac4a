"""Priors: small multiplicative adjustments of the ordering score, never of relevance.

They are deliberately gentle (a few percent) so they only reorder entries of similar
relevance. Two are strong on purpose: a superseded entry is clearly demoted unless the query
is about the past, and a how-to question doubles the pipelines' score (an ordered procedure is
what it asks for; a decision still comes first when it scores more than twice as high).
"""

from __future__ import annotations

import math
import re
import string
from datetime import datetime

ORIGIN_PRIOR = {"user": 1.0, "agent": 0.97, "import": 0.94}
DEFAULT_ORIGIN_PRIOR = 0.97
SUPERSEDED_PRIOR = 0.7           # ordinary question: current answers outrank replaced ones
HISTORY_SUPERSEDED_PRIOR = 1.15  # question about the past: the replaced entry is the answer
HISTORY_CURRENT_PRIOR = 0.95
SCOPE_MATCH_PRIOR = 1.10
RECENCY_FLOOR = 0.92             # an entry verified long ago keeps 92% of its score
RECENCY_HALF_LIFE_DAYS = 180.0


def max_prior(history: bool, scoped: bool, kind_boost: float = 1.0) -> float:
    """Upper bound of the prior product for a query (lets ranking stop early)."""
    bound = max(ORIGIN_PRIOR.values()) * max(1.0, kind_boost)
    if history:
        bound *= max(1.0, HISTORY_SUPERSEDED_PRIOR)
    if scoped:
        bound *= SCOPE_MATCH_PRIOR
    return bound

# Cues that a question is about what used to be true.
_HISTORY = re.compile(
    r"\b(used to|did \w+(?: \w+)? use to|previously|originally|initially|at first|formerly|in the past|"
    r"at some point|at one point|back then|back when|once upon|"
    r"(?:old|earlier) (?:approach|way|version|behaviou?r|design|setup|system|scheme)|"
    r"replaced|superseded|switch(?:ed)? (?:away )?from|moved away|moved off|what happened to|"
    r"why did we (?:stop|drop|change|switch|move|remove|abandon)|history of|"
    r"was it always|did we (?:use|have|do) before|"
    # "what was fleetd for?", "those quizzes, what were they for again?": the purpose of something
    # gone, "for" ending the question (not "what was the limit for streams?", nor "… doing?",
    # which also asks about a process that hung today)
    r"what (?:was|were) [^?.!;\n]{0,60}?\bfor"
    r"(?=,?\s*(?:again|anyway|exactly|originally|in the first place)?\s*(?:[^\w\s]|\n|$)))\b",
)
# Cues that are about the past only in a past-tense sentence: "before the merge, how did…",
# "what was the original…", "did we ever…", "we no longer use X, what was it?", "how did it work back
# in 2023?" — not "can I call the tax service before committing?", "roll back to the previous
# build", "an earlier appointment", "patients who have only ever been to another branch", "sync stopped working",
# "the app no longer shows my notes" (a symptom today, which is what most questions describe).
_BEFORE = re.compile(
    r"\b(before|prior to|start(?:ed)? (?:out )?(?:with|on|by)|began|begin with|first (?:version|release|design)|"
    r"previous|original|ever|no longer|any ?more|stopped|stop (?:doing|using)|gave up|abandon(?:ed)?|"
    r"back in (?:the|(?:19|20)\d\d)|in (?:early |late |mid-?)?(?:19|20)\d\d)\b",
)
_PAST_TENSE = re.compile(r"\b(did|was|were|had|used)(?:n'?t)?\b")
_SENTENCE = re.compile(r"[.?!;]+(?:\s+|$)")


# The cue patterns are lower case ASCII and match the question with its ASCII letters lowered
# and a typographic apostrophe made "'": twice as fast as IGNORECASE, which matters as every
# search asks them. (str.lower would also turn "İ" into "i" and a combining dot, making a word
# boundary out of nothing.)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase + "\u2019", string.ascii_lowercase + "'")


def _lowered(query: str) -> str:
    return (query or "").translate(_ASCII_LOWER)


# The words of a history cue that only place the question in time; the topic is the rest.
_TIME_CUES = re.compile(
    r"\b(?:previously|originally|initially|formerly|in the past|at first|back then|at one point|at some point|"
    r"once upon a time|in the first place)\b", re.IGNORECASE)


def without_time_cues(query: str) -> str:
    """``query`` without the words that only say when ("where did we originally keep sessions"
    asks where sessions were kept)."""
    return _TIME_CUES.sub(" ", query)


def asks_about_past(query: str) -> bool:
    text = _lowered(query)
    if _HISTORY.search(text):
        return True
    return any(_BEFORE.search(part) and _PAST_TENSE.search(part) for part in _SENTENCE.split(text))


# Cues that a question asks how to do something: the answer is a procedure (a pipeline). Not
# "how do we handle timeouts?", "how do we store orders?", "how should we choose …": those
# ask how the system is designed, which a decision answers.
_HOW_ELSE = (r"(?:know|tell|choose|decide|pick|handle|deal|store|cache|keep|track|compute|calculate|work out|"
             r"determine|prevent|avoid|ensure|guarantee|represent|model|measure|count|detect|define|price|charge|"
             r"name|structure|version|authenticate|identify|organi[sz]e|treat|think)")
_HOW_TO = re.compile(
    r"\b(how (?:do|should|can|could|must) (?:i|we|you|one) (?!" + _HOW_ELSE + r"\b)|how to\b(?! " + _HOW_ELSE + r"\b)|"
    r"what (?:do|should|must|would) (?:i|we|you) (?:\w+ )?(?:need to |have to |got to )?do\b|"
    r"what (?:needs|has|have) to (?:be )?(?:done|happen|change)|what needs (?:doing|setting up|to be set up)|"
    r"what(?:'s| is| are) the (?:process|procedure|steps|order of things|checklist|runbook|playbook)|"
    r"walk (?:me|us) through|where do (?:i|we) (?:start|begin)|steps? (?:to|for)\b)",
)


def asks_how_to(query: str) -> bool:
    return bool(_HOW_TO.search(_lowered(query)))


def kind_priors(query: str, procedure: float) -> dict[str, float]:
    """The ordering factor per entry kind that the question's form asks for: a how-to
    question wants a pipeline (1 = off)."""
    if procedure != 1.0 and asks_how_to(query):
        return {"pipeline": procedure}
    return {}


_DECAY_PER_SECOND = math.log(2) / (RECENCY_HALF_LIFE_DAYS * 86400.0)


def recency_prior(when: datetime | None, now: datetime) -> float:
    return recency_prior_ts(when.timestamp() if when is not None else None, now.timestamp())


def recency_prior_ts(when: float | None, now: float) -> float:
    """From 1.0 (verified now) down to ``RECENCY_FLOOR`` (long ago); undated entries midway."""
    if when is None:
        return (1.0 + RECENCY_FLOOR) / 2
    age = now - when
    if age <= 0.0:
        return 1.0
    return RECENCY_FLOOR + (1.0 - RECENCY_FLOOR) * math.exp(-_DECAY_PER_SECOND * age)
