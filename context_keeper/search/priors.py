"""Priors: small multiplicative adjustments of the ordering score, never of relevance.

They are deliberately gentle (a few percent) so they only reorder entries of similar
relevance; a superseded entry is the exception (clearly demoted unless the query is about the
past).
"""

from __future__ import annotations

import math
import re
from datetime import datetime

ORIGIN_PRIOR = {"user": 1.0, "agent": 0.97, "import": 0.94}
DEFAULT_ORIGIN_PRIOR = 0.97
SUPERSEDED_PRIOR = 0.7           # ordinary question: current answers outrank replaced ones
HISTORY_SUPERSEDED_PRIOR = 1.15  # question about the past: the replaced entry is the answer
HISTORY_CURRENT_PRIOR = 0.95
SCOPE_MATCH_PRIOR = 1.10
RECENCY_FLOOR = 0.92             # an entry verified long ago keeps 92% of its score
RECENCY_HALF_LIFE_DAYS = 180.0


def max_prior(history: bool, scoped: bool) -> float:
    """Upper bound of the prior product for a query (lets ranking stop early)."""
    bound = max(ORIGIN_PRIOR.values())
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
    re.IGNORECASE,
)
# Cues that are about the past only in a past-tense sentence: "before the merge, how did…",
# "what was the original…", "did we ever…", "we no longer use X, what was it?" — not "can I call
# the tax service before committing?", "roll back to the previous build", "an earlier
# appointment", "patients who have only ever been to another branch", "sync stopped working",
# "the app no longer shows my notes" (a symptom today, which is what most questions describe).
_BEFORE = re.compile(
    r"\b(before|prior to|start(?:ed)? (?:out )?(?:with|on|by)|began|begin with|first (?:version|release|design)|"
    r"previous|original|ever|no longer|any ?more|stopped|stop (?:doing|using)|gave up|abandon(?:ed)?)\b",
    re.IGNORECASE,
)
_PAST_TENSE = re.compile(r"\b(did|was|were|had|used)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"[.?!;]+(?:\s+|$)")


def asks_about_past(query: str) -> bool:
    text = query or ""
    if _HISTORY.search(text):
        return True
    return any(_BEFORE.search(part) and _PAST_TENSE.search(part) for part in _SENTENCE.split(text))


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
