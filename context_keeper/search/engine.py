"""``SearchIndex``: BM25F relevance with related-term expansion, filters, priors, history
questions and near-duplicate lookup, over the inverted index of ``index.py``."""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from operator import itemgetter
from typing import TYPE_CHECKING

from context_keeper.model import tag_key
from context_keeper.scope import ScopeIndex, is_global, scope_overlaps
from context_keeper.search import answer_type
from context_keeper.search import fields as F
from context_keeper.search import numbers
from context_keeper.search import priors as P
from context_keeper.search.abstain import CONF_GAMMA, DEFAULT_MIN_RELEVANCE, coherence, confidence, normalise
from context_keeper.search.contract import Doc, Hit, SearchOptions, SearchResult
from context_keeper.search.index import InvertedIndex, _analyse, _Entry
from context_keeper.search.generic import is_generic
from context_keeper.search.synonyms import related_terms
from context_keeper.search.tokenize import file_paths, iter_tagged, path_context, terms

if TYPE_CHECKING:
    from context_keeper.search.dense import DenseScores
    from context_keeper.search.tuning import Tuning

__all__ = ["DEFAULT_MIN_RELEVANCE", "Doc", "Hit", "SearchIndex", "SearchOptions", "SearchResult"]


@dataclass
class _Query:
    groups: list[list[tuple[str, float]]]   # per query word: (term, weight) alternatives
    max_raw: float                          # raw score of a perfect match
    direct: list[dict[int, float]]          # postings of the query's own words found in the store
    n_atoms: int                            # query words (stop words and compounds aside)
    related: list[tuple[dict[int, float], list[dict[int, float]]]]  # per word: own postings, stand-ins
    absent: float                           # share of the topical query weight the store never uses
    topical: bool = True                    # some query word is not an everyday one
    # groups[i] for i here order entries but are no part of relevance: a pasted file path's
    # directories and suffix (tokenize.path_context)
    locating: frozenset[int] = frozenset()
    # The constraints whose own scope covers a pasted file, with the query and the raw scores
    # they are scored by: for them the file's directories are what they are about, so they count
    # as asked words (SearchIndex._cover sets it)
    covering: tuple[frozenset[int], _Query, dict[int, float] | DenseScores] | None = None
    # The asked numbers, as (group index, term), and the query's other own words: a number
    # counts for an entry only in a sentence beside one of them (numbers.py)
    values: tuple[tuple[int, str], ...] = ()
    partners: frozenset[str] = frozenset()
    value_forms: dict[str, frozenset[str]] = field(default_factory=dict)  # numbers.value_forms
    # The same alternatives weighted for the order (Tuning.order_idf_power), with the raw score
    # of a perfect match on that scale; None when the order uses the relevance weights
    order_groups: list[list[tuple[str, float]]] | None = None
    order_max: float = 0.0

    @property
    def ordering(self) -> list[list[tuple[str, float]]]:
        return self.groups if self.order_groups is None else self.order_groups

    @property
    def order_raw(self) -> float:
        """The ordering's perfect match: the ordering score is the raw one over this."""
        return self.max_raw if self.order_groups is None else self.order_max

    def relevance_groups(self) -> list[list[tuple[str, float]]]:
        if not self.locating:
            return self.groups
        return [g for i, g in enumerate(self.groups) if i not in self.locating]


# _rank sorts the best limit × this + 16 candidates first, examines them until none left could
# place, and doubles the shortlist while one outside it still could. Since it stops inside a
# shortlist, a longer one costs only its sorting and saves regrowths: ×8 against ×4, 2.34 against
# 2.62 ms per get_context at 10,000 entries, 1.89 against 1.97 ms at 1,500
# (benchmarks/bench_shortlist.py; ×12 and ×16 measured the same as ×8). The answers do not
# depend on it.
_SHORTLIST_FACTOR = 8
# History questions: predecessors of the first three entries lead them. Two until round 16; on
# sixty-eight stores' dev, three finds one more superseded answer (history hit@5 0.990 -> 0.995)
# and changes nothing else (MRR 0.8585 both; four is the same as three).
_LEAD_RANKS = 3
_SIMILAR_TERMS = 12      # similar(): candidates from the probe's heaviest terms only
_SIMILAR_SHORTLIST = 20  # ... and exact cosine for this many of them
# similar(): titles of one kind this close count on their own. Among the eval stores' pairs of
# one kind that the whole-entry cosine leaves under 0.30, the title cosine reaches 0.43 (a
# superseded pair) and 0.42 (two unrelated append-only logs); "Do not cache carrier quotes at
# all" against the demo's "Cache carrier quotes for 10 minutes on the full parcel shape" is 0.61.
_SIMILAR_TITLE = 0.5


# A store this large is scored over arrays (dense.py): below it the dictionary path costs less
# than NumPy's per-call overhead, and a hook process need not import NumPy at all.
DENSE_MIN = 2000


def _by_score_then_slot(item: tuple[int, float]) -> tuple[float, int]:
    return (-item[1], item[0])


def _largest(scores: dict[int, float] | DenseScores, k: int) -> list[tuple[int, float]]:
    """The ``k`` highest (slot, score) pairs, highest first, equal scores lowest slot first: an
    order that does not depend on how the scores were summed, so the dictionary and the array
    paths (dense.py) shortlist the same entries. The k-th value comes from sorting bare floats,
    and only the items at or above it are sorted as pairs."""
    if not isinstance(scores, dict):
        return scores.largest(k)
    if k >= len(scores):
        return sorted(scores.items(), key=_by_score_then_slot)
    if k <= 0:
        return []
    kth = sorted(scores.values(), reverse=True)[k - 1]
    return sorted([item for item in scores.items() if item[1] >= kth], key=_by_score_then_slot)[:k]


class _SlotScores:
    """The raw scores of ``groups``, each summed when asked for (as ``_score_groups`` sums it,
    the same floats): the relevance of the entries that place, when the order is scored with
    other weights."""

    def __init__(self, postings: Mapping[str, dict[int, float]], groups: list[list[tuple[str, float]]]) -> None:
        self._groups = [found for alternatives in groups
                        if (found := [(w, plist) for term, w in alternatives if (plist := postings.get(term))])]

    def get(self, slot: int, default: float = 0.0) -> float:
        total, found = 0.0, False
        for alternatives in self._groups:
            best = 0.0
            for w, plist in alternatives:
                sat = plist.get(slot)
                if sat is not None and w * sat > best:
                    best = w * sat
            if best > 0.0:
                total += best
                found = True
        return total if found else default


class _Filter:
    """The options of one search, prepared once: filters and priors per candidate are then
    cheap (they run for every entry examined)."""

    def __init__(self, options: SearchOptions) -> None:
        self.kinds = options.kinds
        self.tags = frozenset(tag_key(t) for t in options.tags) if options.tags is not None else None
        self.since = F.as_utc(options.since) if options.since is not None else None
        self.before = F.as_utc(options.before) if options.before is not None else None
        self.scope = options.scope or None
        self.root = options.root
        self.include_deprecated = options.include_deprecated
        self.kind_prior: dict[str, float] = {}  # by the question's form, e.g. how-to: pipelines (search sets it)

    def passes(self, info: _Entry) -> bool:
        if info.status == "deprecated" and not self.include_deprecated:
            return False
        if self.kinds is not None and info.key[0] not in self.kinds:
            return False
        if self.tags is not None and not (info.tags & self.tags):
            return False
        # A date filter admits what is known to be in range: an undated (legacy) entry is left
        # out, as query_entries leaves it out.
        if self.since is not None and (info.created is None or info.created < self.since):
            return False
        if self.before is not None and (info.created is None or info.created >= self.before):
            return False
        if self.scope is not None and info.scopes is not None:
            if not any(scope_overlaps(s, self.scope, self.root) for s in info.scopes):
                return False
        return True

    def prior(self, info: _Entry, now_ts: float, history: bool) -> float:
        prior = info.origin_prior * P.recency_prior_ts(info.fresh_ts, now_ts)
        if info.status == "superseded":
            prior *= P.HISTORY_SUPERSEDED_PRIOR if history else P.SUPERSEDED_PRIOR
        elif info.status == "deprecated":
            # Asked for with include_deprecated: shown, demoted as a replaced entry is.
            prior *= P.SUPERSEDED_PRIOR
        elif history:
            prior *= P.HISTORY_CURRENT_PRIOR
        if self.kind_prior:
            prior *= self.kind_prior.get(info.key[0], 1.0)
        if self.scope is not None and info.scopes is not None:
            if any(not is_global(s, self.root) and scope_overlaps(s, self.scope, self.root) for s in info.scopes):
                prior *= P.SCOPE_MATCH_PRIOR
        return prior


class SearchIndex(InvertedIndex):
    """In-memory index over store entries (see the package docstring for the contract)."""

    _admits_filter: tuple[SearchOptions, _Filter] | None = None  # admits(): the last options, prepared
    dense_scoring = True  # a large store is scored over arrays (dense.py)

    def admits(self, kind: str, entry_id: str, options: SearchOptions) -> bool:
        """Would ``search`` with these options consider this entry (status, types, tags, dates,
        scope)? For entries that reach an answer by another way than ranking (``related_to``)."""
        slot = self._slots.get((kind, entry_id))
        info = self._entries[slot] if slot is not None else None
        if info is None:
            return False
        # One answer asks this for every linked entry and every scoped constraint with the same
        # options: their filter is prepared once.
        prepared = self._admits_filter
        if prepared is None or prepared[0] is not options:
            prepared = self._admits_filter = (options, _Filter(options))
        return prepared[1].passes(info)

    def predecessors(self, kind: str, entry_id: str) -> list[str]:
        """Ids of the entries of this kind that name this one as their ``superseded_by``."""
        slots = self._predecessors.get((kind, entry_id))
        if not slots:  # most entries replaced none: asked for every entry an answer packs
            return []
        return sorted(F.entry_id(info.doc.entry) or "" for info in (self._entries[s] for s in slots) if info is not None)

    def _query(self, query: str, tuning: Tuning | None = None) -> _Query:
        """Weighted alternatives per query word, and the raw score of a perfect match."""
        t = tuning or self.tuning
        atoms: dict[str, None] = {}
        compounds: dict[str, None] = {}
        for term, compound in iter_tagged(query or ""):
            (compounds if compound else atoms)[term] = None
        # A pasted path's directories and suffix keep their place in the order (an entry about
        # the same part of the tree first) but count neither as asked words nor in the perfect
        # match's score: "src" and the package name match half a store.
        context = path_context(query) if t.path_context else frozenset()
        locating: set[int] = set()
        groups: list[list[tuple[str, float]]] = []
        max_raw = locating_raw = 0.0
        topical = absent = 0.0
        power = t.order_idf_power
        # The order's weights (power != 1): per group, the same terms as ``groups``
        ordered: list[list[tuple[str, float]]] = []
        order_max = locating_order = 0.0
        for term in atoms:
            idf = self._idf(term)
            oidf = idf**power
            if is_generic(term):
                idf *= t.generic_weight
                oidf *= t.generic_weight
            elif term not in context:
                topical += idf
                if term not in self._postings:
                    absent += idf
            if term in context:
                idf *= t.path_context_weight
                oidf *= t.path_context_weight
                locating.add(len(groups))
                locating_raw += idf * (t.k1 + 1.0)
                locating_order += oidf * (t.k1 + 1.0)
            else:
                # A word no entry uses keeps its (maximal) weight here: "nothing recorded about
                # this" must lower relevance.
                max_raw += idf * (t.k1 + 1.0)
                order_max += oidf * (t.k1 + 1.0)
            alternatives = [(term, idf)]
            order_alternatives = [(term, oidf)]
            if t.synonyms:
                related = [
                    (rel, t.synonym_weight * min(idf, rel_idf), t.synonym_weight * min(oidf, rel_idf**power))
                    for rel in related_terms(term)
                    if rel not in atoms and rel in self._postings
                    for rel_idf in (self._idf(rel),)
                ]
                # The few most specific stand-ins carry the evidence; more only cost time.
                if len(related) > t.max_related:
                    related = heapq.nlargest(t.max_related, related, key=itemgetter(1))
                alternatives.extend((rel, w) for rel, w, _ in related)
                order_alternatives.extend((rel, w) for rel, _, w in related)
            groups.append(alternatives)
            ordered.append(order_alternatives)
        asked = [a for a in atoms if a not in context]
        direct = [self._postings[a] for a in asked if a in self._postings]
        related = []
        if t.coherence_related > 0.0:
            for term, alternatives in zip(atoms, groups):
                stand_ins = [self._postings[rel] for rel, _ in alternatives if rel != term]
                if stand_ins and term not in context:
                    related.append((self._postings.get(term, {}), stand_ins))
        # A path whose file name is an everyday word ("src/packwise/main.py") has no topical word
        # left once its directories locate: the whole path, when an entry records it, is the topic.
        recorded_paths = ({p.lower() for p in file_paths(query)} & compounds.keys()
                          if context and topical <= 0.0 else set())
        for term in compounds:
            if term not in atoms and term in self._postings:
                if term in context:
                    locating.add(len(groups))
                idf = self._idf(term)
                oidf = idf**power
                if term in recorded_paths:
                    topical += idf
                    max_raw += idf * (t.k1 + 1.0)
                    order_max += oidf * (t.k1 + 1.0)
                factor = t.path_context_weight if term in context else 1.0
                groups.append([(term, idf * factor)])
                ordered.append([(term, oidf * factor)])
        # One set of weights when the order uses the relevance's (the same floats as before
        # the knob, and one scoring pass)
        order = {"order_groups": ordered, "order_max": order_max} if power != 1.0 else {}
        if max_raw <= 0.0 and locating:
            # Only a path whose file name has no word of its own ("src/a/b.py"): its directories
            # order what is listed, with no relevance (not topical).
            if order:
                order["order_max"] = locating_order
            return _Query(groups, locating_raw, [], 0, [], 0.0, False, frozenset(locating), **order)
        values, partners = self._values(list(atoms), context) if t.numbers_need_a_word else ((), frozenset())
        return _Query(groups, max_raw, direct, len(asked), related, absent / topical if topical > 0.0 else 0.0,
                      topical > 0.0 or not asked, frozenset(locating), values=values, partners=partners,
                      value_forms=numbers.value_forms(query) if values else {}, **order)

    def _values(self, atoms: list[str], context: frozenset[str]) -> tuple[tuple[tuple[int, str], ...], frozenset[str]]:
        """The asked numbers some entry has, with their groups' places (the query's words are its
        first groups, in order), and the words they must stand beside (numbers.py): none when
        the query has no other word."""
        asked = [(i, term) for i, term in enumerate(atoms) if term not in context]
        values = tuple((i, term) for i, term in asked if numbers.is_value(term) and term in self._postings)
        if not values:
            return (), frozenset()
        # The query's own words, not their stand-ins: coherence counts those alone too, and a
        # related term ("sequence" for "order") beside a number is not the asked word's value.
        partners = frozenset(term for _, term in asked if not numbers.is_value(term))
        return (values, partners) if partners else ((), frozenset())

    def _rank(
        self,
        order: dict[int, float] | DenseScores,
        relevance: dict[int, float] | DenseScores | _SlotScores,
        q: _Query,
        flt: _Filter,
        now: float,
        history: bool,
        limit: int,
    ) -> list[tuple[float, float, int]]:
        """Top ``limit`` (score, relevance, slot) among candidates passing the filters.

        ``order`` is the raw ordering score (relevance plus feedback terms), ``relevance`` the
        raw relevance. Priors and filters are evaluated best-first on a shortlist that grows
        until no unexamined candidate could still enter the top ``limit`` even with the largest
        possible prior — so a query touching thousands of entries evaluates only a few dozen.
        Within a shortlist the examination stops as soon as the next candidate (hence every
        later one) is below the ``limit``-th score with the largest prior, lent to its successor
        or not. Relevance (coherence needs a look at every query word's postings) is computed only
        for the candidates whose score can still place them: those at or above the ``limit``-th
        score.
        """
        max_raw = q.order_raw
        if limit <= 0 or not order or max_raw <= 0.0:
            return []
        t = self.tuning
        most = P.max_prior(history, flt.scope is not None, max(flt.kind_prior.values(), default=1.0))
        lent = max(1.0, t.successor_credit)  # a superseded candidate's successor gets up to this share
        k = limit * _SHORTLIST_FACTOR + 16
        # A grown shortlist starts with the previous one (the order is total: score, then slot),
        # so what was examined is kept, not examined again.
        prior_scored: dict[int, float] = {}
        # The ``limit`` highest of them (a min-heap): credit only raises scores, so the
        # ``limit``-th score after it is at least lowest[0].
        lowest: list[float] = []
        replaced: list[int] = []  # superseded entries among them, for the successor credit
        relevances: dict[int, float] = {}
        examined = 0
        while True:
            exhausted = k >= len(order)
            shortlist = _largest(order, len(order) if exhausted else k)
            settled = False
            for slot, raw in shortlist[examined:]:
                # Strictly below: a candidate that could tie the limit-th score is examined, as
                # the whole shortlist was, so ties are broken as before.
                if len(lowest) == limit and lowest[0] > raw / max_raw * most * lent:
                    settled = True
                    break
                info = self._entries[slot]
                if info is None or not flt.passes(info):
                    continue
                score = prior_scored[slot] = raw / max_raw * flt.prior(info, now, history)
                if len(lowest) < limit:
                    heapq.heappush(lowest, score)
                elif score > lowest[0]:
                    heapq.heapreplace(lowest, score)
                if info.status == "superseded":
                    replaced.append(slot)
            examined = len(shortlist)
            scored = prior_scored
            if t.successor_credit > 0.0 and replaced:
                scored = dict(prior_scored)
                self._credit_successors(scored, replaced, order, q, flt, now, history)
            if len(scored) > limit:
                kth = heapq.nlargest(limit, scored.values())[-1]
                placed = [(v, slot) for slot, v in scored.items() if v >= kth]
            else:
                placed = [(v, slot) for slot, v in scored.items()]
            for _, slot in placed:
                if slot not in relevances:
                    relevances[slot] = self._relevance(q, slot, relevance)
            best = heapq.nlargest(limit, ((v, relevances[slot], slot) for v, slot in placed))
            if exhausted or settled:
                return best
            ceiling = shortlist[-1][1] / max_raw * most
            if len(best) == limit and best[-1][0] >= ceiling:
                return best
            k *= 2

    def _relevance(self, q: _Query, slot: int, relevance: dict[int, float] | DenseScores | _SlotScores) -> float:
        if q.covering is not None and slot in q.covering[0]:
            return self._relevance(q.covering[1], slot, q.covering[2])
        rel = self.base_relevance(q, slot, relevance.get(slot, 0.0))
        return confidence(rel) if self.tuning.confidence else rel

    def _credit_successors(
        self,
        scored: dict[int, float],
        replaced: list[int],
        order: dict[int, float] | DenseScores,
        q: _Query,
        flt: _Filter,
        now: float,
        history: bool,
    ) -> None:
        """A superseded entry that matches says its replacement answers today's version of
        the question, often in other words: the successor gets at least ``successor_credit``
        of the replaced entry's ordering score (its own relevance is unchanged). ``replaced``
        are the superseded entries among ``scored``, in its order."""
        credit = self.tuning.successor_credit
        for slot in replaced:
            info = self._entries[slot]
            assert info is not None
            successor = info.doc.entry.get("superseded_by")
            if not isinstance(successor, str):
                continue
            target = self._slots.get((info.key[0], successor.strip()))
            target_info = self._entries[target] if target is not None else None
            if target_info is None or target_info.status == "superseded" or not flt.passes(target_info):
                continue
            mine = scored.get(target)
            if mine is None:
                mine = order.get(target, 0.0) / q.order_raw * flt.prior(target_info, now, history)
            unpenalised = order.get(slot, 0.0) / q.order_raw * flt.prior(target_info, now, False)
            scored[target] = max(mine, unpenalised * credit)

    def base_relevance(self, q: _Query, slot: int, raw: float) -> float:
        """Coverage × coherence (abstain.py), before the confidence mapping. A question made only
        of everyday words ("what time is it") names no topic: whatever matches it, it is not a
        confident answer."""
        if not q.topical:
            return 0.0
        unbound = self._unbound_values(q, slot)
        if unbound:
            raw -= sum(self._group_score(q.groups[i], slot) for i, _ in unbound)
        return normalise(raw, q.max_raw) * self._coherence(q, slot, len(unbound))

    def _unbound_values(self, q: _Query, slot: int) -> list[tuple[int, str]]:
        """The asked numbers this entry has but states beside none of the query's other words
        (numbers.py): they do not make it relevant."""
        if not q.values:
            return []
        present = [(i, term) for i, term in q.values if slot in self._postings.get(term, ())]
        if not present:
            return []
        sentences = self._value_sentences.get(slot)
        if sentences is None:
            info = self._entries[slot]
            sentences = numbers.value_sentences(info.doc.entry) if info is not None else ()
            self._value_sentences[slot] = sentences
        loose = set(numbers.unbound([term for _, term in present], q.partners, sentences, q.value_forms))
        return [(i, term) for i, term in present if term in loose]

    def _group_score(self, alternatives: list[tuple[str, float]], slot: int) -> float:
        """What one query word adds to an entry's raw score: its best alternative's weight, as
        _score_groups sums it."""
        return max((w * plist[slot] for term, w in alternatives
                    if (plist := self._postings.get(term)) is not None and slot in plist), default=0.0)

    def _follow_successors(self, best: list[tuple[float, float, int]]) -> list[tuple[float, float, int]]:
        """A replaced entry ranked below its successor moves up to right behind it when it is
        more relevant than every entry in between: the demotion of superseded entries has done
        its job (today's answer comes first), and a question about the past that carries no
        recognisable cue still finds the old answer near the top."""
        out = list(best)
        position = {slot: i for i, (_, _, slot) in enumerate(out)}
        for i in range(len(out)):
            score, rel, slot = out[i]
            info = self._entries[slot]
            if info is None or info.status != "superseded" or rel <= 0.0:
                continue
            successor = info.doc.entry.get("superseded_by")
            target = self._slots.get((info.key[0], successor.strip())) if isinstance(successor, str) else None
            j = position.get(target) if target is not None else None
            if j is None or j >= i - 1:
                continue
            if all(out[k][1] < rel for k in range(j + 1, i)):
                moved = (max(score, out[j + 1][0]), rel, slot)
                out[j + 1 : i + 1] = [moved, *out[j + 1 : i]]
                position = {s: n for n, (_, _, s) in enumerate(out)}
        return out

    def _lead_successors(
        self, best: list[tuple[float, float, int]], flt: _Filter, limit: int
    ) -> list[tuple[float, float, int]]:
        """Question about the past ("how did deploys work before Argo CD?"): the entries a
        well-ranked entry superseded are the likely answer, whatever words they use, so each
        comes right before its successor (with its own relevance)."""
        out: list[tuple[float, float, int]] = []
        placed = set()
        for rank, (score, rel, slot) in enumerate(best):
            info = self._entries[slot]
            if rank < _LEAD_RANKS and info is not None and info.status != "superseded":
                for pred in sorted(self._predecessors.get(info.key, ())):
                    if pred in placed:
                        continue
                    pinfo = self._entries[pred]
                    if pinfo is None or not flt.passes(pinfo):
                        continue
                    own = next((item for item in best if item[2] == pred), None)
                    prel = own[1] if own is not None else 0.0
                    out.append((max(score, own[0] if own else 0.0), prel, pred))
                    placed.add(pred)
            if slot not in placed:
                out.append((score, rel, slot))
                placed.add(slot)
        return out[:limit]

    def _floor_predecessors(
        self, best: list[tuple[float, float, int]], flt: _Filter, limit: int
    ) -> list[tuple[float, float, int]]:
        """No cue of a question about the past, but the first entry replaced an older one: that
        one is moved up to (or inserted at) rank ``history_floor`` unless it already ranks
        there, with its own relevance (0 if it did not match). "How did deploys work before
        Argo CD?" asked without a recognised cue finds the old answer next to today's; for any
        other question, one extra entry below the first two is the cost."""
        floor = self.tuning.history_floor
        _score, _rel, slot = best[0]
        info = self._entries[slot]
        if info is None or info.status == "superseded":
            return best
        out = list(best)
        for pred in sorted(self._predecessors.get(info.key, ())):
            pos = next((i for i, item in enumerate(out) if item[2] == pred), None)
            if pos is not None and pos < floor:
                continue
            pinfo = self._entries[pred]
            if pinfo is None or not flt.passes(pinfo):
                continue
            rel = out.pop(pos)[1] if pos is not None else 0.0
            at = max(1, min(floor - 1, len(out)))
            out.insert(at, (out[at - 1][0], rel, pred))
        return out[:limit]

    def _coherence(self, q: _Query, slot: int, unbound: int = 0) -> float:
        """How many of the query's own words the entry contains, saturating at
        ``coherence_k``: several asked-about words co-occurring in one entry is what separates
        "recorded in other words" from a few incidental matches (abstain.py)."""
        k = self.tuning.coherence_k
        if k <= 0:
            return 1.0
        found: float = sum(1 for plist in q.direct if slot in plist) - unbound
        if q.related:
            credit = self.tuning.coherence_related
            found += credit * sum(
                1 for own, plists in q.related if slot not in own and any(slot in p for p in plists)
            )
        return coherence(found, q.n_atoms, k)

    def _feedback(self, acc: dict[int, float], groups: list[list[tuple[str, float]]]) -> dict[int, float]:
        """Pseudo-relevance feedback: the distinctive terms of the first-pass top entries,
        as extra (discounted) query terms. Affects the order only, never relevance."""
        t = self.tuning
        used = {term for alternatives in groups for term, _ in alternatives}
        weights: dict[str, float] = {}
        for slot, _ in heapq.nlargest(t.prf_docs, acc.items(), key=itemgetter(1)):
            info = self._entries[slot]
            if info is None:
                continue
            for term, counts in info.tf.items():
                if term in used or not term.isalnum():
                    continue
                df = len(self._postings.get(term, ()))
                if df < 2:
                    continue
                tfw = sum(c * w for c, w in zip(counts, t.group_weights))
                weights[term] = weights.get(term, 0.0) + tfw * self._idf(term)
        if not weights:
            return acc
        chosen = heapq.nlargest(t.prf_terms, weights.items(), key=itemgetter(1))
        top_w = chosen[0][1]
        extra = self._score_groups(
            [[(term, t.prf_weight * self._idf(term) * w / top_w)] for term, w in chosen]
        )
        merged = dict(acc)
        for slot, v in extra.items():
            if slot in merged:
                merged[slot] += v
        return merged

    def _score_query(self, groups: list[list[tuple[str, float]]]) -> dict[int, float] | DenseScores:
        """The raw scores of a query's groups: over arrays for a large store (same floats),
        by dictionary otherwise, and always when feedback needs the dictionary."""
        if not self.dense_scoring or self.tuning.prf or len(self._slots) < DENSE_MIN:
            return self._score_groups(groups)
        from context_keeper.search import dense

        if self._term_arrays is None:
            self._term_arrays = dense.TermArrays()
        return dense.score_groups(groups, self._postings, self._term_arrays, len(self._entries))

    def search(self, query: str, options: SearchOptions = SearchOptions()) -> SearchResult:
        query = _within_project(_repository_paths(query), (options.root, *options.root_spellings))
        now = (F.as_utc(options.now) if options.now else datetime.now(timezone.utc)).timestamp()
        limit = max(0, int(options.limit or 0))
        history = P.asks_about_past(query) if self.tuning.history_cues else False
        matched = None
        flt = _Filter(options)
        flt.kind_prior = P.kind_priors(query, self.tuning.procedure_prior)
        q = self._query(P.without_time_cues(query) if history and self.tuning.time_cues_off_topic else query)
        if q.groups:
            if q.locating:
                acc = self._cover(query, q, self._score_query(q.ordering), options.root)
            else:
                acc = self._score_query(q.ordering)
            if q.order_groups is not None:
                # Relevance is wanted only for the few entries that place: summed for them alone
                # instead of a second pass over the postings.
                relevant: dict[int, float] | DenseScores | _SlotScores = _SlotScores(self._postings, q.relevance_groups())
            elif q.locating:
                relevant = self._score_query(q.relevance_groups())
            else:
                relevant = acc
            order = self._feedback(acc, q.groups) if self.tuning.prf and acc else acc
            best = self._rank(order, relevant, q, flt, now, history, limit)
        else:
            # No searchable word (only filters, or only stop words): list by priors.
            passing = [(flt.prior(info, now, history), 0.0, slot)
                       for slot, info in enumerate(self._entries) if info is not None and flt.passes(info)]
            matched = len(passing)
            best = heapq.nlargest(limit, passing)
        if self.tuning.history_follows and not history:
            best = self._follow_successors(best)
        if self.tuning.history_leads and history:
            best = self._lead_successors(best, flt, limit)
        if self.tuning.history_floor > 0 and not history and best:
            best = self._floor_predecessors(best, flt, limit)
        hits = []
        for score, rel, slot in best:
            info = self._entries[slot]
            assert info is not None
            hits.append(
                Hit(
                    kind=info.key[0],
                    entry=info.doc.entry,
                    score=score,
                    relevance=rel,
                    history=history and info.status == "superseded",
                )
            )
        unstated, scale = self._answer_type(query, hits)
        if scale != 1.0:
            if not self.tuning.confidence:
                # The factor is on the confidence scale; on the raw one this is the same scaling.
                scale **= 1.0 / CONF_GAMMA
            hits = [replace(h, relevance=h.relevance * scale) for h in hits]
        top = max((h.relevance for h in hits), default=0.0)
        return SearchResult(hits=hits, top_relevance=top, unstated=unstated, relevance_scale=scale, matched=matched)

    def _cover(self, query: str, q: _Query, order: dict[int, float] | DenseScores,
               root: str | None) -> dict[int, float] | DenseScores:
        """``order`` with each constraint whose own scope covers a file the query names
        ("src/packwise/waves/" for "src/packwise/waves/planner.py") scored with the file's
        directories as asked words, as every entry was before they stopped counting; its
        relevance is too (sets q.covering)."""
        paths = file_paths(query)
        if self._scoped is None:
            # By scope: a large store repeats a few scopes over many constraints.
            slots_of: dict[str, list[int]] = {}
            for slot, info in enumerate(self._entries):
                if info is not None and info.scopes is not None:
                    for scope in info.scopes:
                        if not is_global(scope, root):
                            slots_of.setdefault(scope, []).append(slot)
            self._scoped = slots_of, ScopeIndex(slots_of, root)
        slots_of, index = self._scoped
        covered = frozenset(slot for p in paths for scope in index.overlapping(p) for slot in slots_of[scope])
        if not covered:
            return order
        full = self._query(query, replace(self.tuning, path_context=False))
        if full.max_raw <= 0.0:
            return order
        raw = self._score_query(full.groups)
        q.covering = (covered, full, raw)
        ordered = raw if full.order_groups is None else self._score_query(full.order_groups)
        # On the scale of this query's perfect match, as the other entries' scores are.
        floors = {slot: v * q.order_raw / full.order_raw for slot in covered if (v := ordered.get(slot, 0.0)) > 0.0}
        if not isinstance(order, dict):
            return order.floored(floors)
        merged = dict(order)
        for slot, floor in floors.items():
            if merged.get(slot, 0.0) < floor:
                merged[slot] = floor
        return merged

    def _answer_type(self, query: str, hits: list[Hit]) -> tuple[str | None, float]:
        """The answer-type check (answer_type.py): when ``query`` asks for a duration, an amount,
        a number or a version, how far the most relevant hit states one near the question's
        words. The kind and ``answer_type_factor`` when it states none (the question is most
        likely unrecorded; the kind is for the guidance), None and ``answer_type_partial_factor``
        when its values share only one of several question words, otherwise None and 1.0. The
        factors are on the confidence scale."""
        t = self.tuning
        if (t.answer_type_factor >= 1.0 and t.answer_type_partial_factor >= 1.0) or not hits:
            return None, 1.0
        kind = answer_type.asked_kind(query)
        if kind is None:
            return None, self._action_scale(query, hits)
        best = max(hits, key=lambda h: h.relevance)
        if best.relevance <= 0.0:
            return None, 1.0
        topical = {w for w in terms(query) if not is_generic(w)}
        # What the value is of, when the question says so right after asking for it: a value
        # in a sentence sharing only other words of the question is most likely of something else.
        topical = answer_type.focus_terms(query, topical, t.answer_type_focus) or topical
        # Counting a second shared word matters only to the partial factor (off by default): the
        # scan stops at the first value sentence sharing one word otherwise.
        enough = 2 if t.answer_type_partial_factor < 1.0 else 1
        shared = answer_type.value_overlap(kind, topical, best.entry, enough=min(enough, len(topical)))
        if shared == 0:
            return (kind, t.answer_type_factor) if t.answer_type_factor < 1.0 else (None, 1.0)
        if shared < 2 <= len(topical):
            return None, t.answer_type_partial_factor
        return None, 1.0

    def _action_scale(self, query: str, hits: list[Hit]) -> float:
        """``answer_type_factor`` when ``query`` asks how to do something its most relevant hit
        never mentions (answer_type.asked_action), otherwise 1.0."""
        t = self.tuning
        if not t.answer_type_action or t.answer_type_factor >= 1.0:
            return 1.0
        action = answer_type.asked_action(query)
        if not action:
            return 1.0
        best = max(hits, key=lambda h: h.relevance)
        if best.relevance <= 0.0:
            return 1.0
        slot = self._slots.get((best.kind, F.entry_id(best.entry) or ""))
        info = self._entries[slot] if slot is not None else None
        # The entry's own term counts when the index has them (an index restored from a snapshot
        # keeps none): analysing its text again costs as much as the rest of the check.
        said = not action.isdisjoint(info.tf) if info is not None and info.tf else answer_type.mentions(best.entry, action)
        return 1.0 if said else t.answer_type_factor

    # ----------------------------------------------------------------- duplicates

    def _vector(self, tf: Mapping[str, list[int]]) -> dict[str, float]:
        vec = {}
        for term, counts in tf.items():
            weighted = sum(c * w for c, w in zip(counts, self.tuning.group_weights))
            if weighted > 0:
                vec[term] = (1.0 + math.log(weighted)) * self._idf(term)
        return vec

    def _title_vector(self, info: _Entry) -> dict[str, float]:
        # Everyday words are discounted as in a query: "Add a new node type" and "Add a new UI
        # language" share only "add new", which must not make two short titles close.
        generic = self.tuning.generic_weight
        return {
            term: (1.0 + math.log(count)) * self._idf(term) * (generic if is_generic(term) else 1.0)
            for term, count in info.title_terms
        }

    def _close_titles(self, qtitle: Mapping[str, float], qtnorm: float, kind: str) -> dict[int, float]:
        """Slot -> title cosine of the entries of ``kind`` whose titles reach ``_SIMILAR_TITLE``.

        An entry whose title has none of the terms looked at here has a title cosine of at most
        the norm of the others (Cauchy-Schwarz), so the terms are taken heaviest first until
        that is under ``_SIMILAR_TITLE``: the light, frequent ones with the most titles are
        never read, and nothing that reaches the threshold is missed."""
        entries = self._entries
        rest = qtnorm * qtnorm
        bound = (_SIMILAR_TITLE * qtnorm) ** 2
        candidates: set[int] = set()
        for term, weight in sorted(qtitle.items(), key=itemgetter(1), reverse=True):
            if rest < bound:
                break
            rest -= weight * weight
            # A title posting names a live slot (InvertedIndex._drop takes it out of them all).
            candidates.update(slot for slot in self._title_postings.get(term, ()) if entries[slot].key[0] == kind)  # type: ignore[union-attr]
        out = {}
        for slot in candidates:
            info = entries[slot]
            assert info is not None
            tvec = self._title_vector(info)
            tnorm = math.sqrt(sum(v * v for v in tvec.values()))
            cos = sum(v * tvec.get(t, 0.0) for t, v in qtitle.items()) / (qtnorm * tnorm) if tnorm > 0.0 else 0.0
            if cos >= _SIMILAR_TITLE:
                out[slot] = cos
        return out

    def similar(self, doc: Doc, limit: int = 5) -> list[Hit]:
        """Stored entries most like ``doc``, best first, scored 0..1; deprecated entries and the
        entry with the same (kind, id) are left out.

        The score is the tf-idf cosine of the whole entries, or, between entries of one kind,
        the cosine of the titles alone when that reaches ``_SIMILAR_TITLE`` and is higher. A
        contradiction ("Do not cache carrier quotes" against "Cache carrier quotes for 10
        minutes") has its own problem and reasons, so its whole-entry cosine stays low while
        the titles are close. Across kinds close titles say less: a pipeline is named after
        the thing a decision settles ("Change an appointment type's duration or buffer").

        Candidates come from the posting lists of the probe's ``_SIMILAR_TERMS`` heaviest
        terms (a restatement shares its distinctive words; the frequent ones touch most of the
        store and decide nothing), with exact cosine for a shortlist of them, and from the
        titles of its kind that share its heaviest title terms (``_close_titles``; a title's
        words can be common in the store and so not among the heaviest)."""
        probe = _analyse(doc, ("", ""))
        qvec = self._vector(probe.tf)
        qnorm = math.sqrt(sum(v * v for v in qvec.values()))
        if qnorm == 0.0 or limit <= 0:
            return []
        qtitle = self._title_vector(probe)
        qtnorm = math.sqrt(sum(v * v for v in qtitle.values()))
        entry = doc.entry if isinstance(doc.entry, Mapping) else {}
        kind = str(doc.kind)
        own_key = (kind, F.entry_id(entry) or "")
        heavy = heapq.nlargest(_SIMILAR_TERMS, qvec.items(), key=itemgetter(1))
        rough = self._score_groups([[(t, v)] for t, v in heavy])
        shortlist = {slot for slot, _ in _largest(rough, max(_SIMILAR_SHORTLIST, limit * 4))}
        close = self._close_titles(qtitle, qtnorm, kind) if qtnorm > 0.0 else {}
        out = []
        for slot in shortlist | close.keys():
            info = self._entries[slot]
            if info is None or info.key == own_key or info.status == "deprecated":
                continue
            dvec = self._vector(info.tf)
            dnorm = math.sqrt(sum(v * v for v in dvec.values()))
            if dnorm == 0.0:
                continue
            cos = sum(v * dvec.get(t, 0.0) for t, v in qvec.items()) / (qnorm * dnorm)
            score = max(cos, close.get(slot, 0.0))
            out.append(Hit(kind=info.key[0], entry=info.doc.entry, score=score, relevance=min(1.0, score)))
        out.sort(key=lambda h: (-h.score, h.kind, str(F.entry_id(h.entry))))
        return out[:limit]


def _within_project(query: str, roots: tuple[str | None, ...]) -> str:
    """``query`` with the project's root taken off the absolute paths inside it that it names
    ("fix /home/dev/shop/src/payments/charge.py" asks about src/payments/charge.py): scopes are
    project-relative, and the root's own directories say nothing about the file. ``roots``: the
    root and the other spellings of it the caller used (a symbolic link to it)."""
    # The longest first: a spelling may end with another ("/mnt/x/home/dev/shop" beside "/home/dev/shop").
    for root in sorted({r for r in roots if r}, key=len, reverse=True):
        if len(root) < 2:
            continue
        for prefix in {root.rstrip("/\\") + "/", root.rstrip("/\\").replace("/", "\\") + "\\"}:
            query = query.replace(prefix, "")
    return query


# A link to a file in a code host's web view ("https://github.com/acme/shop/blob/main/src/app.py",
# GitLab's ".../shop/-/blob/main/src/app.py"): the host, owner, repository and branch say where
# the project is, not what the file is about; what follows them is the project path.
_REPOSITORY_LINK = re.compile(r"\bhttps?://[^\s/]+/(?:[^\s/]+/)+?(?:-/)?(?:blob|tree|raw)/[^\s/]+/")


def _repository_paths(query: str) -> str:
    """``query`` with each code host link to a file read as the project path it names."""
    return _REPOSITORY_LINK.sub("", query) if "://" in query else query
