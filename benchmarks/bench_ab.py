"""``get_context`` CPU time of this checkout against another revision, both in one process.

    python benchmarks/bench_ab.py REV [--entries 10000] [--queries 200] [--rounds 5] [--first this|rev]

On a shared machine two benchmark runs minutes apart differ by more than a change of 10-20%
moves the time. Here the revision's package is loaded beside this one (``git archive REV
context_keeper``, renamed), both serve the same synthetic store, and each query is asked of both
in turn, which goes first alternating: what the machine does meanwhile falls on both alike. The
figure per version is the median over queries of the fastest of ``--rounds`` CPU times
(``time.thread_time``). Both answer under one fixed clock, and the script says whether every
answer is the same byte for byte.

Which index is built first matters by itself: comparing a revision with itself, the copy whose
index was built first measured 1.01-1.08 times the other's CPU time. So by default the
comparison runs twice, in two processes, once with each built first, and the figure is the
geometric mean of the two ratios (``--first`` runs one order only). Comparing HEAD with itself
that way gave 1.015-1.029 in four runs, never under 1: differences under about 3% are not
resolved.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import math
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_retrieval import synthetic_queries, synthetic_store  # noqa: E402

OTHER = "context_keeper_rev"
FILES = {"decision": "decisions.json", "pipeline": "pipelines.json", "constraint": "constraints.json"}
CLOCK = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)


def load_revision(rev: str, into: Path):
    """The package as it is at ``rev``, importable as ``OTHER``."""
    archive = subprocess.run(["git", "archive", rev, "context_keeper"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    (into / "context_keeper").rename(into / OTHER)
    word = re.compile(r"\bcontext_keeper\b")
    for path in (into / OTHER).rglob("*.py"):
        path.write_text(word.sub(OTHER, path.read_text(encoding="utf-8")), encoding="utf-8")
    sys.path.insert(0, str(into))
    return importlib.import_module(f"{OTHER}.service")


def measure(rev: str, entries: int, n_queries: int, rounds: int, first: str) -> None:
    """One comparison, the index of ``first`` ("this" or "rev") built first; prints the ratio."""
    from context_keeper import service as this

    with tempfile.TemporaryDirectory() as tmp:
        other = load_revision(rev, Path(tmp) / "rev")
        project = Path(tmp) / "project"
        (project / ".context").mkdir(parents=True)
        for kind, store_entries in synthetic_store(entries).items():
            (project / ".context" / FILES[kind]).write_text(json.dumps(store_entries), encoding="utf-8")
        services = {"this checkout": this.Service(clock=lambda: CLOCK), rev: other.Service(clock=lambda: CLOCK)}
        queries = synthetic_queries(n_queries)
        answers: dict[str, list[str]] = {name: [] for name in services}
        build = list(services.items()) if first == "this" else list(reversed(services.items()))
        for name, service in build:
            for query in queries:  # builds the index, then warms it
                answers[name].append(json.dumps(service.get_context(project_dir=str(project), query=query)))
        fastest = {name: [float("inf")] * len(queries) for name in services}
        order = list(services.items())
        for _ in range(rounds):
            for i, query in enumerate(queries):
                order.reverse()
                for name, service in order:
                    t0 = time.thread_time()
                    service.get_context(project_dir=str(project), query=query)
                    fastest[name][i] = min(fastest[name][i], time.thread_time() - t0)
        medians = {name: statistics.median(times) * 1000 for name, times in fastest.items()}
        print(f"built first: {build[0][0]}")
        for name, ms in medians.items():
            times = fastest[name]  # quantiles needs two points: --queries 1 has no 90th percentile
            p90 = f", 90th percentile {statistics.quantiles(times, n=10)[-1] * 1000:.2f} ms" if len(times) > 1 else ""
            print(f"{name}: get_context CPU time {ms:.2f} ms{p90} (per-query minima over {rounds} rounds)")
        mine, theirs = medians["this checkout"], medians[rev]
        print(f"this checkout / {rev}: {mine / theirs:.3f}")
        same = answers["this checkout"] == answers[rev]
        print(f"answers: {'identical' if same else 'DIFFERENT'} ({len(queries)} queries, {entries} entries)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the revision to compare with (a commit, tag or branch)")
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--first", choices=("this", "rev"), help="build this index first, in this process only")
    args = parser.parse_args()
    if args.first:
        measure(args.rev, args.entries, args.queries, args.rounds, args.first)
        return
    ratios = []
    for first in ("this", "rev"):
        run = subprocess.run(
            [sys.executable, __file__, args.rev, "--entries", str(args.entries), "--queries", str(args.queries),
             "--rounds", str(args.rounds), "--first", first],
            capture_output=True, text=True,
        )
        print(run.stdout, end="")
        if run.returncode != 0:
            sys.exit(f"the run with {first} built first failed (exit {run.returncode}):\n{run.stderr}")
        ratios.append(float(re.search(r"this checkout / .*: ([0-9.]+)", run.stdout).group(1)))
    print(f"this checkout / {args.rev}, geometric mean of both build orders: {math.sqrt(ratios[0] * ratios[1]):.3f}")


if __name__ == "__main__":
    main()
