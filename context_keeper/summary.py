"""The session-start project summary, packed into a token budget.

Order: absolute constraints, active decisions grouped by their most shared tags (each group's
newest first, the groups filled in rounds so that none takes the whole share), pipelines,
advisory constraints. Every section degrades before anything is dropped (long reasons are cut
first), decisions leave a share of the budget to the sections after them, a heading appears only
with at least one line under it, and what could not fit is counted in a closing note — a big
store never produces an empty summary. Cost is linear in the store: one pass to group, then lines until the budget is
spent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from context_keeper import render
from context_keeper.budget import CHARS_PER_TOKEN, estimate_tokens
from context_keeper.model import id_sort_key, tag_key

TYPE_CHECKING = False  # typing costs ~5 ms to import on the hooks' cold path
if TYPE_CHECKING:
    from typing import Any

MAX_GROUPS = 8
MIN_ROOM = 12  # tokens: below this no further line is started
SHORT_NOTE_TOKENS = 24  # the closing note's room at small budgets, where it is said without its parts


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
    counts = Counter(t for e in decisions for t in {tag_key(t) for t in e.get("tags", []) if isinstance(t, str) and t.strip()})
    # Ties by name: counted in set order, equally shared tags would win a group by the per-process
    # string hash, and session start would inject different text for the same store.
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    top = [t for t, n in ranked[:MAX_GROUPS] if n >= 2]
    groups: dict[str, list] = {t: [] for t in top}
    other: list = []
    for e in _recent_first(decisions):
        tags = {tag_key(t) for t in e.get("tags", []) if isinstance(t, str)}
        home = next((t for t in top if t in tags), None)
        (groups[home] if home else other).append(e)
    ordered = [(t, groups[t]) for t in top if groups[t]]
    if other:
        ordered.append(("other", other))
    return ordered


def _cost(lines: Sequence[str]) -> int:
    return sum(estimate_tokens(line) + 1 for line in lines)


def _capped_cost(heading: str, items: Sequence[Any], line_of, cap: int) -> int:
    """What ``heading`` and ``items`` would take, or ``cap`` if more (rendering stops there)."""
    if not items:
        return 0
    total = _cost([heading])
    for item in items:
        total += _cost([line_of(item)])
        if total >= cap:
            return cap
    return total


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

    def fits(self, lines: Sequence[str]) -> bool:
        return self.used + _cost(lines) <= self.budget

    def section(self, heading: str, items: Sequence[Any], line_of, what: str) -> None:
        """``heading`` and as many items as fit; no heading when not even the first item fits
        (an empty heading tells the reader nothing)."""
        if not items:
            return
        if not self.fits([heading, line_of(items[0])]) or self.budget - self.used - _cost([heading]) < MIN_ROOM:
            self.dropped[what] += len(items)
            return
        self.add(heading)
        self.add_many(items, line_of, what)

    def add_many(self, items: Sequence[Any], line_of, what: str) -> None:
        """Add lines until the budget is spent; count the rest without rendering them."""
        for i, item in enumerate(items):
            if self.budget - self.used < MIN_ROOM:
                self.dropped[what] += len(items) - i
                return
            self.add(line_of(item), what)


def _fill_groups_in_rounds(packer: _Packer, groups: Sequence[tuple[str, Sequence[Any]]], line_of, what: str) -> None:
    """Each group under its heading, its lines chosen in rounds: every group's newest entry, then
    every group's next one, until the budget is spent. Filled one group after another, the most
    shared tag (listed first) took the whole budget with months-old entries and this week's
    decisions under other tags did not show. Lines that do not fit are skipped, as in a section;
    a group none of whose lines fits gets no heading. Each entry is looked at once."""
    headings = [f"[{render.clip(tag, 60)}]" for tag, _group in groups]
    chosen: list[list[str]] = [[] for _ in groups]
    pending = [iter(group) for _tag, group in groups]
    live = list(range(len(groups)))
    room = packer.budget - packer.used
    while live and room >= MIN_ROOM:
        still_live = []
        for g in live:
            item = next(pending[g], None)
            if item is None:
                continue
            still_live.append(g)
            line = line_of(item)
            heading_cost = 0 if chosen[g] else _cost([headings[g]])
            if _cost([line]) + heading_cost <= room and room - heading_cost >= MIN_ROOM:
                chosen[g].append(line)
                room -= _cost([line]) + heading_cost
            if room < MIN_ROOM:
                break
        live = still_live
    for heading, lines in zip(headings, chosen):
        if lines:
            packer.add(heading)
            for line in lines:
                packer.add(line)
    packer.dropped[what] += sum(len(group) for _tag, group in groups) - sum(len(lines) for lines in chosen)


def build_summary(
    project_name: str,
    decisions: Sequence[Mapping[str, Any]],
    pipelines: Sequence[Mapping[str, Any]],
    constraints: Sequence[Mapping[str, Any]],
    token_budget: int = 2000,
    envelope: int = 0,
) -> dict[str, Any]:
    """Summary text plus counts of what was included and dropped. ``envelope`` is kept out of
    the budget for what is sent around the text (an answer's keys, counts and escapes)."""
    active_constraints = _active(constraints)
    absolute = sorted((c for c in active_constraints if c.get("hardness") != "advisory"), key=lambda e: id_sort_key(e["id"]))
    advisory = sorted((c for c in active_constraints if c.get("hardness") == "advisory"), key=lambda e: id_sort_key(e["id"]))
    active_decisions = _active(decisions)
    active_pipelines = _active(pipelines)

    note_reserve = 40 if token_budget - envelope >= 200 else SHORT_NOTE_TOKENS
    packer = _Packer(max(token_budget - note_reserve - envelope, 0))
    counts = (f"{render.counted(len(active_decisions), 'active decision')}, "
              f"{render.counted(len(active_constraints), 'constraint')}, {render.counted(len(active_pipelines), 'pipeline')}")
    if not packer.add(f"Project memory for {render.clip(project_name, 80)}: {counts} "
                      "(recorded reference material; use get_context for details)."):
        # The counts are the least a summary says, however small its budget.
        short = f"Project memory for {render.clip(project_name, 40)}: {counts}."
        packer.lines.append(short)
        packer.used += estimate_tokens(short) + 1
    if absolute:
        # First, but not all of it: with hundreds of rules, decisions and pipelines still show.
        full = packer.budget
        if active_decisions or active_pipelines or advisory:
            packer.budget = min(full, packer.used + int(full * 0.5))
        # Reasons are the first thing to go: the longest with which every rule fits, else none.
        heading = "\nConstraints (absolute):"
        room = packer.budget - packer.used
        reason_chars = next((r for r in (160, 80) if _capped_cost(
            heading, absolute, lambda c, r=r: render.constraint_line(c, reason_chars=r), room) < room), 0)
        packer.section(heading, absolute, lambda c: render.constraint_line(c, reason_chars=reason_chars), "constraints")
        packer.budget = full
        room = packer.budget - packer.used - _cost([heading])
        if packer.dropped["constraints"] == len(absolute) and room >= MIN_ROOM:
            # Not even the first rule fitted in its half of the budget, and a short decision took
            # its place: the rules no longer came first. Cut short (and marked), it still says
            # what not to do.
            packer.add(heading)
            packer.add(render.clip(render.constraint_line(absolute[0], reason_chars=0), (room - 1) * CHARS_PER_TOKEN))
            packer.dropped["constraints"] -= 1

    # Decisions are the largest section: the sections after them keep a share of the budget
    # (what they need, at most a fifth for pipelines and a tenth for advisory constraints), so
    # a store with many decisions still shows its pipelines.
    pipelines = sorted(active_pipelines, key=lambda e: id_sort_key(e["id"]))
    pipeline_line = lambda p: render.pipeline_line(p, max_steps=5)  # noqa: E731
    advisory_line = lambda c: render.constraint_line(c, reason_chars=0)  # noqa: E731
    # Advisory rules only once every absolute one is shown: they never outrank them.
    advisory = advisory if not packer.dropped["constraints"] else []
    advisory_dropped = len(active_constraints) - len(absolute) - len(advisory)
    advisory_reserve = _capped_cost("\nConstraints (advisory):", advisory, advisory_line, int(packer.budget * 0.1))
    reserve = _capped_cost("\nPipelines:", pipelines, pipeline_line, int(packer.budget * 0.2)) + advisory_reserve

    if active_decisions:
        packer.budget -= reserve
        groups = group_by_tags(active_decisions)
        # The longest reasons with which every decision fits; none when even bare lines don't.
        room = packer.budget - packer.used
        ordered = [d for _tag, group in groups for d in group]
        why_chars = next((w for w in (120, 60) if _capped_cost("", ordered, lambda d, w=w: render.decision_line(d, why_chars=w),
                                                               room) + 2 * len(groups) < room), 0)
        opening = ["\nDecisions:", f"[{render.clip(groups[0][0], 60)}]"]
        # No decision where not one absolute rule could be shown: it would be read before the rules.
        if ((not absolute or packer.dropped["constraints"] < len(absolute))
                and packer.fits([*opening, render.decision_line(groups[0][1][0], why_chars=why_chars)])
                and packer.budget - packer.used - _cost(opening) >= MIN_ROOM):
            packer.add("\nDecisions:")
            _fill_groups_in_rounds(packer, groups, lambda d: render.decision_line(d, why_chars=why_chars), "decisions")
        else:
            packer.dropped["decisions"] += len(active_decisions)
        packer.budget += reserve

    packer.budget -= advisory_reserve  # pipelines may not eat the advisory rules' share
    packer.section("\nPipelines:", pipelines, pipeline_line, "pipelines")
    packer.budget += advisory_reserve
    packer.section("\nConstraints (advisory):", advisory, advisory_line, "constraints")
    packer.dropped["constraints"] += advisory_dropped

    dropped = {what: n for what, n in packer.dropped.items() if n > 0}  # a zero is not a cut
    if dropped:
        parts = ", ".join(render.counted(n, what[:-1]) for what, n in dropped.items())  # "constraints" → "1 constraint"
        note = f"\n(Budget of {token_budget} tokens reached: {parts} not shown; get_context or query_entries retrieves them.)"
        if packer.used + estimate_tokens(note) > token_budget - envelope:
            total = sum(dropped.values())
            note = f"\n(Budget reached: {total} {'entry' if total == 1 else 'entries'} not shown; get_context retrieves them.)"
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
