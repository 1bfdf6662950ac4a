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
    r"\b(?:not|no|never|don't|do not|doesn't|does not|cannot|can't|won't|shouldn't|mustn't|isn't|aren't|"
    r"avoid|stop|stopped|drop|dropped|remove|removed|"
    r"instead|replace|replaced|replaces|switch|switched|abandon|abandoned|revert|reverted|"
    r"deprecate|deprecated|no longer|rather than|disable|disabled|ban|banned|forbid|forbidden)\b",
    re.IGNORECASE,
)


def _negated(text: str) -> bool:
    # Curly apostrophes ("don\u2019t") are as common as straight ones in agent-written text.
    return _NEGATION.search((text or "").replace("\u2019", "'")) is not None


def classify_relation(kind: Kind, entry: Mapping[str, Any], other_kind: Kind, other: Mapping[str, Any]) -> str:
    """``likely_contradiction`` when exactly one of the two titles is negated. Every negation
    form is the same polarity: "do not import X" restates "never import X"."""
    if _negated(entry_title(kind, entry)) != _negated(entry_title(other_kind, other)):
        return "likely_contradiction"
    return "likely_restatement"
