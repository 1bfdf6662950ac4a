"""One project resolution for every entry point: explicit → env → cwd → nearest parent."""

from __future__ import annotations

import pytest

from context_keeper.errors import NoProject, UnsafePath
from context_keeper.project import resolve_project


@pytest.fixture
def tree(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    (a / ".context").mkdir(parents=True)
    (b / ".context").mkdir(parents=True)
    (a / "src" / "deep").mkdir(parents=True)
    return a, b


def test_explicit_project_dir_wins(tree):
    a, b = tree
    assert resolve_project(str(b), env={"CONTEXT_KEEPER_PROJECT": str(a)}, cwd=str(a)) == b.resolve()


def test_env_beats_cwd(tree):
    a, b = tree
    assert resolve_project(env={"CONTEXT_KEEPER_PROJECT": str(b)}, cwd=str(a)) == b.resolve()


def test_nearest_parent_with_context_is_found(tree):
    a, _ = tree
    assert resolve_project(env={}, cwd=str(a / "src" / "deep")) == a.resolve()


def test_client_project_dir_is_a_starting_point(tree):
    a, b = tree
    assert resolve_project(env={"CLAUDE_PROJECT_DIR": str(b)}, cwd=str(a)) == b.resolve()


def test_nothing_found_is_a_clear_error_and_creates_nothing(tmp_path):
    lonely = tmp_path / "x" / "y"
    lonely.mkdir(parents=True)
    with pytest.raises(NoProject, match="context-keeper init"):
        resolve_project(env={}, cwd=str(lonely))
    assert not any(p.name == ".context" for p in tmp_path.rglob("*"))


@pytest.mark.parametrize("bad", ["relative/dir", "./here"])
def test_relative_explicit_paths_are_refused(bad):
    with pytest.raises(UnsafePath, match="absolute"):
        resolve_project(bad, env={})


def test_missing_explicit_directory_is_refused(tmp_path):
    with pytest.raises(NoProject, match="not an existing directory"):
        resolve_project(str(tmp_path / "missing"), env={})


def test_an_explicit_directory_inside_a_repository_resolves_to_its_project(tmp_path):
    from context_keeper.project import resolve_project

    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / ".context").mkdir()
    (root / "src" / "pkg").mkdir(parents=True)
    assert resolve_project(str(root / "src" / "pkg"), env={}) == root.resolve()
    assert resolve_project(None, env={"CONTEXT_KEEPER_PROJECT": str(root / "src")}) == root.resolve()
    # a nested repository without .context/ of its own shares the enclosing project's memory, as
    # a server started there does; once it is initialised it is a project of its own
    nested = root / "vendor" / "lib"
    (nested / "src").mkdir(parents=True)
    (nested / ".git").mkdir()
    assert resolve_project(str(nested / "src"), env={}) == root.resolve() == resolve_project(env={}, cwd=str(nested / "src"))
    (nested / ".context").mkdir()
    assert resolve_project(str(nested / "src"), env={}) == nested.resolve()
    # a repository without .context/ yet: its root, so a first write does not start a store in src/
    fresh = tmp_path / "fresh"
    (fresh / ".git").mkdir(parents=True)
    (fresh / "src").mkdir()
    assert resolve_project(str(fresh / "src"), env={}) == fresh.resolve()
    # outside any repository: the nearest .context/ at or above it, else the directory itself
    (tmp_path / "nogit" / ".context").mkdir(parents=True)
    inside = tmp_path / "nogit" / "src" / "pkg"
    inside.mkdir(parents=True)
    assert resolve_project(str(inside), env={}) == (tmp_path / "nogit").resolve()
    lone = tmp_path / "elsewhere" / "newproj"
    lone.mkdir(parents=True)
    assert resolve_project(str(lone), env={}) == lone.resolve()


@pytest.mark.parametrize("inside", [".context", ".context/sessions"])
def test_the_store_directory_itself_names_the_project_that_holds_it(tmp_path, inside):
    root = tmp_path / "proj"
    (root / inside).mkdir(parents=True)
    assert resolve_project(str(root / inside), env={}) == root.resolve()
