"""verify_quality and prune_stale: what in the store needs a human or agent's attention."""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta

from context_keeper import model
from context_keeper.lines import counted
from context_keeper.model import KINDS, Kind
from context_keeper.store import Store, readable_entries

TYPE_CHECKING = False  # typing costs ~5 ms to import on the hooks' cold path
if TYPE_CHECKING:
    from typing import Any


def _reasoning_chars(kind: Kind, entry: Mapping[str, Any]) -> int:
    return sum(len(str(entry.get(f.name) or "").strip()) for f in kind.fields if f.quality)


MIN_STEP_CHARS = 3  # "Build" and "Sign" are terse but real steps; "R" or "24" are cut-off sentences


def _thin_steps(entry: Mapping[str, Any]) -> list[tuple[Any, str]]:
    """(order, action) of the steps whose action is shorter than ``MIN_STEP_CHARS``: a
    generated or converted store can carry steps cut down to a letter or two, which no one can
    follow and no search can find."""
    return [(step.get("order"), step.get("action", "")) for step in entry.get("steps") or []
            if isinstance(step, Mapping) and len(str(step.get("action") or "").strip()) < MIN_STEP_CHARS]


def verify_quality(store: Store, min_reason_chars: int = 80, *, include_isolated: bool = True) -> dict[str, Any]:
    issues: list[dict[str, Any]] = []
    checked = 0
    by_tag: dict[str, list[str]] = defaultdict(list)
    live: dict[str, tuple[Kind, Mapping[str, Any]]] = {}
    for kind in KINDS.values():
        state = store.state(kind)
        if state.error is not None:
            issues.append({"issue": "corrupt_file", "file": state.path.name, "detail": str(state.error)})
            continue
        for problem in state.problems:
            issues.append({"issue": "malformed_entry", "file": state.path.name, "detail": problem})
        for entry in state.entries:
            if entry.get("status", "active") != "active":
                continue
            checked += 1
            live[entry["id"]] = (kind, entry)
            title = model.entry_title(kind, entry)
            chars = _reasoning_chars(kind, entry)
            if chars < min_reason_chars:
                issues.append({"issue": "thin_reasoning", "id": entry["id"], "summary": title,
                               "detail": f"{counted(chars, 'character')} of reasoning (< {min_reason_chars}); add why it holds and "
                                         "what it prevents"})
            thin = _thin_steps(entry) if kind is model.PIPELINE else []
            if thin:
                shown = ", ".join(f"{n} ({action!r})" for n, action in thin[:5]) + (" …" if len(thin) > 5 else "")
                issues.append({"issue": "thin_steps", "id": entry["id"], "summary": title,
                               "detail": f"{len(thin)} of its {counted(len(entry.get('steps') or []), 'step')} "
                                         f"{'is' if len(thin) == 1 else 'are'} a character or two: "
                                         f"step {shown}; write what is done and with what in each"})
            if not entry.get("tags"):
                issues.append({"issue": "missing_tags", "id": entry["id"], "summary": title,
                               "detail": "no tags; add 1-3 topic tags so it groups and filters"})
            raw = state.raw[state.positions[entry["id"]]]
            if isinstance(raw, Mapping) and "schema_version" not in raw:
                issues.append({"issue": "legacy_entry", "id": entry["id"], "summary": title,
                               "detail": "written by an older version (no schema_version); review it and update it with "
                                         "update_entry, which marks it as reviewed"})
            for tag in {t.lower() for t in entry.get("tags", [])}:
                by_tag[tag].append(entry["id"])
    order = {entry_id: model.id_sort_key(entry_id) for entry_id in live}
    for entry_id, (kind, entry) in live.items() if include_isolated else ():
        if entry.get("related_to"):
            continue
        peers: dict[str, int] = defaultdict(int)
        for tag in {t.lower() for t in entry.get("tags", [])}:
            if len(by_tag[tag]) > 25:
                continue  # a tag on everything says nothing about relatedness
            for other in by_tag[tag]:
                if other != entry_id:
                    peers[other] += 1
        if peers:
            suggested = heapq.nsmallest(3, peers, key=lambda i: (-peers[i], order[i]))
            issues.append({"issue": "isolated", "id": entry_id, "summary": model.entry_title(kind, entry),
                           "detail": "shares tags with other entries but has no related_to links",
                           "suggested_links": suggested})
    counts: dict[str, int] = defaultdict(int)
    for item in issues:
        counts[item["issue"]] += 1
    return {"entries_checked": checked, "issue_count": len(issues), "counts": dict(counts), "issues": issues}


def prune_stale(store: Store, days: int, now: datetime) -> dict[str, Any]:
    """Report entries not verified within ``days``; nothing is changed. A file that does not
    parse is read from its last good copy, as the other read tools read it (the caller warns)."""
    if days < 0:
        from context_keeper.errors import InvalidInput

        raise InvalidInput("days must be zero or more", field="days")
    stale = []
    for kind in KINDS.values():
        for entry in readable_entries(store, store.state(kind))[0]:
            if entry.get("status", "active") != "active":
                continue
            dated = next(((name, when) for name in ("verified_at", "updated_at", "created_at")
                          if (when := model.parse_time(entry.get(name))) is not None), None)
            item = {"id": entry["id"], "type": kind.name, "summary": model.entry_title(kind, entry),
                    "verified_at": entry.get("verified_at")}
            if dated is not None and dated[1] - now > FUTURE_SLACK:
                # A typo (9999-...) or a clock far ahead: by its date the entry would never go
                # stale, so it is reported now; it has no age to give.
                field, when = dated
                stale.append({**item, "days_since_verified": None, "reason": (
                    f"{field} {entry.get(field)} is in the future, so this entry would never be reported as stale; "
                    "check the clock of the machine that wrote it, then re-verify it with update_entry (which "
                    f"stamps it with the current time) or correct the date by hand in {store.state(kind).path.name}")})
            # Not verified within ``days``: 47 hours is past one day, though its whole days are 1.
            elif dated is None or now - dated[1] > timedelta(days=days):
                stale.append({**item, "days_since_verified": (now - dated[1]).days if dated else None})
    # Undated and future-dated first, then the longest unverified (0 days is a day, not "undated").
    stale.sort(key=lambda s: (-(10**6 if s["days_since_verified"] is None else s["days_since_verified"]),
                              model.id_sort_key(s["id"])))
    answer = {
        "threshold_days": days,
        "stale_count": len(stale),
        # The stalest first, and no more than an agent can go through: listed whole, a large old
        # store's answer ran to megabytes.
        "stale": stale[:MAX_STALE_LISTED],
        "hint": "Re-verify entries that still hold with update_entry (any update refreshes verified_at); "
                "retire the rest with deprecate_entry.",
    }
    if len(stale) > MAX_STALE_LISTED:
        answer["omitted"] = len(stale) - MAX_STALE_LISTED
        answer["hint"] += (f" Only the {MAX_STALE_LISTED} longest unverified are listed; once they are handled, "
                           "call prune_stale again for the rest.")
    return answer


MAX_STALE_LISTED = 100
# How far in the future a date may be before prune_stale reports it: a teammate's clock minutes or
# hours ahead (or a time zone written wrong) is not worth a report, as the entry ages normally soon.
FUTURE_SLACK = timedelta(days=1)
