"""Answerable questions whose entry is returned but not first: which kind of entry came first.

    python evals/rank_kinds.py [--split dev] [--only STORE,...]

Prints how many answerable questions of the split have their first expected entry at each rank
(1–5, lower, or not returned), and, for those returned below first place, a count per pair
(kind expected, kind ranked first): "constraint <- decision: 52" says 52 questions asked for a
constraint and got a decision first. The round-19 log quotes it for the dev split. Reads only
the split it is given; the shipped path (``Service.get_context``), as run_retrieval.py.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run_retrieval as rr  # noqa: E402

KIND = {"dec": "decision", "pipe": "pipeline", "con": "constraint"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--only", default="", help="comma-separated store names")
    args = parser.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    stores = rr.load_stores()
    cases = [c for c in rr.load_cases() if c.split == args.split and c.type == "positive" and (not only or c.store in only)]
    system = rr.ServiceSystem()
    ranks: Counter = Counter()
    pairs: Counter = Counter()
    for case in cases:
        ids = list(system.answer(stores[case.store], case.query).ids)
        rank = next((i + 1 for i, entry_id in enumerate(ids) if entry_id in case.expected), None)
        ranks["not returned" if rank is None else rank if rank <= 5 else "below 5"] += 1
        if rank is not None and rank > 1:
            pairs[(KIND[case.expected[0].split("-")[0]], KIND[ids[0].split("-")[0]])] += 1
    print(f"{len(cases)} answerable {args.split} questions; first expected entry at rank:")
    for key in (1, 2, 3, 4, 5, "below 5", "not returned"):
        print(f"  {key}: {ranks[key]}")
    print(f"returned but not first: {sum(pairs.values())}; kind expected <- kind ranked first:")
    for (expected, first), count in pairs.most_common():
        print(f"  {expected} <- {first}: {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
