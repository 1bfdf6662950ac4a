"""Spelling neighbours: the store's terms that share most of a query word's character trigrams.

The stemmer joins regular inflections but leaves some word families apart ("reanalysed" and
"reanalysis" stem to reanalys / reanalysi, "diagnosed" and "diagnosis" to diagnos / diagnosi,
"German" and "Germany" to german / germani). A query word of at least ``min_length`` letters
that is not an everyday word gets, as stand-ins beside the related-term table's, the store's
terms whose trigrams (of the stem, with ^ and $ marking its ends) have a Jaccard similarity of
at least ``theta`` with its own, the ``most`` closest. Measured in evals/README.md (rounds 8
and 9).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping


def trigrams(term: str) -> frozenset[str]:
    marked = f"^{term}$"
    return frozenset(marked[i : i + 3] for i in range(len(marked) - 2))


class TrigramVocabulary:
    """The store's alphabetic terms of at least ``min_length`` letters, by trigram; kept in
    step with the postings by ``add`` and ``discard``."""

    def __init__(self, terms: Iterable[str], min_length: int) -> None:
        self.min_length = min_length
        self._grams: dict[str, frozenset[str]] = {}
        self._by_gram: dict[str, set[str]] = {}
        for term in terms:
            self.add(term)

    def eligible(self, term: str) -> bool:
        return len(term) >= self.min_length and term.isalpha()

    def add(self, term: str) -> None:
        if term in self._grams or not self.eligible(term):
            return
        grams = self._grams[term] = trigrams(term)
        for gram in grams:
            self._by_gram.setdefault(gram, set()).add(term)

    def discard(self, term: str) -> None:
        grams = self._grams.pop(term, None)
        for gram in grams or ():
            holders = self._by_gram[gram]
            holders.discard(term)
            if not holders:
                del self._by_gram[gram]

    def holders(self, gram: str) -> Iterable[str]:
        return self._by_gram.get(gram, ())

    def grams(self, term: str) -> frozenset[str]:
        return self._grams[term]

    def closest(self, term: str, most: int, theta: float, besides: Iterable[str] = ()) -> list[str]:
        """Up to ``most`` other terms at Jaccard ≥ ``theta``, not among ``besides`` (the
        word's related terms, already stand-ins), closest first (ties: the later term in
        alphabetical order first, a fixed order)."""
        if most <= 0 or not self.eligible(term):
            return []
        own = trigrams(term)
        shared: Counter[str] = Counter()
        for gram in own:
            shared.update(self.holders(gram))
        # J ≥ theta needs at least theta × |own| shared trigrams: most terms that share one or
        # two common ones ("ing", "^co") are never looked at (floor: a bound, never too strict).
        need = max(1, math.floor(theta * len(own)))
        skip = {term, *besides}
        scored = sorted(
            ((len(own & (g := self.grams(c))) / len(own | g), c) for c, n in shared.items() if n >= need and c not in skip),
            reverse=True,
        )
        return [c for similarity, c in scored[:most] if similarity >= theta]

    def saved(self) -> dict[str, str]:
        """``gram -> "term term …"``, for ``SavedTrigramVocabulary``."""
        return {gram: " ".join(sorted(terms)) for gram, terms in self._by_gram.items()}


class SavedTrigramVocabulary(TrigramVocabulary):
    """A ``TrigramVocabulary`` read from ``saved()``: a hook process looks up a few trigrams
    per query word, so only those are split, and only their terms' trigrams computed."""

    def __init__(self, saved: Mapping[str, str], min_length: int) -> None:
        super().__init__((), min_length)
        self._saved = saved

    def add(self, term: str) -> None:
        raise RuntimeError("a saved trigram vocabulary is read-only")

    discard = add

    def holders(self, gram: str) -> Iterable[str]:
        text = self._saved.get(gram)
        return text.split(" ") if text else ()

    def grams(self, term: str) -> frozenset[str]:
        grams = self._grams.get(term)
        if grams is None:
            grams = self._grams[term] = trigrams(term)
        return grams
