"""Id allocation: a new id never matches one that the store's links still name."""

from __future__ import annotations

import json
from pathlib import Path

from context_keeper.service import Service

DECISION = {
    "problem": "The public API needs one shape that every client team can build against for years.",
    "why_chosen": "It is what the client teams already know, and the tooling for it is mature and boring.",
}
CONSTRAINT = {"rule": "Never break a published endpoint",
              "reason": "Partners pin our API versions for a year and cannot redeploy quickly."}


def _drop(path: Path, entry_id: str) -> None:
    """Delete an entry by hand, as a person editing the JSON would."""
    items = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps([i for i in items if i["id"] != entry_id], indent=2) + "\n", encoding="utf-8")


def test_a_hand_deleted_successor_id_is_not_reused(empty_project: Path):
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)})
    svc.record("decision", {"summary": "Use REST for the public API", **DECISION})
    assert svc.record("decision", {"summary": "Use GraphQL for the public API", **DECISION},
                      supersedes=["dec-001"])["id"] == "dec-002"
    _drop(empty_project / ".context" / "decisions.json", "dec-002")  # dec-001.superseded_by still names it
    assert svc.record("decision", {"summary": "Store invoices as PDF/A in S3", **DECISION})["id"] == "dec-003"


def test_supersedes_lists_count_but_a_forward_related_to_link_does_not(empty_project: Path):
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)})
    svc.record("decision", {"summary": "Use REST for the public API", **DECISION})
    # A link to an entry about to be recorded: the next decision must get the id it names.
    svc.record("constraint", {**CONSTRAINT, "related_to": ["dec-002"]})
    assert svc.record("decision", {"summary": "Version the API in the path", **DECISION})["id"] == "dec-002"
    decisions = empty_project / ".context" / "decisions.json"
    items = json.loads(decisions.read_text(encoding="utf-8"))
    items[0]["supersedes"] = ["dec-020"]  # a hand-written list, left behind by a deleted entry
    decisions.write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
    assert svc.record("decision", {"summary": "Paginate with cursors", **DECISION})["id"] == "dec-021"
    assert svc.record("constraint", CONSTRAINT)["id"] == "con-002"  # other kinds' numbers are their own


def test_a_link_at_the_largest_id_does_not_push_ids_out_of_format(empty_project: Path):
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)})
    svc.record("constraint", {**CONSTRAINT, "related_to": ["dec-999999999"]})
    assert svc.record("decision", {"summary": "Use REST for the public API", **DECISION})["id"] == "dec-001"
