"""Which first shortlist size makes ``get_context`` cheapest at 10,000 entries?

    python benchmarks/bench_shortlist.py [2 3 4 5 6 8]

``SearchIndex._rank`` sorts the best ``limit × factor + 16`` candidates first, examines them
until none left could place, and doubles the shortlist while one outside it still could. Each factor is timed on the same warm service,
interleaved query by query (so the machine's changing speed affects every factor alike); the
figure is the median over queries of the fastest of five passes. The answers are compared too:
the factor may change the cost, never the answer.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_retrieval as bench  # noqa: E402

from context_keeper.search import engine  # noqa: E402
from context_keeper.service import Service  # noqa: E402


def main() -> int:
    factors = [int(a) for a in sys.argv[1:]] or [2, 3, 4, 5, 6, 8]
    store = bench.synthetic_store(10_000)
    queries = bench.synthetic_queries(200)
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Path(tmp) / ".context"
        ctx.mkdir()
        for kind, entries in store.items():
            (ctx / f"{kind}s.json").write_text(json.dumps(entries), encoding="utf-8")
        service = Service(clock=lambda: datetime(2026, 12, 1, tzinfo=timezone.utc))
        for q in queries[:20]:
            service.get_context(project_dir=tmp, query=q)  # warm-up
        best: dict[int, dict[int, float]] = {f: {} for f in factors}
        differ = 0
        for rep in range(5):
            for i, q in enumerate(queries):
                answers = set()
                for f in factors:
                    engine._SHORTLIST_FACTOR = f
                    t0 = time.perf_counter()
                    answer = service.get_context(project_dir=tmp, query=q)
                    best[f][i] = min(best[f].get(i, float("inf")), time.perf_counter() - t0)
                    if rep == 0:
                        answers.add(json.dumps(answer, sort_keys=True))
                differ += len(answers) > 1
    for f in factors:
        print(f"factor {f}: get_context median {statistics.median(best[f].values()) * 1000:.2f} ms")
    print(f"queries whose answer depends on the factor: {differ} of {len(queries)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
