"""The hooks' fast path: what it may import, and that its shortcuts agree with the core."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_keeper import project as project_mod
from context_keeper.errors import ContextKeeperError
from context_keeper.hooks import cache, leanjson
from context_keeper.hooks.scope_guard import relative_path, relative_paths
from context_keeper.scope import covers_literally, normalize_path, scope_covers
from context_keeper.service import Service
from tests.hook_helpers import LAUNCHERS, hook_env, injected, payload, run_hook

CASES = [
    ("session_start", "session_start_startup"), ("scope_guard", "pre_tool_use_edit"),
    ("subagent_start", "subagent_start"), ("commit_capture_reminder", "post_tool_use_bash_commit"),
    ("post_compact", "stop"), ("pre_compact", "pre_compact"), ("user_prompt_submit", "user_prompt_submit"),
]


def _imported(project: Path, event_file: str, name: str, *, site: bool) -> set[str]:
    import json

    args = [sys.executable] + ([] if site else ["-S"]) + ["-X", "importtime", str(LAUNCHERS / f"{event_file}.py")]
    proc = subprocess.run(args, input=json.dumps(payload(name, project)).encode(), capture_output=True,
                          env=hook_env(project), timeout=60)
    assert proc.returncode == 0
    return {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("event_file,name", CASES)
def test_no_hook_imports_the_mcp_sdk_or_pydantic(project: Path, event_file: str, name: str):
    modules = _imported(project, event_file, name, site=True)
    assert not {m for m in modules if m.split(".")[0] in ("mcp", "pydantic", "pydantic_core")}


@pytest.mark.parametrize("event_file,name", [c for c in CASES if c[0] not in ("pre_compact", "user_prompt_submit")])
def test_warm_hooks_touch_neither_the_store_nor_the_search_engine(project: Path, event_file: str, name: str):
    run_hook("session_start", payload("session_start_startup", project), env=hook_env(project))  # builds the cache
    modules = _imported(project, event_file, name, site=False)
    assert "context_keeper.store" not in modules and "context_keeper.search" not in modules
    if event_file in ("scope_guard", "post_compact", "subagent_start"):
        assert "json" not in modules and "pathlib" not in modules


def test_warm_runs_leave_no_log(project: Path):
    env = hook_env(project)
    for _ in range(2):
        for event_file, name in CASES:
            run_hook(event_file, payload(name, project), env=env)
    assert not (project / ".context" / "hook.log").exists()


def test_a_store_change_is_seen_by_the_next_edit(project: Path):
    env = hook_env(project)
    injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="a"), env=env))
    Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}).record("constraint", {
        "rule": "Printer jobs are sent from the label worker only.",
        "reason": "Two senders raced for the same printer socket and interleaved ZPL on the morning shift.",
        "scope": "src/packwise/labels/printer.py", "tags": ["printing"],
    })
    text = injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="a"), env=env))
    assert "con-017" in text and "con-003" not in text


def test_a_same_size_edit_with_the_mtime_put_back_is_seen_by_every_hook(project: Path):
    # cp -p, touch -r, a coarse clock: the hook caches were keyed on (mtime, size, inode) only.
    env = hook_env(project)
    path = project / ".context" / "constraints.json"
    assert "src/packwise/labels/" in injected(run_hook("session_start", payload("session_start_startup", project), env=env))
    assert "con-003" in injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="a"), env=env))
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    edited = text.replace('"scope": "src/packwise/labels/"', '"scope": "src/packwise/ladels/"', 1)
    assert edited != text and len(edited) == len(text)
    with open(path, "r+", encoding="utf-8") as handle:  # in place: same inode
        handle.write(edited)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_ino == before.st_ino and path.stat().st_size == before.st_size
    assert "src/packwise/ladels/" in injected(run_hook("session_start", payload("session_start_startup", project), env=env))
    assert "con-003" not in (injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="b"),
                                               env=env)) or "")


def _layout(tmp_path: Path) -> dict[str, Path]:
    outer = tmp_path / "outer"
    inner = outer / "pkg" / "inner"
    plain = tmp_path / "plain" / "deep"
    for d in (inner / "src", plain):
        d.mkdir(parents=True)
    (outer / ".context").mkdir()
    (outer / ".git").mkdir()
    (inner / ".context").mkdir()
    repo_sub = outer / "vendored" / "sub"  # a repository of its own inside the project
    repo_sub.mkdir(parents=True)
    (outer / "vendored" / ".git").mkdir()
    loose = tmp_path / "loose" / "sub"  # no repository: the nearest .context/ above, as from the cwd
    loose.mkdir(parents=True)
    (tmp_path / "loose" / ".context").mkdir()
    return {"outer": outer, "inner": inner, "inner_src": inner / "src", "mid": outer / "pkg", "plain": plain,
            "repo_sub": repo_sub, "loose_sub": loose, "loose": loose.parent,
            "outer_store": outer / ".context", "loose_store": loose.parent / ".context"}


@pytest.mark.parametrize("ck,cpd,cwd", [
    (None, None, "inner_src"), (None, None, "mid"), (None, None, "plain"), (None, "outer", "inner_src"),
    (None, "plain", "inner_src"), (None, "plain", "plain"), ("outer", None, "inner_src"), ("plain", None, "inner"),
    (None, "inner", "outer"), ("relative/path", None, "inner"), ("inner_src", None, "plain"), ("mid", None, "plain"),
    ("repo_sub", None, "plain"), ("loose_sub", None, "plain"), ("loose", None, "plain"),
    # the store directory itself names its project, inside a repository or not
    ("outer_store", None, "plain"), ("loose_store", None, "plain"),
])
def test_fast_resolution_agrees_with_resolve_project(tmp_path: Path, ck, cpd, cwd):
    dirs = _layout(tmp_path)
    env = {}
    if ck:
        env["CONTEXT_KEEPER_PROJECT"] = str(dirs[ck]) if ck in dirs else ck
    if cpd:
        env["CLAUDE_PROJECT_DIR"] = str(dirs[cpd])
    try:
        truth = project_mod.resolve_project(None, env=env, cwd=str(dirs[cwd]))
        truth = str(truth) if (truth / ".context").is_dir() else None
    except ContextKeeperError:
        truth = None
    guess, certainly_none = cache.guess_root(env, str(dirs[cwd]))
    if certainly_none:
        assert truth is None
    elif guess is not None:
        assert guess == truth
    root = cache.locate(env, str(dirs[cwd]))
    assert root == truth


def test_cache_constants_match_the_core():
    # One constant now (store_owner), so pin its value too: the directory name is part of the
    # store format every existing project relies on.
    assert cache.CONTEXT_DIR == project_mod.CONTEXT_DIR == ".context"
    assert cache.ENV_PROJECT == project_mod.ENV_PROJECT and cache.ENV_CLIENT_PROJECT == project_mod.ENV_CLIENT_PROJECT


_part = st.sampled_from(["src", "app", "hooks", "webhooks", "a.py", "x", "src.py", ".", "..", "", "ä"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_part, min_size=1, max_size=4), st.lists(_part, min_size=1, max_size=5), st.booleans())
def test_literal_scope_test_is_whole_component_containment(scope_parts, path_parts, trailing):
    from pathlib import PurePosixPath

    scope = "/".join(scope_parts) + ("/" if trailing else "")
    norm = normalize_path(scope)
    rel = normalize_path("/".join(path_parts))
    if not norm or not rel or any(c in norm for c in "*?["):
        return
    expected = rel == norm or PurePosixPath(rel).is_relative_to(PurePosixPath(norm))
    assert covers_literally(norm, rel) == expected == scope_covers(scope, rel)


def test_relative_path_handles_absolute_relative_and_outside(tmp_path: Path):
    root = str(tmp_path.resolve())
    assert relative_path(os.path.join(root, "src", "a.py"), root, None) == "src/a.py"
    assert relative_path("src/./a.py", root, root) == "src/a.py"
    assert relative_path(str(tmp_path.parent / "elsewhere.py"), root, None) is None


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text() |
                    st.floats(allow_nan=False, allow_infinity=False),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=20))
def test_lean_json_round_trips_and_is_ascii(value):
    import json

    text = leanjson.dumps(value)
    text.encode("ascii")
    assert json.loads(text) == value and leanjson.loads(text) == value


def test_an_edit_through_a_symlink_inside_the_project_gets_the_target_s_constraints(project: Path):
    # "qlink/streams.py" writes src/packwise/queue/streams.py, which con-011 covers.
    (project / "src" / "packwise" / "queue").mkdir(parents=True, exist_ok=True)
    (project / "src" / "packwise" / "queue" / "streams.py").write_text("", encoding="utf-8")
    os.symlink(project / "src" / "packwise" / "queue", project / "qlink")
    edit = payload("pre_tool_use_edit", project, session_id="symlink",
                   tool_input={"file_path": str(project / "qlink" / "streams.py"), "old_string": "a", "new_string": "b"})
    text = injected(run_hook("scope_guard", edit, env=hook_env(project)))
    assert text is not None and "con-011" in text
    assert relative_paths(str(project / "qlink" / "streams.py"), str(project), None) == ["qlink/streams.py", "src/packwise/queue/streams.py"]
