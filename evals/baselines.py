"""Reference scorers for the retrieval eval: what the gain is measured against.

- ``naive``: counts the distinct non-stop words a question shares with an entry (what the old
  scorer essentially did); relevance = shared / question words.
- ``bm25``: textbook Okapi BM25 (k1=1.2, b=0.75) with Snowball stemming over all text fields
  concatenated; relevance = score / score of a perfect match of every query word.

Both read the raw store entries, ignore status except that deprecated entries are left out
(as the engine does by default), and know nothing of priors, synonyms or history.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from context_keeper.search.fields import FIELD_GROUPS, flatten_text
from context_keeper.search.tokenize import STOP_WORDS, stem

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1]


def _entry_text(entry: Mapping[str, Any]) -> str:
    return "\n".join(t for f in FIELD_GROUPS if f in entry for t in flatten_text(entry[f]))


class NaiveScorer:
    name = "naive shared-word count"

    def __init__(self, entries: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        self.entries = [(kind, e, set(_words(_entry_text(e)))) for kind, e in entries if e.get("status") != "deprecated"]

    def search(self, query: str, limit: int = 20) -> tuple[list[str], float]:
        q = set(_words(query))
        if not q:
            return [], 0.0
        scored = [(len(q & words), e["id"]) for _, e, words in self.entries]
        scored = [s for s in scored if s[0] > 0]
        scored.sort(key=lambda s: -s[0])
        top = scored[:limit]
        return [i for _, i in top], (top[0][0] / len(q) if top else 0.0)


class BM25Scorer:
    name = "textbook BM25 (stemmed, all fields)"

    def __init__(self, entries: Sequence[tuple[str, Mapping[str, Any]]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = []
        for _, e in entries:
            if e.get("status") == "deprecated":
                continue
            tf = Counter(stem(w) for w in _words(_entry_text(e)))
            self.docs.append((e["id"], tf, sum(tf.values())))
        self.avgdl = sum(d[2] for d in self.docs) / max(1, len(self.docs))
        self.df: Counter[str] = Counter()
        for _, tf, _ in self.docs:
            self.df.update(tf.keys())

    def idf(self, term: str) -> float:
        n = len(self.docs)
        df = self.df.get(term, 0)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def search(self, query: str, limit: int = 20) -> tuple[list[str], float]:
        q = list(dict.fromkeys(stem(w) for w in _words(query)))
        if not q:
            return [], 0.0
        max_raw = sum(self.idf(t) * (self.k1 + 1) for t in q)
        scored = []
        for doc_id, tf, dl in self.docs:
            s = 0.0
            for t in q:
                f = tf.get(t)
                if f:
                    s += self.idf(t) * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * dl / self.avgdl))
            if s > 0:
                scored.append((s, doc_id))
        scored.sort(key=lambda x: -x[0])
        top = scored[:limit]
        return [i for _, i in top], (top[0][0] / max_raw if top else 0.0)
