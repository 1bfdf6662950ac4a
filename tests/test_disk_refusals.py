"""A full or read-only disk refusing a write: the answer says for certain that nothing was saved,
names the file, and the store is left exactly as it was."""

from __future__ import annotations

import errno
import os

import filelock
import pytest

from context_keeper.errors import StoreError
from tests.conftest import MODES, snapshot_files
from tests.mcp_helpers import connect, err

UPDATE = ("update_entry", {"id": "dec-001", "updates": {"tags": ["abc"]}})


def _disk_full(monkeypatch) -> None:
    """The store file's data cannot be flushed to disk, as on a full file system."""
    def refuse(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", refuse)


def _read_only(monkeypatch) -> None:
    """The lock file cannot even be opened, as on a read-only mount."""
    def refuse(self, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", self.lock_file)

    monkeypatch.setattr(filelock.FileLock, "acquire", refuse)


REFUSALS = {"disk_full": (_disk_full, "decisions.json", "is full"), "read_only": (_read_only, ".lock", "not writable")}


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
@pytest.mark.parametrize("write", ["record", "update", "deprecate"])
def test_a_refused_write_says_nothing_was_saved_and_names_the_file(service, project, monkeypatch, refusal, write):
    refuse, file_name, remedy = REFUSALS[refusal]
    before = snapshot_files(project)
    refuse(monkeypatch)
    with pytest.raises(StoreError) as raised:
        if write == "record":
            service.record("decision", {"summary": "Keep the pick list sorted by aisle",
                                        "problem": "Pickers walked back and forth because the list came in order id order.",
                                        "why_chosen": "Sorting by aisle makes one pass through the warehouse enough for a wave."})
        elif write == "update":
            service.update_entry("dec-001", {"tags": ["abc"]})
        else:
            service.deprecate_entry("dec-001", "replaced by the new ledger")
    message = str(raised.value)
    assert message.startswith("nothing was saved")
    assert str(project / ".context" / file_name) in message and remedy in message
    monkeypatch.undo()
    assert snapshot_files(project) == before
    assert not list((project / ".context").glob(".*.tmp"))


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("refusal", sorted(REFUSALS))
async def test_the_tool_answer_does_not_send_the_agent_off_to_check(service, monkeypatch, mode, refusal):
    REFUSALS[refusal][0](monkeypatch)
    async with connect(service, mode) as client:
        text = await err(client, *UPDATE)
    assert "nothing was saved" in text and "may or may not" not in text


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
@pytest.mark.parametrize("command", ["init", "doctor --fix"])
def test_init_and_doctor_fix_on_a_refusing_disk_print_one_line_and_exit_5(project, monkeypatch, capsys, refusal,
                                                                           command):
    from context_keeper import cli

    target = project if command == "doctor --fix" else project.parent / "fresh"
    target.mkdir(exist_ok=True)
    REFUSALS[refusal][0](monkeypatch)
    argv = ["init", str(target)] if command == "init" else ["doctor", "--fix", "--project", str(target)]
    code = cli.main(argv)
    err_lines = capsys.readouterr().err.strip().splitlines()
    assert code == 5
    assert len(err_lines) == 1 and "Traceback" not in err_lines[0]
    assert str(target / ".context") in err_lines[0]  # which file or directory refused


def test_a_linked_store_file_on_a_read_only_mount_names_where_the_link_leads(service, project, tmp_path, monkeypatch):
    from context_keeper import fsio

    live = project / ".context" / "decisions.json"
    shared = tmp_path / "mounted" / "decisions.json"
    shared.parent.mkdir()
    live.rename(shared)
    live.symlink_to(shared)
    create_temp = fsio._create_temp

    def read_only_beside_the_target(path):
        if path.parent == shared.parent:
            raise OSError(errno.EROFS, "Read-only file system", str(path.parent / ".decisions.json.0.tmp"))
        return create_temp(path)

    monkeypatch.setattr(fsio, "_create_temp", read_only_beside_the_target)
    with pytest.raises(StoreError) as raised:
        service.update_entry("dec-001", {"tags": ["abc"]})
    message = str(raised.value)
    assert message.startswith("nothing was saved")
    # .context/ is writable: the remedy must point at the directory the link leads into
    assert f"{shared.parent} is not writable" in message, message
    assert f"{project / '.context'} is not writable" not in message, message
