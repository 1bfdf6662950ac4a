"""Calibrate the abstention model on the dev split, with leave-one-store-out cross-validation.

    python evals/calibrate.py [--set knob=value ...] [--features log_rel,absent] [--max-pos-flagged 0.03]

For every dev case (positives, history and negatives of ``evals/golden.jsonl``) the engine is
run with the confidence mapping off, and the top hit's features are collected:

- ``log_rel``: ln of coverage × coherence (abstain.py) of the most relevant hit;
- ``absent``: share of the question's topical (non-everyday) IDF weight made of words the
  store never uses — an in-domain question nobody answered often hinges on one or two such
  words ("GraphQL", "Switzerland");
- any name of ``qpp_experiment.FEATURES`` (round 7: clarity, WIG, NQC, query feedback, SCQ,
  IDF, PMI coherence, ...; see that module), collected when ``--features`` names one.

Cross-validation: for each store, a logistic model (class-balanced, L2) is fitted on the other
stores' dev cases and its threshold set so that at most ``--max-pos-flagged`` of their
positives are flagged; the held-out store's cases are then scored. The pooled held-out figures
("CV") estimate how the configuration generalises to unseen stores; the figures of the model
fitted on all dev stores ("in-sample") are printed beside them. The final coefficients are
fitted on all dev stores; with the single feature ``log_rel`` (what CV chose, see
``evals/README.md``) the output is the exponent ``CONF_GAMMA`` that maps the fitted threshold to
``DEFAULT_MIN_RELEVANCE`` = 0.5: paste it into ``context_keeper/search/abstain.py``.

With ``--semantic-url URL [--semantic-weight W]`` the relevance is instead the top relevance
``Service.get_context`` reports with the optional semantic blend on (``semantic`` config in
every store copy, see ``run_retrieval.semantic_config``): ``log_rel`` = ln of the blended
relevance, and the same leave-one-store-out protocol fits its threshold, printed as a
``min_relevance`` value for that model and weight. ``--service`` does the same without the blend
(a check that the service path reproduces the engine's figures).

The test split is never read here.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evals"))

import run_retrieval as rr  # noqa: E402

from context_keeper.search import SearchIndex, SearchOptions  # noqa: E402
from context_keeper.search.tuning import DEFAULT_TUNING  # noqa: E402

TARGET = 0.5  # the confidence the fitted threshold is mapped to (DEFAULT_MIN_RELEVANCE)
FLOOR = 0.005


def collect(tuning, stores, cases, qpp: bool = False) -> list[dict]:
    """Features of every case; with ``qpp`` also the query-performance predictors of
    ``evals/qpp_experiment.py`` (round 7), by name."""
    tuning = dataclasses.replace(tuning, confidence=False)
    if qpp:
        from qpp_experiment import qpp_features
    indexes: dict[str, SearchIndex] = {}
    rows = []
    for c in cases:
        ix = indexes.get(c.store)
        if ix is None:
            ix = indexes[c.store] = rr.engine_index(stores[c.store], tuning)
        res = ix.search(c.query, SearchOptions(now=rr.EVAL_NOW, limit=20))
        q = ix._query(c.query)
        rows.append(
            {
                "id": c.id,
                "store": c.store,
                "type": c.type,
                "query": c.query,
                "rel": res.top_relevance,
                "log_rel": math.log(max(res.top_relevance, FLOOR)),
                "absent": q.absent,
            }
        )
        if qpp:
            rows[-1].update(qpp_features(ix, c.query, res, rr.EVAL_NOW))
    return rows


def collect_service(system: rr.ServiceSystem, stores, cases) -> list[dict]:
    """Rows like ``collect``'s, from the service path (``log_rel`` only: the blended relevance)."""
    rows = []
    for c in cases:
        system.last_features = {}
        a = system.answer(stores[c.store], c.query)
        row = {"id": c.id, "store": c.store, "type": c.type, "query": c.query,
               "rel": a.top_relevance, "log_rel": math.log(max(a.top_relevance, FLOOR))}
        if system.last_features:  # blend on: lexical relevance and best cosine, for --features
            row["log_lex"] = math.log(max(system.last_features["lexical"], FLOOR))
            row["max_cos"] = system.last_features["max_cos"]
        rows.append(row)
    return rows


def ablated(system: rr.ServiceSystem, stores, cases, rows: Sequence[dict], max_pos_flagged: float) -> None:
    """Dev positives re-asked without their expected entries, scored against the dev positives:
    AUC of the relevance, and the share flagged at the threshold fitted on all dev."""
    import dataclasses as dc

    extra = []
    for c in cases:
        if c.type != "positive":
            continue
        store = stores[c.store]
        variant = dc.replace(store, name=f"{store.name}~{c.id}", drop=frozenset(c.expected))
        a = system.answer(variant, c.query)
        extra.append({"store": c.store, "type": "negative", "log_rel": math.log(max(a.top_relevance, FLOOR))})
    if system.blend_failures:
        print(f"ERROR: {system.blend_failures} queries fell back to lexical", file=sys.stderr)
    pos = [r for r in rows if r["type"] == "positive"]
    _, _, th = model(rows, ["log_rel"], max_pos_flagged)
    flagged = sum(r["log_rel"] < th for r in extra) / len(extra)
    print(f"ablated positives ({len(extra)}): AUC vs dev positives {auc(pos + extra, [r['log_rel'] for r in pos + extra]):.3f}; "
          f"flagged at the all-dev threshold {math.exp(th):.4f}: {flagged:.3f}")


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def fit(X: Sequence[Sequence[float]], y: Sequence[int], l2: float = 1.0) -> tuple[float, list[float]]:
    """Class-balanced L2 logistic regression by Newton steps (standardised features)."""
    d = len(X[0])
    mu = [sum(x[j] for x in X) / len(X) for j in range(d)]
    sd = [max(1e-6, math.sqrt(sum((x[j] - mu[j]) ** 2 for x in X) / len(X))) for j in range(d)]
    Z = [[(x[j] - mu[j]) / sd[j] for j in range(d)] for x in X]
    npos = sum(y)
    cw = {1: len(y) / (2 * npos), 0: len(y) / (2 * (len(y) - npos))}
    w = [0.0] * (d + 1)
    for _ in range(100):
        g = [0.0] * (d + 1)
        H = [[0.0] * (d + 1) for _ in range(d + 1)]
        for z, t in zip(Z, y):
            v = [1.0, *z]
            p = _sigmoid(sum(a * b for a, b in zip(w, v)))
            c = cw[t]
            for i in range(d + 1):
                g[i] += c * (p - t) * v[i]
                for j in range(d + 1):
                    H[i][j] += c * p * (1 - p) * v[i] * v[j]
        for i in range(1, d + 1):
            g[i] += l2 * w[i]
            H[i][i] += l2
        step = _solve(H, g)
        w = [a - b for a, b in zip(w, step)]
        if max(abs(s) for s in step) < 1e-9:
            break
    coef = [w[j + 1] / sd[j] for j in range(d)]
    bias = w[0] - sum(w[j + 1] * mu[j] / sd[j] for j in range(d))
    return bias, coef


def _solve(A: list[list[float]], b: list[float]) -> list[float]:
    n = len(b)
    M = [row[:] + [b[i]] for i, row in enumerate(A)]
    for i in range(n):
        piv = max(range(i, n), key=lambda r: abs(M[r][i]))
        M[i], M[piv] = M[piv], M[i]
        for r in range(n):
            if r != i and M[i][i] != 0.0:
                f = M[r][i] / M[i][i]
                for c in range(i, n + 1):
                    M[r][c] -= f * M[i][c]
    return [M[i][n] / M[i][i] if M[i][i] else 0.0 for i in range(n)]


def score(bias: float, coef: Sequence[float], row: dict, features: Sequence[str]) -> float:
    return bias + sum(c * row[f] for c, f in zip(coef, features))


def threshold(scores_pos: Sequence[float], max_pos_flagged: float) -> float:
    """A threshold flagging at most ``max_pos_flagged`` of these positives, halfway between the
    last positive it flags and the first it keeps (not flush against a positive's score)."""
    s = sorted(scores_pos)
    if not s:
        return 0.0
    k = int(max_pos_flagged * len(s))
    return (s[k] + s[k - 1]) / 2 if k > 0 else s[0] - 0.25


def model(rows: Sequence[dict], features: Sequence[str], max_pos_flagged: float) -> tuple[float, list[float], float]:
    train = [r for r in rows]
    X = [[r[f] for f in features] for r in train]
    y = [int(r["type"] != "negative") for r in train]
    if list(features) == ["log_rel"]:
        bias, coef = 0.0, [1.0]  # one feature: only the threshold is fitted
    else:
        bias, coef = fit(X, y)
    th = threshold([score(bias, coef, r, features) for r in train if r["type"] == "positive"], max_pos_flagged)
    return bias, coef, th


def figures(rows: Sequence[dict], flagged: Sequence[bool]) -> dict[str, float]:
    def share(kind: str) -> float:
        xs = [f for r, f in zip(rows, flagged) if r["type"] == kind]
        return sum(xs) / len(xs) if xs else 0.0

    return {"neg flagged": share("negative"), "pos flagged": share("positive"), "history flagged": share("history")}


def auc(rows: Sequence[dict], scores: Sequence[float]) -> float:
    pos = [s for r, s in zip(rows, scores) if r["type"] != "negative"]
    neg = [s for r, s in zip(rows, scores) if r["type"] == "negative"]
    if not pos or not neg:
        return 0.0
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


def cross_validate(rows: Sequence[dict], features: Sequence[str], max_pos_flagged: float) -> dict[str, float]:
    stores = sorted({r["store"] for r in rows})
    held, flags, scores = [], [], []
    for s in stores:
        bias, coef, th = model([r for r in rows if r["store"] != s], features, max_pos_flagged)
        for r in rows:
            if r["store"] == s:
                z = score(bias, coef, r, features)
                held.append(r)
                flags.append(z < th)
                scores.append(z - th)
    out = figures(held, flags)
    out["AUC"] = auc(held, scores)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE")
    parser.add_argument("--features", default="log_rel", help="log_rel; with --semantic-url also log_lex (lexical relevance before the blend) and max_cos (best cosine among the candidates)")
    parser.add_argument("--max-pos-flagged", type=float, default=0.03)
    parser.add_argument("--json", type=Path, help="write the collected dev features")
    parser.add_argument("--service", action="store_true", help="relevance from Service.get_context (lexical) instead of the engine")
    parser.add_argument("--semantic-url", help="relevance from Service.get_context with the semantic blend on, this endpoint")
    parser.add_argument("--semantic-weight", type=float, default=0.6, help="blend share w (default 0.6 = semantic.weight 150)")
    parser.add_argument("--semantic-model", default="all-MiniLM-L6-v2")
    parser.add_argument("--ablated", action="store_true", help="with --service / --semantic-url: also re-ask every dev positive "
                        "against its store without the expected entries (a realistic 'recorded nearby, not recorded' negative)")
    args = parser.parse_args(argv)
    overrides = rr.tuning_overrides(args.set)
    tuning = dataclasses.replace(DEFAULT_TUNING, **overrides)
    stores = rr.load_stores()
    cases = [c for c in rr.load_cases() if c.store in stores and c.split == "dev"]
    service = args.service or args.semantic_url
    if service and (overrides or (args.features != "log_rel" and not args.semantic_url)):
        parser.error("--service / --semantic-url take the relevance as shipped: no --set; features other than "
                     "log_rel (log_lex, max_cos) only with --semantic-url")
    system = None
    if args.semantic_url:
        system = rr.ServiceSystem({"semantic": rr.semantic_config(args.semantic_url, args.semantic_weight, args.semantic_model)})
        rows = collect_service(system, stores, cases)
        if system.blend_failures or system.blend_calls != len(cases):
            print(f"ERROR: {system.blend_failures} of {len(cases)} queries fell back to lexical "
                  f"({system.blend_calls} blended): this does not measure the blend", file=sys.stderr)
            return 2
        print(f"relevance: service, semantic blend w={args.semantic_weight:g} ({args.semantic_model}), {system.blend_calls} queries blended")
    elif args.service:
        rows = collect_service(rr.ServiceSystem(), stores, cases)
        print("relevance: service (lexical, 3-decimal top_relevance)")
    else:
        from qpp_experiment import FEATURES as QPP

        rows = collect(tuning, stores, cases, qpp=any(f in QPP for f in args.features.split(",")))
    if args.ablated and system is None and not args.service:
        parser.error("--ablated needs --service or --semantic-url")
    if args.ablated:
        ablated(system or rr.ServiceSystem(), stores, cases, rows, args.max_pos_flagged)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    features = args.features.split(",")
    n = {k: sum(r["type"] == k for r in rows) for k in ("positive", "negative", "history")}
    print(f"dev stores: {', '.join(sorted({r['store'] for r in rows}))}; cases {n}; features {features}")
    cv = cross_validate(rows, features, args.max_pos_flagged)
    bias, coef, th = model(rows, features, args.max_pos_flagged)
    ins = figures(rows, [score(bias, coef, r, features) < th for r in rows])
    ins["AUC"] = auc(rows, [score(bias, coef, r, features) for r in rows])
    for name, fig in (("CV (leave one store out)", cv), ("in-sample (all dev)", ins)):
        print(f"{name:26s} " + "  ".join(f"{k} {v:.3f}" for k, v in fig.items()))
    if service and features != ["log_rel"]:
        print("coefficients: bias %.4f, %s; threshold %.4f" % (bias, ", ".join(f"{f} {c:.4f}" for f, c in zip(features, coef)), th))
    elif service:
        print(f"threshold (fitted on all dev): relevance {math.exp(th):.4f} (config min_relevance for this relevance)")
    elif features == ["log_rel"]:
        # confidence = relevance ** gamma puts the fitted threshold at TARGET.
        print(f"threshold: relevance {math.exp(th):.4f}; CONF_GAMMA = {math.log(TARGET) / th:.4f}")
    else:
        # Shift the intercept so the fitted threshold sits at confidence TARGET.
        shifted = bias - th + math.log(TARGET / (1 - TARGET))
        print("coefficients: bias %.4f, %s" % (shifted, ", ".join(f"{f} {c:.4f}" for f, c in zip(features, coef))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
