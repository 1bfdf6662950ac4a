"""Defects found in round 19's hunt of the MCP surface, each test failing before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper.cli import main as cli_main
from context_keeper.project import resolve_project
from context_keeper.service import Service
from tests.mcp_helpers import connect, ok

pytestmark = pytest.mark.anyio

DECISION = {
    "summary": "Zone batches for stock take",
    "problem": "A full stop for stock take cost a day of shipping every year at every site.",
    "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs.",
}


def _initialised(tmp_path: Path) -> Path:
    """A project outside any repository, with .context/ at its root and a src/pkg below it."""
    root = tmp_path / "shop"
    (root / "src" / "pkg").mkdir(parents=True)
    Service(env={}).init_project(str(root))
    return root


def _ids(path: Path) -> list[str]:
    return [entry["id"] for entry in json.loads(path.read_text(encoding="utf-8"))]


# ------------------------------------------------------------------ 1. project_dir naming a subdirectory

async def test_a_project_dir_below_the_store_writes_to_the_store_not_a_second_one(tmp_path: Path):
    root = _initialised(tmp_path)
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root), hook_cache_delay=None)
    async with connect(service, "legacy") as client:
        recorded = await ok(client, "record_decision", {**DECISION, "project_dir": str(root / "src" / "pkg")})
        answer = await ok(client, "get_context", {"query": "zone batches stock take"})
    # Before: src/pkg/.context/decisions.json held a second dec-001 that the project never saw.
    assert not (root / "src" / "pkg" / ".context").exists()
    assert _ids(root / ".context" / "decisions.json") == [recorded["id"]]
    assert [item["entry"]["id"] for item in answer["results"]] == [recorded["id"]]


def test_an_explicit_directory_resolves_as_the_working_directory_does(tmp_path: Path):
    root = _initialised(tmp_path)
    sub = root / "src" / "pkg"
    from_cwd = resolve_project(env={}, cwd=str(sub))
    assert resolve_project(str(sub), env={}) == from_cwd == root.resolve()
    assert resolve_project(None, env={"CONTEXT_KEEPER_PROJECT": str(sub)}, cwd=str(tmp_path)) == root.resolve()


def test_cli_project_flag_naming_a_subdirectory_reads_the_project(tmp_path: Path, capsys):
    root = _initialised(tmp_path)
    recorded = Service(env={}, hook_cache_delay=None).record("decision", DECISION, project_dir=str(root))
    assert cli_main(["get", "zone batches stock take", "--project", str(root / "src" / "pkg"), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [item["entry"]["id"] for item in answer["results"]] == [recorded["id"]]


def test_a_directory_without_any_store_above_is_still_a_new_project(tmp_path: Path):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    Service(env={}, hook_cache_delay=None).record("decision", DECISION, project_dir=str(fresh))
    assert _ids(fresh / ".context" / "decisions.json") == ["dec-001"]


def test_a_subdirectory_initialised_on_purpose_is_a_project_of_its_own(tmp_path: Path):
    root = _initialised(tmp_path)
    nested = root / "src" / "pkg"
    service = Service(env={}, hook_cache_delay=None)
    answer = service.init_project(str(nested))
    assert answer["created"] and "second, separate project memory" in answer["warnings"][0]
    service.record("decision", DECISION, project_dir=str(nested))
    assert _ids(nested / ".context" / "decisions.json") == ["dec-001"]
    assert _ids(root / ".context" / "decisions.json") == []
