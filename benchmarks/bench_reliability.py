"""Reliability figures: concurrent writer processes, kill -9 during writes, fuzzed tool calls.

    python benchmarks/bench_reliability.py [--writers 8] [--records 50] [--server-kills 5]
                                           [--store-kills 20] [--fuzz 300] [--seed 1] [--json]

Everything runs against a fresh temporary project, with real processes:

- **writers**: ``--writers`` MCP server processes (``python -m context_keeper`` over stdio,
  driven by the SDK client) each record ``--records`` decisions at the same time, while another
  process records constraints through the service directly (as the CLI and hooks do), one
  rewrites sidecars (compaction snapshot, hook state) in a loop, and one reads and parses every
  file in ``.context/`` in a loop. Counted: acknowledged ids, entries on disk, distinct ids,
  acknowledged ids missing, torn reads.
- **kills**: a server process (``--server-kills`` times) or a bare store writer
  (``--store-kills`` times) receives SIGKILL at a random moment of a continuous stream of
  writes. Counted: acknowledged writes missing afterwards, files that no longer parse.
- **fuzz**: hypothesis draws ``--fuzz`` tool calls with arbitrary arguments through the SDK's
  in-process client. Counted: calls, rejections (``isError``), crashes (an error without a
  reason), rejected calls that changed a byte on disk.

The tests in ``tests/test_concurrency.py``, ``test_crash_safety.py`` and ``test_fuzz_tools.py``
run these same functions and assert on the results.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from context_keeper.model import KINDS  # noqa: E402
from context_keeper.service import Service  # noqa: E402

PY = sys.executable


def _env(project: Path) -> dict[str, str]:
    env = {**os.environ, "CONTEXT_KEEPER_PROJECT": str(project), "PYTHONIOENCODING": "utf-8"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def new_project(parent: Path, name: str = "proj") -> Path:
    root = Path(parent) / name
    root.mkdir(parents=True)
    Service(env={}).init_project(str(root))
    return root


def store_ids(project: Path, kind: str = "decision") -> list[str]:
    data = json.loads((project / ".context" / KINDS[kind].filename).read_text(encoding="utf-8"))
    return [item["id"] for item in data]


def unparseable_files(project: Path) -> list[str]:
    """Every JSON file under .context/ (backups included) that does not parse."""
    bad = []
    for path in sorted((project / ".context").rglob("*.json")):
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            bad.append(str(path.relative_to(project)))
    return bad


def temp_leftovers(project: Path) -> int:
    return sum(1 for _ in (project / ".context").rglob(".*.tmp"))


TOPICS = ["the label printer queue", "wave picking", "the scanner sync protocol", "carrier rate caching",
          "the migration runner", "order import retries", "shipment manifests", "the barcode parser"]


def decision_args(writer: int, seq: int) -> dict[str, Any]:
    topic = TOPICS[(writer + seq) % len(TOPICS)]
    return {
        "summary": f"Writer {writer} decision {seq} about {topic}",
        "problem": f"Writer {writer} needed a rule for {topic} (record {seq}) because two sites disagreed.",
        "why_chosen": f"Record {seq} of writer {writer}: this option for {topic} kept both sites consistent "
                      "and was the cheapest to operate.",
        "tags": [f"w{writer}", "concurrency"],
    }


# ---------------------------------------------------------------- helper processes

_SIDECARS = """
import json, sys, time
from pathlib import Path
from context_keeper.store import Store
try:  # the PreCompact hook's own snapshot writer, when the hooks are installed in this checkout
    from context_keeper.compaction import take_snapshot
except ImportError:
    take_snapshot = None
root, stop = sys.argv[1], Path(sys.argv[2])
store, n = Store(Path(root)), 0
while not stop.exists():
    if take_snapshot is not None:
        take_snapshot(root, trigger="auto")
    else:
        store.write_sidecar("compaction_snapshot.json", {"timestamp": time.time(), "n": n})
    store.write_sidecar("session_state.json", {"sessions": {str(i): n for i in range(20)}, "note": "é" * 200})
    n += 1
print(json.dumps({"sidecar_writes": 2 * n}))
"""

_DIRECT = """
import json, sys
from context_keeper.service import Service
svc, count = Service(env={"CONTEXT_KEEPER_PROJECT": sys.argv[1]}), int(sys.argv[2])
ids = []
for i in range(count):
    answer = svc.record("constraint", {
        "rule": f"Direct writer rule {i} holds everywhere",
        "reason": f"Constraint {i} written through the service, as the CLI and the hooks do it.",
        "tags": ["direct"]})
    ids.append(answer["id"])
print(json.dumps({"ids": ids}))
"""

_READER = """
import json, sys, time
from pathlib import Path
context, stop = Path(sys.argv[1]) / ".context", Path(sys.argv[2])
reads = failures = 0
examples = []
names = ["decisions.json", "constraints.json", "pipelines.json", "compaction_snapshot.json",
         "compaction_pending_state.json", "session_state.json", ".last-good/decisions.json"]
while not stop.exists():
    for name in names:
        try:
            text = (context / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        reads += 1
        try:
            json.loads(text)
        except ValueError as exc:
            failures += 1
            examples.append(f"{name}: {exc}")
print(json.dumps({"reads": reads, "failures": failures, "examples": examples[:5]}))
"""


def _spawn(code: str, *args: str, project: Path) -> subprocess.Popen:
    return subprocess.Popen([PY, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(project), text=True, encoding="utf-8")


def _result(proc: subprocess.Popen, timeout: float) -> dict[str, Any]:
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"helper process failed ({proc.returncode}): {err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])


# ---------------------------------------------------------------- concurrent writers


async def _server_writer(project: Path, writer: int, records: int) -> list[str]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=PY, args=["-m", "context_keeper"], env=_env(project), cwd=str(ROOT))
    acked = []
    async with Client(params, mode="legacy") as client:
        for seq in range(records):
            result = await client.call_tool("record_decision", decision_args(writer, seq))
            if result.is_error:
                raise AssertionError(f"writer {writer} record {seq} failed: {result.content[0].text}")
            acked.append(json.loads(result.content[0].text)["id"])
    return acked


def concurrent_writers(project: Path, writers: int = 8, records: int = 50, direct: int = 30,
                       timeout: float = 240.0) -> dict[str, Any]:
    """Server processes + a direct writer + a sidecar writer + a reader, all at once."""
    import anyio

    stop = project.parent / f"{project.name}.stop"
    reader = _spawn(_READER, str(project), str(stop), project=project)
    sidecars = _spawn(_SIDECARS, str(project), str(stop), project=project)
    direct_proc = _spawn(_DIRECT, str(project), str(direct), project=project)
    acked: dict[int, list[str]] = {}
    started = time.perf_counter()

    async def main() -> None:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                for w in range(writers):
                    async def run(w: int = w) -> None:
                        acked[w] = await _server_writer(project, w, records)
                    tg.start_soon(run)

    try:
        anyio.run(main)
        direct_ids = _result(direct_proc, timeout)["ids"]
    finally:
        stop.touch()
        for proc in (direct_proc, sidecars, reader):
            if proc.poll() is None and proc is direct_proc:
                proc.kill()
    elapsed = time.perf_counter() - started
    reads = _result(reader, 60)
    side = _result(sidecars, 60)
    stop.unlink()

    all_acked = [i for ids in acked.values() for i in ids]
    on_disk = store_ids(project, "decision")
    constraints = store_ids(project, "constraint")
    return {
        "writers": writers,
        "records_per_writer": records,
        "acknowledged": len(all_acked),
        "acknowledged_distinct": len(set(all_acked)),
        "on_disk": len(on_disk),
        "distinct_ids_on_disk": len(set(on_disk)),
        "acknowledged_missing": sorted(set(all_acked) - set(on_disk)),
        "direct_acknowledged": len(direct_ids),
        "direct_missing": sorted(set(direct_ids) - set(constraints)),
        "direct_on_disk": len(constraints),
        "sidecar_writes": side["sidecar_writes"],
        "reads": reads["reads"],
        "torn_reads": reads["failures"],
        "torn_read_examples": reads["examples"],
        "unparseable_files": unparseable_files(project),
        "seconds": round(elapsed, 1),
    }


# ---------------------------------------------------------------- kill -9

_STORE_WRITER = """
import sys
from context_keeper.service import Service
svc, i = Service(env={"CONTEXT_KEEPER_PROJECT": sys.argv[1]}), 0
while True:
    answer = svc.record("decision", {
        "summary": f"Stream write {i} of a process about to be killed",
        "problem": "A continuous stream of writes that SIGKILL interrupts at a random moment.",
        "why_chosen": "Every write acknowledged before the kill must be on disk afterwards; every file must parse."})
    sys.stdout.write(answer["id"] + "\\n")
    sys.stdout.flush()
    i += 1
"""


def _kill_store_writer(project: Path, rng: random.Random) -> list[str]:
    proc = subprocess.Popen([PY, "-c", _STORE_WRITER, str(project)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=_env(project), text=True, encoding="utf-8")
    acked: list[str] = []
    first = proc.stdout.readline()
    if first:
        acked.append(first.strip())
    time.sleep(rng.uniform(0.0, 0.25))  # a random point in the stream (not a wait for a result)
    proc.send_signal(signal.SIGKILL)
    rest, _ = proc.communicate(timeout=30)
    # A line is only complete (acknowledged) if its newline arrived.
    acked += [line for line in rest.split("\n")[:-1] if line]
    return acked


def _rpc(method: str, params: dict, ident: int | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        msg["id"] = ident
    return (json.dumps(msg) + "\n").encode("utf-8")


def _kill_server(project: Path, rng: random.Random, window: int = 4) -> list[str]:
    """Stream record calls into a stdio server (``window`` in flight at all times) and SIGKILL it
    the moment a random number of them has been answered, with the next ones mid-flight."""
    proc = subprocess.Popen([PY, "-m", "context_keeper"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=_env(project), cwd=str(ROOT))
    acked: list[str] = []
    kill_after = rng.randint(1, 30)
    sent = 0

    def send_next() -> None:
        nonlocal sent
        sent += 1
        proc.stdin.write(_rpc("tools/call", {"name": "record_decision", "arguments": decision_args(99, sent)}, sent))
        proc.stdin.flush()

    proc.stdin.write(_rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "bench", "version": "0"}}, 0))
    proc.stdin.flush()
    json.loads(proc.stdout.readline())
    proc.stdin.write(_rpc("notifications/initialized", {}))
    for _ in range(window):
        send_next()
    try:
        for line in proc.stdout:
            msg = json.loads(line)
            result = msg.get("result") or {}
            if result.get("isError") or "content" not in result:
                raise RuntimeError(f"unexpected answer: {msg}")
            acked.append(json.loads(result["content"][0]["text"])["id"])
            if len(acked) >= kill_after:
                proc.send_signal(signal.SIGKILL)
                break
            send_next()
    finally:
        proc.kill()
        proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()
    return acked


def kill_cycles(project: Path, server_kills: int = 5, store_kills: int = 20, seed: int = 1) -> dict[str, Any]:
    rng = random.Random(seed)
    acked: list[str] = []
    started = time.perf_counter()
    for _ in range(server_kills):
        acked += _kill_server(project, rng)
    for _ in range(store_kills):
        acked += _kill_store_writer(project, rng)
    on_disk = store_ids(project)
    return {
        "server_kills": server_kills,
        "store_kills": store_kills,
        "acknowledged": len(acked),
        "acknowledged_missing": sorted(set(acked) - set(on_disk)),
        "on_disk": len(on_disk),
        "distinct_ids_on_disk": len(set(on_disk)),
        "unparseable_files": unparseable_files(project),
        "temp_files_left": temp_leftovers(project),
        "seconds": round(time.perf_counter() - started, 1),
    }


# ---------------------------------------------------------------- fuzz

GOOD_TEXT = {
    "summary": "Use SQLite for the scanner's offline cache",
    "name": "Release the scanner app",
    "rule": "Never block the pick screen on the network",
    "problem": "Scanners lose Wi-Fi in the cold store aisles for minutes at a time, and picks must go on.",
    "why_chosen": "SQLite is on every Android device, survives app restarts, and the sync code already speaks SQL.",
    "purpose": "Ship a signed scanner build to every site without breaking the running waves.",
    "reason": "A blocked pick screen stopped a whole wave for twenty minutes during the March outage.",
    "query": "how does the scanner behave offline?",
    "text": "scanner",
    "reason_for_deprecation": "replaced by the new sync protocol",
}
IDS = ["dec-001", "dec-002", "con-001", "pipe-001", "dec-999", "dec-013-a7f3", "../../etc/passwd", "dec-1",
       "DEC-001", " dec-001 ", "dec-", "", "con-001/../../x"]


def _value_strategy(name: str, schema: dict, project: str, elsewhere: str, plausible: bool):
    from hypothesis import strategies as st

    junk = st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-(2**40), max_value=2**40),
        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
        st.lists(st.one_of(st.text(max_size=20), st.integers(), st.none()), max_size=4),
        st.dictionaries(st.text(max_size=10), st.one_of(st.text(max_size=20), st.integers()), max_size=3),
    )
    good: list = []
    if name in GOOD_TEXT:
        good.append(st.just(GOOD_TEXT[name]))
        good.append(st.text(min_size=60, max_size=300))  # any Unicode, long enough to be accepted
        if plausible:
            return st.one_of(*good)
    if name in ("id", "superseded_by", "merge_into", "supersedes"):
        good.append(st.sampled_from(IDS))
    if name in ("related_to", "supersedes") or schema.get("type") == "array":
        good.append(st.lists(st.sampled_from(IDS + ["storage", "scanner"]), max_size=3))
    if name == "steps":
        if plausible:
            return st.lists(st.text(min_size=1, max_size=40).filter(str.strip), min_size=1, max_size=3)
        good.append(st.lists(st.one_of(st.text(min_size=1, max_size=30),
                                       st.fixed_dictionaries({"action": st.text(max_size=30)})), max_size=3))
    if name == "updates":
        fields = st.sampled_from(["summary", "tags", "why_chosen", "status", "scope", "steps", "id", "created_at",
                                  "superseded_by", "origin", "hardness", "custom_note"])
        good.append(st.dictionaries(fields, junk | st.sampled_from(list(GOOD_TEXT.values())), max_size=3))
    if name == "project_dir":
        good.append(st.sampled_from(["", project, project, "relative/dir", "/nonexistent/dir", elsewhere,
                                     project + "/../" + Path(project).name]))
    if name == "path":
        good.append(st.sampled_from(["DECISIONS.md", "docs/decisions.md", "../outside.md", "/etc/ck.md",
                                     ".context/decisions.json", "link-out/x.md", "", "."]))
    if name in ("since", "before"):
        good.append(st.sampled_from(["2026-01-31", "2020-01-01T00:00:00+00:00", "yesterday", "2026-13-45"]))
    if "enum" in schema:
        good.append(st.sampled_from(schema["enum"]))
    for option in schema.get("anyOf", []):
        if "enum" in option:
            good.append(st.sampled_from(option["enum"]))
    if schema.get("type") == "integer":
        good.append(st.integers(min_value=-5, max_value=300_000))
    if schema.get("type") == "string":
        good.append(st.text(max_size=200))
    if not good:
        return junk
    return st.one_of(*good) if plausible else st.one_of(*good, junk)


def _snapshot(root: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".lock" not in path.name:
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def fuzz_tools(project: Path, examples: int = 300, seed: int = 1) -> dict[str, Any]:
    """Hypothesis-drawn tool calls through the in-process client.

    Raises AssertionError (after hypothesis shrinks it) when a call crashes (an error without a
    reason: an exception that was not one of ours), hangs, or is rejected after changing a file.
    """
    import anyio
    from hypothesis import HealthCheck, given, seed as hseed, settings, strategies as st
    from mcp import Client

    from context_keeper.server import build_server

    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # rejected arguments are the point here
    elsewhere = project.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    (project / "link-out").symlink_to(elsewhere, target_is_directory=True)
    server = build_server(Service(env={}, cwd=str(project)))
    tools = {t.name: t.parameters for t in server._tool_manager.list_tools()}
    # Half the calls draw only plausible values (so they reach the service and the store), half
    # mix in values of any JSON type (so they exercise the schema edge).
    def strategy(name: str, params: dict, plausible: bool):
        props = params.get("properties", {})
        required = set(params.get("required", []))
        if plausible:
            required |= {p for p in ("summary", "problem", "why_chosen", "name", "purpose", "steps", "rule", "reason")
                         if p in props and name != "record_entry"}
        values = {p: _value_strategy(p, schema, str(project), str(elsewhere), plausible) for p, schema in props.items()}
        return st.fixed_dictionaries({p: values[p] for p in required},
                                     optional={p: v for p, v in values.items() if p not in required})

    calls = {(name, plausible): strategy(name, params, plausible)
             for name, params in tools.items() for plausible in (True, False)}
    extra = st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=8), max_size=2)
    counts = {"calls": 0, "rejections": 0, "accepted": 0, "accepted_writes": 0, "crashes": 0,
              "rejected_with_changes": 0}
    roots = [project, elsewhere]

    async def call(tool: str, args: dict) -> tuple[bool, str]:
        with anyio.fail_after(30):
            async with Client(server, mode="legacy") as client:
                result = await client.call_tool(tool, args)
        return bool(result.is_error), result.content[0].text if result.content else ""

    @hseed(seed)
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data: Any) -> None:
        tool = data.draw(st.sampled_from(sorted(tools)), label="tool")
        args = data.draw(calls[tool, data.draw(st.booleans(), label="plausible")], label="args")
        if data.draw(st.booleans(), label="add unknown args"):
            args.update(data.draw(extra, label="unknown args"))
        args.setdefault("project_dir", str(project))
        before = [_snapshot(r) for r in roots]
        is_error, text = anyio.run(call, tool, args)
        counts["calls"] += 1
        if is_error:
            counts["rejections"] += 1
            if text.strip() in (f"Error executing tool {tool}", ""):
                counts["crashes"] += 1
                raise AssertionError(f"{tool}({args!r}) crashed instead of answering with a reason")
            if [_snapshot(r) for r in roots] != before:
                counts["rejected_with_changes"] += 1
                raise AssertionError(f"{tool}({args!r}) was rejected ({text}) but changed files")
        else:
            counts["accepted"] += 1
            json.loads(text)
            if [_snapshot(r) for r in roots] != before:
                counts["accepted_writes"] += 1

    run()
    counts["examples"] = examples
    return counts


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--records", type=int, default=50)
    parser.add_argument("--server-kills", type=int, default=5)
    parser.add_argument("--store-kills", type=int, default=20)
    parser.add_argument("--fuzz", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ck-reliability-") as tmp:
        tmp_path = Path(tmp)
        results["concurrent_writers"] = concurrent_writers(new_project(tmp_path, "writers"), args.writers, args.records)
        results["kills"] = kill_cycles(new_project(tmp_path, "kills"), args.server_kills, args.store_kills, args.seed)
        if args.fuzz:
            results["fuzz"] = fuzz_tools(new_project(tmp_path, "fuzz"), args.fuzz, args.seed)
        shutil.rmtree(tmp_path, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    w, k = results["concurrent_writers"], results["kills"]
    print(f"Concurrent writers: {w['writers']} server processes x {w['records_per_writer']} records "
          f"+ {w['direct_acknowledged']} direct records, {w['sidecar_writes']} sidecar rewrites, {w['reads']} reads "
          f"in {w['seconds']} s")
    print(f"  acknowledged {w['acknowledged']} -> on disk {w['on_disk']}, distinct ids {w['distinct_ids_on_disk']}, "
          f"lost {len(w['acknowledged_missing']) + len(w['direct_missing'])}, torn reads {w['torn_reads']}")
    print(f"kill -9: {k['server_kills']} server kills + {k['store_kills']} writer kills in {k['seconds']} s")
    print(f"  acknowledged {k['acknowledged']} -> lost {len(k['acknowledged_missing'])}, "
          f"files that do not parse {len(k['unparseable_files'])}, temp files left {k['temp_files_left']}")
    if "fuzz" in results:
        f = results["fuzz"]
        print(f"fuzz: {f['calls']} tool calls, {f['rejections']} rejected (isError), {f['accepted']} accepted, "
              f"crashes {f['crashes']}, rejected calls that changed a file {f['rejected_with_changes']}")


if __name__ == "__main__":
    main()
