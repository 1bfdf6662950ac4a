"""Core figures for the README: record latency, summary latency, server cold start.

    python benchmarks/bench_core.py            # full run (a minute or two)
    python benchmarks/bench_core.py --quick    # fewer repetitions

- record_* median at 10,000 entries: in-process Service, warm (the server's steady state),
  each call a full locked, fsynced write of the store file.
- get_project_summary median at 200 / 2,000 / 10,000 entries: computed after a store change,
  and repeated while the store is unchanged (served from the service's cache).
- cold start: spawn the server → initialize → tools/list, versus a bare MCPServer with one tool
  (the SDK import is the floor). Medians over repeated spawns; also the size of the tools/list
  result as compact JSON (``tools_list_chars``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.synthetic import make_sized_store  # noqa: E402
from context_keeper.service import Service  # noqa: E402
from context_keeper.summary import build_summary  # noqa: E402

BARE_SERVER = """
from mcp.server.mcpserver import MCPServer
mcp = MCPServer("bare")
@mcp.tool()
def ping() -> str:
    return "pong"
mcp.run()
"""

HANDSHAKE = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
    '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
)


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def bench_record(n_entries: int, calls: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = make_sized_store(Path(tmp) / "p", n_entries)
        svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)})
        svc.get_context(query="warm up the index")
        samples = {"decision": [], "constraint": [], "pipeline": []}
        for i in range(calls):
            for kind, values in (
                ("decision", {"summary": f"Benchmark decision {i}", "problem": "A realistic problem statement " * 3,
                              "why_chosen": "A realistic explanation of why this option won over the others " * 2,
                              "tags": ["bench", "cache"]}),
                ("constraint", {"rule": f"Benchmark rule {i}", "reason": "Because an incident showed why it matters " * 2,
                                "scope": "src/"}),
                ("pipeline", {"name": f"Benchmark pipeline {i}", "purpose": "A workflow that the team repeats often " * 2,
                              "steps": ["build", "test", "ship"]}),
            ):
                start = time.perf_counter()
                svc.record(kind, values)
                samples[kind].append(time.perf_counter() - start)
        return {kind: _median_ms(s) for kind, s in samples.items()}


def bench_summary(n_entries: int, calls: int) -> dict:
    """``after_change``: the summary computed from the store (what the first call after a write
    costs); ``repeat``: the service call while the store is unchanged (served from its cache)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = make_sized_store(Path(tmp) / "p", n_entries)
        svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)})
        svc.get_project_summary()
        store = svc.store()
        states = {s.kind.name: s for s in store.all_states()}
        computed, repeated = [], []
        for _ in range(calls):
            start = time.perf_counter()
            build_summary("synthetic", states["decision"].entries, states["pipeline"].entries,
                          states["constraint"].entries, token_budget=2000)
            computed.append(time.perf_counter() - start)
            start = time.perf_counter()
            svc.get_project_summary()
            repeated.append(time.perf_counter() - start)
        return {"after_change": _median_ms(computed), "repeat": _median_ms(repeated)}


def _spawn_to_tools_list(cmd: list[str], env: dict) -> tuple[float, bytes]:
    """Seconds from spawn to the tools/list answer, and that answer's line."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    proc.stdin.write(HANDSHAKE.encode())
    proc.stdin.flush()
    answer = b""
    for line in proc.stdout:
        if b'"id":2' in line:
            answer = line
            break
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(timeout=10)
    return elapsed, answer


def bench_cold_start(runs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = make_sized_store(Path(tmp) / "p", 200)
        env = {**os.environ, "CONTEXT_KEEPER_PROJECT": str(root)}
        ours, bare = [], []
        answer = b""
        for _ in range(runs):  # interleaved so machine noise hits both alike
            elapsed, answer = _spawn_to_tools_list([sys.executable, "-m", "context_keeper"], env)
            ours.append(elapsed)
            bare.append(_spawn_to_tools_list([sys.executable, "-c", BARE_SERVER], env)[0])
        o, b = _median_ms(ours), _median_ms(bare)
        # The tools/list result as compact JSON, the size tests/test_contract.py bounds.
        listed = json.loads(answer)["result"]
        return {"context_keeper_ms": o, "bare_mcpserver_ms": b, "overhead_pct": round((o / b - 1) * 100, 1),
                "tools": len(listed["tools"]), "tools_list_chars": len(json.dumps(listed, separators=(",", ":")))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    reps = 5 if args.quick else 20
    results = {
        "record_median_ms_at_10000_entries": bench_record(10_000, reps),
        "summary_median_ms": {n: bench_summary(n, reps * 2) for n in (200, 2_000, 10_000)},
        "cold_start": bench_cold_start(5 if args.quick else 15),
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
