"""Stored-data safety, round 21: a store file this process may not read, a .gitignore left empty
by a full disk, entries a stale editor buffer dropped, a file of NUL bytes left by a crash."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from context_keeper import doctor, store
from context_keeper.errors import CorruptStoreFile, NotAStoreFile
from context_keeper.service import Service
from tests.mcp_helpers import call, connect

DECISION = {
    "summary": "Zone batches for stock take",
    "problem": "A full stop for stock take cost a day of shipping every year at every site.",
    "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs.",
}
CONSTRAINT = {
    "rule": "Label jobs carry the station id in the ZPL header.",
    "reason": "Reprints from the wrong station were impossible to trace back without it.",
}


def _service(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root), hook_cache_delay=None)


def _refuse_reading(monkeypatch, path: Path, code: int = errno.EACCES) -> None:
    """Make ``path`` unreadable as a file owned by another user with mode 0600 is (the tests
    run as root, for whom chmod refuses nothing). Its last good copy stays readable."""
    real = store.read_regular

    def read_regular(name, limit, **kwargs):
        if Path(name) == path:
            raise PermissionError(code, "Permission denied", str(name))
        return real(name, limit, **kwargs)

    monkeypatch.setattr(store, "read_regular", read_regular)


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM])
def test_an_unreadable_store_file_is_named_and_the_other_kinds_keep_working(project, monkeypatch, code):
    _service(project).record("constraint", CONSTRAINT)  # leaves a last good copy holding con-017
    path = project / ".context" / "constraints.json"
    before = path.read_bytes()
    path.chmod(0o600)
    _refuse_reading(monkeypatch, path, code)
    svc = _service(project)

    answer = svc.get_context(query="station id in the ZPL header of label jobs")
    said = [w for w in answer["warnings"] if "constraints.json" in w]
    assert said and "is not readable" in said[0] and "mode 0600" in said[0] and "owned by" in said[0], said
    assert "last good copy" in said[0]
    assert any(h["entry"]["id"] == "con-017" for h in answer["results"])  # read from the copy

    recorded = svc.record("decision", DECISION)  # decisions.json is fine
    assert recorded["id"].startswith("dec-")
    summary = svc.get_project_summary()
    assert any("constraints.json" in w and "is not readable" in w for w in summary.get("warnings", []))
    rules = svc.reload_constraints()
    assert any(c["id"] == "con-017" for c in rules["constraints"])
    assert "constraints.json is not readable (" in rules["text"]

    with pytest.raises(NotAStoreFile) as refused:
        svc.record("constraint", {**CONSTRAINT, "rule": "Reprints name the original job id."})
    assert "is not readable" in str(refused.value) and "Nothing was written to it" in str(refused.value)
    assert path.read_bytes() == before

    report = doctor.diagnose(project)
    found = [f for f in report.findings if f.file == "constraints.json"]
    assert [f.code for f in found] == ["not_a_file"] and "is not readable" in found[0].message
    doctor.repair(report)
    assert path.read_bytes() == before  # --fix leaves it for its owner to open up


@pytest.mark.anyio
async def test_over_mcp_the_write_to_another_kind_succeeds_and_one_to_that_kind_says_it_is_a_read_problem(
        project, monkeypatch):
    path = project / ".context" / "constraints.json"
    _refuse_reading(monkeypatch, path)
    async with connect(_service(project), "legacy") as client:
        failed, answer = await call(client, "record_decision", DECISION)
        assert not failed, answer
        failed, answer = await call(client, "record_constraint", CONSTRAINT)
    assert failed and "is not readable" in answer and "Nothing was written to it" in answer, answer
    assert "may or may not have been saved" not in answer


_FIRST_WRITE_ON_A_FULL_DISK = """
import resource, signal, sys
from context_keeper.errors import StoreError
from context_keeper.service import Service
root, decision = sys.argv[1], dict(zip(*[iter(sys.argv[2:])] * 2))
svc = Service(env={"CONTEXT_KEEPER_PROJECT": root}, cwd=root, hook_cache_delay=None)
# No file may grow past 0 bytes: the writes fail as on a full disk (EFBIG, not ENOSPC), while
# directories and empty files can still be made, as on a disk out of blocks but not of inodes.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))
try:
    svc.record("decision", decision)
except StoreError as exc:
    message = str(exc)
else:
    message = "recorded"
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print(message)
"""


def test_a_first_write_on_a_full_disk_leaves_no_empty_gitignore_and_names_it(tmp_path):
    import os
    import subprocess
    import sys

    from context_keeper.gitignore import GITIGNORE

    root = tmp_path / "fresh"
    root.mkdir()
    args = [item for pair in DECISION.items() for item in pair]
    # A pipe, not a file, for the output: the size limit applies to every file the process writes.
    proc = subprocess.run([sys.executable, "-c", _FIRST_WRITE_ON_A_FULL_DISK, str(root), *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    ignore = root / ".context" / ".gitignore"
    said = proc.stdout.strip()
    assert said.startswith("nothing was saved") and str(ignore) in said, said
    assert not os.path.lexists(ignore)  # not an empty one that no later write would fill
    assert _service(root).record("decision", DECISION)["id"] == "dec-001"
    assert ignore.read_text(encoding="utf-8") == GITIGNORE


@pytest.mark.parametrize("left", ["", "# Local bookkeeping; the entry files", "PREFIX-40"])
def test_a_gitignore_an_interrupted_write_cut_short_is_completed_by_the_next_write(empty_project, left):
    from context_keeper.gitignore import GITIGNORE

    ignore = empty_project / ".context" / ".gitignore"
    ignore.write_text(GITIGNORE[:40] if left == "PREFIX-40" else left, encoding="utf-8")
    _service(empty_project).record("decision", DECISION)
    assert ignore.read_text(encoding="utf-8") == GITIGNORE


@pytest.mark.parametrize("mine", ["*.log\n", "# ours\n", ".lock\n"])
def test_a_gitignore_of_the_persons_own_is_left_as_it_is(empty_project, mine):
    ignore = empty_project / ".context" / ".gitignore"
    ignore.write_text(mine, encoding="utf-8")
    _service(empty_project).record("decision", DECISION)
    assert ignore.read_text(encoding="utf-8") == mine


def test_doctor_says_a_gitignore_was_cut_short_and_fix_completes_it(empty_project):
    import subprocess

    from context_keeper.gitignore import GITIGNORE

    subprocess.run(["git", "init", "-q", str(empty_project)], check=True)
    ignore = empty_project / ".context" / ".gitignore"
    ignore.write_bytes(b"")
    report = doctor.diagnose(empty_project)
    found = [f for f in report.findings if f.code == "gitignore"]
    assert len(found) == 1 and "cut short" in found[0].message and "older context-keeper" not in found[0].message
    repaired = doctor.repair(report)
    assert ignore.read_text(encoding="utf-8") == GITIGNORE
    assert any("completed .context/.gitignore" in f.message for f in repaired.findings if f.code == "fixed")


def _decision(summary: str) -> dict:
    return {**DECISION, "summary": summary}


def _stale_buffer_saved_over(root: Path) -> Service:
    """dec-003 recorded while an editor had decisions.json open, then the editor's copy (a typo
    fixed in it) saved over the file: dec-003 is gone from it, and its last good copy holds it."""
    svc = _service(root)
    svc.record("decision", _decision("Decision 0 about caching"))
    svc.record("decision", _decision("Decision 1 about caching"))
    path = root / ".context" / "decisions.json"
    buffer = path.read_text(encoding="utf-8")
    svc.record("decision", _decision("Decision 2 recorded by the agent"))
    svc.record("constraint", {**CONSTRAINT, "related_to": ["dec-003"]})
    path.write_text(buffer.replace("Decision 0 about caching", "Decision 0 about HTTP caching"), encoding="utf-8")
    return svc


def test_entries_a_stale_editor_buffer_dropped_are_named_kept_and_their_ids_not_reused(empty_project):
    svc = _stale_buffer_saved_over(empty_project)
    last_good = empty_project / ".context" / ".last-good"

    found = [f for f in doctor.diagnose(empty_project).findings if f.code == "dropped_entries"]
    assert len(found) == 1 and "dec-003" in found[0].message and found[0].severity == doctor.WARNING
    assert ".context/.last-good/decisions.json" in found[0].message

    answer = svc.record("decision", _decision("Decision 3 recorded after the save"))
    assert answer["id"] == "dec-004"  # dec-003 still names the lost entry, in con-001's related_to too
    said = [w for w in answer.get("warnings", []) if "dec-003" in w]
    assert said and "kept as .context/.last-good/decisions.json.before-" in said[0], answer.get("warnings")
    kept = sorted(last_good.glob("decisions.json.before-*"))
    assert len(kept) == 1 and kept[0].name in said[0]
    assert "Decision 2 recorded by the agent" in kept[0].read_text(encoding="utf-8")

    found = [f for f in doctor.diagnose(empty_project).findings if f.code == "dropped_entries"]
    assert len(found) == 1 and "dec-003" in found[0].message and kept[0].name in found[0].message

    # Copied back by hand: nothing is missing any more, and the kept copy can go.
    import json

    live = empty_project / ".context" / "decisions.json"
    lost = [e for e in json.loads(kept[0].read_text(encoding="utf-8")) if e["id"] == "dec-003"]
    live.write_text(json.dumps(json.loads(live.read_text(encoding="utf-8")) + lost, indent=2), encoding="utf-8")
    report = doctor.diagnose(empty_project)
    assert not [f for f in report.findings if f.code == "dropped_entries"]
    assert [f.file for f in report.findings if f.code == "kept_copy"] == [f".last-good/{kept[0].name}"]
    assert "warnings" not in svc.record("decision", _decision("Decision 5 with all of them there"))


def test_a_write_over_the_file_as_this_tool_left_it_keeps_nothing_aside(empty_project):
    svc = _service(empty_project)
    svc.record("decision", _decision("Decision 0 about caching"))
    path = empty_project / ".context" / "decisions.json"
    path.write_text(path.read_text(encoding="utf-8").replace("about caching", "about HTTP caching"), encoding="utf-8")
    answer = svc.record("decision", _decision("Decision 1 about caching"))
    assert answer["id"] == "dec-002" and "warnings" not in answer
    assert not list((empty_project / ".context" / ".last-good").glob("*.before-*"))


def test_an_id_a_copy_kept_aside_holds_is_not_handed_out_after_a_write_that_allocated_none(empty_project):
    svc = _stale_buffer_saved_over(empty_project)
    answer = svc.update_entry("dec-001", {"tags": ["caching"]})  # keeps the copy holding dec-003 aside
    assert any("dec-003" in w for w in answer.get("warnings", []))
    fresh = _service(empty_project)  # another process: nothing of the first one's in memory
    assert fresh.record("decision", _decision("Decision 3 recorded after the save"))["id"] == "dec-004"


@pytest.mark.parametrize("nuls", [b"\0" * 3478, b"\0" * 4096 + b"\n"])
def test_a_file_of_nul_bytes_is_named_as_a_crash_left_it_with_doctor_fix_as_the_way_back(empty_project, nuls):
    svc = _service(empty_project)
    svc.record("decision", DECISION)  # leaves a last good copy
    path = empty_project / ".context" / "decisions.json"
    path.write_bytes(nuls)
    fresh = _service(empty_project)
    said = [w for w in fresh.get_context(query="zone batches for stock take")["warnings"] if "decisions.json" in w]
    assert said and "only NUL bytes" in said[0] and "crash" in said[0], said
    assert "doctor --fix" in said[0] and "position" not in said[0] and "Expecting value" not in said[0]
    with pytest.raises(CorruptStoreFile) as refused:
        fresh.record("decision", {**DECISION, "summary": "Count one aisle at a time"})
    assert "only NUL bytes" in str(refused.value) and "Nothing was written to it" in str(refused.value)
    assert path.read_bytes() == nuls

    report = doctor.diagnose(empty_project)
    found = [f for f in report.findings if f.file == "decisions.json"]
    assert [f.code for f in found] == ["corrupt_file"] and "only NUL bytes" in found[0].message
    assert "line 1, column 1" not in found[0].message and found[0].fix
    doctor.repair(report)
    assert fresh.get_context(query="zone batches for stock take")["results"][0]["entry"]["id"] == "dec-001"


def test_a_file_of_nul_bytes_without_a_last_good_copy_is_not_sent_to_a_position_by_hand(empty_project):
    import shutil

    _service(empty_project).record("decision", DECISION)
    shutil.rmtree(empty_project / ".context" / ".last-good")
    (empty_project / ".context" / "decisions.json").write_bytes(b"\0" * 2048)
    found = {f.code: f.message for f in doctor.diagnose(empty_project).findings if f.file == "decisions.json"}
    assert "only NUL bytes" in found["corrupt_file"]
    assert "position" not in found["no_backup"] and "git checkout -- .context/decisions.json" in found["no_backup"]
