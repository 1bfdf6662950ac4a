"""Relevance normalisation and the abstention threshold.

Relevance of an entry = coverage × coherence, both in 0..1 and independent of store size:

- coverage: its BM25F score divided by the score a perfect match of every query word would
  get. Words the entry lacks — and words no entry contains at all — keep their IDF mass in the
  denominator, so "nothing recorded about this" shows up as a low share of the question
  explained. Everyday words weigh less on both sides (generic.py).
- coherence: the share of the question's own words (up to ``Tuning.coherence_k``) the entry
  contains literally. A few incidental matches scattered over a store ("parcels", "app") are
  what an unanswerable in-domain question produces; an entry that answers, even in other
  words, shares several of the asked words.

Priors (recency, origin, status, scope) never enter relevance. ``DEFAULT_MIN_RELEVANCE`` was
calibrated on the dev split of ``evals/golden.jsonl``: the largest threshold flagging at most
2% of dev positives (see ``evals/README.md``).
"""

from __future__ import annotations

DEFAULT_MIN_RELEVANCE = 0.12


def normalise(raw: float, max_raw: float) -> float:
    if max_raw <= 0.0:
        return 0.0
    value = raw / max_raw
    return 1.0 if value > 1.0 else value


def coherence(found: int, n_words: int, k: int) -> float:
    """Factor in 0..1 for an entry containing ``found`` of the query's ``n_words`` own words
    (related-term matches excluded): 1 from ``min(k, n_words)`` words on, linear below."""
    need = min(k, n_words)
    if need <= 0:
        return 1.0
    return min(1.0, found / need)
