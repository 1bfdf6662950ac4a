"""A ``Service`` for a process that searches once and exits: the prompt hook, the CLI's ``get``.

Building the search index is most of such a process's work (~6 s at 10,000 entries, against
~2 ms for the search), so its index is restored from ``.context/search_index_state.json``
(search/snapshot.py) when the store is unchanged since that was written, and otherwise built
the way ``Service.index`` builds it (``replace_kinds``, kinds in ``KINDS`` order), reusing the per-entry analyses of ``search_state.json``
(search/state.py). ``save_search_state`` then leaves both files for the next process; the
server also rebuilds the snapshot in the background after its own writes (hooks/cache.py).
"""

from __future__ import annotations

import os
from typing import Any

from context_keeper.gcpause import gc_paused
from context_keeper.model import KINDS
from context_keeper.service import Service, _IndexState
from context_keeper.store import FileState, Store, readable_stamp, readable_state


class IndexNotReady(Exception):
    """The index would have to be built and ``may_build`` said not here (too large to build
    within the caller's time)."""


class OneShotService(Service):
    """``Service`` with an index restored from the snapshot when it can be; ``restore=False``
    always builds (to write a fresh snapshot)."""

    def __init__(self, *, restore: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("dense_scoring", False)  # one search per process: NumPy's import would cost more
        super().__init__(**kwargs)
        self._use_snapshot = restore
        self._state: _IndexState | None = None
        self._analyses: Any = None     # search.state.AnalysisCache, when the index was built
        self._snapshot: dict | None = None  # to save, when the index was built
        self._store: Store | None = None
        self._read: dict[str, FileState] = {}  # kind name -> the file state the index was built from

    def index(self, store: Store) -> _IndexState:  # type: ignore[override]  # same contract
        if self._state is not None and self._store is store:
            return self._state
        with gc_paused():  # reading, restoring or building: allocation only (gcpause.py)
            return self._load(store)

    def _load(self, store: Store) -> _IndexState:
        from context_keeper.search import Doc, SearchIndex, snapshot
        from context_keeper.search.state import AnalysisCache
        from context_keeper.search.tuning import DEFAULT_TUNING

        # One state per kind for both: a write between two reads would save old entries under
        # the new stamps, and every later process would trust that stale index.
        states = [store.state(kind) for kind in KINDS.values()]
        # A file broken or missing is searched in its last good copy, as Service.index searches
        # it, and stamped by that copy too, so the snapshot follows it.
        stamps = [readable_stamp(store, s) for s in states]
        readable = [readable_state(store, s) for s in states]
        docs = {s.kind.name: [Doc(s.kind.name, e) for e in r.entries] for s, (r, _) in zip(states, readable)}
        saved = snapshot.load(os.path.join(store.dir, snapshot.FILE)) if self._use_snapshot else None
        index = snapshot.restore(saved, docs, stamps, DEFAULT_TUNING)
        self._analyses = self._snapshot = None
        if index is None and not self.may_build(store, sum(map(len, docs.values()))):
            raise IndexNotReady(f"{store.root}: no up-to-date index snapshot, and building one was put off")
        if index is None:
            self._analyses = AnalysisCache.load(store)
            index = SearchIndex(DEFAULT_TUNING, analyses=self._analyses)
            index.dense_scoring = self._dense_scoring
            index.replace_kinds(docs)
            self._snapshot = snapshot.dump(index, stamps)
        self._state, self._store = _IndexState(index), store
        self._read = {s.kind.name: r for s, (r, _) in zip(states, readable)}
        return self._state

    def may_build(self, store: Store, entries: int) -> bool:
        """Whether to build the index of ``store`` (``entries`` entries) here, with no snapshot
        to restore; False raises ``IndexNotReady``."""
        return True

    def get_context(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return super().get_context(*args, **kwargs)
        except (ValueError, LookupError, TypeError):
            # A damaged snapshot shows only when a list is read (restore checks what it can):
            # any such failure of a restored index means building one. A built index's errors
            # (bad input among them) stand.
            if not self.discard_snapshot():
                raise
            return super().get_context(*args, **kwargs)

    def discard_snapshot(self) -> bool:
        """Forget an index restored from a snapshot (the next search builds one); False when
        the index was not restored."""
        from context_keeper.search import snapshot

        if self._state is None or not isinstance(self._state.index, snapshot.SnapshotIndex):
            return False
        self._state, self._use_snapshot = None, False
        return True

    def read_state(self, kind_name: str) -> FileState | None:
        """The file state of ``kind_name`` as the searched index read it."""
        return self._read.get(kind_name)

    def save_search_state(self) -> None:
        """Leave what this process built for the next one (nothing when it restored). A
        ``.context/`` without a ``.gitignore`` (a store made by hand or by an older version)
        gets one first, so the files do not show as untracked in git."""
        from context_keeper.search import snapshot

        if self._store is None:
            return
        self._store.keep_bookkeeping_out_of_git()
        try:
            with gc_paused():  # encoding allocates as much as building did
                if self._analyses is not None:
                    self._analyses.save(self._store)
                if self._snapshot is not None:
                    snapshot.save(os.path.join(self._store.dir, snapshot.FILE), self._snapshot)
        except OSError:
            pass  # read-only checkout, full disk: the next process builds again


def rebuild_snapshot(root: str) -> None:
    """Build and save the index snapshot of the project at ``root`` now."""
    service = OneShotService(restore=False, env={"CONTEXT_KEEPER_PROJECT": root}, cwd=root)
    service.index(service.store())
    service.save_search_state()
