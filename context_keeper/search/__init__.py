"""Retrieval engine: an in-memory inverted index over store entries.

Contract used by ``context_keeper.service`` (keep these names and signatures stable):

- ``Doc(kind, entry)`` — one normalised entry (``kind`` is ``"decision"``, ``"pipeline"`` or
  ``"constraint"``; ``entry`` is the dict as read from the store, never mutated here).
- ``SearchIndex()`` — empty index; ``upsert(doc)``, ``remove(kind, entry_id)`` and
  ``replace_kind(kind, docs)`` keep it in step with the store without a full rebuild; ``settle()``
  (or ``replace_kind(..., settle=True)`` for the last kind) after loading a store, so its ranking
  does not depend on the order it was loaded in. ``replace_kinds({kind: docs, ...})`` loads
  several kinds and settles, posting each entry once.
- ``SearchIndex.search(query, options) -> SearchResult`` — ranked hits. ``Hit.relevance`` is the
  relevance signal alone, normalised to 0..1 so one abstention threshold works across stores;
  ``Hit.score`` decides the order: the match with each asked word's IDF flattened
  (``Tuning.order_idf_power``), times the priors (recency, status, origin, scope, question form).
- ``DEFAULT_MIN_RELEVANCE`` — the calibrated abstention threshold used when the user's config does
  not set ``min_relevance``.
"""

from context_keeper.search.engine import (
    DEFAULT_MIN_RELEVANCE,
    Doc,
    Hit,
    SearchIndex,
    SearchOptions,
    SearchResult,
)

__all__ = ["DEFAULT_MIN_RELEVANCE", "Doc", "Hit", "SearchIndex", "SearchOptions", "SearchResult"]
