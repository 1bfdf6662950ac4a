"""Negatives flagged at matched false-flag rates: does a change separate unanswered questions
better, whatever the threshold?

For each configuration, the engine's top relevance of every case of a split; the threshold is
placed so that a given share of the answerable questions (positives and history) falls below it,
and the share of unanswered questions below it is reported, with the AUC. Descriptive only:
nothing here picks a threshold (calibrate.py does that, on dev).

    python evals/flag_rates.py --split test --set answer_type_factor=1.0
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import calibrate  # noqa: E402
import run_retrieval as rr  # noqa: E402
from context_keeper.search.tuning import DEFAULT_TUNING  # noqa: E402

RATES = (0.03, 0.04, 0.05, 0.06)


def flag_rates(rows: list[dict], rates=RATES) -> tuple[float, list[float]]:
    answerable = sorted(r["rel"] for r in rows if r["type"] != "negative")
    unanswered = [r["rel"] for r in rows if r["type"] == "negative"]
    if not answerable or not unanswered:
        raise SystemExit("flag_rates: the cases need both answerable and unanswered questions")
    auc = calibrate.auc(rows, [r["rel"] for r in rows])
    shares = []
    for rate in rates:
        k = int(rate * len(answerable))
        threshold = answerable[k] if k < len(answerable) else 1.0  # the k lowest fall below it
        shares.append(sum(u < threshold for u in unanswered) / len(unanswered))
    return auc, shares


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    ap.add_argument("--stores", type=Path, help="other stores (a folder of projects), as run_retrieval.py takes them")
    ap.add_argument("--golden", type=Path, help="other cases, as run_retrieval.py takes them")
    ap.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                    help="a second configuration: the default with these knobs changed")
    args = ap.parse_args(argv)
    stores = rr.load_stores(rr.store_dirs([args.stores]) if args.stores else None)
    cases = [c for c in rr.load_cases(args.golden or rr.GOLDEN)
             if c.store in stores and (args.split == "all" or c.split == args.split)]
    configs = [("default", DEFAULT_TUNING)]
    if args.set:
        configs.append((" ".join(args.set), dataclasses.replace(DEFAULT_TUNING, **rr.tuning_overrides(args.set))))
    print(f"{args.split}: answerable flagged at " + " / ".join(f"{r:.2f}" for r in RATES) + " -> unanswered flagged")
    for name, tuning in configs:
        auc, shares = flag_rates(calibrate.collect(tuning, stores, cases))
        print(f"{name:40s} AUC {auc:.3f}  " + " / ".join(f"{s:.3f}" for s in shares))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
