"""get_context's answer around the ranking: what its warnings, guidance, notes and annotations
take of the budget, and what they say."""

from __future__ import annotations

import json
from pathlib import Path


from context_keeper.service import Service


def _service(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)})


def _decisions(root: Path) -> Path:
    return root / ".context" / "decisions.json"


def _rewrite(path: Path, change) -> None:
    items = json.loads(path.read_text(encoding="utf-8"))
    for item in items:
        change(item)
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")


def _accepted(item: dict) -> None:
    if item.get("status", "active") == "active":
        item["status"] = "accepted"


def test_status_warnings_take_room_only_for_what_is_packed_and_come_once_per_word(project):
    _rewrite(_decisions(project), _accepted)
    accepted = {e["id"] for e in json.loads(_decisions(project).read_text(encoding="utf-8")) if e["status"] == "accepted"}
    svc = _service(project)
    answer = svc.get_context(query="how do we retry carrier API calls", token_budget=1000)
    assert answer["entries_returned"] > 3 and answer["tokens_used"] <= 1000
    for budget in (1000, 20000):
        answer = svc.get_context(query="how do we retry carrier API calls", token_budget=budget)
        packed = [r["entry"]["id"] for r in answer["results"] if r["entry"]["id"] in accepted]
        odd = [w for w in answer["warnings"] if "status 'accepted'" in w]
        named = ", ".join(packed[:3]) + (f" and {len(packed) - 3} more" if len(packed) > 3 else "")
        assert odd == [f".context/decisions.json: {named}: status 'accepted' is not one of active, superseded, "
                       "deprecated; it is read as active (still served, and a constraint still enforced): write "
                       "\"active\", or \"deprecated\" if the entry is retired"]
    assert len(packed) > 3
