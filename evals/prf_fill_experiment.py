"""Round 12: pseudo-relevance feedback for the lower places only, measured on dev.

    python evals/prf_fill_experiment.py [--keep 0 1 2 3 5] [--set prf_docs=2 ...]

Feedback (``Tuning.prf``: terms of the first-pass top entries added to the query) lifted hit@5
in round 1 and lowered MRR, so it was left off. Here the first ``keep`` results come from the
plain ranking and the rest from the feedback ranking (entries not already placed), which can
only move what is ranked below ``keep``. Engine row (``SearchIndex``), dev positives and
history questions, fixed clock; abstention is untouched (relevance never includes feedback).
Also prints ``SearchIndex.search`` CPU time on the synthetic 10,000-entry store with feedback
off and on (feedback scores over dictionaries, not the arrays of dense.py). The test split is
never read.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import run_retrieval as rr  # noqa: E402

from context_keeper.search import Doc, SearchIndex, SearchOptions  # noqa: E402
from context_keeper.search.tuning import DEFAULT_TUNING, Tuning  # noqa: E402


def _index(entries, tuning: Tuning) -> SearchIndex:
    ix = SearchIndex(tuning)
    for kind, entry in entries:
        ix.upsert(Doc(kind, entry))
    ix.settle()  # as the service scores a loaded store
    return ix


def figures(keep: int, feedback: Tuning) -> str:
    stores = rr.load_stores()
    cases = [c for c in rr.load_cases() if c.split == "dev" and c.type in ("positive", "history")]
    plain_ix = {name: _index(s.entries, DEFAULT_TUNING) for name, s in stores.items()}
    fed_ix = {name: _index(s.entries, feedback) for name, s in stores.items()}
    hits, recalls, rrs, history = [], [], [], []
    for c in cases:
        options = SearchOptions(now=rr.EVAL_NOW, limit=20)
        plain = [h.entry["id"] for h in plain_ix[c.store].search(c.query, options).hits]
        fed = [h.entry["id"] for h in fed_ix[c.store].search(c.query, options).hits]
        out = plain[:keep] + [i for i in fed if i not in plain[:keep]]
        out += [i for i in plain if i not in out]
        top = out[: rr.K]
        if c.type == "history":
            history.append(float(any(i in top for i in c.expected)))
            continue
        hits.append(float(any(i in top for i in c.expected)))
        recalls.append(sum(i in top for i in c.expected) / len(c.expected))
        rank = next((r for r, i in enumerate(out, 1) if i in c.expected), None)
        rrs.append(1.0 / rank if rank else 0.0)
    mean = statistics.fmean
    return (f"keep {keep}: hit@5 {mean(hits):.3f}  recall@5 {mean(recalls):.3f}  MRR {mean(rrs):.3f}  "
            f"history hit@5 {mean(history):.3f}  ({len(hits)} positives, {len(history)} history)")


def search_cpu_ms(tuning: Tuning) -> float:
    from benchmarks.bench_retrieval import synthetic_queries, synthetic_store

    ix = SearchIndex(tuning)
    for kind, entries in synthetic_store(10_000).items():
        for entry in entries:
            ix.upsert(Doc(kind, entry))
    queries = synthetic_queries(200)
    for q in queries:
        ix.search(q, SearchOptions(limit=20))
    fastest = [float("inf")] * len(queries)
    for _ in range(3):
        for i, q in enumerate(queries):
            t0 = time.thread_time()
            ix.search(q, SearchOptions(limit=20))
            fastest[i] = min(fastest[i], time.thread_time() - t0)
    return statistics.median(fastest) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=int, nargs="+", default=[5, 0, 1, 2, 3])
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="feedback knobs, e.g. prf_docs=2")
    parser.add_argument("--no-latency", action="store_true")
    args = parser.parse_args()
    feedback = dataclasses.replace(DEFAULT_TUNING, prf=True, **rr.tuning_overrides(args.set))
    for keep in args.keep:
        print(figures(keep, feedback) + ("  (= no feedback)" if keep >= rr.K else ""))
    if not args.no_latency:
        print(f"SearchIndex.search CPU time at 10,000 entries: feedback off {search_cpu_ms(DEFAULT_TUNING):.2f} ms, "
              f"on {search_cpu_ms(feedback):.2f} ms (median of per-query minima over 3 passes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
