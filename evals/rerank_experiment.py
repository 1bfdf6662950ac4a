"""Would a learned re-ranking of the engine's top candidates rank the answer higher? (round 6)

    python evals/rerank_experiment.py [--top 20] [--l2 1.0]

For each dev positive and history question the engine's first ``--top`` hits get features: the
ordering score (relative to the first hit's, log), the calibrated relevance, the IDF-weighted
share of the question's words found in each field group (title, tags, main text, details) and
anywhere, the share found only through a related term, 1/rank, the kind, superseded or not, and
the entry's length. A pairwise logistic model (answer above non-answer) is fitted on all dev
stores but one and re-ranks the one left out; the pooled held-out MRR, hit@5 and history hit@5
are printed beside the engine's own. Nothing here is used by the product: it answers whether
such a model is worth shipping (it was not: evals/README.md, round 6).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evals"))

import calibrate  # noqa: E402
import run_retrieval as rr  # noqa: E402

from context_keeper.search import SearchOptions  # noqa: E402

FEATURES = ("log_score_ratio", "relevance", "cov_title", "cov_tags", "cov_main", "cov_aux", "cov_related_only",
            "cov_any", "inv_rank", "is_constraint", "is_pipeline", "is_superseded", "log_length")


def features(ix, q, slot: int, score: float, relevance: float, top_score: float, rank: int) -> list[float]:
    info = ix._entries[slot]
    total = sum(alternatives[0][1] for alternatives in q.groups) or 1.0
    cov = [0.0, 0.0, 0.0, 0.0]
    related_only = found = 0.0
    for alternatives in q.groups:
        term, weight = alternatives[0]
        counts = info.tf.get(term)
        if counts:
            found += weight
            for g in range(4):
                if counts[g] > 0:
                    cov[g] += weight
        elif any(info.tf.get(alt) for alt, _ in alternatives[1:]):
            related_only += weight
    kind = info.key[0]
    return [math.log(max(score, 1e-9)) - math.log(max(top_score, 1e-9)), relevance, *(c / total for c in cov),
            related_only / total, found / total, 1.0 / rank, float(kind == "constraint"), float(kind == "pipeline"),
            float(info.status == "superseded"), math.log1p(sum(info.lens))]


def collect(top: int) -> list[tuple[rr.Case, list[list[float]], list[bool]]]:
    stores = rr.load_stores()
    engine = rr.EngineSystem()
    out = []
    for case in rr.load_cases():
        if case.split != "dev" or case.type not in ("positive", "history"):
            continue
        store = stores[case.store]
        engine.answer(store, case.query)  # builds the store's index
        ix = engine._indexes[store.name]
        result = ix.search(case.query, SearchOptions(now=rr.EVAL_NOW, limit=top))
        q = ix._query(case.query)
        first = result.hits[0].score if result.hits else 1.0
        rows, labels = [], []
        for rank, hit in enumerate(result.hits, start=1):
            slot = ix._slots[(hit.kind, hit.entry["id"])]
            rows.append(features(ix, q, slot, hit.score, hit.relevance, first, rank))
            labels.append(hit.entry["id"] in case.expected)
        out.append((case, rows, labels))
    return out


def train(data, l2: float) -> list[float]:
    """Pairwise logistic regression: each (answer, non-answer) difference, both ways round."""
    X, y = [], []
    for _case, rows, labels in data:
        for i, good in enumerate(labels):
            if not good:
                continue
            for j, bad in enumerate(labels):
                if bad:
                    continue
                diff = [a - b for a, b in zip(rows[i], rows[j])]
                X += [diff, [-d for d in diff]]
                y += [1, 0]
    _bias, coef = calibrate.fit(X, y, l2)
    return coef


def first_answer(rows, labels, coef: Sequence[float] | None) -> int | None:
    order = list(range(len(rows)))
    if coef is not None:
        order.sort(key=lambda i: -sum(c * v for c, v in zip(coef, rows[i])))  # stable: ties keep rank
    return next((pos for pos, i in enumerate(order) if labels[i]), None)


def figures(pairs) -> tuple[float, float, float]:
    rr_pos, hit_pos, hit_hist = [], [], []
    for case, pos in pairs:
        if case.type == "positive":
            rr_pos.append(1.0 / (pos + 1) if pos is not None else 0.0)
            hit_pos.append(float(pos is not None and pos < 5))
        else:
            hit_hist.append(float(pos is not None and pos < 5))
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    return mean(rr_pos), mean(hit_pos), mean(hit_hist)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=20, help="candidates re-ranked per question")
    parser.add_argument("--l2", type=float, action="append", help="L2 strength (repeatable; default 0.1, 1, 10)")
    args = parser.parse_args(argv)
    data = collect(args.top)
    base = figures([(case, first_answer(rows, labels, None)) for case, rows, labels in data])
    print(f"engine order       MRR {base[0]:.3f}  hit@5 {base[1]:.3f}  history hit@5 {base[2]:.3f}  "
          f"({sum(c.type == 'positive' for c, _, _ in data)} dev positives, {sum(c.type == 'history' for c, _, _ in data)} history)")
    by_store = defaultdict(list)
    for item in data:
        by_store[item[0].store].append(item)
    for l2 in args.l2 or [0.1, 1.0, 10.0]:
        pairs = []
        for store, held_out in sorted(by_store.items()):
            coef = train([d for d in data if d[0].store != store], l2)
            pairs += [(case, first_answer(rows, labels, coef)) for case, rows, labels in held_out]
        mrr, hit, hist = figures(pairs)
        print(f"re-ranked, l2 {l2:<5g}  MRR {mrr:.3f}  hit@5 {hit:.3f}  history hit@5 {hist:.3f}  (held out by store)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
