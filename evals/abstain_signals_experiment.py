"""Round 20: more abstention signals beside ln relevance (dev only, leave-one-store-out CV).

    python evals/abstain_signals_experiment.py [--max-pos-flagged 0.04] [--logistic] [--json rows.json]

Every feature is of the most relevant hit of the engine (confidence mapping off, limit 20), as
``calibrate.collect`` takes ``log_rel``. Each is judged where the threshold sits: the score is
ln relevance + β · (feature / its spread), β out of ``WEIGHTS`` (either sign, 0 included) chosen
on all stores but one as the one flagging most of their dev negatives at their threshold (≤ 4%
of their positives flagged, ``calibrate.threshold``), applied with that threshold to the store
left out, pooled. ``--logistic`` adds calibrate.py's own protocol (``cross_validate``: a
class-balanced logistic model beside ``log_rel``). Two rows replace ``log_rel`` by a
store-normalised score, so only the threshold is fitted. The first lines split the cases flagged
at the all-dev threshold by whether the answer-type check (answer_type.py) lowered them.

What is asked: the question's own topical words (``iter_tagged`` atoms, not everyday words),
weighted by the engine's IDF.

- Specific content (``rare_top``, ``rare_elsewhere``, ``miss_present``): whether the most relevant
  entry has the rarest asked word the store uses; whether that word is missing from it but in
  another of the first five; the IDF share of asked words the store uses that the entry lacks.
- Concentration (``sent_conc``, ``sent_cov``, ``sent_words``): over the entry's sentences (one
  field group's text split as ``answer_type`` splits it), the largest share of the entry's
  matched asked IDF in one sentence; the largest share of all asked IDF (absent words included)
  in one sentence; the most asked words in one sentence over min(coherence_k, asked words).
- Agreement of two rankings (``agree_bm25``, ``rr_bm25``, ``agree_title``): whether textbook BM25
  over the whole entry (``baselines.BM25Scorer``) puts the same entry first; the reciprocal of
  the entry's rank there; whether the engine restricted to titles and tags puts it first.
- A per-store null (``null_z``, ``null_pct``, ``null_gap``): the store's top relevance for
  incoherent questions made of its own words (``--null-samples`` per length of 1-6 asked words,
  each word drawn from a different random entry's text, seeded by the store's name), which is
  what an unrelated question sharing the store's vocabulary scores there. ``null_z`` is
  ln relevance standardised by the null of the question's own length, ``null_pct`` the share of
  that null below it, ``null_gap`` ln relevance minus the null's 95th percentile; ``null_mu`` the
  null's mean; ``hub`` how often the entry is the most relevant one for those questions (3-6
  words), over the share a uniform pick would give.
- Breadth (``union_gap``, ``len_ratio``): the IDF share of asked words the first five have between
  them and the most relevant entry lacks; ln of the entry's length (analysed terms) over the
  store's average.
- A background vocabulary (``abs_bg``, ``abs_common``): the asked words the store never uses,
  weighed by how many of the other eval stores use them (``background``).

The test split is never read.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evals"))

import calibrate as cal  # noqa: E402
import run_retrieval as rr  # noqa: E402
from baselines import BM25Scorer, _entry_text, _words  # noqa: E402

from context_keeper.search import SearchOptions  # noqa: E402
from context_keeper.search import fields as F  # noqa: E402
from context_keeper.search.answer_type import _SENTENCE_END  # noqa: E402
from context_keeper.search.generic import is_generic  # noqa: E402
from context_keeper.search.tokenize import iter_tagged, terms  # noqa: E402
from context_keeper.search.tuning import DEFAULT_TUNING  # noqa: E402

NULL_LENGTHS = range(1, 7)


def _atoms(text: str) -> list[str]:
    return list(dict.fromkeys(t for t, compound in iter_tagged(text or "") if not compound))


def _slot(ix, hit) -> int:
    return ix._slots[(hit.kind, F.entry_id(hit.entry) or "")]


def _search(ix, query: str):
    return ix.search(query, SearchOptions(now=rr.EVAL_NOW, limit=20))


def null_model(ix, store: rr.Store, samples: int) -> tuple[dict[int, list[float]], dict[int, int]]:
    """Sorted ln top relevances of incoherent questions of each length, from the store's words,
    and how often each entry (slot) is the most relevant for one of them."""
    rng = random.Random(store.name)
    texts = [w for _, e in store.entries if (w := [x for x in _words(_entry_text(e)) if not is_generic(x)])]
    out, tops = {}, {}
    for n in NULL_LENGTHS:
        vals = []
        for _ in range(samples):
            words = [rng.choice(rng.choice(texts)) for _ in range(n)] if texts else []
            res = _search(ix, " ".join(words))
            vals.append(math.log(max(res.top_relevance, cal.FLOOR)))
            if res.hits and n >= 3:
                s = _slot(ix, max(res.hits, key=lambda h: h.relevance))
                tops[s] = tops.get(s, 0) + 1
        out[n] = sorted(vals)
    return out, tops


def sentences(entry) -> list[set[str]]:
    return [set(terms(s)) for text in F.group_texts(entry) for s in _SENTENCE_END.split(text) if s.strip()]


def features(ix, title_ix, bm25, nulls, case, res) -> dict[str, float]:
    null, tops = nulls
    out: dict[str, float] = {}
    asked = [t for t in _atoms(case.query) if not is_generic(t)] or _atoms(case.query)
    idf = {t: ix._idf(t) for t in asked}
    best = max(res.hits, key=lambda h: h.relevance) if res.hits else None
    slot = _slot(ix, best) if best is not None else None
    tf = ix._entries[slot].tf if slot is not None else {}
    has = {t for t in asked if t in tf and sum(tf[t]) > 0}
    present = [t for t in asked if t in ix._postings]

    rare = max(present, key=lambda t: idf[t], default=None)
    out["rare_top"] = float(rare is None or rare in has)
    others = [_slot(ix, h) for h in res.hits[:5] if best is not None and h is not best]
    out["rare_elsewhere"] = float(rare is not None and rare not in has and any(o in ix._postings[rare] for o in others))
    pw = sum(idf[t] for t in present)
    out["miss_present"] = sum(idf[t] for t in present if t not in has) / pw if pw > 0 else 0.0

    sents = sentences(best.entry) if best is not None else []
    mw = sum(idf[t] for t in has)
    aw = sum(idf.values())
    out["sent_conc"] = max((sum(idf[t] for t in has & s) / mw for s in sents), default=0.0) if mw > 0 else 0.0
    out["sent_cov"] = max((sum(idf[t] for t in asked if t in s) / aw for s in sents), default=0.0) if aw > 0 else 0.0
    need = max(1, min(DEFAULT_TUNING.coherence_k, len(asked)))
    out["sent_words"] = min(1.0, max((len(set(asked) & s) for s in sents), default=0) / need)

    ids, _ = bm25.search(case.query)
    eid = best.entry.get("id") if best is not None else None
    out["agree_bm25"] = float(bool(ids) and ids[0] == eid)
    out["rr_bm25"] = 1.0 / (ids.index(eid) + 1) if eid in ids else 0.0
    tres = _search(title_ix, case.query)
    out["agree_title"] = float(bool(tres.hits) and best is not None and tres.hits[0].entry.get("id") == eid)

    lr = math.log(max(res.top_relevance, cal.FLOOR))
    vals = null[min(max(len(asked), 1), max(NULL_LENGTHS))]
    mu = sum(vals) / len(vals)
    sd = max(1e-6, math.sqrt(sum((v - mu) ** 2 for v in vals) / len(vals)))
    out["null_z"] = (lr - mu) / sd
    out["null_pct"] = sum(v < lr for v in vals) / len(vals)
    out["null_gap"] = lr - vals[int(0.95 * (len(vals) - 1))]
    out["null_mu"] = mu

    # A long entry or a hub holds many of a question's words by chance
    union = set()
    for h in res.hits[:5]:
        union |= {t for t in asked if t in ix._entries[_slot(ix, h)].tf}
    out["union_gap"] = (sum(idf[t] for t in union) - mw) / aw if aw > 0 else 0.0
    live = [e for e in ix._entries if e is not None]
    avg = sum(sum(sum(v) for v in e.tf.values()) for e in live) / max(1, len(live))
    out["len_ratio"] = math.log(max(1, sum(sum(v) for v in tf.values())) / max(1.0, avg)) if slot is not None else 0.0
    out["hub"] = tops.get(slot, 0) / max(1, sum(tops.values())) * len(live) if slot is not None else 0.0
    return out


WEIGHTS = (-1.0, -0.5, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.5, 1.0)


def background(rows: list[dict], vocab: dict[str, set[str]]) -> None:
    """``abs_bg`` / ``abs_common``: the asked words the store never uses, by how many *other*
    stores use them (a background vocabulary of software projects, the case's own left out):
    the share of the asked words' background IDF they make, and the share of asked words that
    are absent here but used by at least a fifth of the other stores."""
    sdf: dict[str, int] = {}
    for words in vocab.values():
        for w in words:
            sdf[w] = sdf.get(w, 0) + 1
    n = len(vocab) - 1
    for r in rows:
        asked, mine = r.pop("asked"), vocab[r["store"]]
        others = {w: sdf.get(w, 0) - (w in mine) for w in asked}
        bg = {w: math.log((n + 1) / (1 + others[w])) for w in asked}
        absent = [w for w in asked if w not in mine]
        r["abs_bg"] = sum(bg[w] for w in absent) / sum(bg.values()) if bg else 0.0
        r["abs_common"] = sum(others[w] >= 0.2 * n for w in absent) / max(1, len(asked))


def weighted_cv(rows: Sequence[dict], name: str, max_pos_flagged: float) -> tuple[dict[str, float], list[float]]:
    """ln relevance + β · (feature / its spread), β from ``WEIGHTS`` chosen on the other stores
    (most of their negatives flagged at their threshold, ties to the smallest |β|), applied with
    their threshold to the held-out store: the combination judged where the threshold sits."""
    def scored(rs, beta, sd):
        return [r["log_rel"] + beta * r[name] / sd for r in rs]

    def fitted(rs):
        xs = [r[name] for r in rs]
        mu = sum(xs) / len(xs)
        sd = max(1e-9, math.sqrt(sum((x - mu) ** 2 for x in xs) / len(xs)))
        pos = [r for r in rs if r["type"] == "positive"]
        neg = [r for r in rs if r["type"] == "negative"]
        best = None
        for beta in WEIGHTS:
            th = cal.threshold(scored(pos, beta, sd), max_pos_flagged)
            key = (sum(z < th for z in scored(neg, beta, sd)), -abs(beta))
            if best is None or key > best[0]:
                best = (key, beta, th)
        return best[1], best[2], sd

    held, flags, margins, chosen = [], [], [], []
    for store in sorted({r["store"] for r in rows}):
        beta, th, sd = fitted([r for r in rows if r["store"] != store])
        chosen.append(beta)
        mine = [r for r in rows if r["store"] == store]
        for r, z in zip(mine, scored(mine, beta, sd)):
            held.append(r)
            flags.append(z < th)
            margins.append(z - th)
    out = cal.figures(held, flags)
    out["AUC"] = cal.auc(held, margins)
    return out, chosen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-pos-flagged", type=float, default=0.04)
    parser.add_argument("--null-samples", type=int, default=40)
    parser.add_argument("--logistic", action="store_true", help="also calibrate.py's logistic CV per feature (~2 min)")
    parser.add_argument("--json", type=Path, help="write the collected dev features")
    args = parser.parse_args(argv)
    tuning = dataclasses.replace(DEFAULT_TUNING, confidence=False)
    titles = dataclasses.replace(tuning, group_weights=(tuning.group_weights[0], tuning.group_weights[1], 0.0, 0.0))
    stores = rr.load_stores()
    cases = [c for c in rr.load_cases() if c.store in stores and c.split == "dev"]
    started = time.process_time()
    per_store: dict[str, tuple] = {}
    rows = []
    for c in cases:
        if c.store not in per_store:
            ix = rr.engine_index(stores[c.store], tuning)
            per_store[c.store] = (ix, rr.engine_index(stores[c.store], titles), BM25Scorer(stores[c.store].entries),
                                  null_model(ix, stores[c.store], args.null_samples))
        ix, title_ix, bm25, null = per_store[c.store]
        res = _search(ix, c.query)
        row = {"id": c.id, "store": c.store, "type": c.type,
               "log_rel": math.log(max(res.top_relevance, cal.FLOOR)), "checked": res.relevance_scale != 1.0,
               "asked": [t for t in _atoms(c.query) if not is_generic(t)] or _atoms(c.query)}
        row.update(features(ix, title_ix, bm25, null, c, res))
        rows.append(row)
    background(rows, {name: set(v[0]._postings) for name, v in per_store.items()})
    print(f"dev cases {len(rows)}, {len(per_store)} stores, features collected in {time.process_time() - started:.0f} s CPU")
    if args.json:
        args.json.write_text(json.dumps(rows), encoding="utf-8")
    m = args.max_pos_flagged

    # Where the threshold fitted on all dev flags: the answer-type check's questions (relevance
    # scaled down) against the rest.
    _, _, th = cal.model(rows, ["log_rel"], m)
    for checked in (True, False):
        part = [r for r in rows if r["checked"] == checked]
        print(f"{'answer-type check fired' if checked else 'check not fired':24s}" + "  ".join(
            f"{kind} {sum(r['log_rel'] < th for r in part if r['type'] == kind)}/{sum(r['type'] == kind for r in part)}"
            for kind in ("positive", "negative", "history")) + " flagged")
    # What the relevance alone could trade among the questions the check leaves: unanswered
    # ones flagged when the lowest n answerable (or history) ones are.
    left = sorted((r for r in rows if not r["checked"]), key=lambda r: r["log_rel"])
    answered, unanswered, trade = 0, 0, {}
    for r in left:
        answered += r["type"] != "negative"
        unanswered += r["type"] == "negative"
        trade.setdefault(answered, unanswered)
    trade = {n: trade[n] for n in (10, 20, 45)}
    print("check not fired, by relevance alone: " + ", ".join(f"{v} unanswered at {k} answerable" for k, v in trade.items()))

    def show(label: str, cv: dict[str, float], extra: str = "") -> None:
        print(f"{label:30s} neg {cv['neg flagged']:.3f}  pos {cv['pos flagged']:.3f}  "
              f"hist {cv['history flagged']:.3f}  AUC {cv['AUC']:.3f}{extra}")

    names = [k for k in rows[0] if k not in ("id", "store", "type", "log_rel", "checked")]
    print("ln relevance + β · feature, β chosen per held-out store:")
    show("log_rel alone", cal.cross_validate(rows, ["log_rel"], m))
    for name in names:
        cv, chosen = weighted_cv(rows, name, m)
        show(f"+ {name}", cv, f"  β {min(chosen):g}..{max(chosen):g}")
    for name in ("null_z", "null_gap"):
        show(f"{name} instead of log_rel", cal.cross_validate([{**r, "log_rel": r[name]} for r in rows], ["log_rel"], m))
    if args.logistic:
        print("calibrate.py's logistic model beside ln relevance:")
        for name in names:
            show(f"+ {name}", cal.cross_validate(rows, ["log_rel", name], m))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
