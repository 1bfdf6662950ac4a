"""Session files under ``.context/sessions/`` that are symbolic links, or too big: a cloned
repository can commit ``sessions/unknown.seen`` (the key of a hook input without a session id)
leading anywhere, and a runaway ``.seen`` file must not leave its session re-shown every entry
until it is pruned a week later."""

from __future__ import annotations

import json
import os
from pathlib import Path

from context_keeper import bounded_read, compaction
from context_keeper.doctor import diagnose
from context_keeper.hooks import state as hook_state
from tests.test_hostile_files_hunt19 import posix_only
from tests.test_untrusted_repo_hunt19 import _init

RECORD = {"summary": "Orders live in Postgres", "problem": "P" * 45, "why_chosen": "W" * 65}


def _project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A project with a ``sessions/`` directory of its own, and a directory outside it."""
    root, elsewhere = tmp_path / "p", tmp_path / "elsewhere"
    _init(root, RECORD)
    sessions = root / ".context" / hook_state.SESSIONS_DIR
    sessions.mkdir(parents=True, exist_ok=True)
    elsewhere.mkdir()
    return root, sessions, elsewhere


def _oversized(path: Path, first_line: bytes = b"dec-001#0\n") -> None:
    with open(path, "wb") as handle:
        handle.write(first_line)
        handle.truncate(bounded_read.SESSION_LIMIT + 1)  # sparse: no disk or memory spent


def test_a_seen_file_linked_elsewhere_is_neither_read_nor_appended_through(tmp_path):
    root, sessions, elsewhere = _project(tmp_path)
    target = elsewhere / "notes.txt"
    target.write_bytes(b"dec-001#0\n")
    (sessions / "unknown.seen").symlink_to(target)
    state = hook_state.SessionState(str(root / ".context"), None)
    # Before: the target's lines were read as this session's, and the new key appended to it.
    assert state.unseen(["dec-001#0"]) == ["dec-001#0"]
    state.mark(["dec-002#0"])
    assert target.read_bytes() == b"dec-001#0\n"
    assert (sessions / "unknown.seen").is_symlink()


def test_an_oversized_seen_file_is_reset_and_the_session_recovers(tmp_path):
    root, sessions, _ = _project(tmp_path)
    path = sessions / "s1.seen"
    _oversized(path)
    state = hook_state.SessionState(str(root / ".context"), "s1")
    assert state.unseen(["dec-001#0"]) == ["dec-001#0"]  # what was in it is lost: shown once more
    state.mark(["dec-001#0"])
    # Before: the file was left as it was and not appended to, so every later hook showed
    # dec-001 again until the file was pruned.
    assert path.read_bytes() == b"dec-001#0\n"
    assert hook_state.SessionState(str(root / ".context"), "s1").unseen(["dec-001#0"]) == []


def test_an_oversized_file_behind_a_seen_link_is_left_alone(tmp_path):
    root, sessions, elsewhere = _project(tmp_path)
    target = elsewhere / "big.log"
    _oversized(target)
    (sessions / "s1.seen").symlink_to(target)
    state = hook_state.SessionState(str(root / ".context"), "s1")
    state.mark(["dec-001#0"])
    assert target.stat().st_size == bounded_read.SESSION_LIMIT + 1
    assert state.unseen(["dec-001#0"]) == []  # remembered for this hook's run only


def test_a_compaction_snapshot_linked_elsewhere_is_not_read(tmp_path):
    root, sessions, elsewhere = _project(tmp_path)
    foreign = {"timestamp": "2026-01-01T00:00:00Z", "entries": {"decisions": [
        {"id": "dec-900", "summary": "VICTIM private decision", "status": "active"}]}}
    (elsewhere / "snap.json").write_text(json.dumps(foreign), encoding="utf-8")
    (sessions / f"s1{hook_state.COMPACTION_SNAPSHOT_SUFFIX}").symlink_to(elsewhere / "snap.json")
    # Before: the foreign snapshot was compared with this store and its entry reported lost.
    report = compaction.check_pending(str(root), session_id="s1")
    assert "VICTIM" not in json.dumps(report)
    assert (elsewhere / "snap.json").exists()


def test_a_compaction_failed_note_linked_elsewhere_is_not_read(tmp_path):
    root, sessions, elsewhere = _project(tmp_path)
    (elsewhere / "note.json").write_text('{"error": "VICTIM"}', encoding="utf-8")
    (sessions / f"s1{hook_state.COMPACTION_FAILED_SUFFIX}").symlink_to(elsewhere / "note.json")
    # Before: the linked file's text was told to the session as its check's error.
    assert "VICTIM" not in (compaction.session_note(str(root), session_id="s1") or "")


@posix_only
def test_doctor_reports_linked_oversized_and_special_session_files(tmp_path):
    root, sessions, elsewhere = _project(tmp_path)
    (elsewhere / "notes.txt").write_text("mine\n", encoding="utf-8")
    (sessions / "unknown.seen").symlink_to(elsewhere / "notes.txt")
    _oversized(sessions / "s1.seen")
    os.mkfifo(sessions / f"s2{hook_state.COMPACTION_SNAPSHOT_SUFFIX}")
    (sessions / "s3.seen").write_bytes(b"dec-001#0\n")  # an ordinary one: no finding
    found = {f.file: f for f in diagnose(root).findings if f.code == "session_file"}
    assert sorted(found) == ["sessions/s1.seen", f"sessions/s2{hook_state.COMPACTION_SNAPSHOT_SUFFIX}",
                             "sessions/unknown.seen"]
    assert all(f.severity == "warning" for f in found.values())
    assert "symbolic link" in found["sessions/unknown.seen"].message
    assert str(elsewhere / "notes.txt") in found["sessions/unknown.seen"].message
    assert "16 MiB" in found["sessions/s1.seen"].message
    assert "FIFO" in found[f"sessions/s2{hook_state.COMPACTION_SNAPSHOT_SUFFIX}"].message
    assert all("rm .context/" + name in f.message for name, f in found.items())
    assert (elsewhere / "notes.txt").read_text(encoding="utf-8") == "mine\n"
