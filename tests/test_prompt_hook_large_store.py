"""With no up-to-date snapshot, the prompt hook indexes a large store in the background instead
of building inside the prompt (the client kills a hook at its timeout, and nothing is saved)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from context_keeper.hookio import EVENTS, HookContext
from context_keeper.hooks import cache, user_prompt
from context_keeper.search import snapshot
from tests.hook_helpers import hook_env, payload


def _prompt(project: Path, session: str) -> str | None:
    ctx = HookContext(EVENTS["user-prompt-submit"], payload("user_prompt_submit", project, session_id=session),
                      hook_env(project))
    return user_prompt.handle(ctx)


@pytest.fixture
def spawned(monkeypatch) -> list[tuple]:
    calls: list[tuple] = []
    monkeypatch.setattr(cache, "spawn", lambda *args, **kwargs: calls.append(args) or 4242)
    monkeypatch.setattr(user_prompt, "INLINE_BUILD_MAX_ENTRIES", 5)  # the example store has more
    return calls


def test_a_large_store_without_a_snapshot_is_indexed_in_the_background(project: Path, spawned):
    assert _prompt(project, "s1") is None  # not searched: silent, and quick
    assert spawned == [("context_keeper.hooks.user_prompt", "background_build_main", str(project))]
    marker = project / ".context" / user_prompt.BUILD_MARKER
    assert marker.exists()
    assert "not searched" in (project / ".context" / "hook.log").read_text(encoding="utf-8")
    assert _prompt(project, "s2") is None
    assert len(spawned) == 1  # one build at a time: the marker says one is running
    user_prompt.rebuild_main(str(project))  # the server's rebuild after a write: not the marker's owner
    assert marker.exists()
    user_prompt.background_build_main(str(project))  # what the spawned process runs
    assert not marker.exists() and (project / ".context" / snapshot.FILE).is_file()
    text = _prompt(project, "s3")
    assert text is not None and "dec-008" in text  # restored, so searched although large
    assert len(spawned) == 1


def test_a_marker_left_by_a_build_that_died_does_not_block_the_next(project: Path, spawned):
    marker = project / ".context" / user_prompt.BUILD_MARKER
    marker.write_text("", encoding="utf-8")
    assert _prompt(project, "s1") is None and spawned == []
    old = marker.stat().st_mtime - user_prompt.BUILD_MARKER_STALE_S - 1
    os.utime(marker, (old, old))
    assert _prompt(project, "s2") is None and len(spawned) == 1


def test_a_store_within_the_limit_is_still_built_inline(project: Path, spawned, monkeypatch):
    monkeypatch.setattr(user_prompt, "INLINE_BUILD_MAX_ENTRIES", 10_000)
    text = _prompt(project, "s1")
    assert text is not None and "dec-008" in text and spawned == []
    assert (project / ".context" / snapshot.FILE).is_file()


def test_a_read_only_context_dir_builds_inline_as_before(project: Path, spawned, monkeypatch):
    real_open = os.open

    def refuse_the_marker(path, *args, **kwargs):
        if str(path).endswith(user_prompt.BUILD_MARKER):
            raise PermissionError(13, "Read-only file system", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_the_marker)
    text = _prompt(project, "s1")
    assert text is not None and "dec-008" in text and spawned == []


def test_no_background_process_possible_builds_inline(project: Path, monkeypatch):
    monkeypatch.setattr(user_prompt, "INLINE_BUILD_MAX_ENTRIES", 5)
    monkeypatch.setattr(cache, "spawn", lambda *args, **kwargs: None)  # no posix_spawn (Windows)
    text = _prompt(project, "s1")
    assert text is not None and "dec-008" in text
    assert not (project / ".context" / user_prompt.BUILD_MARKER).exists()
