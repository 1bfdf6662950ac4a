"""The session-start project summary, packed into a token budget.

Order: absolute constraints, active decisions grouped by their most shared tags, pipelines,
advisory constraints. Every section degrades before anything is dropped (long reasons are cut
first), and what could not fit is counted in a closing note — a big store never produces an
empty summary. Cost is linear in the store: one pass to group, then lines until the budget is
spent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from context_keeper import render
from context_keeper.budget import estimate_tokens
from context_keeper.model import id_sort_key

TYPE_CHECKING = False  # typing costs ~5 ms to import on the hooks' cold path
if TYPE_CHECKING:
    from typing import Any

MAX_GROUPS = 8


def _active(entries: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in entries if e.get("status", "active") == "active"]


def _recent_first(entries: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    # ISO-8601 UTC strings sort chronologically as text; parsing every timestamp would make this
    # the most expensive step of the summary on a large store.
    def key(e: Mapping[str, Any]) -> str:
        when = e.get("updated_at") or e.get("created_at")
        return when if isinstance(when, str) else ""

    return sorted(entries, key=key, reverse=True)


def group_by_tags(decisions: list[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Groups keyed by the most shared tags; each decision appears once, under its most shared tag."""
    counts = Counter(t.lower() for e in decisions for t in set(e.get("tags", [])) if isinstance(t, str))
    top = [t for t, n in counts.most_common(MAX_GROUPS) if n >= 2]
    groups: dict[str, list] = {t: [] for t in top}
    other: list = []
    for e in _recent_first(decisions):
        tags = {t.lower() for t in e.get("tags", []) if isinstance(t, str)}
        home = next((t for t in top if t in tags), None)
        (groups[home] if home else other).append(e)
    ordered = [(t, groups[t]) for t in top if groups[t]]
    if other:
        ordered.append(("other", other))
    return ordered


class _Packer:
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self.lines: list[str] = []
        self.dropped: Counter[str] = Counter()

    def add(self, line: str, what: str | None = None) -> bool:
        cost = estimate_tokens(line) + 1
        if self.used + cost > self.budget:
            if what:
                self.dropped[what] += 1
            return False
        self.lines.append(line)
        self.used += cost
        return True

    def add_many(self, items: Sequence[Mapping[str, Any]], line_of, what: str) -> None:
        """Add lines until the budget is spent; count the rest without rendering them."""
        for i, item in enumerate(items):
            if self.budget - self.used < 12:
                self.dropped[what] += len(items) - i
                return
            self.add(line_of(item), what)


def build_summary(
    project_name: str,
    decisions: Sequence[Mapping[str, Any]],
    pipelines: Sequence[Mapping[str, Any]],
    constraints: Sequence[Mapping[str, Any]],
    token_budget: int = 2000,
) -> dict[str, Any]:
    """Summary text plus counts of what was included and dropped."""
    active_constraints = _active(constraints)
    absolute = sorted((c for c in active_constraints if c.get("hardness") != "advisory"), key=lambda e: id_sort_key(e["id"]))
    advisory = sorted((c for c in active_constraints if c.get("hardness") == "advisory"), key=lambda e: id_sort_key(e["id"]))
    active_decisions = _active(decisions)
    active_pipelines = _active(pipelines)

    note_reserve = 40
    packer = _Packer(max(token_budget - note_reserve, 50))
    packer.add(
        f"Project memory for {project_name}: {len(active_decisions)} active decisions, "
        f"{len(active_constraints)} constraints, {len(active_pipelines)} pipelines "
        "(recorded reference material; use get_context for details)."
    )
    # Reasons are the first thing to go when constraints alone would crowd out the rest.
    reason_chars = 160 if len(absolute) * 60 < token_budget * 0.4 * 4 else 0
    if absolute:
        packer.add("\nConstraints (absolute):")
        packer.add_many(absolute, lambda c: render.constraint_line(c, reason_chars=reason_chars), "constraints")

    if active_decisions:
        packer.add("\nDecisions:")
        why_chars = 120 if len(active_decisions) * 80 < token_budget * 0.5 * 4 else 0
        for tag, group in group_by_tags(active_decisions):
            if not packer.add(f"[{tag}]"):
                packer.dropped["decisions"] += len(group)
                continue
            packer.add_many(group, lambda d: render.decision_line(d, why_chars=why_chars), "decisions")

    if active_pipelines:
        packer.add("\nPipelines:")
        ordered = sorted(active_pipelines, key=lambda e: id_sort_key(e["id"]))
        packer.add_many(ordered, lambda p: render.pipeline_line(p, max_steps=5), "pipelines")

    if advisory:
        packer.add("\nConstraints (advisory):")
        packer.add_many(advisory, lambda c: render.constraint_line(c, reason_chars=0), "constraints")

    dropped = dict(packer.dropped)
    if dropped:
        parts = ", ".join(f"{n} {what}" for what, n in dropped.items())
        note = f"\n(Budget of {token_budget} tokens reached: {parts} not shown; get_context or query_entries retrieves them.)"
        packer.lines.append(note)
        packer.used += estimate_tokens(note)
    return {
        "summary": "\n".join(packer.lines),
        "tokens_used": packer.used,
        "token_budget": token_budget,
        "counts": {
            "decisions": len(active_decisions),
            "pipelines": len(active_pipelines),
            "constraints": len(active_constraints),
        },
        "dropped": dropped,
    }
