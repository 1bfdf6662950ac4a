"""init, doctor and get defects found in round 20's hunt, each test failing before its fix."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from context_keeper.cli import main
from context_keeper.errors import InvalidInput
from context_keeper.service import Service


@pytest.fixture
def here(monkeypatch):
    """Run the CLI in-process from a directory, with no project named by the environment."""
    for name in ("CONTEXT_KEEPER_PROJECT", "CLAUDE_PROJECT_DIR"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch.chdir


def _git_init(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True, capture_output=True, timeout=60)
    return path


# ------------------------------------------------------------------ 1. init inside .context/


@pytest.mark.parametrize("inside", [".context", ".context/sessions"])
def test_init_inside_the_store_is_refused_naming_the_project_that_holds_it(tmp_path, inside):
    root = tmp_path / "proj"
    Service(env={}).init_project(str(root.mkdir() or root))
    (root / inside).mkdir(exist_ok=True)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    with pytest.raises(InvalidInput) as refused:
        Service(env={}).init_project(str(root / inside))
    message = str(refused.value)
    assert f"inside the store of the project {root.resolve()}" in message
    assert f"context-keeper init {root.resolve()}" in message
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_init_with_no_directory_inside_the_store_is_refused(tmp_path, here, capsys):
    root = tmp_path / "proj"
    root.mkdir()
    Service(env={}).init_project(str(root))
    here(root / ".context")
    assert main(["init"]) != 0
    assert not (root / ".context" / ".context").exists()
    assert "inside the store of the project" in capsys.readouterr().err


# ------------------------------------------------------------------ 2. init from a repository's subdirectory


def test_init_with_no_directory_in_a_repository_subdirectory_uses_the_repository_root(tmp_path, here, capsys):
    repo = _git_init(tmp_path / "r")
    (repo / "src" / "pkg").mkdir(parents=True)
    here(repo / "src" / "pkg")
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert (repo / ".context" / "config.json").is_file() and not (repo / "src" / "pkg" / ".context").exists()
    assert f"Created {repo.resolve() / '.context'}" in out
    assert "root of the git repository" in out and f"context-keeper init {(repo / 'src' / 'pkg').resolve()}" in out
    # Again from there: the store the server started there would use, not a second one.
    assert main(["init"]) == 0
    assert f"Already initialised: {repo.resolve() / '.context'}" in capsys.readouterr().out


def test_init_with_no_directory_at_a_repository_root_or_outside_one_says_nothing_more(tmp_path, here, capsys):
    repo = _git_init(tmp_path / "r")
    here(repo)
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert (repo / ".context").is_dir() and "Warning" not in out and "repository" not in out


def test_an_explicit_directory_inside_a_repository_is_honoured_with_a_warning(tmp_path, here, capsys):
    repo = _git_init(tmp_path / "r")
    (repo / "src" / "pkg").mkdir(parents=True)
    here(repo)
    assert main(["init", str(repo / "src" / "pkg")]) == 0
    out = capsys.readouterr().out
    assert (repo / "src" / "pkg" / ".context").is_dir() and not (repo / ".context").exists()
    assert "Warning:" in out and f"inside the git repository {repo.resolve()}" in out
