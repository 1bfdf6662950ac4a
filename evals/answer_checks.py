"""Checks of get_context / record answers over the eval stores, reproducible with one command.

    python evals/answer_checks.py budgets [--budgets 50,60,80,100] [--golden FILE]
    python evals/answer_checks.py restatements > now.txt   # then diff with a run at another commit
    python evals/answer_checks.py relevance                 # per store: answered vs unanswered
    python evals/answer_checks.py answers > now.json        # every answer, to diff with another commit
    python evals/answer_checks.py answers --dense-min 0     # ... every store scored over arrays
    python evals/answer_checks.py unknown-ids               # queries that are ids no entry has

``budgets``: for every question of ``evals/golden.jsonl`` and each budget, is the first entry of
the answer the first entry of the answer at the default budget? Prints how many differ, per
budget (the small-budget figure of evals/README.md, round 5).

``restatements``: every entry of the demo and eval stores offered again as a new record of its
kind; prints, per entry, the ids ``similar_entries`` would list (those at or above
``similar_threshold``), sorted. Run it at two commits and diff the outputs to see what a change to
``SearchIndex.similar`` changes (round 5: the title route changed none of the 605 lines).

``relevance``: per store, the median ``top_relevance`` of its answered (positive) and unanswered
(negative) questions, both splits, as the engine computes it: where the unanswered median is at
or above the answered one, no threshold on relevance can flag most unanswered questions without
flagging most answered ones (evals/README.md, round 6).

``answers``: ``get_context`` answers as JSON, one a line, under a fixed clock: 400 synthetic
queries on a synthetic 3,000-entry store at the default budget, 80 and 300 tokens (more entries
than any shortlist, which the eval stores are not), then every eval question at the default
budget, at 60 and 200 tokens and with ``scope="src/"``. Two commits that print the same lines
give the same answers (round 6: copied into checkouts of 23bafd9 and 748721b, 3,312 lines each,
identical).

``unknown-ids``: over every eval store (copied, so nothing is written to them), a query that is
just an id no entry has (``dec-999``, ``con-999``, ``pipe-999``, ``dec-0``); prints how many were
answered confidently (without ``no_confident_match``). Round 16: 195 of 268 before the fix, 0
after.
"""

from __future__ import annotations

import argparse
import collections
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evals"))

import run_retrieval as rr  # noqa: E402

from context_keeper.search import Doc  # noqa: E402

SIMILAR_THRESHOLD = 0.30  # config.DEFAULTS["similar_threshold"]


def budgets(values: Sequence[int], golden: Path) -> int:
    stores = rr.load_stores()
    system = rr.ServiceSystem()
    differ: collections.Counter[int] = collections.Counter()
    cases = [c for c in rr.load_cases(golden) if c.store in stores]
    for case in cases:
        project = system._project(stores[case.store])
        full = system.service.get_context(project_dir=project, query=case.query)["results"]
        if not full:
            continue
        for budget in values:
            small = system.service.get_context(project_dir=project, query=case.query, token_budget=budget)["results"]
            if not small or small[0]["entry"]["id"] != full[0]["entry"]["id"]:
                differ[budget] += 1
    print(f"{len(cases)} questions; first entry differs from the default-budget answer's:")
    for budget in values:
        print(f"  token_budget {budget}: {differ[budget]}")
    print(f"  all: {sum(differ.values())} of {len(cases) * len(values)}")
    return 0


def restatements() -> int:
    for name, store in sorted(rr.load_stores().items()):
        index = rr.engine_index(store)
        for kind, entry in store.entries:
            # The entry's own id keeps it out of its list, as a new record is kept out of its own.
            hits = [h for h in index.similar(Doc(kind, entry)) if h.relevance >= SIMILAR_THRESHOLD]
            listed = ", ".join(sorted(h.entry["id"] for h in hits))  # the set: diffs show what changed
            print(f"{name} {entry['id']}: {listed}")
    return 0


def relevance() -> int:
    import statistics

    stores = rr.load_stores()
    system = rr.EngineSystem()
    tops: dict[str, dict[str, list[float]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for case in rr.load_cases():
        if case.store in stores and case.type in ("positive", "negative"):
            tops[case.store][case.type].append(system.answer(stores[case.store], case.query).top_relevance)
    for name in sorted(tops):
        answered, unanswered = (statistics.median(tops[name][k]) for k in ("positive", "negative"))
        mark = "  unanswered >= answered" if unanswered >= answered else ""
        print(f"{name:14} answered {answered:.3f}  unanswered {unanswered:.3f}{mark}")
    return 0


def answers() -> int:
    import json
    import tempfile
    from datetime import datetime, timezone

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_retrieval as bench

    from context_keeper.service import Service

    service = Service(clock=lambda: datetime(2026, 12, 1, 12, tzinfo=timezone.utc))

    def emit(**kwargs: object) -> None:
        print(json.dumps(service.get_context(**kwargs), sort_keys=True, ensure_ascii=False))

    with tempfile.TemporaryDirectory() as tmp:
        ctx = Path(tmp) / ".context"
        ctx.mkdir()
        for kind, entries in bench.synthetic_store(3000, seed=7).items():
            (ctx / f"{kind}s.json").write_text(json.dumps(entries), encoding="utf-8")
        for query in bench.synthetic_queries(300, seed=11) + bench.synthetic_queries(100, seed=5):
            for budget in (None, 80, 300):
                emit(project_dir=tmp, query=query, token_budget=budget)
    dirs = {path.name: str(path) for path in rr.STORE_DIRS}
    for case in rr.load_cases():
        for budget in (None, 60, 200):
            emit(project_dir=dirs[case.store], query=case.query, token_budget=budget)
        emit(project_dir=dirs[case.store], query=case.query, scope="src/")
    return 0


UNKNOWN_IDS = ("dec-999", "con-999", "pipe-999", "dec-0")


def unknown_ids() -> int:
    import shutil
    import tempfile

    from context_keeper.service import Service

    service, asked, confident = Service(), 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for store in rr.STORE_DIRS:
            if store.name == "demo-project" or not (store / ".context").is_dir():
                continue
            copy = Path(tmp) / store.name
            shutil.copytree(store, copy)
            for query in UNKNOWN_IDS:
                asked += 1
                confident += not service.get_context(project_dir=str(copy), query=query).get("no_confident_match")
    print(f"{confident} of {asked} queries that are an id no entry has were answered confidently")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="check", required=True)
    p = sub.add_parser("budgets")
    p.add_argument("--budgets", default="50,60,80,100")
    p.add_argument("--golden", type=Path, default=rr.GOLDEN, help="questions (default evals/golden.jsonl)")
    sub.add_parser("restatements")
    sub.add_parser("relevance")
    sub.add_parser("unknown-ids")
    p = sub.add_parser("answers")
    p.add_argument("--dense-min", type=int, default=None, metavar="N",
                   help="score stores of N entries or more over arrays (search/dense.py; 0: every store, "
                        "a huge N: none) instead of the shipped threshold, to compare the two paths")
    args = parser.parse_args(argv)
    if args.check == "budgets":
        return budgets([int(b) for b in args.budgets.split(",")], args.golden)
    if args.check == "relevance":
        return relevance()
    if args.check == "unknown-ids":
        return unknown_ids()
    if args.check == "answers":
        if args.dense_min is not None:
            from context_keeper.search import engine

            engine.DENSE_MIN = args.dense_min
        return answers()
    return restatements()


if __name__ == "__main__":
    sys.exit(main())
