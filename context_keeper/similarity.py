"""Is a near-duplicate at record time a restatement or a contradiction?

Similar wording with opposite polarity ("use X" vs "do not use X", "switch from A to B") reads
as a likely contradiction that should supersede or be reconciled; otherwise a likely
restatement that should be merged or linked instead of recorded twice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from context_keeper.model import Kind, entry_title

_NEGATION = re.compile(
    r"\b(?:not|no|never|don't|do not|doesn't|does not|avoid|stop|stopped|drop|dropped|remove|removed|"
    r"instead|replace|replaced|replaces|switch|switched|abandon|abandoned|revert|reverted|"
    r"deprecate|deprecated|no longer|rather than|disable|disabled|ban|banned|forbid|forbidden)\b",
    re.IGNORECASE,
)


def _polarity_words(text: str) -> set[str]:
    return {m.group(0).lower() for m in _NEGATION.finditer(text or "")}


def classify_relation(kind: Kind, entry: Mapping[str, Any], other_kind: Kind, other: Mapping[str, Any]) -> str:
    mine = _polarity_words(entry_title(kind, entry))
    theirs = _polarity_words(entry_title(other_kind, other))
    if bool(mine) != bool(theirs) or (mine and theirs and mine.isdisjoint(theirs)):
        return "likely_contradiction"
    return "likely_restatement"
