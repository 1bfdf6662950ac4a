"""Choose one ranking knob by leave-one-store-out MRR on dev, and say how the choice holds out.

    python evals/knob_cv.py procedure_prior 1 1.25 1.5 1.75 2 2.5 3
    python evals/knob_cv.py group_weights "[3,2,1,0.6]" "[3,2,1,0.8]"

For each store, the value with the best dev MRR over the other stores (ties to the value
nearest the default) is applied to that store's dev positives; the held-out reciprocal ranks are
pooled. Prints the value chosen per fold, the pooled held-out MRR and hit@5, and every value's
in-sample dev MRR. Engine row (``SearchIndex``), default tuning but for the knob. The test split
is never read.
"""

from __future__ import annotations

import argparse
import json
import dataclasses
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import run_retrieval as rr  # noqa: E402

from context_keeper.search.tuning import DEFAULT_TUNING  # noqa: E402


def _parsed(text: str, kind: type, length: int = 0) -> Any:
    if kind is tuple:
        value = json.loads(text)
        if not isinstance(value, list) or len(value) != length or not all(isinstance(x, (int, float)) for x in value):
            raise ValueError(f"{text!r} is not a JSON list of {length} numbers")
        return tuple(float(x) for x in value)
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise ValueError(f"{text!r} is not true or false")
        return text.lower() == "true"
    return kind(text)


def _distance(value: Any, default: Any) -> float:
    """How far a value is from the default, to break ties towards it."""
    if isinstance(default, tuple):
        return sum(abs(a - b) for a, b in zip(value, default))
    return abs(float(value) - float(default))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("knob", help="a field of context_keeper.search.tuning.Tuning, e.g. procedure_prior")
    ap.add_argument("values", nargs="+", help="values of the knob's own type: 1.5, 3, true, or a JSON list for a tuple knob")
    args = ap.parse_args(argv)
    if args.knob not in {f.name for f in dataclasses.fields(DEFAULT_TUNING)}:
        ap.error(f"no knob named {args.knob!r} in Tuning")
    default = getattr(DEFAULT_TUNING, args.knob)
    length = len(default) if isinstance(default, tuple) else 0
    try:
        args.values = [_parsed(v, type(default), length) for v in args.values]
    except ValueError as exc:
        ap.error(f"{args.knob} takes {type(default).__name__} values: {exc}")
    stores = rr.load_stores()
    cases = [c for c in rr.load_cases() if c.split == "dev" and c.type == "positive"]
    found: dict[tuple[float, str], tuple[float, float]] = {}
    for value in args.values:
        system = rr.EngineSystem(dataclasses.replace(DEFAULT_TUNING, **{args.knob: value}))
        for c in cases:
            ids = system.answer(stores[c.store], c.query).ids
            rank = next((r for r, i in enumerate(ids, 1) if i in c.expected), None)
            found[(value, c.id)] = (1.0 / rank if rank else 0.0, float(rank is not None and rank <= rr.K))

    def mrr(value: float, subset: list[rr.Case]) -> float:
        return sum(found[(value, c.id)][0] for c in subset) / max(1, len(subset))

    held: list[tuple[float, float]] = []
    chosen = []
    for store in sorted({c.store for c in cases}):
        train = [c for c in cases if c.store != store]
        best = max(args.values, key=lambda v: (mrr(v, train), -_distance(v, default)))
        chosen.append(f"{store}={best}")
        held.extend(found[(best, c.id)] for c in cases if c.store == store)
    print("chosen per held-out store:", " ".join(chosen))
    print(f"held-out MRR {sum(r for r, _ in held) / len(held):.4f}  hit@5 {sum(h for _, h in held) / len(held):.4f}")
    for value in args.values:
        print(f"{args.knob}={value}: in-sample dev MRR {mrr(value, cases):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
