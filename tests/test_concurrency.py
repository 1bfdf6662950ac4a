"""Many writers on one store, as real processes: nothing acknowledged is lost, no id is handed out
twice, and no reader ever sees a half-written file.

The harness lives in benchmarks/bench_reliability.py (the same code produces the README figures).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

from benchmarks.bench_reliability import concurrent_writers, new_project
from context_keeper import store as store_module
from context_keeper.model import DECISION
from context_keeper.service import Service
from context_keeper.store import Store
from tests.conftest import REPO

RULE = {"rule": "Count before reconciling", "reason": "Reconciling mid-count double-booked the moves in the zone."}


def test_eight_server_processes_with_sidecar_writers_and_a_reader_lose_nothing(tmp_path):
    result = concurrent_writers(new_project(tmp_path), writers=8, records=50, direct=30, timeout=240)
    assert result["acknowledged"] == 400
    assert result["acknowledged_distinct"] == 400
    assert result["on_disk"] == 400
    assert result["distinct_ids_on_disk"] == 400
    assert result["acknowledged_missing"] == []
    assert result["direct_acknowledged"] == result["direct_on_disk"] == 30
    assert result["direct_missing"] == []
    assert result["sidecar_writes"] > 0 and result["reads"] > 0
    assert result["torn_reads"] == 0, result["torn_read_examples"]
    assert result["unparseable_files"] == []


def test_a_write_never_works_on_a_stale_copy_even_when_the_stamp_lies(tmp_path, monkeypatch):
    """Same size, same timestamp tick, recycled inode: the stamp cannot tell; the content check can."""
    root = new_project(tmp_path)
    monkeypatch.setattr(store_module, "_stamp", lambda path: (1, 1, 1, 1) if path.exists() else None)
    ours, theirs = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}), Store(root)
    ours.record("constraint", RULE)
    ours.store().state(DECISION)  # cached under the constant stamp
    with theirs.transaction() as txn:
        txn.file(DECISION).append({"id": "dec-001", "summary": "written by another process"})
    answer = ours.record("decision", {
        "summary": "Zone batches for stock take",
        "problem": "A full stop for stock take cost a day of shipping every year at every site.",
        "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs."})
    assert answer["id"] == "dec-002"
    stored = json.loads((root / ".context" / "decisions.json").read_text(encoding="utf-8"))
    assert [e["id"] for e in stored] == ["dec-001", "dec-002"]


def test_threads_sharing_one_service_allocate_distinct_ids(tmp_path):
    root = new_project(tmp_path)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)})
    ids: list[str] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        for i in range(10):
            answer = svc.record("constraint", {"rule": f"Thread {n} rule {i} holds", "reason": RULE["reason"]})
            with lock:
                ids.append(answer["id"])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    stored = json.loads((root / ".context" / "constraints.json").read_text(encoding="utf-8"))
    assert len(ids) == len(set(ids)) == len(stored) == 60


_HOLD_LOCK = """
import sys
from pathlib import Path
from context_keeper.store import Store
store = Store(Path(sys.argv[1]))
with store.locked():
    print("locked", flush=True)
    sys.stdin.readline()
"""


def test_a_writer_waits_for_the_lock_holder_and_then_proceeds(tmp_path):
    root = new_project(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(root)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=str(REPO))
    try:
        assert holder.stdout.readline().strip() == "locked"
        done = threading.Event()
        result: dict = {}

        def write() -> None:
            result.update(Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}).record("constraint", RULE))
            done.set()

        writer = threading.Thread(target=write)
        writer.start()
        assert not done.wait(timeout=0.5)  # blocked behind the other process's lock
        holder.stdin.write("\n")
        holder.stdin.flush()
        writer.join(timeout=60)
        assert done.is_set() and result["id"] == "con-001"
    finally:
        holder.kill()
        holder.wait(timeout=30)
