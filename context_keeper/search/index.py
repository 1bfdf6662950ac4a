"""The inverted index: entries analysed into per-field term counts, postings kept in step.

Postings map a term to ``{slot: saturated weighted tf}`` (BM25F), so a query costs time
proportional to the posting lists it touches. Field-length normalisation uses the average
field lengths at indexing time; when the averages drift far (the store grew or changed a
lot), the postings are recomputed once, which keeps upserts cheap on average.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from context_keeper.gcpause import gc_paused
from context_keeper.model import tag_key
from context_keeper.search import fields as F
from context_keeper.search import priors as P
from context_keeper.search.contract import Doc
from context_keeper.search.tokenize import iter_tagged
from context_keeper.search.tuning import DEFAULT_TUNING, Tuning

TYPE_CHECKING = False
if TYPE_CHECKING:
    from context_keeper.scope import ScopeIndex
    from context_keeper.search.state import AnalysisCache

_DRIFT = 0.25  # recompute postings when an average field length moved by more than 25%
_TITLE = F.GROUP_INDEX["title"]


@dataclass
class _Entry:
    doc: Doc
    key: tuple[str, str]
    tf: dict[str, list[int]]      # term -> count per field group
    lens: tuple[int, ...]         # tokens per field group
    tags: frozenset[str]
    status: str
    created: datetime | None
    fresh_ts: float | None        # verified_at, else updated_at, else created_at (epoch s)
    origin_prior: float
    scopes: tuple[str, ...] | None = None   # constraints only
    title_terms: tuple[tuple[str, int], ...] = ()  # (term, count) of the title group


def _terms(entry: Mapping) -> tuple[dict[str, list[int]], tuple[int, ...]]:
    """Term counts per field group and tokens per field group: the expensive, deterministic
    part of the analysis (cached across processes by ``state.AnalysisCache``)."""
    tf: dict[str, list[int]] = {}
    lens = []
    for gi, text in enumerate(F.group_texts(entry)):
        n = 0
        for term, _compound in iter_tagged(text):
            counts = tf.get(term)
            if counts is None:
                counts = tf[term] = [0] * len(F.GROUPS)
            counts[gi] += 1
            n += 1
        lens.append(n)
    return tf, tuple(lens)


def _analyse(doc: Doc, key: tuple[str, str], analyses: AnalysisCache | None = None,
             terms: tuple[dict[str, list[int]], tuple[int, ...]] | None = None) -> _Entry:
    """Everything the index keeps about one entry; ``terms`` (term counts, group lengths) when
    they are already known."""
    entry = doc.entry if isinstance(doc.entry, Mapping) else {}
    if terms is not None:
        tf, lens = terms
    else:
        tf, lens = _terms(entry) if analyses is None else analyses.analyse(entry, _terms)
    fresh = None
    for name in ("verified_at", "updated_at", "created_at"):
        fresh = F.parse_datetime(entry.get(name))
        if fresh is not None:
            break
    scopes = None
    if doc.kind == "constraint":
        raw = F.str_list(entry.get("scope"))
        scopes = tuple(raw) if raw else ("global",)
    return _Entry(
        doc=doc,
        key=key,
        tf=tf,
        lens=lens,
        tags=frozenset(tag_key(t) for t in F.str_list(entry.get("tags"))),
        status=F.lowered(entry.get("status"), "active") or "active",
        created=F.parse_datetime(entry.get("created_at")),
        fresh_ts=fresh.timestamp() if fresh is not None else None,
        origin_prior=P.ORIGIN_PRIOR.get(F.lowered(entry.get("origin")), P.DEFAULT_ORIGIN_PRIOR),
        scopes=scopes,
        title_terms=tuple((term, counts[_TITLE]) for term, counts in tf.items() if counts[_TITLE] > 0),
    )


class InvertedIndex:
    """Maintenance half of ``SearchIndex``; not thread-safe (the service serialises access)."""

    def __init__(self, tuning: Tuning | None = None, analyses: AnalysisCache | None = None) -> None:
        self.tuning = tuning or DEFAULT_TUNING
        # Optional persisted per-entry analyses (state.py); None: analyse every entry here.
        self.analyses = analyses
        self._slots: dict[tuple[str, str], int] = {}
        self._entries: list[_Entry | None] = []
        self._free: list[int] = []
        self._postings: dict[str, dict[int, float]] = {}
        # (kind, id of a successor) -> slots of the entries it superseded
        self._predecessors: dict[tuple[str, str], set[int]] = {}
        # term -> slots whose title has it: similar() looks for close titles among far fewer
        # entries than the term's postings name (titles are a few words, entries a hundred)
        self._title_postings: dict[str, set[int]] = {}
        self._len_sums = [0] * len(F.GROUPS)
        self._avg_used = [0.0] * len(F.GROUPS)
        self._anon = 0
        # dense.TermArrays once a large store has been searched: arrays made from the postings,
        # dropped whenever they change
        self._term_arrays: Any = None
        # scope -> slots of the constraints with that (non-global) scope, and those scopes indexed
        # by their literal start, made when a query names a file (SearchIndex._cover) and dropped
        # with the arrays
        self._scoped: tuple[dict[str, list[int]], ScopeIndex] | None = None
        # slot -> the terms of each sentence of the entry that states a number, made when a query
        # with a number is scored (SearchIndex._unbound_values) and dropped with the arrays
        self._value_sentences: dict[int, tuple[frozenset[str], ...]] = {}

    # ----------------------------------------------------------------- maintenance

    def __len__(self) -> int:
        return len(self._slots)

    def _key(self, doc: Doc) -> tuple[str, str]:
        entry = doc.entry if isinstance(doc.entry, Mapping) else {}
        eid = F.entry_id(entry)
        if eid is None:
            self._anon += 1
            eid = f"<no-id-{self._anon}>"
        return (str(doc.kind), eid)

    def _postings_changing(self) -> None:
        if self._term_arrays is not None:
            self._term_arrays.clear()
        self._scoped = None
        self._value_sentences = {}

    def upsert(self, doc: Doc) -> None:
        self._postings_changing()
        slot, info = self._insert(doc)
        if not self._maybe_rebuild():
            self._post(slot, info)

    def _insert(self, doc: Doc) -> tuple[int, _Entry]:
        """Register ``doc`` (replacing its key) without touching the postings."""
        key = self._key(doc)
        if key in self._slots:
            self._drop(key)
        info = _analyse(doc, key, self.analyses)
        slot = self._free.pop() if self._free else len(self._entries)
        if slot == len(self._entries):
            self._entries.append(info)
        else:
            self._entries[slot] = info
        self._slots[key] = slot
        for gi, n in enumerate(info.lens):
            self._len_sums[gi] += n
        for term, _count in info.title_terms:
            self._title_postings.setdefault(term, set()).add(slot)
        successor = self._successor_key(info)
        if successor is not None:
            self._predecessors.setdefault(successor, set()).add(slot)
        return slot, info

    @staticmethod
    def _successor_key(info: _Entry) -> tuple[str, str] | None:
        successor = info.doc.entry.get("superseded_by") if isinstance(info.doc.entry, Mapping) else None
        if info.status != "superseded" or not isinstance(successor, str) or not successor.strip():
            return None
        return (info.key[0], successor.strip())

    def remove(self, kind: str, entry_id: str) -> None:
        key = (str(kind), str(entry_id))
        if key in self._slots:
            self._postings_changing()
            self._drop(key)

    def replace_kind(self, kind: str, docs: Iterable[Doc], settle: bool = False) -> None:
        """``settle``: as ``settle()`` after it, posting each entry once (the last kind of a load)."""
        self._replace({kind: docs}, drift=0.0 if settle else _DRIFT)

    def replace_kinds(self, docs_by_kind: Mapping[str, Iterable[Doc]]) -> None:
        """``replace_kind`` for each kind in turn, then ``settle()``, with each entry posted once:
        a whole store loaded kind by kind would post the first kinds again for each later one."""
        self._replace(docs_by_kind, drift=0.0)

    def _replace(self, docs_by_kind: Mapping[str, Iterable[Doc]], drift: float) -> None:
        self._postings_changing()
        added: list[tuple[int, _Entry]] = []
        with gc_paused():
            for kind, docs in docs_by_kind.items():
                for key in [k for k in self._slots if k[0] == kind]:
                    self._drop(key)
                added += [self._insert(Doc(kind, doc.entry) if doc.kind != kind else doc) for doc in docs]
            if not self._maybe_rebuild(drift=drift):
                for slot, info in added:
                    self._post(slot, info)

    def _drop(self, key: tuple[str, str]) -> None:
        slot = self._slots.pop(key)
        info = self._entries[slot]
        assert info is not None
        for term in info.tf:
            plist = self._postings.get(term)
            if plist is not None:
                plist.pop(slot, None)
                if not plist:
                    del self._postings[term]
        for gi, n in enumerate(info.lens):
            self._len_sums[gi] -= n
        for term, _count in info.title_terms:
            titled = self._title_postings.get(term)
            if titled is not None:
                titled.discard(slot)
                if not titled:
                    del self._title_postings[term]
        successor = self._successor_key(info)
        if successor is not None:
            slots = self._predecessors.get(successor)
            if slots is not None:
                slots.discard(slot)
                if not slots:
                    del self._predecessors[successor]
        self._entries[slot] = None
        self._free.append(slot)

    def _averages(self) -> list[float]:
        n = max(1, len(self._slots))
        return [max(1.0, s / n) for s in self._len_sums]

    def settle(self) -> bool:
        """Score with the field lengths' exact averages from here on (True when that changed the
        postings). Upserts let the averages drift by up to ``_DRIFT`` before the postings are
        rebuilt, so that one write does not re-post the whole index; a store loaded kind by kind
        then kept the averages of the first kinds, and its ranking depended on the order it was
        loaded in. Called after a bulk load."""
        return self._maybe_rebuild(drift=0.0)

    def _maybe_rebuild(self, drift: float = _DRIFT) -> bool:
        current = self._averages()
        drifted = any(
            used <= 0.0 or abs(cur - used) > drift * used
            for cur, used in zip(current, self._avg_used)
        )
        if not drifted:
            return False
        self._avg_used = current
        self._postings = {}
        with gc_paused():
            for slot, info in enumerate(self._entries):
                if info is not None:
                    self._post(slot, info)
        return True

    def _post(self, slot: int, info: _Entry) -> None:
        t = self.tuning
        k1 = t.k1
        k1_plus = k1 + 1.0
        norms = [
            w / (1.0 - b + b * (n / avg))
            for w, b, n, avg in zip(t.group_weights, t.group_b, info.lens, self._avg_used)
        ]
        postings = self._postings
        # Unrolled for the four field groups (this runs for every term of every entry when an
        # index is built; ~2x a loop over zip). fields.GROUPS has four: a change there fails here
        # at once. Same sums in the same order as adding the non-zero terms one by one (a zero
        # count adds 0.0, which leaves a float unchanged), so the weights are bit-identical.
        n0, n1, n2, n3 = norms
        for term, (c0, c1, c2, c3) in info.tf.items():
            tfw = c0 * n0 + c1 * n1 + c2 * n2 + c3 * n3
            sat = tfw * k1_plus / (k1 + tfw)
            plist = postings.get(term)
            if plist is None:
                postings[term] = {slot: sat}
            else:
                plist[slot] = sat

    def _idf(self, term: str) -> float:
        n = len(self._slots)
        df = len(self._postings.get(term, ()))
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    # ----------------------------------------------------------------- querying

    def _score_groups(self, groups: list[list[tuple[str, float]]]) -> dict[int, float]:
        """Sum over query groups of the best alternative's contribution per entry: a related
        term can stand in for the query word it came from, never add to it."""
        acc: dict[int, float] = {}
        for alternatives in groups:
            postings = [(w, plist) for term, w in alternatives if (plist := self._postings.get(term))]
            if not postings:
                continue
            w, plist = postings[0]
            if len(postings) == 1:
                if not acc:
                    # Same floats as adding to 0.0 (x + 0.0 is x for these non-negative weights),
                    # at a comprehension's speed: the loops here are most of a query's cost.
                    acc = {slot: w * sat for slot, sat in plist.items()}
                    continue
                get = acc.get
                for slot, sat in plist.items():
                    acc[slot] = get(slot, 0.0) + w * sat
                continue
            best = {slot: v for slot, sat in plist.items() if (v := w * sat) > 0.0}
            bget = best.get
            for w, plist in postings[1:]:
                for slot, sat in plist.items():
                    v = w * sat
                    if v > bget(slot, 0.0):
                        best[slot] = v
            if not acc:
                acc = best
                continue
            get = acc.get
            for slot, v in best.items():
                acc[slot] = get(slot, 0.0) + v
        return acc
