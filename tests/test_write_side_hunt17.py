"""Write-side defects found in round 17, each test failing before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper.errors import InvalidInput
from context_keeper.service import Service

PURPOSE = "Ship a signed build to the store without skipping the smoke tests first."


@pytest.fixture
def svc(tmp_path: Path) -> Service:
    Service(env={}).init_project(str(tmp_path))
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(tmp_path)}, hook_cache_delay=None)


def _stored_steps(svc: Service, entry_id: str) -> list[dict]:
    return svc.get_context(id=entry_id)["entry"]["steps"]


def test_steps_given_out_of_order_are_refused_not_silently_renumbered(svc):
    steps = [{"order": 2, "action": "Upload the signed build"}, {"order": 1, "action": "Run the smoke tests"}]
    with pytest.raises(InvalidInput) as caught:
        svc.record("pipeline", {"name": "Release", "purpose": PURPOSE, "steps": steps})
    assert caught.value.field == "steps"
    assert "step 2 has order 1" in str(caught.value) and "order they run" in str(caught.value)
    assert json.loads((Path(svc.project_root()) / ".context" / "pipelines.json").read_text()) == []


def test_steps_in_order_keep_that_order_numbered_by_position(svc):
    steps = [{"order": 10, "action": "Run the smoke tests"}, "Sign the build", {"order": 30, "action": "Upload it"}]
    out = svc.record("pipeline", {"name": "Release", "purpose": PURPOSE, "steps": steps})
    assert [(s["order"], s["action"]) for s in _stored_steps(svc, out["id"])] == [
        (1, "Run the smoke tests"), (2, "Sign the build"), (3, "Upload it")]


def test_an_update_reordering_steps_by_their_numbers_is_refused(svc):
    out = svc.record("pipeline", {"name": "Release", "purpose": PURPOSE, "steps": ["Run the smoke tests", "Upload it"]})
    swapped = [{"order": 2, "action": "Run the smoke tests"}, {"order": 1, "action": "Upload it"}]
    with pytest.raises(InvalidInput, match="step 2 has order 1"):
        svc.update_entry(out["id"], {"steps": swapped})
    assert [s["action"] for s in _stored_steps(svc, out["id"])] == ["Run the smoke tests", "Upload it"]


# ------------------------------------------------------------------ a hand edit right after a write

def test_a_file_renamed_over_the_store_right_after_a_write_is_seen_and_kept(svc, monkeypatch):
    from context_keeper import fsio

    svc.record("decision", {"summary": "First decision here", "problem": "P" * 45, "why_chosen": "W" * 65})
    path = Path(svc.project_root()) / ".context" / "decisions.json"
    real_fsync_dir = fsio.fsync_dir
    edited = []

    def fsync_dir_then_edit(directory):
        real_fsync_dir(directory)
        if not edited and path.exists() and "Second decision" in path.read_text(encoding="utf-8"):
            # An editor or git saving its version (by rename) just after the tool's rename.
            entries = json.loads(path.read_text(encoding="utf-8"))
            entries[0].update(summary="First decision, reworded by hand", owner="alice")
            side = path.with_name("edited.json")
            side.write_text(json.dumps(entries, indent=2), encoding="utf-8")
            side.replace(path)
            edited.append(True)

    monkeypatch.setattr(fsio, "fsync_dir", fsync_dir_then_edit)
    svc.record("decision", {"summary": "Second decision here", "problem": "P" * 45, "why_chosen": "W" * 65})
    monkeypatch.setattr(fsio, "fsync_dir", real_fsync_dir)
    assert edited
    listed = svc.query_entries(types=["decisions"])["results"]
    assert listed[0]["entry"]["summary"] == "First decision, reworded by hand"
    svc.record("decision", {"summary": "Third decision here", "problem": "P" * 45, "why_chosen": "W" * 65})
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert (on_disk[0]["summary"], on_disk[0].get("owner")) == ("First decision, reworded by hand", "alice")
    assert [e["summary"] for e in on_disk][1:] == ["Second decision here", "Third decision here"]


# ------------------------------------------------------------------ the store lock and readers

def test_a_write_waiting_for_another_process_lock_does_not_stall_reads(svc, monkeypatch):
    import threading

    from filelock import FileLock

    svc.record("decision", {"summary": "First decision here", "problem": "P" * 45, "why_chosen": "W" * 65})
    store = svc.store()
    held = FileLock(str(store.dir / ".lock"))  # another holder of the store lock (its own descriptor)
    held.acquire()
    waiting = threading.Event()
    real_acquire = FileLock.acquire

    def acquire(self, *args, **kwargs):
        if self is not held:
            waiting.set()
        return real_acquire(self, *args, **kwargs)

    monkeypatch.setattr(FileLock, "acquire", acquire)
    writer = threading.Thread(target=svc.record, args=("decision", {
        "summary": "Second decision here", "problem": "P" * 45, "why_chosen": "W" * 65}))
    writer.start()
    try:
        assert waiting.wait(20)
        answers = []
        reader = threading.Thread(target=lambda: answers.append(svc.query_entries(types=["decisions"])))
        reader.start()
        reader.join(20)  # a deadlock guard, not a speed check: the read needs no lock at all
        assert answers and answers[0]["total_matches"] == 1
    finally:
        held.release()
        writer.join(30)
    assert svc.query_entries(types=["decisions"])["total_matches"] == 2


def test_a_lock_file_that_is_a_directory_is_named_as_such(svc):
    from context_keeper.errors import StoreError

    lock = Path(svc.project_root()) / ".context" / ".lock"
    if lock.exists():
        lock.unlink()
    lock.mkdir()
    with pytest.raises(StoreError, match=r"\.lock is a directory where context-keeper keeps a file: remove it \(rmdir "):
        svc.record("decision", {"summary": "First decision here", "problem": "P" * 45, "why_chosen": "W" * 65})
