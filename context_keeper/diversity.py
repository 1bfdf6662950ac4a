"""Maximal marginal relevance over the ranked candidates (config ``mmr``).

Runs on the top candidates only (at most ``retrieval.MAX_HITS``), so its quadratic step is
bounded no matter how large the store is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

_FIELDS = ("summary", "name", "rule", "problem", "purpose", "reason", "why_chosen")
MAX_RERANKED = 50  # retrieval.MAX_HITS: the quadratic step never sees more


def _terms(entry: Any) -> frozenset[str]:
    from context_keeper.search.tokenize import terms

    return frozenset(terms(" ".join(str(entry.get(f) or "") for f in _FIELDS)))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def mmr(hits: Sequence[Any], lam: float = 0.7) -> list[Any]:
    """Reorder ``hits`` (best first, with ``.score`` and ``.entry``) to trade relevance for novelty."""
    if len(hits) < 3:
        return list(hits)
    lam = min(max(lam, 0.0), 1.0)
    top = max(h.score for h in hits) or 1.0
    bags = [_terms(h.entry) for h in hits]
    remaining = list(range(len(hits)))
    chosen: list[int] = []
    closest = [0.0] * len(hits)
    while remaining:
        best = max(remaining, key=lambda i: lam * hits[i].score / top - (1 - lam) * closest[i])
        remaining.remove(best)
        chosen.append(best)
        for i in remaining:
            closest[i] = max(closest[i], _jaccard(bags[i], bags[best]))
    return [hits[i] for i in chosen]


def apply(result: Any, settings: Any) -> Any:
    # Only a literal true: the string "false" is truthy (get_context warns about it).
    if not isinstance(settings, dict) or settings.get("enabled") is not True:
        return result
    from context_keeper.config import checked

    # Out of range or not a number: the default, as the answer's warning says (7 was clamped to
    # 1, i.e. no diversity at all, and "x" read as 0.7, both without a word).
    lam = float(checked({"mmr": settings}, "mmr.lambda")[0])
    # A long listing (a large budget asks for more hits) keeps its order past the first ones.
    return replace(result, hits=mmr(result.hits[:MAX_RERANKED], lam) + list(result.hits[MAX_RERANKED:]))
