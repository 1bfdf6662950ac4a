"""Vectorised scoring for large stores: the sums of ``InvertedIndex._score_groups`` over NumPy
arrays, with the same floats.

At 10,000 entries summing posting lists entry by entry in Python is most of a query's cost. Here
each term's postings are kept as two arrays (slots, saturated weights) and a query's scores are
accumulated into one array indexed by slot, in the same order of the same additions, so every
score is bit-identical to the dictionary path's. What costs time in proportion to the whole store
is a few vectorised passes over arrays of one number per entry (the zeroed sums, a mask of the
entries touched, one more array per query word that has stand-ins, and the scan for the
entries touched), about 10 µs each at 10,000 entries; the rest is proportional to the postings
touched, as before.

NumPy is imported only when a store is large enough for this to pay (``engine.DENSE_MIN``): it
takes a few hundred milliseconds to import, which a small store's hook process must not pay.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


class TermArrays:
    """``term -> (slots, weights)`` arrays, made from the postings on first use. The owner calls
    ``clear`` whenever the postings change."""

    def __init__(self) -> None:
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def clear(self) -> None:
        self._arrays.clear()

    def get(self, term: str, plist: Mapping[int, float]) -> tuple[np.ndarray, np.ndarray]:
        arrays = self._arrays.get(term)
        if arrays is None:
            n = len(plist)
            arrays = (np.fromiter(plist.keys(), dtype=np.intp, count=n),
                      np.fromiter(plist.values(), dtype=np.float64, count=n))
            self._arrays[term] = arrays
        return arrays


class DenseScores:
    """The scores of one query, indexed by slot; stands in for the ``slot -> score`` dict of the
    dictionary path (``get``, ``len``, truth) and answers ``largest`` without building it."""

    def __init__(self, scores: np.ndarray, touched: np.ndarray) -> None:
        self._scores = scores
        self._touched = touched
        self._slots = np.flatnonzero(touched)
        self._n = len(self._slots)

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def get(self, slot: int, default: float = 0.0) -> float:
        return float(self._scores[slot]) if self._touched[slot] else default

    def floored(self, floors: Mapping[int, float]) -> DenseScores:
        """These scores with each slot of ``floors`` raised to at least its value (and scored)."""
        scores, touched = self._scores.copy(), self._touched.copy()
        for slot, floor in floors.items():
            if not touched[slot] or scores[slot] < floor:
                scores[slot] = floor
                touched[slot] = True
        return DenseScores(scores, touched)

    def largest(self, k: int) -> list[tuple[int, float]]:
        """The ``k`` highest (slot, score) pairs, highest first, equal scores by slot."""
        slots = self._slots
        values = self._scores[slots]
        if k <= 0:
            return []
        if k < self._n:
            kth = np.partition(values, self._n - k)[self._n - k]
            above = np.flatnonzero(values > kth)
            level = np.flatnonzero(values == kth)[: k - len(above)]
            chosen = np.concatenate((above, level))
            chosen.sort()
            slots, values = slots[chosen], values[chosen]
        order = np.argsort(-values, kind="stable")
        return list(zip(slots[order].tolist(), values[order].tolist()))


def score_groups(
    groups: list[list[tuple[str, float]]],
    postings: Mapping[str, Mapping[int, float]],
    arrays: TermArrays,
    size: int,
) -> DenseScores:
    """``InvertedIndex._score_groups`` over arrays: per query group the best alternative's
    weight per entry, summed over groups in order (adding 0.0 for an entry a group misses
    leaves its float unchanged, so the sums are the dictionary path's). An entry counts as
    scored exactly when the dictionary path would hold it: any posting of a query word without
    stand-ins (even one weighing 0.0, which a zero weight in the tuning gives), or a positive
    best among a word's alternatives."""
    acc = np.zeros(size)
    touched = np.zeros(size, dtype=bool)
    for alternatives in groups:
        found = [(w, arrays.get(term, plist)) for term, w in alternatives if (plist := postings.get(term))]
        if not found:
            continue
        if len(found) == 1:
            w, (slots, sats) = found[0]
            acc[slots] += w * sats  # a term's slots are distinct: no lost updates
            touched[slots] = True
            continue
        best = np.zeros(size)
        for w, (slots, sats) in found:
            best[slots] = np.maximum(best[slots], w * sats)
        acc += best
        touched |= best > 0.0
    return DenseScores(acc, touched)
