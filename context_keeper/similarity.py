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


# "Use Postgres instead of MySQL": what follows is the option turned down, not a negation of
# the title. "Keep secrets out of the repository" says "do not" in other words.
_TURNED_DOWN = re.compile(r"\b(?:instead of|rather than)\b", re.IGNORECASE)
_KEEP_OUT = re.compile(r"\bkeep\s+(?:\S+\s+){0,3}?out\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9][a-z0-9+#.-]*[a-z0-9+#]|[a-z0-9]")


def _negated(text: str) -> bool:
    # Curly apostrophes ("don\u2019t") are as common as straight ones in agent-written text.
    text = (text or "").replace("\u2019", "'")
    return _NEGATION.search(text) is not None or _KEEP_OUT.search(text) is not None


def _chosen_and_turned_down(title: str) -> tuple[str, set[str]]:
    """A title split at "instead of" / "rather than": what it says, and the words of what it
    turned down (empty when it names none)."""
    match = _TURNED_DOWN.search(title or "")
    if match is None:
        return title or "", set()
    from context_keeper.search.tokenize import STOP_WORDS

    # The option is the words up to the next little word or mark: "instead of MySQL as the
    # primary database" turns down MySQL; the rest still belongs to what was chosen.
    turned_down, end = [], match.end()
    for word in re.finditer(r"[^\s,;:.()]+|[,;:.()]", title[match.end():]):
        text = word.group().lower()
        if text in STOP_WORDS or not _WORD.fullmatch(text):
            if turned_down:
                break
            continue
        turned_down.append(text)
        end = match.end() + word.end()
    return title[:match.start()] + title[end:], set(turned_down)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def classify_relation(kind: Kind, entry: Mapping[str, Any], other_kind: Kind, other: Mapping[str, Any]) -> str:
    """``likely_contradiction`` when exactly one of the two titles is negated, or when one
    chooses what the other turned down ("use MySQL" against "use Postgres instead of MySQL").
    Every negation form is the same polarity: "do not import X" restates "never import X"."""
    mine, mine_down = _chosen_and_turned_down(entry_title(kind, entry))
    theirs, theirs_down = _chosen_and_turned_down(entry_title(other_kind, other))
    if mine_down & (_words(theirs) - _words(mine)) or theirs_down & (_words(mine) - _words(theirs)):
        return "likely_contradiction"
    if _negated(mine) != _negated(theirs):
        return "likely_contradiction"
    return "likely_restatement"
