"""Defects found in round 18's hunt, each test failing before its fix.

Most start where `git checkout` of a branch whose `.context/` files are not committed leaves a
store: the entry files and config.json gone, the git-ignored last good copies still there.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from context_keeper.errors import NoProject, StoreError
from context_keeper.hooks import cache
from context_keeper.project import resolve_project
from context_keeper.service import Service
from tests.conftest import REPO
from tests.hook_helpers import hook_env, injected, payload, run_hook
from tests.mcp_helpers import connect, err

PROBLEM = "A problem statement that is long enough to pass the rules."
WHY = "A reason for choosing this that is comfortably longer than sixty characters."


def _decide(service: Service, root: Path, summary: str) -> str:
    return service.record("decision", {"summary": summary, "problem": PROBLEM, "why_chosen": WHY},
                          project_dir=str(root))["id"]


def _checked_out_elsewhere(tmp_path: Path) -> Path:
    """A store with dec-001 (Kafka) and dec-002 (Terraform) after a checkout of a branch
    without them: only the last good copies (and the lock) are left in .context/."""
    root = tmp_path / "proj"
    root.mkdir()
    writer = Service(env={}, hook_cache_delay=None)
    writer.init_project(str(root))
    _decide(writer, root, "Use Kafka message queue")
    _decide(writer, root, "Use Terraform for infrastructure")
    for name in ("decisions.json", "pipelines.json", "constraints.json", "config.json", ".gitignore"):
        (root / ".context" / name).unlink()
    return root


def _ids(answer: dict) -> list[str]:
    return [item["entry"]["id"] for item in answer["results"]]


# ------------------------------------------------------------------ 1. the server's index and summary cache

def test_a_deleted_last_good_copy_is_not_searched_by_a_long_lived_server(tmp_path: Path):
    root = _checked_out_elsewhere(tmp_path)
    service = Service(env={}, hook_cache_delay=None)
    assert "dec-002" in _ids(service.get_context(project_dir=str(root), query="terraform infrastructure"))
    (root / ".context" / ".last-good" / "decisions.json").unlink()  # the warning's own advice
    assert _decide(service, root, "Use RabbitMQ message broker") == "dec-001"
    # Before: dec-002 "Use Terraform" still came back, for the life of the process.
    assert "dec-002" not in _ids(service.get_context(project_dir=str(root), query="terraform infrastructure"))
    assert _ids(service.get_context(project_dir=str(root), query="rabbitmq message broker")) == ["dec-001"]


def test_the_summary_drops_a_deleted_last_good_copy_without_waiting_for_a_write(tmp_path: Path):
    root = _checked_out_elsewhere(tmp_path)
    service = Service(env={}, hook_cache_delay=None)
    assert service.get_project_summary(project_dir=str(root))["counts"]["decisions"] == 2
    (root / ".context" / ".last-good" / "decisions.json").unlink()
    summary = service.get_project_summary(project_dir=str(root))
    assert summary["counts"]["decisions"] == 0 and not summary.get("warnings")


# ------------------------------------------------------------------ 2. the session-start hook's cache

def test_session_start_stops_showing_entries_of_a_deleted_last_good_copy(tmp_path: Path):
    root = _checked_out_elsewhere(tmp_path)
    env = hook_env(root)
    first = injected(run_hook("session_start", payload("session_start_startup", root, session_id="s1"), env=env))
    assert "Kafka" in first and "copy that back" in first
    (root / ".context" / ".last-good" / "decisions.json").unlink()
    second = injected(run_hook("session_start", payload("session_start_startup", root, session_id="s2"), env=env))
    assert second is None or ("Kafka" not in second and "copy that back" not in second)


def test_the_hook_cache_is_stale_once_a_last_good_copy_it_read_changes(tmp_path: Path):
    from context_keeper.store import BACKUP_DIR

    assert cache.LAST_GOOD_DIR == BACKUP_DIR
    root = _checked_out_elsewhere(tmp_path)
    data = cache.build(str(root))
    assert cache.is_fresh(data, str(root))
    (root / ".context" / BACKUP_DIR / "decisions.json").unlink()
    assert not cache.is_fresh(data, str(root))


# ------------------------------------------------------------------ 3. a working directory replaced under the server

def _replace(directory: Path) -> None:
    """What `rm -rf proj && git clone ... proj` does to a process working in proj."""
    shutil.copytree(directory, directory.with_name(directory.name + ".new"))
    shutil.rmtree(directory)
    directory.with_name(directory.name + ".new").rename(directory)


def test_a_replaced_working_directory_is_found_again_by_its_path(tmp_path: Path, monkeypatch):
    root = tmp_path / "proj"
    (root / ".context").mkdir(parents=True)
    monkeypatch.chdir(root)
    assert resolve_project(env={}) == root.resolve()
    _replace(root)
    assert resolve_project(env={"PWD": str(root)}) == root.resolve()


def test_a_vanished_working_directory_is_a_clear_error(tmp_path: Path, monkeypatch):
    root, elsewhere = tmp_path / "proj", tmp_path / "other"
    (root / ".context").mkdir(parents=True)
    (elsewhere / ".context").mkdir(parents=True)
    monkeypatch.chdir(root)
    resolve_project(env={})
    _replace(root)
    # $PWD is inherited from whoever started the process: another directory is not taken for it.
    with pytest.raises(NoProject, match="no longer exists.*project_dir.*CONTEXT_KEEPER_PROJECT.*restart"):
        resolve_project(env={"PWD": str(elsewhere)})


@pytest.mark.anyio
async def test_a_write_in_a_vanished_working_directory_is_not_called_maybe_saved(tmp_path: Path, monkeypatch):
    gone = tmp_path / "gone"
    (gone / ".context").mkdir(parents=True)
    monkeypatch.chdir(gone)
    shutil.rmtree(gone)
    async with connect(Service(env={}, hook_cache_delay=None), "legacy") as client:
        text = await err(client, "record_constraint", {
            "rule": "Never log secrets", "reason": "It leaked a token into the shared CI logs last spring."})
    assert "no longer exists" in text and "nothing was read or saved" in text
    assert "may or may not" not in text and "disk has room" not in text


@pytest.mark.anyio
async def test_the_stdio_server_keeps_serving_a_project_replaced_before_its_first_call(tmp_path: Path):
    root = tmp_path / "proj"
    root.mkdir()
    Service(env={}).init_project(str(root))
    env = {k: v for k, v in os.environ.items() if k not in ("CONTEXT_KEEPER_PROJECT", "CLAUDE_PROJECT_DIR")}
    env.update(PYTHONPATH=str(REPO), PWD=str(root))
    params = StdioServerParameters(command=sys.executable, args=["-m", "context_keeper"], env=env, cwd=str(root))
    with anyio.fail_after(60):
        async with Client(params) as client:
            _replace(root)
            answer = await client.call_tool("record_constraint", {
                "rule": "Never log secrets", "reason": "It leaked a token into the shared CI logs last spring."})
            assert not answer.is_error, answer.content[0].text
    saved = json.loads((root / ".context" / "constraints.json").read_text(encoding="utf-8"))
    assert [entry["rule"] for entry in saved] == ["Never log secrets"]


# ------------------------------------------------------------------ 4. a refused init

def test_a_refused_init_leaves_nothing_behind(tmp_path: Path):
    root = _checked_out_elsewhere(tmp_path)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    with pytest.raises(StoreError, match="decisions.json is missing, but its last good copy"):
        Service(env={}).init_project(str(root))
    # Before: config.json was written first, and `git checkout` of the branch tracking it then
    # refused ("untracked working tree files would be overwritten").
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


# ------------------------------------------------------------------ 5. the summary's note on a missing file

def test_the_summary_says_a_missing_store_file_is_missing_not_that_it_does_not_parse(tmp_path: Path):
    root = _checked_out_elsewhere(tmp_path)
    warnings = Service(env={}).get_project_summary(project_dir=str(root))["warnings"]
    assert any("decisions.json is missing, but its last good copy" in w for w in warnings)
    assert any(w.startswith("decisions.json is missing; the summary shows its last good copy") for w in warnings)
    assert not any("does not parse" in w for w in warnings)
