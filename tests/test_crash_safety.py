"""kill -9 in the middle of a stream of writes: every file still parses and every write that was
acknowledged before the kill is on disk. Real processes, random kill points, repeated."""

from __future__ import annotations

import json
import subprocess
import sys

from benchmarks.bench_reliability import kill_cycles, new_project
from context_keeper.service import Service
from tests.conftest import REPO


def test_sigkill_during_a_stream_of_writes_loses_no_acknowledged_write(tmp_path):
    project = new_project(tmp_path)
    result = kill_cycles(project, server_kills=4, store_kills=12, seed=7)
    assert result["acknowledged"] > 0
    assert result["acknowledged_missing"] == []
    assert result["unparseable_files"] == []
    assert result["on_disk"] == result["distinct_ids_on_disk"] >= result["acknowledged"]
    # the store is fully usable afterwards: the dead writers' lock is gone, ids continue
    answer = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}).record("decision", {
        "summary": "Writes continue after the kills",
        "problem": "A killed writer must not leave the store locked or half written for the next one.",
        "why_chosen": "flock is released by the kernel when the holder dies, and files are replaced atomically."})
    assert answer["id"] == f"dec-{result['on_disk'] + 1:03d}"


_KILLED_HOLDING_THE_LOCK = """
import os, signal, sys
from pathlib import Path
from context_keeper.store import Store
with Store(Path(sys.argv[1])).locked():
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_process_killed_while_holding_the_lock_does_not_block_the_next_writer(tmp_path):
    project = new_project(tmp_path)
    proc = subprocess.run([sys.executable, "-c", _KILLED_HOLDING_THE_LOCK, str(project)], cwd=str(REPO), timeout=60)
    assert proc.returncode == -9
    answer = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}).record("constraint", {
        "rule": "Count before reconciling", "reason": "Reconciling mid-count double-booked the moves in the zone."})
    assert answer["id"] == "con-001"


def test_a_temp_file_left_by_a_killed_writer_is_ignored_by_readers(tmp_path):
    project = new_project(tmp_path)
    (project / ".context" / ".decisions.json.k1ll3d.tmp").write_text('[{"id": "dec-001", "summ', encoding="utf-8")
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    assert svc.query_entries(types=["decisions"])["results"] == []
    answer = svc.record("decision", {
        "summary": "Temp files are not store files",
        "problem": "A writer killed between writing its temp file and renaming it leaves the temp file behind.",
        "why_chosen": "Only the renamed file is the store; the temp file was never acknowledged to anyone."})
    assert answer["id"] == "dec-001"
    assert json.loads((project / ".context" / "decisions.json").read_text(encoding="utf-8"))[0]["id"] == "dec-001"
