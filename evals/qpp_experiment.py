"""Round 7: classic query-performance predictors (QPP) beside ln(relevance) for abstention.

    python evals/qpp_experiment.py [--max-pos-flagged 0.04] [--json rows.json]

Every feature below is computed per dev case by ``qpp_features`` (which ``calibrate.collect``
calls, so ``python evals/calibrate.py --features log_rel,NAME`` measures any one of them) and
judged by calibrate.py's leave-one-store-out logistic CV beside ``log_rel``: for each store, a
class-balanced logistic model on the other stores' dev cases, its threshold at ≤ 4% of
their positives flagged, applied to the held-out store, pooled. This script prints that table for
every feature (and a few pairs). The test split is never read.

The "collection" is the store: an entry's terms are its analysed terms (the engine's tokenizer and
stemmer) summed over the field groups; query terms are the question's own words (``iter_tagged``
atoms, compounds aside), topical = not an everyday word (generic.py), which is what the
engine's relevance counts at full weight.

Post-retrieval
- ``clarity``: KL divergence (bits) between the query model of the top k = 5 entries of a
  Dirichlet query-likelihood run (P(w|Q) = Σ_d P(w|d) P(d|Q), P(d|Q) ∝ P(Q|d), P(w|d) Jelinek-
  Mercer λ 0.6) and the store's collection model (Cronen-Townsend et al. 2002);
  ``clarity_eng``: the same over the engine's own top 5, P(d|Q) ∝ relevance.
- ``wig``: weighted information gain (Zhou & Croft 2007): mean over the QL top k of
  log P(Q|d) − log P(Q|C) (the store as one document), divided by √|Q|.
- ``nqc``: normalised query commitment (Shtok et al. 2012): standard deviation of the QL top-k
  scores over |log P(Q|C)|; ``nqc_bm``: the engine's BM25F raw scores, standard deviation of the
  top k over the mean raw score of every entry matching a query word (the corpus score).
- ``fb_top``: query feedback by perturbation: the question asked again without one topical word
  at a time; share of those runs whose most relevant entry is the original's.
  ``fb_overlap``: mean share of the engine's top 5 that stays in the top 5.
- ``pair_top``: the most relevant entry contains both of the question's two highest-IDF topical
  words literally (a word the store never uses has the highest IDF); ``pair_top_present``: the
  same for the two highest-IDF topical words the store does use; ``pair_top5``: any of the top 5
  contains both (present words).

Pre-retrieval
- ``scq_sum`` / ``scq_avg`` / ``scq_max``: collection query similarity (Zhao et al. 2008),
  (1 + ln cf) · ln(1 + N/df) per topical word the store uses (0 for one it never uses).
- ``idf_max`` / ``idf_avg``: the engine's IDF of the topical words (absent words at the maximum).
- ``pmi_avg``: mean over pairs of topical words the store uses of
  ln((df(a,b) + 0.5) · N / (df(a) · df(b))), df(a,b) = entries containing both;
  ``cooc_share``: share of all topical-word pairs (absent words included) that co-occur in at
  least one entry.

Own idea (from reading dev negatives next to the entry they match)
- ``spec_cov``: a dev negative's most relevant entry matches the store's everyday vocabulary
  ("parcel", "student", "game server" appear in a third of the entries) and misses the specific
  words the question hinges on ("retention", "uptime", "penalty", "geocoder"). The IDF-weighted
  share of the question's *specific* topical words (df ≤ 10% of the store's entries, absent words
  included) the most relevant entry contains literally; 1 when the question has none.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evals"))

from context_keeper.search import SearchOptions  # noqa: E402
from context_keeper.search import fields as F  # noqa: E402
from context_keeper.search.generic import is_generic  # noqa: E402
from context_keeper.search.tokenize import iter_tagged  # noqa: E402

QPP_K = 5
JM_LAMBDA = 0.6
SPECIFIC_DF = 0.10

FEATURES = [
    "clarity", "clarity_eng", "wig", "nqc", "nqc_bm", "fb_top", "fb_overlap",
    "pair_top", "pair_top_present", "pair_top5",
    "scq_sum", "scq_avg", "scq_max", "idf_max", "idf_avg", "pmi_avg", "cooc_share",
    "spec_cov", "focus_miss", "value_q",
]

# A question asking for a value of a recorded thing ("what retention ...", "which geocoder ...",
# "how long do we keep ..."): the form of 38 of 86 dev negatives, 2 of 202 dev positives and 14 of
# 45 dev history questions. A diagnostic (value_q) of how the eval questions were written, not a
# signal of answerability (see evals/README.md, round 7).
_VALUE_Q = re.compile(r"^\s*(what(?:'s| is| are| does| do)?|which|how (?:long|many|much|often|big|far|fast))\b", re.I)


class _Collection:
    """Unweighted term counts of one index's live entries (the store as a collection)."""

    def __init__(self, ix) -> None:
        self.counts: dict[int, dict[str, int]] = {}
        self.lens: dict[int, int] = {}
        self.cf: dict[str, int] = {}
        for slot, info in enumerate(ix._entries):
            if info is None:
                continue
            c = {t: sum(v) for t, v in info.tf.items() if sum(v) > 0}
            self.counts[slot] = c
            self.lens[slot] = sum(c.values())
            for t, n in c.items():
                self.cf[t] = self.cf.get(t, 0) + n
        self.total = sum(self.lens.values())
        self.vocab = len(self.cf)
        self.n = len(self.counts)
        self.mu = self.total / max(1, self.n)  # Dirichlet prior: the average entry length

    def p_c(self, t: str) -> float:
        return (self.cf.get(t, 0) + 0.5) / (self.total + 0.5 * (self.vocab + 1))

    def ql(self, terms: Sequence[str], slot: int) -> float:
        c, n = self.counts[slot], self.lens[slot]
        return sum(math.log((c.get(t, 0) + self.mu * self.p_c(t)) / (n + self.mu)) for t in terms)

    def ql_corpus(self, terms: Sequence[str]) -> float:
        return sum(math.log(self.p_c(t)) for t in terms)

    def clarity(self, weighted: Sequence[tuple[int, float]]) -> float:
        tot = sum(w for _, w in weighted)
        if tot <= 0.0:
            return 0.0
        pq: dict[str, float] = {}
        for slot, w in weighted:
            n = self.lens[slot] or 1
            for t, c in self.counts[slot].items():
                pq[t] = pq.get(t, 0.0) + (w / tot) * JM_LAMBDA * c / n
        # Terms of no top entry get (1 - λ) P(w|C) and contribute 0 to the divergence.
        out = 0.0
        for t, v in pq.items():
            pc = self.cf[t] / self.total
            v += (1.0 - JM_LAMBDA) * pc
            out += v * math.log2(v / pc)
        return out


_COLLECTIONS: dict[int, _Collection] = {}


def _collection(ix) -> _Collection:
    col = _COLLECTIONS.get(id(ix))
    if col is None:
        col = _COLLECTIONS[id(ix)] = _Collection(ix)
    return col


def _slot(ix, hit) -> int:
    return ix._slots[(hit.kind, F.entry_id(hit.entry) or "")]


def _atoms(text: str) -> list[str]:
    return list(dict.fromkeys(t for t, compound in iter_tagged(text or "") if not compound))


def _most_relevant(ix, res) -> int | None:
    if not res.hits:
        return None
    return _slot(ix, max(res.hits, key=lambda h: h.relevance))


def _std(xs: Sequence[float]) -> float:
    if not xs:
        return 0.0
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def qpp_features(ix, query: str, res, now) -> dict[str, float]:
    """Every predictor of the module docstring for one question (``res``: the engine's result
    for it, confidence mapping off, limit 20)."""
    col = _collection(ix)
    N = max(1, col.n)
    atoms = _atoms(query)
    topical = [t for t in atoms if not is_generic(t)] or atoms
    terms = topical
    out: dict[str, float] = {}

    # --- query likelihood run (Dirichlet) over the whole store
    if terms and col.n:
        ql = sorted(((col.ql(terms, s), s) for s in col.counts), reverse=True)
        top = ql[:QPP_K]
        corpus = col.ql_corpus(terms)
        out["wig"] = (sum(v for v, _ in top) / len(top) - corpus) / math.sqrt(len(terms))
        out["nqc"] = _std([v for v, _ in top]) / abs(corpus) if corpus else 0.0
        mx = top[0][0]
        out["clarity"] = col.clarity([(s, math.exp(v - mx)) for v, s in top])
    else:
        out["wig"] = out["nqc"] = out["clarity"] = 0.0

    # --- engine top 5: clarity with relevance weights; NQC on the raw BM25F scores
    eng = [(_slot(ix, h), h.relevance) for h in res.hits[:QPP_K]]
    out["clarity_eng"] = col.clarity(eng) if eng else 0.0
    q = ix._query(query)
    raw = ix._score_groups(q.groups) if q.groups else {}
    if raw:
        vals = sorted(raw.values(), reverse=True)
        mean_all = sum(vals) / len(vals)
        out["nqc_bm"] = _std(vals[:QPP_K]) / mean_all if mean_all > 0 else 0.0
    else:
        out["nqc_bm"] = 0.0

    # --- query feedback: drop one topical word at a time
    best = _most_relevant(ix, res)
    top5 = {_slot(ix, h) for h in res.hits[:QPP_K]}
    words = query.split()
    same, overlap, runs = 0, 0.0, 0
    for i, w in enumerate(words):
        wa = _atoms(w)
        if not any(not is_generic(t) for t in wa):
            continue
        r2 = ix.search(" ".join(words[:i] + words[i + 1 :]), SearchOptions(now=now, limit=20))
        runs += 1
        same += _most_relevant(ix, r2) == best
        overlap += len(top5 & {_slot(ix, h) for h in r2.hits[:QPP_K]}) / max(1, len(top5))
    out["fb_top"] = same / runs if runs else 1.0
    out["fb_overlap"] = overlap / runs if runs else 1.0

    # --- the two most specific words together
    idf = {t: ix._idf(t) for t in topical}
    present = [t for t in topical if t in ix._postings]
    by_idf = sorted(topical, key=lambda t: -idf[t])[:2]
    by_idf_present = sorted(present, key=lambda t: -idf[t])[:2]
    top_terms = col.counts.get(best, {}) if best is not None else {}
    out["pair_top"] = float(bool(by_idf) and all(t in top_terms for t in by_idf))
    out["pair_top_present"] = float(bool(by_idf_present) and all(t in top_terms for t in by_idf_present))
    out["pair_top5"] = float(bool(by_idf_present) and any(all(t in col.counts[s] for t in by_idf_present) for s in top5))

    # --- pre-retrieval
    scq = [(1.0 + math.log(col.cf[t])) * math.log(1.0 + N / len(ix._postings[t])) if t in ix._postings and t in col.cf else 0.0
           for t in topical]
    out["scq_sum"] = sum(scq)
    out["scq_avg"] = sum(scq) / len(scq) if scq else 0.0
    out["scq_max"] = max(scq, default=0.0)
    out["idf_max"] = max(idf.values(), default=0.0)
    out["idf_avg"] = sum(idf.values()) / len(idf) if idf else 0.0
    pmis, co, pairs = [], 0, 0
    for i, a in enumerate(topical):
        for b in topical[i + 1 :]:
            pairs += 1
            pa, pb = ix._postings.get(a), ix._postings.get(b)
            if not pa or not pb:
                continue
            both = len(pa.keys() & pb.keys())
            co += both > 0
            pmis.append(math.log((both + 0.5) * N / (len(pa) * len(pb))))
    out["pmi_avg"] = sum(pmis) / len(pmis) if pmis else 0.0
    out["cooc_share"] = co / pairs if pairs else 0.0

    # --- own idea: the specific words in the most relevant entry
    specific = [t for t in topical if len(ix._postings.get(t, ())) <= SPECIFIC_DF * N]
    wsum = sum(idf[t] for t in specific)
    out["spec_cov"] = sum(idf[t] for t in specific if t in top_terms) / wsum if wsum > 0 else 1.0

    # --- own idea 2: the word a value question asks about ("what *retention* ...", "which
    # *geocoder* ...") is missing from the most relevant entry; 0 for any other question
    m = _VALUE_Q.match(query or "")
    out["value_q"] = float(m is not None)
    focus = None
    if m is not None:
        focus = next((t for t in _atoms(query[m.end():]) if not is_generic(t)), None)
    out["focus_miss"] = float(focus is not None and focus not in top_terms)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    import calibrate as cal
    import run_retrieval as rr
    from context_keeper.search.tuning import DEFAULT_TUNING

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-pos-flagged", type=float, default=0.04)
    parser.add_argument("--json", type=Path, help="write the collected dev rows")
    parser.add_argument("--pairs", default="", help="extra combinations, e.g. fb_top+spec_cov;wig+nqc")
    parser.add_argument("--k", type=int, default=5, help="top k of the post-retrieval predictors (default 5)")
    parser.add_argument("--per-form", action="store_true", help="also the round-4 check: CV within value questions "
                        "and within the other questions apart, answerable = positive or history")
    args = parser.parse_args(argv)
    import qpp_experiment  # the module calibrate.collect calls (this file runs as __main__)

    qpp_experiment.QPP_K = args.k
    stores = rr.load_stores()
    cases = [c for c in rr.load_cases() if c.store in stores and c.split == "dev"]
    rows = cal.collect(DEFAULT_TUNING, stores, cases, qpp=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    n = {k: sum(r["type"] == k for r in rows) for k in ("positive", "negative", "history")}
    print(f"dev cases {n}; leave-one-store-out CV at ≤ {args.max_pos_flagged:g} of training positives flagged\n")
    print("| features | CV neg flagged | CV pos flagged | CV history flagged | CV AUC | feature alone, AUC (all dev) |")
    print("|---|---|---|---|---|---|")
    combos = [["log_rel"]] + [["log_rel", f] for f in FEATURES]
    combos += [["log_rel", *p.split("+")] for p in args.pairs.split(";") if p]
    for feats in combos:
        cv = cal.cross_validate(rows, feats, args.max_pos_flagged)
        alone = feats[-1]
        a = cal.auc(rows, [r[alone] for r in rows])
        a = max(a, 1 - a)  # direction-free: the logistic picks the sign
        print(f"| {' + '.join(feats)} | {cv['neg flagged']:.3f} | {cv['pos flagged']:.3f} | {cv['history flagged']:.3f} | {cv['AUC']:.3f} | {a:.3f} |")
    if args.per_form:
        # A feature that fires on one question form only can gain in the pooled CV because dev
        # positives are almost never of that form (2 of 202 value questions): the threshold then
        # never meets an answerable question it would flag. Fitted within each form apart, with
        # the history questions counted as answerable (14 of the 16 answerable value questions).
        answerable = [dict(r, type="positive" if r["type"] == "history" else r["type"]) for r in rows]
        print("\n| form | features | CV neg flagged | CV answerable flagged | CV AUC |")
        print("|---|---|---|---|---|")
        for form, name in ((1.0, "value questions"), (0.0, "other questions")):
            sub = [r for r in answerable if r["value_q"] == form]
            n_neg = sum(r["type"] == "negative" for r in sub)
            for feats in (["log_rel"], ["log_rel", "focus_miss"]) if form else (["log_rel"],):
                cv = cal.cross_validate(sub, feats, args.max_pos_flagged)
                print(f"| {name} ({len(sub) - n_neg} / {n_neg}) | {' + '.join(feats)} | {cv['neg flagged']:.3f} | {cv['pos flagged']:.3f} | {cv['AUC']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
