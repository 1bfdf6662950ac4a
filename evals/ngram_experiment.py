"""Spelling neighbours (character trigrams) on and off, measured on dev only.

    python evals/ngram_experiment.py [--theta 0.5] [--most 3] [--min-length 5] [--no-latency]

Round 8 measured the idea here by patching the engine; round 9 made it part of the engine
(context_keeper/search/neighbours.py, ``Tuning.ngram_*``), and this script now compares the
engine with ``ngram_most = 0`` against the given parameters (defaults: the shipped ones). A
query word of at least ``--min-length`` letters that is not an everyday word (generic.py) also
gets, as stand-ins beside the related-term table's, the store's terms whose character trigrams
(of the stem, with ^ and $ marking its ends) have a Jaccard similarity of at least ``--theta``
with its own, the ``--most`` closest. "kommentar" then meets "comment", "reanalys" meets
"reanalysi"; like every stand-in they weigh ``synonym_weight`` of the word and are capped by
``max_related``.

Prints the engine's dev row both ways, every dev case whose rank (or a negative's flag) moved,
leave-one-store-out abstention (calibrate.py's protocol, ≤ 4% of dev positives flagged) both
ways, and ``SearchIndex.search`` CPU time on the synthetic 10,000-entry store both ways. The
test split is never read.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evals"))

import calibrate  # noqa: E402
import run_retrieval as rr  # noqa: E402
from context_keeper.search.tuning import DEFAULT_TUNING, Tuning  # noqa: E402


def rank(case: rr.Case, answer: rr.Answer) -> int | None:
    return next((r for r, i in enumerate(answer.ids, 1) if i in case.expected), None)


def search_ms(tuning: Tuning) -> float:
    from benchmarks.bench_retrieval import synthetic_queries, synthetic_store
    from context_keeper.search import Doc, SearchIndex, SearchOptions

    ix = SearchIndex(tuning)
    for kind, entries in synthetic_store(10_000).items():
        ix.replace_kind(kind, (Doc(kind, e) for e in entries))
    queries, options = synthetic_queries(200), SearchOptions(limit=20)
    for q in queries[:20]:
        ix.search(q, options)
    fastest = [float("inf")] * len(queries)
    for _ in range(3):
        for i, q in enumerate(queries):
            t0 = time.thread_time()
            ix.search(q, options)
            fastest[i] = min(fastest[i], time.thread_time() - t0)
    return statistics.median(fastest) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--theta", type=float, default=DEFAULT_TUNING.ngram_theta, help="least trigram Jaccard similarity")
    parser.add_argument("--most", type=int, default=DEFAULT_TUNING.ngram_most, help="neighbours per query word")
    parser.add_argument("--min-length", type=int, default=DEFAULT_TUNING.ngram_min_length,
                        help="shortest query word (stem) that gets any")
    parser.add_argument("--max-pos-flagged", type=float, default=0.04)
    parser.add_argument("--no-latency", action="store_true", help="skip the 10,000-entry timing")
    args = parser.parse_args(argv)
    tunings = {
        False: dataclasses.replace(DEFAULT_TUNING, ngram_most=0),
        True: dataclasses.replace(DEFAULT_TUNING, ngram_most=args.most, ngram_theta=args.theta,
                                  ngram_min_length=args.min_length),
    }
    stores = rr.load_stores()
    dev = [c for c in rr.load_cases() if c.split == "dev"]
    runs = {}
    for on, tuning in tunings.items():
        row, runs[on] = rr.evaluate(rr.EngineSystem(tuning), dev, stores, "dev")
        row.system = f"engine, trigram neighbours {'on' if on else 'off'}"
        print(rr.markdown([row]).splitlines()[-1])
    for (case, before), (_, after) in zip(runs[False], runs[True]):
        if case.type != "negative" and rank(case, before) != rank(case, after):
            print(f"  {case.id} [{case.store}] rank {rank(case, before)} -> {rank(case, after)}: {case.query[:90]}")
        elif case.type == "negative" and before.flagged != after.flagged:
            print(f"  {case.id} [{case.store}] negative flagged {before.flagged} -> {after.flagged}")
    for on, tuning in tunings.items():
        cv = calibrate.cross_validate(calibrate.collect(tuning, stores, dev), ["log_rel"], args.max_pos_flagged)
        print(f"CV, neighbours {'on' if on else 'off'}: neg flagged {cv['neg flagged']:.3f}, pos flagged "
              f"{cv['pos flagged']:.3f}, AUC {cv['AUC']:.3f}")
    if not args.no_latency:
        off, on = search_ms(tunings[False]), search_ms(tunings[True])
        print(f"SearchIndex.search CPU time at 10,000 entries: {off:.2f} ms off, {on:.2f} ms on")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
