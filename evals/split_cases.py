"""Assign new golden cases to dev or test: a random half of each store's cases of each kind.

    python evals/split_cases.py 20261217 new/*.jsonl >> evals/golden.jsonl

The cases come one JSON object a line, as their writers wrote them (id, store, query, kind,
expected, note); they are printed in id order with a ``split`` field. Within each store and kind
the cases are shuffled by a generator seeded with ``SEED`` and the first half (rounded up) goes
to dev, so a split is decided by chance, never by how hard a case looks, and anyone can redo it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

KINDS = ("positive", "negative", "history")
FIELDS = ("id", "store", "query", "kind", "expected", "split", "note")


def split(cases: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for case in sorted(cases, key=lambda c: c["id"]):
        if case.get("kind") not in KINDS:
            raise SystemExit(f"{case.get('id')}: kind must be one of {', '.join(KINDS)}, not {case.get('kind')!r}")
        groups[(case["store"], case["kind"])].append(case)
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for key in sorted(groups):
        group = groups[key][:]
        rng.shuffle(group)
        half = (len(group) + 1) // 2
        for i, case in enumerate(group):
            out.append({**case, "split": "dev" if i < half else "test"})
    return sorted(out, key=lambda c: c["id"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seed", type=int)
    ap.add_argument("files", nargs="+", type=Path)
    args = ap.parse_args(argv)
    cases = [json.loads(line) for path in args.files for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    ids = [c["id"] for c in cases]
    if len(set(ids)) != len(ids):
        raise SystemExit("case ids repeat: " + ", ".join(sorted({i for i in ids if ids.count(i) > 1})))
    for case in split(cases, args.seed):
        ordered = {k: case[k] for k in FIELDS if k in case} | {k: v for k, v in case.items() if k not in FIELDS}
        sys.stdout.write(json.dumps(ordered, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
