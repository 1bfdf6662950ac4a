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


def _clone(tmp_path: Path, source: Path, name: str) -> Path:
    import shutil

    target = tmp_path / name
    shutil.copytree(source, target)
    return target


def test_with_id_suffix_parallel_clones_record_different_ids_that_merge_cleanly(empty_project: Path, tmp_path: Path,
                                                                                 monkeypatch):
    import re

    from context_keeper import doctor, store

    assert re.fullmatch(r"[0-9a-f]{4}", store.random_suffix())
    drawn = iter(["a7f3", "0b1e", "c442", "9d05"])
    monkeypatch.setattr(store, "random_suffix", lambda: next(drawn))

    config = empty_project / ".context" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text(encoding="utf-8")), "id_suffix": True}), encoding="utf-8")
    Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}).record(
        "decision", {"summary": "Use REST for the public API", **DECISION})
    alice, bob = _clone(tmp_path, empty_project, "alice"), _clone(tmp_path, empty_project, "bob")
    a = Service(env={"CONTEXT_KEEPER_PROJECT": str(alice)}).record("decision", {"summary": "Cache sessions in Redis", **DECISION})
    b = Service(env={"CONTEXT_KEEPER_PROJECT": str(bob)}).record("decision", {"summary": "Log as structured JSON", **DECISION})
    assert (a["id"], b["id"]) == ("dec-002-0b1e", "dec-002-c442")
    # Both sides of the merge, as a correct resolution of the conflict leaves them.
    merged = json.loads((alice / ".context" / "decisions.json").read_text(encoding="utf-8"))
    merged.append(json.loads((bob / ".context" / "decisions.json").read_text(encoding="utf-8"))[-1])
    (alice / ".context" / "decisions.json").write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
    assert "duplicate_id" not in [f.code for f in doctor.diagnose(alice).findings]
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(alice)})
    assert svc.get_context(id=b["id"])["entry"]["summary"] == "Log as structured JSON"
    assert svc.record("decision", {"summary": "Paginate with cursors", **DECISION})["id"] == "dec-003-9d05"


def test_without_id_suffix_ids_stay_plain(empty_project: Path):
    config = empty_project / ".context" / "config.json"
    config.write_text(json.dumps({"id_suffix": False}), encoding="utf-8")
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)})
    assert svc.record("decision", {"summary": "Use REST for the public API", **DECISION})["id"] == "dec-001"
