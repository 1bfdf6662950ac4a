"""A store file that no longer parses is never overwritten: writes to it fail naming the file and
the position, reads of the other files keep working, and a last good copy is kept to restore."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from context_keeper.errors import CorruptStoreFile, StoreError
from context_keeper.model import CONSTRAINT, DECISION
from context_keeper.service import Service
from context_keeper.store import Store
from tests.conftest import REPO
from tests.mcp_helpers import call, connect

FIXTURE = REPO / "tests" / "fixtures" / "stores" / "corrupt"
pytestmark = pytest.mark.anyio

DECISION_ARGS = {
    "summary": "Zone batches for stock take",
    "problem": "A full stop for stock take cost a day of shipping every year at every site.",
    "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs.",
}


@pytest.fixture
def corrupt(tmp_path: Path) -> Path:
    target = tmp_path / "corrupt"
    shutil.copytree(FIXTURE, target)
    return target


@pytest.fixture
def svc(corrupt: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(corrupt)}, cwd=str(corrupt))


def test_a_write_to_a_corrupt_file_is_refused_naming_file_and_position(svc, corrupt):
    path = corrupt / ".context" / "decisions.json"
    before = path.read_bytes()
    with pytest.raises(CorruptStoreFile) as info:
        svc.record("decision", DECISION_ARGS)
    err = info.value
    assert (err.path, err.line, err.column) == (str(path), 14, 1)
    assert "decisions.json has unresolved git merge conflict markers" in str(err) and "the first at line 14" in str(err)
    assert "resolve the merge conflict" in str(err) and "--fix" not in str(err)  # --fix would refuse
    assert path.read_bytes() == before
    assert not list((corrupt / ".context").glob(".*.tmp"))


def test_reads_of_a_corrupt_file_do_not_speak_of_a_refused_write(svc, corrupt):
    with pytest.raises(CorruptStoreFile) as info:
        svc.record("decision", DECISION_ARGS)
    assert "Nothing was written to it" in str(info.value) and "try again" in str(info.value)
    read_messages = [*svc.get_project_summary()["warnings"], str(Store(corrupt).state(DECISION).error)]
    with pytest.raises(CorruptStoreFile) as info:
        svc.get_context(id="dec-001")
    read_messages.append(str(info.value))
    for message in read_messages:
        assert "decisions.json has unresolved git merge conflict markers" in message and "line 14" in message
        assert "cannot be read" in message and "then run `context-keeper doctor`" in message
        assert "written" not in message and "try again" not in message


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_mcp_answer_is_an_error_with_the_position_and_other_files_still_work(svc, corrupt, mode):
    async with connect(svc, mode) as client:
        is_error, text = await call(client, "record_decision", DECISION_ARGS)
        assert is_error and "the first at line 14" in text
        is_error, text = await call(client, "update_entry", {"id": "dec-001", "updates": {"tags": ["x"]}})
        assert is_error and "unresolved git merge conflict markers" in text
        is_error, answer = await call(client, "record_constraint", {
            "rule": "Count before reconciling",
            "reason": "Reconciling mid-count double-booked the moves in the zone being counted."})
        assert not is_error, answer
        is_error, answer = await call(client, "get_context", {"query": "how do we release the scanner app?"})
        assert not is_error and any(r["entry"]["id"] == "pipe-001" for r in answer["results"])
        is_error, answer = await call(client, "get_project_summary", {})
        assert not is_error
        assert any("decisions.json has unresolved git merge conflict markers" in w for w in answer.get("warnings", []))
        is_error, answer = await call(client, "verify_quality", {})
        assert any(i["issue"] == "corrupt_file" for i in answer["issues"])


@pytest.mark.parametrize("content,detail", [
    (b'[{"id": "dec-001", "summary": "caf\xe9"}]', "saved in a legacy 8-bit encoding such as Windows-1252"),
    (b'{"id": "dec-001"}', "a single entry, not a JSON array of entries"),
    (b'{"decisions": []}', "expected a JSON array"),
    (b'[{"id": "dec-001"},]', "a trailing comma"),
    (b'[{"id": "dec-001"}', "Expecting ',' delimiter"),
    (b'[{"id": "dec-001"}] trailing', "Extra data"),
    (b"", "the file is empty"),
    (b"  \n\n", "the file is empty"),
])
def test_each_kind_of_corruption_is_reported_with_a_position(tmp_path, content, detail):
    store = Store(tmp_path)
    (tmp_path / ".context").mkdir()
    path = tmp_path / ".context" / "decisions.json"
    path.write_bytes(content)
    state = store.state(DECISION)
    assert state.error is not None and detail in state.error.detail
    assert state.error.line >= 1 and state.error.column >= 1
    with pytest.raises(CorruptStoreFile):
        with store.transaction() as txn:
            txn.file(DECISION)
    assert path.read_bytes() == content


def test_a_utf8_byte_order_mark_is_not_corruption(tmp_path):
    (tmp_path / ".context").mkdir()
    path = tmp_path / ".context" / "decisions.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"id": "dec-001", "summary": "Kraków depot"}]).encode())
    store = Store(tmp_path)
    assert store.state(DECISION).entries[0]["summary"] == "Kraków depot"
    assert store.state(DECISION).error is None


def test_the_last_good_copy_is_the_last_write(project):
    store = Store(project)
    with store.transaction() as txn:
        f = txn.file(DECISION)
        raw = f.raw_item("dec-003")
        raw["tags"] = ["waves", "checked"]
        f.put("dec-003", raw)
    live = project / ".context" / "decisions.json"
    backup = project / ".context" / ".last-good" / "decisions.json"
    assert backup.read_bytes() == live.read_bytes()
    assert os.stat(backup).st_ino != os.stat(live).st_ino


def test_an_in_place_edit_of_the_live_file_cannot_damage_the_last_good_copy(project):
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    svc.record("decision", DECISION_ARGS)
    live = project / ".context" / "decisions.json"
    backup = project / ".context" / ".last-good" / "decisions.json"
    good = backup.read_bytes()
    with open(live, "r+b") as handle:  # an editor writing in place, and getting it wrong
        handle.seek(0)
        handle.write(b"<<<<<<< HEAD\n")
    assert backup.read_bytes() == good
    assert json.loads(good)[-1]["summary"] == DECISION_ARGS["summary"]


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(project, monkeypatch):
    path = project / ".context" / "constraints.json"
    before = path.read_bytes()
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})

    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(StoreError, match="nothing was saved"):
        svc.record("constraint", {"rule": "Count before reconciling",
                                  "reason": "Reconciling mid-count double-booked the moves in the zone."})
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert not list((project / ".context").rglob(".*.tmp"))
    assert svc.store().state(CONSTRAINT).error is None
    assert len(svc.store().state(CONSTRAINT).entries) == len(json.loads(before))


def test_a_truncated_file_is_refused_so_the_last_good_copy_survives_for_doctor(project):
    from context_keeper import doctor

    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    svc.record("decision", DECISION_ARGS)
    live = project / ".context" / "decisions.json"
    history = live.read_bytes()
    live.write_bytes(b"")  # a tool (or a full disk) truncated it
    with pytest.raises(CorruptStoreFile, match="empty"):
        svc.record("decision", DECISION_ARGS)
    assert (project / ".context" / ".last-good" / "decisions.json").read_bytes() == history
    doctor.repair(doctor.diagnose(project))
    assert live.read_bytes() == history
    assert svc.record("decision", DECISION_ARGS)["success"]
