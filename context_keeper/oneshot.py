"""A ``Service`` for a process that searches once and exits: the prompt hook, the CLI's ``get``.

Building the search index is most of such a process's work (~6 s at 10,000 entries, against
~2 ms for the search), so its index is restored from ``.context/search_index_state.json``
(search/snapshot.py) when the store is unchanged since that was written, and otherwise built
the way ``Service.index`` builds it (``replace_kinds``, kinds in ``KINDS`` order), reusing the per-entry analyses of ``search_state.json``
(search/state.py). ``save_search_state`` then leaves both files for the next process, and the
store's reading cache (reading_cache.py); the server also rebuilds the snapshot in the
background after its own writes (hooks/cache.py).

Both files are derived, git-ignored and rewritten by any process, and a cloned repository can
commit crafted ones: whatever goes wrong while restoring from them (a snapshot that fails when
read, analyses that break the build) means a fresh build from the store files alone, noted
through ``derived_file_failed``. Never a failed search, and never one failing again in every
later process.
"""

from __future__ import annotations

import os
from typing import Any

from context_keeper.errors import ContextKeeperError
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
        from context_keeper.search import Doc, snapshot
        from context_keeper.search import state as search_state

        # One state per kind for both: a write between two reads would save old entries under
        # the new stamps, and every later process would trust that stale index.
        states = [store.state(kind) for kind in KINDS.values()]
        # A file broken or missing is searched in its last good copy, as Service.index searches
        # it, and stamped by that copy too, so the snapshot follows it.
        stamps = [readable_stamp(store, s) for s in states]
        readable = [readable_state(store, s) for s in states]
        docs = {s.kind.name: [Doc(s.kind.name, e) for e in r.entries] for s, (r, _) in zip(states, readable)}
        index = self._restored(store, docs, stamps) if self._use_snapshot else None
        self._analyses = self._snapshot = None
        if index is None and not self.may_build(store, sum(map(len, docs.values()))):
            raise IndexNotReady(f"{store.root}: no up-to-date index snapshot, and building one was put off")
        if index is None:
            try:
                self._analyses = search_state.AnalysisCache.load(store)
                index = self._built(docs, self._analyses)
            except Exception as exc:  # noqa: BLE001 - see the module docstring: a derived file must not break this
                self.derived_file_failed(store, search_state.FILE, exc)
                self._analyses = search_state.AnalysisCache()  # saved over the crafted file
                index = self._built(docs, self._analyses)
            self._snapshot = snapshot.dump(index, stamps)
        self._state, self._store = _IndexState(index), store
        self._read = {s.kind.name: r for s, (r, _) in zip(states, readable)}
        return self._state

    def _restored(self, store: Store, docs: dict, stamps: list) -> Any:
        """The index restored from the snapshot file, or None (none, stale, or failing)."""
        from context_keeper.search import snapshot
        from context_keeper.search.tuning import DEFAULT_TUNING

        try:
            return snapshot.restore(snapshot.load(os.path.join(store.dir, snapshot.FILE)), docs, stamps, DEFAULT_TUNING)
        except Exception as exc:  # noqa: BLE001 - see the module docstring: a derived file must not break this
            self.derived_file_failed(store, snapshot.FILE, exc)
            return None

    def _built(self, docs: dict, analyses: Any) -> Any:
        from context_keeper.search import SearchIndex
        from context_keeper.search.tuning import DEFAULT_TUNING

        index = SearchIndex(DEFAULT_TUNING, analyses=analyses)
        index.dense_scoring = self._dense_scoring
        index.replace_kinds(docs)
        return index

    def derived_file_failed(self, store: Store, name: str, exc: BaseException) -> None:
        """``.context/name`` broke a restore (``exc``) and the index is built afresh instead.
        Logged (to stderr for the CLI); the prompt hook writes it to hook.log."""
        import logging

        logging.getLogger("context_keeper.oneshot").warning(
            "%s: .context/%s could not be used (%s: %s); the index was built from the store files instead",
            store.root, name, type(exc).__name__, exc)

    def may_build(self, store: Store, entries: int) -> bool:
        """Whether to build the index of ``store`` (``entries`` entries) here, with no snapshot
        to restore; False raises ``IndexNotReady``."""
        return True

    def get_context(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return super().get_context(*args, **kwargs)
        except ContextKeeperError:
            raise  # bad input, no project: the same with any index
        except Exception as exc:  # noqa: BLE001 - see the module docstring: a derived file must not break this
            # A damaged snapshot shows only when a list is read (restore checks what it can):
            # any failure of a restored index means building one. A built index's errors stand.
            from context_keeper.search import snapshot

            store = self._store
            if not self.discard_snapshot() or store is None:
                raise
            if not isinstance(exc, (ValueError, LookupError, TypeError)):  # those: a damaged list, as designed
                self.derived_file_failed(store, snapshot.FILE, exc)
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
        """Leave what this process built for the next one (nothing when it restored). In a
        ``.context/`` without a ``.gitignore`` (a store made by hand or by an older version),
        git is told to ignore them first (``gitignore.keep_bookkeeping_out_of_git``), so they do
        not show as untracked."""
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
                self._store.save_reading_cache()
        except OSError:
            pass  # read-only checkout, full disk: the next process builds again


def rebuild_snapshot(root: str) -> None:
    """Build and save the index snapshot of the project at ``root`` now."""
    service = OneShotService(restore=False, env={"CONTEXT_KEEPER_PROJECT": root}, cwd=root)
    service.index(service.store())
    service.save_search_state()
