"""Hand-edited files with malformed entries: every tool keeps working, the bad item is skipped and
reported, and no write ever drops it or rewrites it.

The fixture (tests/fixtures/stores/malformed) has ``steps`` and ``tags`` as strings, an entry
without an id, a duplicate id, an id of the wrong kind, non-object items, invalid enums, a
4-space layout and ``\\u`` escapes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from context_keeper.model import DECISION, PIPELINE
from context_keeper.service import Service
from tests.conftest import REPO
from tests.mcp_helpers import call, connect

FIXTURE = REPO / "tests" / "fixtures" / "stores" / "malformed"
pytestmark = pytest.mark.anyio


@pytest.fixture
def malformed(tmp_path: Path) -> Path:
    target = tmp_path / "malformed"
    shutil.copytree(FIXTURE, target)
    return target


@pytest.fixture
def svc(malformed: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(malformed)}, cwd=str(malformed))


def _source_items(path: Path) -> list[str]:
    """The text of each top-level item as written in the fixture file."""
    from context_keeper.store import _split_array

    return _split_array(path.read_text(encoding="utf-8"))[1]


def test_usable_entries_are_read_and_every_bad_item_is_reported(svc):
    state = svc.store().state(PIPELINE)
    assert [e["id"] for e in state.entries] == ["pipe-001", "pipe-002", "pipe-007"]
    problems = "\n".join(state.problems)
    for expected in ("pipe-001: steps should be a list", "pipe-001: tags should be a list",
                     "entry without a valid id", "item is text", "item is the number", "item is null",
                     "dec-900: id prefix does not belong", "duplicate id pipe-002",
                     "pipe-007: status 'paused'", "pipe-007: origin 'robot'"):
        assert expected in problems, expected
    pipe1 = state.entries_by_id["pipe-001"]
    assert pipe1["steps"] == [{"order": 1, "action": "bump version, build, sign, upload to the MDM"}]
    assert pipe1["tags"] == ["release, scanner"]
    assert state.entries_by_id["pipe-007"]["name"] == "Café opening checklist"


async def test_every_tool_answers_on_a_malformed_store(svc, malformed):
    async with connect(svc, "legacy") as client:
        calls = [
            ("get_project_summary", {}),
            ("get_context", {"query": "how do we release the scanner app?"}),
            ("get_context", {"query": "carrier credentials", "types": ["pipelines"]}),
            ("get_context", {"id": "pipe-001"}),
            ("get_context", {"scope": "migrations/0001_initial.sql", "query": "migration rules"}),
            ("query_entries", {"types": ["pipelines", "decisions", "constraints"]}),
            ("query_entries", {"text": "credentials", "tags_any": ["security"]}),
            ("verify_quality", {}),
            ("prune_stale", {"days": 1}),
            ("reload_constraints", {}),
            ("get_compaction_report", {}),
            ("export_markdown", {"path": "DECISIONS.md"}),
            ("update_entry", {"id": "pipe-001", "updates": {"steps": ["Bump", "Build", "Sign", "Upload"]}}),
            ("deprecate_entry", {"id": "dec-002", "reason": "waves were replaced by zone batches"}),
            ("record_pipeline", {
                "name": "Stock take", "steps": ["Freeze a zone", "Count", "Reconcile"],
                "purpose": "Count every bin once a year without stopping the outbound waves."}),
            ("record_decision", {
                "summary": "Stock take by zone",
                "problem": "A full stop for stock take cost a day of shipping every year.",
                "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs."}),
            ("record_constraint", {
                "rule": "Count before reconciling",
                "reason": "Reconciling mid-count double-booked the moves in the zone being counted."}),
        ]
        for tool, args in calls:
            is_error, answer = await call(client, tool, args)
            assert not is_error, (tool, answer)


async def test_verify_quality_lists_each_malformed_item(svc):
    async with connect(svc, "legacy") as client:
        _, answer = await call(client, "verify_quality", {})
    malformed = [i["detail"] for i in answer["issues"] if i["issue"] == "malformed_entry"]
    assert any("pipelines.json item 4: item is text" in d for d in malformed)
    assert any("duplicate id pipe-002" in d for d in malformed)
    assert any("decisions.json item 3" in d for d in malformed)
    assert any("con-001: hardness 'very'" in d for d in malformed)


def test_a_write_keeps_every_bad_item_byte_for_byte(svc, malformed):
    path = malformed / ".context" / "pipelines.json"
    before = _source_items(path)
    bad = [before[i] for i in (0, 2, 3, 4, 5, 6, 7, 8)]  # everything but the well-formed pipe-002
    svc.record("pipeline", {"name": "Stock take", "steps": ["Count"],
                            "purpose": "Count every bin once a year without stopping the outbound waves."})
    after_text = path.read_text(encoding="utf-8")
    for chunk in bad:
        assert chunk in after_text, chunk
    after = json.loads(after_text)
    assert len(after) == len(before) + 1
    assert after[:len(before)] == json.loads("[" + ",".join(before) + "]")


def test_updating_a_good_entry_leaves_the_bad_ones_alone(svc, malformed):
    path = malformed / ".context" / "pipelines.json"
    before = _source_items(path)
    svc.update_entry("pipe-002", {"tags": ["carriers", "security", "rotation"]})
    after = _source_items(path)
    assert len(after) == len(before)
    for index in (0, 2, 3, 4, 5, 6, 7, 8):
        assert after[index] == before[index]
    assert json.loads(after[1])["tags"] == ["carriers", "security", "rotation"]


def test_new_ids_never_reuse_a_number_held_by_a_malformed_item(svc):
    answer = svc.record("pipeline", {"name": "Stock take", "steps": ["Count"],
                                     "purpose": "Count every bin once a year without stopping the outbound waves."})
    assert answer["id"] == "pipe-008"


def test_an_entry_with_a_string_steps_field_can_be_repaired_through_update(svc, malformed):
    svc.update_entry("pipe-001", {"steps": ["Bump the version", "Build", "Sign", "Upload to the MDM"],
                                  "tags": ["release", "scanner"]})
    state = svc.store().state(PIPELINE)
    assert not any(p.startswith("pipelines.json item 1:") for p in state.problems)
    raw = json.loads((malformed / ".context" / "pipelines.json").read_text(encoding="utf-8"))[0]
    assert raw["steps"][0] == {"order": 1, "action": "Bump the version"}


def test_reading_never_rewrites_the_file(svc, malformed):
    files = {p: p.read_bytes() for p in (malformed / ".context").glob("*.json")}
    svc.get_context(query="scanner release")
    svc.get_project_summary()
    svc.verify_quality()
    svc.query_entries(types=["decisions", "pipelines", "constraints"])
    assert {p: p.read_bytes() for p in files} == files


def test_a_decision_file_with_non_object_items_still_serves_its_good_entries(svc):
    state = svc.store().state(DECISION)
    assert [e["id"] for e in state.entries] == ["dec-001", "dec-002"]
    assert state.entries_by_id["dec-001"]["related_to"] == ["dec-002"]
    assert state.entries_by_id["dec-002"]["alternatives"] == [{"option": "zone picking", "reason_rejected": ""}]


def _set_supersedes(project: Path, entry_id: str, value) -> None:
    path = project / ".context" / "decisions.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    for item in items:
        if item["id"] == entry_id:
            item["supersedes"] = value
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")


@pytest.mark.parametrize("value,named", [
    (5, []),
    ([["dec-002"]], []),
    ({"id": "dec-002"}, []),
    ("dec-002", ["dec-002"]),
    (["dec-002", 7, None, ["x"]], ["dec-002"]),
], ids=["number", "nested-list", "object", "one-id-string", "list-with-junk"])
def test_a_hand_edited_supersedes_of_any_shape_never_breaks_a_query(project, value, named):
    # dec-019 replaced dec-002 (which names it in superseded_by); what dec-019 itself says is junk.
    _set_supersedes(project, "dec-019", value)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project))
    answer = svc.get_context(query="label worker print jobs queue", include_related=False)
    item = next(i for i in answer["results"] if i["entry"]["id"] == "dec-019")
    assert item["predecessor"].startswith("dec-002: ")
    assert [i["entry"]["id"] for i in svc.query_entries(supersedes="dec-002")["results"]] == ["dec-019"]
    # Only what a string or a list of strings names counts: dec-024 names no predecessor of its own.
    _set_supersedes(project, "dec-024", value)
    found = [i["entry"]["id"] for i in svc.query_entries(supersedes="dec-002")["results"]]
    assert found == (["dec-019", "dec-024"] if named else ["dec-019"])


def test_verify_quality_names_pipeline_steps_cut_down_to_a_character_or_two(tmp_path):
    # A generator that split each plain-sentence step into its first two characters left
    # pipelines nobody could follow; every tool read them as valid steps.
    ctx = tmp_path / "cut" / ".context"
    ctx.mkdir(parents=True)
    steps = [{"order": 1, "action": "Freeze ranked queue changes a day before the boundary."},
             {"order": 2, "action": "R", "output": "u"}, {"order": 3, "action": "24"}, {"order": 4, "action": "Sign"}]
    pipelines = [{"id": "pipe-001", "name": "Season rollover", "purpose": "Close a ranked season and open the next one.",
                  "steps": steps, "tags": ["seasons"]}]
    (ctx / "pipelines.json").write_text(json.dumps(pipelines), encoding="utf-8")
    answer = Service(env={"CONTEXT_KEEPER_PROJECT": str(ctx.parent)}).verify_quality()
    (thin,) = [issue for issue in answer["issues"] if issue["issue"] == "thin_steps"]
    assert thin["id"] == "pipe-001" and answer["counts"]["thin_steps"] == 1
    assert "2 of its 4 steps" in thin["detail"] and "2 ('R'), 3 ('24')" in thin["detail"]


def test_a_huge_bad_value_is_quoted_cut_in_the_problem():
    # A hand-edited 5,000-character status quoted whole buried the rest of doctor's report.
    from context_keeper.model import DECISION, SHOWN_CHARS, read_entry

    entry, problems = read_entry(DECISION, {"id": "dec-001", "summary": "A decision", "status": "Z" * 5000})
    assert entry is not None and entry["status"] == "active"
    (problem,) = [p for p in problems if "status" in p]
    assert "ZZZZ" in problem and len(problem) < SHOWN_CHARS + 200  # the value cut; how it is read and what to write follow
