"""Defects found against COMPAT.md in round 19's hunt, each test failing before its fix."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from context_keeper.service import Service
from tests.conftest import MODES
from tests.mcp_helpers import connect, ok

from tests.test_write_side_hunt17b import P, W, root, svc  # noqa: F401  (the same store and service)

LONG_AGO = "2025-01-01T00:00:00+00:00"


def _write(root: Path, name: str, data) -> Path:
    path = root / ".context" / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# ------------------------------------------------------------------ prune_stale and a broken file

def test_prune_stale_reads_a_broken_file_from_its_last_good_copy_and_says_so(root):
    # Recorded through the tools (which keeps a last good copy), then seen a year later.
    recorded = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)
    first = recorded.record("decision", {"summary": "Use SQLite for storage", "problem": P, "why_chosen": W})["id"]
    rule = recorded.record("constraint", {"rule": "Never log secrets", "reason": P})["id"]
    later = datetime.now(timezone.utc) + timedelta(days=365)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, clock=lambda: later, hook_cache_delay=None)
    assert svc.prune_stale(30)["stale_count"] == 2
    with (root / ".context" / "decisions.json").open("a", encoding="utf-8") as f:
        f.write(",")  # a stray comma from a hand edit
    answer = svc.prune_stale(30)
    assert sorted(s["id"] for s in answer["stale"]) == sorted([first, rule])
    assert any("decisions.json" in w and "does not parse" in w for w in answer["warnings"])
    assert any(w.startswith("decisions.json: its entries here come from its last good copy") for w in answer["warnings"])


def test_prune_stale_names_a_broken_file_that_has_no_last_good_copy(root, svc):
    _write(root, "constraints.json", [{"id": "con-001", "rule": "Never log secrets", "reason": P,
                                        "created_at": LONG_AGO, "verified_at": LONG_AGO}])
    (root / ".context" / "decisions.json").write_text('[{"id": "dec-001", "summary": "Use SQLite"}],',
                                                     encoding="utf-8")
    answer = svc.prune_stale(30)
    assert [s["id"] for s in answer["stale"]] == ["con-001"]
    assert any("decisions.json does not parse" in w for w in answer["warnings"])


# ------------------------------------------------------------------ an unreadable config.json

BROKEN_CONFIG = '{"stale_threshold_days": 365, "similar_threshold": 0.9,}'  # a trailing comma


@pytest.fixture
def broken_config(root: Path) -> str:
    _write(root, "decisions.json", [{"id": "dec-001", "summary": "Use SQLite for storage", "problem": P,
                                     "why_chosen": W, "created_at": LONG_AGO}])
    (root / ".context" / "config.json").write_text(BROKEN_CONFIG, encoding="utf-8")
    return "config.json does not parse"


CONFIG_READERS = [
    ("prune_stale", lambda s: s.prune_stale()),
    ("record", lambda s: s.record("decision", {"summary": "Use SQLite again", "problem": P, "why_chosen": W})),
    ("update_entry", lambda s: s.update_entry("dec-001", {"tags": ["storage"]})),
    ("deprecate_entry", lambda s: s.deprecate_entry("dec-001", "no longer holds")),
    ("export_markdown", lambda s: s.export_markdown()),
    ("get_context", lambda s: s.get_context(query="sqlite storage")),
    ("query_entries", lambda s: s.query_entries()),
    ("get_project_summary", lambda s: s.get_project_summary()),
]


@pytest.mark.parametrize(("tool", "call"), CONFIG_READERS, ids=[t for t, _ in CONFIG_READERS])
def test_every_tool_that_reads_the_config_warns_once_that_it_does_not_parse(svc, broken_config, tool, call):
    warnings = call(svc).get("warnings") or []
    assert [w for w in warnings if broken_config in w and w.endswith("using defaults")] == [warnings[0]]


def test_prune_stale_with_an_unreadable_config_says_the_default_replaced_the_setting(svc, broken_config):
    answer = svc.prune_stale()
    assert answer["threshold_days"] == 30
    assert any(broken_config in w for w in answer["warnings"])


def test_a_tool_that_reads_no_setting_carries_no_config_warning(svc, broken_config):
    assert not any(broken_config in w for w in svc.reload_constraints().get("warnings", []))


# ------------------------------------------------------------------ export_markdown's default path

@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_export_markdown_without_a_path_writes_the_configured_export_file(root, svc, mode):
    _write(root, "config.json", {"markdown_export": {"enabled": True, "path": "docs/decisions.md"}})
    (root / "docs").mkdir()
    svc.record("decision", {"summary": "Use SQLite for storage", "problem": P, "why_chosen": W})
    assert (root / "docs" / "decisions.md").exists()
    async with connect(svc, mode) as client:
        answer = await ok(client, "export_markdown", {"project_dir": str(root)})
    assert answer["path"] == str((root / "docs" / "decisions.md").resolve())
    assert not (root / "DECISIONS.md").exists()


def test_export_markdown_without_a_path_or_a_configured_one_writes_decisions_md(root, svc):
    svc.record("decision", {"summary": "Use SQLite for storage", "problem": P, "why_chosen": W})
    assert Path(svc.export_markdown()["path"]) == (root / "DECISIONS.md").resolve()


def test_record_says_which_file_its_similar_entries_were_read_from_a_last_good_copy_of(root, svc):
    svc.record("constraint", {"rule": "Never store data in SQLite files", "reason": P})
    path = root / ".context" / "constraints.json"
    path.write_text(path.read_text(encoding="utf-8") + ",", encoding="utf-8")
    answer = svc.record("decision", {"summary": "Use SQLite for storage", "problem": P, "why_chosen": W})
    assert any("constraints.json does not parse" in w for w in answer["warnings"])
    assert any(w.startswith("constraints.json: its entries here come from its last good copy") for w in answer["warnings"])


# ------------------------------------------------------------------ legacy entries, once reviewed

LEGACY = {"id": "dec-001", "summary": "Use SQLite for storage", "rationale": "r" * 70, "created_at": LONG_AGO,
          "owner": "ops"}


def _legacy_flags(svc: Service) -> list[str]:
    return [i["id"] for i in svc.verify_quality()["issues"] if i["issue"] == "legacy_entry"]


def test_updating_a_legacy_entry_clears_its_legacy_flag_and_keeps_its_fields(root, svc):
    path = _write(root, "decisions.json", [LEGACY])
    flagged = next(i for i in svc.verify_quality()["issues"] if i["issue"] == "legacy_entry")
    assert "update it with update_entry, which marks it as reviewed" in flagged["detail"]
    answer = svc.update_entry("dec-001", {"problem": P, "tags": ["storage"]})
    assert _legacy_flags(svc) == []
    stored = json.loads(path.read_text(encoding="utf-8"))[0]
    assert stored["schema_version"] == answer["entry"]["schema_version"] == 2
    assert {k: stored[k] for k in LEGACY} == LEGACY  # rationale and the unknown key stay as they were
    assert "schema_version" not in answer["updated_fields"]


def test_reading_a_legacy_entry_never_rewrites_it(root, svc):
    path = _write(root, "decisions.json", [LEGACY])
    before = path.read_bytes()
    svc.get_context(id="dec-001")
    svc.get_context(query="sqlite storage")
    svc.query_entries()
    svc.get_project_summary()
    svc.verify_quality()
    svc.prune_stale()
    assert path.read_bytes() == before
    assert _legacy_flags(svc) == ["dec-001"]


# ------------------------------------------------------------------ ids in another case, on writes

def _two_decisions(root: Path) -> Path:
    return _write(root, "decisions.json", [
        {"id": "dec-1000", "summary": "Use SQLite for storage", "problem": P, "why_chosen": W, "created_at": LONG_AGO},
        {"id": "dec-013-a7f3", "summary": "Services talk gRPC", "problem": P, "why_chosen": W,
         "created_at": LONG_AGO}])


def _stored(path: Path) -> dict[str, dict]:
    return {e["id"]: e for e in json.loads(path.read_text(encoding="utf-8"))}


def test_update_and_deprecate_take_an_id_in_upper_case_as_the_reads_do(root, svc):
    path = _two_decisions(root)
    assert svc.get_context(id="DEC-1000")["entry"]["id"] == "dec-1000"
    assert svc.update_entry("DEC-1000", {"tags": ["storage"]})["id"] == "dec-1000"
    assert svc.deprecate_entry("DEC-013-A7F3", "we moved to REST")["id"] == "dec-013-a7f3"
    stored = _stored(path)
    assert stored["dec-1000"]["tags"] == ["storage"] and stored["dec-013-a7f3"]["status"] == "deprecated"
    assert set(stored) == {"dec-1000", "dec-013-a7f3"}


def test_links_given_in_another_case_are_written_as_the_store_spells_the_ids(root, svc):
    path = _two_decisions(root)
    svc.update_entry("dec-1000", {"related_to": ["DEC-013-A7F3"]})
    rule = svc.record("constraint", {"rule": "Never log secrets", "reason": P, "related_to": ["DEC-1000", "dec-1000"]})
    new = svc.record("decision", {"summary": "Use Postgres for storage", "problem": P, "why_chosen": W},
                     supersedes=["DEC-1000"])
    svc.deprecate_entry("DEC-013-A7F3", superseded_by=new["id"].upper())
    stored = _stored(path)
    assert stored["dec-1000"]["related_to"] == ["dec-013-a7f3"]
    assert rule["entry"]["related_to"] == ["dec-1000"] and "warnings" not in rule
    assert new["superseded"] == new["entry"]["supersedes"] == ["dec-1000"]
    assert stored["dec-1000"]["superseded_by"] == stored["dec-013-a7f3"]["superseded_by"] == new["id"]


def test_merge_into_takes_an_id_in_upper_case_and_names_the_stored_survivor(root, svc):
    path = _two_decisions(root)
    answer = svc.deprecate_entry("dec-013-a7f3", merge_into="DEC-1000")
    assert answer["merged_into"] == "dec-1000"
    assert _stored(path)["dec-013-a7f3"]["superseded_by"] == "dec-1000"


def test_an_unknown_id_in_upper_case_is_answered_with_the_stored_spelling_of_its_number(root, svc):
    from context_keeper.errors import NotFound

    _write(root, "decisions.json", [{"id": "dec-001", "summary": "Use SQLite for storage"}])
    with pytest.raises(NotFound, match=r"'DEC-1' in decisions.json \(did you mean dec-001\?\)"):
        svc.update_entry("DEC-1", {"tags": ["storage"]})


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_update_entry_over_mcp_takes_an_id_in_upper_case(root, svc, mode):
    path = _two_decisions(root)
    async with connect(svc, mode) as client:
        answer = await ok(client, "update_entry", {"id": "DEC-1000", "updates": {"tags": ["storage"]},
                                                   "project_dir": str(root)})
    assert answer["id"] == "dec-1000" and _stored(path)["dec-1000"]["tags"] == ["storage"]
