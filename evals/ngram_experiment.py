"""Round 8: character-trigram neighbours as extra related terms, measured on dev only.

    python evals/ngram_experiment.py [--theta 0.5] [--most 3] [--min-length 5] [--no-latency]

The idea (one of the issue's suggested ways to close the vocabulary gap without a model): a
query word of at least ``--min-length`` letters that is not an everyday word (generic.py) also
gets, as stand-ins beside the related-term table's, the store's terms whose character trigrams
(of the stem, with ^ and $ marking its ends) have a Jaccard similarity of at least ``--theta``
with its own, the ``--most`` closest. "kommentar" then meets "comment", "german" meets "germani"
(Germany); like every stand-in they weigh ``synonym_weight`` of the word and are capped by
``max_related``. The engine is patched in this process only; nothing here is used by the product.

Prints the engine's dev row with and without the neighbours, every dev case whose rank (or a
negative's flag) moved, leave-one-store-out abstention (calibrate.py's protocol, ≤ 4% of dev
positives flagged) both ways, and ``SearchIndex.search`` CPU time on the synthetic 10,000-entry
store both ways. The test split is never read.
"""

from __future__ import annotations

import argparse
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
from context_keeper.search import engine as E  # noqa: E402
from context_keeper.search.generic import is_generic  # noqa: E402
from context_keeper.search.tuning import DEFAULT_TUNING  # noqa: E402


def trigrams(term: str) -> frozenset[str]:
    marked = f"^{term}$"
    return frozenset(marked[i:i + 3] for i in range(len(marked) - 2))


class Neighbours:
    """Patches ``engine.related_terms`` (and ``SearchIndex._query``, to know which index asks)."""

    def __init__(self, theta: float, most: int, min_length: int) -> None:
        self.theta, self.most, self.min_length = theta, most, min_length
        self.on = False
        self._vocab: dict[tuple[int, int, int], tuple[dict, dict]] = {}
        self._current: tuple[dict, dict] | None = None
        self._related, self._query = E.related_terms, E.SearchIndex._query
        E.related_terms = self.related
        patch = self

        def _query(ix, query):  # noqa: ANN001, ANN202
            patch._current = patch.vocabulary(ix) if patch.on else None
            return patch._query(ix, query)
        E.SearchIndex._query = _query

    def vocabulary(self, ix) -> tuple[dict, dict]:  # noqa: ANN001
        key = (id(ix), len(ix), len(ix._postings))
        if key not in self._vocab:
            grams = {t: trigrams(t) for t in ix._postings if t.isalpha() and len(t) >= self.min_length}
            by_gram: dict[str, set[str]] = {}
            for term, gs in grams.items():
                for g in gs:
                    by_gram.setdefault(g, set()).add(term)
            self._vocab[key] = (grams, by_gram)
        return self._vocab[key]

    def related(self, term: str) -> tuple[str, ...]:
        table = self._related(term)
        if self._current is None or not term.isalpha() or len(term) < self.min_length or is_generic(term):
            return table
        grams, by_gram = self._current
        own = trigrams(term)
        candidates = set().union(*(by_gram.get(g, ()) for g in own)) - {term} - set(table)
        scored = sorted(((len(own & grams[c]) / len(own | grams[c]), c) for c in candidates), reverse=True)
        return table + tuple(c for j, c in scored[:self.most] if j >= self.theta)


def rank(case: rr.Case, answer: rr.Answer) -> int | None:
    return next((r for r, i in enumerate(answer.ids, 1) if i in case.expected), None)


def search_ms(patch: Neighbours, on: bool) -> float:
    from benchmarks.bench_retrieval import synthetic_queries, synthetic_store
    from context_keeper.search import Doc, SearchIndex, SearchOptions

    ix = SearchIndex()
    for kind, entries in synthetic_store(10_000).items():
        ix.replace_kind(kind, (Doc(kind, e) for e in entries))
    queries, options = synthetic_queries(200), SearchOptions(limit=20)
    patch.on = on
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
    parser.add_argument("--theta", type=float, default=0.5, help="least trigram Jaccard similarity")
    parser.add_argument("--most", type=int, default=3, help="neighbours per query word")
    parser.add_argument("--min-length", type=int, default=5, help="shortest query word (stem) that gets any")
    parser.add_argument("--max-pos-flagged", type=float, default=0.04)
    parser.add_argument("--no-latency", action="store_true", help="skip the 10,000-entry timing")
    args = parser.parse_args(argv)
    patch = Neighbours(args.theta, args.most, args.min_length)
    stores = rr.load_stores()
    dev = [c for c in rr.load_cases() if c.split == "dev"]
    runs = {}
    for on in (False, True):
        patch.on = on
        row, runs[on] = rr.evaluate(rr.EngineSystem(), dev, stores, "dev")
        row.system = f"engine, trigram neighbours {'on' if on else 'off'}"
        print(rr.markdown([row]).splitlines()[-1])
    for (case, before), (_, after) in zip(runs[False], runs[True]):
        if case.type != "negative" and rank(case, before) != rank(case, after):
            print(f"  {case.id} [{case.store}] rank {rank(case, before)} -> {rank(case, after)}: {case.query[:90]}")
        elif case.type == "negative" and before.flagged != after.flagged:
            print(f"  {case.id} [{case.store}] negative flagged {before.flagged} -> {after.flagged}")
    for on in (False, True):
        patch.on = on
        cv = calibrate.cross_validate(calibrate.collect(DEFAULT_TUNING, stores, dev), ["log_rel"], args.max_pos_flagged)
        print(f"CV, neighbours {'on' if on else 'off'}: neg flagged {cv['neg flagged']:.3f}, pos flagged "
              f"{cv['pos flagged']:.3f}, AUC {cv['AUC']:.3f}")
    if not args.no_latency:
        off, on = search_ms(patch, False), search_ms(patch, True)
        print(f"SearchIndex.search CPU time at 10,000 entries: {off:.2f} ms off, {on:.2f} ms on")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
