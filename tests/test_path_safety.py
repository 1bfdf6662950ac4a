"""The tool never writes where it should not: project_dir is checked, ids are never paths, and
every output path stays inside the project root."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from context_keeper.errors import InvalidInput, NoProject, UnsafePath
from context_keeper.paths import inside_project
from context_keeper.project import resolve_project
from context_keeper.service import Service
from context_keeper.store import Store
from tests.conftest import snapshot_files
from tests.mcp_helpers import call, connect

pytestmark = pytest.mark.anyio

RECORD = {
    "summary": "Zone batches for stock take",
    "problem": "A full stop for stock take cost a day of shipping every year at every site.",
    "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs.",
}


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".lock"}


@pytest.mark.parametrize("project_dir,expected", [
    ("relative/project", "must be an absolute path"),
    (".", "must be an absolute path"),
    ("/definitely/not/here", "is not an existing directory"),
])
async def test_project_dir_must_be_an_existing_absolute_directory(tmp_path, project_dir, expected):
    svc = Service(env={}, cwd=str(tmp_path))
    async with connect(svc, "legacy") as client:
        for tool, args in (("record_decision", RECORD), ("get_context", {"query": "stock take"})):
            is_error, text = await call(client, tool, {**args, "project_dir": project_dir})
            assert is_error and expected in text
    assert list(tmp_path.iterdir()) == []


def test_a_file_is_not_a_project_dir(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x", encoding="utf-8")
    with pytest.raises(NoProject):
        resolve_project(str(a_file), env={})
    with pytest.raises(NoProject):
        resolve_project(None, env={"CONTEXT_KEEPER_PROJECT": str(a_file)}, cwd=str(tmp_path))


def test_walking_up_never_creates_a_store(tmp_path):
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    with pytest.raises(NoProject):
        Service(env={}, cwd=str(nested)).record("decision", RECORD)
    assert not any(p.name == ".context" for p in tmp_path.rglob("*"))


@pytest.mark.parametrize("bad_id", ["../../etc/passwd", "dec-001/../../x", "/etc/passwd", "dec-001\x00",
                                    "..", "dec-001/", "con-001\\..\\x", "dec-00١"])
async def test_ids_are_validated_and_never_used_as_paths(service, project, tmp_path, bad_id):
    before = _tree(tmp_path)
    async with connect(service, "legacy") as client:
        for tool, args in (("get_context", {"id": bad_id}),
                           ("update_entry", {"id": bad_id, "updates": {"tags": ["x"]}}),
                           ("deprecate_entry", {"id": bad_id, "reason": "no longer true"}),
                           ("deprecate_entry", {"id": "dec-001", "reason": "merged", "merge_into": bad_id}),
                           ("record_decision", {**RECORD, "supersedes": [bad_id]}),
                           ("record_decision", {**RECORD, "related_to": [bad_id]})):
            is_error, text = await call(client, tool, args)
            assert is_error, (tool, text)
    assert _tree(tmp_path) == before


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside"
    target.mkdir()
    return target


def _export_targets(project: Path, outside: Path) -> list[str]:
    (project / "docs").mkdir(exist_ok=True)
    (project / "link-dir").symlink_to(outside, target_is_directory=True)
    (project / "link-file.md").symlink_to(outside / "stolen.md")
    (project / "docs" / "up").symlink_to(project.parent, target_is_directory=True)
    return ["../escape.md", "docs/../../escape.md", str(outside / "x.md"), "/etc/context-keeper.md",
            "link-dir/x.md", "link-file.md", "docs/up/escape.md", ".", "docs", "nul\x00.md"]


async def test_export_paths_outside_the_project_are_refused(service, project, outside):
    targets = _export_targets(project, outside)
    before = _tree(project.parent)
    async with connect(service, "legacy") as client:
        for target in targets:
            is_error, text = await call(client, "export_markdown", {"path": target})
            assert is_error, (target, text)
    assert _tree(project.parent) == before
    assert list(outside.iterdir()) == []


async def test_export_never_replaces_the_store_code_or_the_repository(service, project):
    (project / ".git").mkdir(exist_ok=True)
    (project / "src").mkdir(exist_ok=True)
    (project / "src" / "app.py").write_text("print('mine')\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    async with connect(service, "legacy") as client:
        for target in (".context/decisions.json", ".context/config.json", ".context/notes.md", ".git/HEAD.md",
                       "src/app.py", "DECISIONS", "docs/decisions.json"):
            is_error, text = await call(client, "export_markdown", {"path": target})
            assert is_error and ("Markdown" in text or ".context/" in text or ".git/" in text), (target, text)
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before
    config = project / ".context" / "config.json"
    config.write_text(json.dumps({"markdown_export": {"enabled": True, "path": ".context/decisions.json"}}), encoding="utf-8")
    answer = service.record("decision", RECORD)
    assert answer["success"] and any("not updated" in w for w in answer["warnings"])
    assert json.loads((project / ".context" / "decisions.json").read_text(encoding="utf-8"))  # still the store


def test_export_does_not_replace_writing_it_did_not_produce(service, project):
    readme = project / "README.md"
    readme.write_text("# My notes\nHand-written.\n", encoding="utf-8")
    from context_keeper.errors import InvalidInput

    with pytest.raises(InvalidInput) as refused:
        service.export_markdown("README.md")
    assert "was not written by export_markdown" in str(refused.value)
    assert readme.read_text(encoding="utf-8") == "# My notes\nHand-written.\n"
    first = service.export_markdown("docs/decisions.md")  # a new file, then its own refresh
    assert service.export_markdown("docs/decisions.md")["path"] == first["path"]
    (project / "DECISIONS.md").write_text("# Decisions (older tool)\n", encoding="utf-8")
    assert service.export_markdown()["success"]  # the established target is always refreshed
    # ... but a hand-written DECISIONS.md elsewhere is someone's writing like any other file
    elsewhere = project / "docs" / "DECISIONS.md"
    elsewhere.write_text("# hand-written decisions\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="was not written by export_markdown"):
        service.export_markdown("docs/DECISIONS.md")
    assert elsewhere.read_text(encoding="utf-8") == "# hand-written decisions\n"


async def test_export_paths_inside_the_project_work_relative_or_absolute(service, project):
    async with connect(service, "legacy") as client:
        for target in ("DECISIONS.md", "docs/decisions.md", str(project / "notes" / "d.md")):
            is_error, answer = await call(client, "export_markdown", {"path": target})
            assert not is_error, answer
            assert Path(answer["path"]).is_file()
            assert Path(answer["path"]).resolve().is_relative_to(project.resolve())


def test_a_configured_export_path_outside_the_project_is_refused_but_the_write_is_kept(service, project, outside):
    config = project / ".context" / "config.json"
    config.write_text(json.dumps({"markdown_export": {"enabled": True, "path": str(outside / "D.md")}}),
                      encoding="utf-8")
    answer = service.record("decision", RECORD)
    assert answer["success"]
    assert any(f"the Markdown export {outside / 'D.md'} was not updated" in w and "outside the project" in w
               for w in answer["warnings"])
    assert list(outside.iterdir()) == []
    stored = json.loads((project / ".context" / "decisions.json").read_text(encoding="utf-8"))
    assert stored[-1]["id"] == answer["id"]


async def test_a_configured_export_failure_is_not_reported_as_a_failed_write(service, project):
    (project / ".context" / "config.json").write_text(
        json.dumps({"markdown_export": {"enabled": True, "path": "../x.md"}}), encoding="utf-8")
    async with connect(service, "legacy") as client:
        is_error, answer = await call(client, "record_decision", RECORD)
        assert not is_error, answer  # a client must not retry (and duplicate) a write that was saved
        assert answer["warnings"]


@pytest.mark.parametrize("name", ["../escape.json", "/tmp/escape.json", "a/../../escape.json", "", ".",
                                  "sessions/../../x.json", "nul\x00.json", "C:evil.json"])
def test_sidecar_names_cannot_leave_the_context_directory(project, name):
    store = Store(project)
    before = _tree(project.parent)
    with pytest.raises(InvalidInput):
        store.write_sidecar(name, {"x": 1})
    assert _tree(project.parent) == before


def test_sidecars_in_subdirectories_are_allowed(project):
    path = Store(project).write_sidecar("sessions/abc.json", {"ok": True})
    assert path == project / ".context" / "sessions" / "abc.json"
    assert Store(project).read_sidecar("sessions/abc.json") == {"ok": True}


@pytest.mark.parametrize("relative", ["../x.md", "a/../../x.md", "/etc/passwd"])
def test_inside_project_refuses_escapes(project, relative):
    with pytest.raises(UnsafePath):
        inside_project(project, relative)


def test_a_rejected_path_changes_nothing_in_the_store(service, project):
    before = snapshot_files(project)
    with pytest.raises(UnsafePath):
        service.export_markdown("../../escape.md")
    assert snapshot_files(project) == before


def test_new_store_files_are_not_private_to_the_writer(tmp_path):
    old = os.umask(0o022)
    try:
        Service(env={}).init_project(str(tmp_path))
        svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(tmp_path)})
        path = tmp_path / ".context" / "decisions.json"
        path.chmod(0o664)
        svc.record("decision", RECORD)
        assert path.stat().st_mode & 0o777 == 0o664  # kept, not the 0600 of a fresh temp file
    finally:
        os.umask(old)
