"""The ``.context/`` store: cached reads, locked read-modify-write, atomic files.

Each store file is a JSON array of entry objects. Reads are served from memory and checked
against the file's (mtime_ns, size, inode) on every call, so a hand edit or another process's
write is picked up without re-parsing unchanged files. Writes happen inside ``transaction()``,
which holds a cross-process ``filelock`` on ``.context/.lock`` and works on the file as it is on
disk at that moment.

The raw items of a file are kept alongside the normalised entries: a rewrite reproduces every
item it did not change exactly as it was — malformed ones and unknown fields included.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from context_keeper import model
from context_keeper.config import read_config_file
from context_keeper.errors import CorruptStoreFile, NotFound, StoreError
from context_keeper.fsio import atomic_write_text
from context_keeper.model import KINDS, Kind
from context_keeper.project import CONTEXT_DIR

LOCK_TIMEOUT_S = 30.0
BACKUP_DIR = ".last-good"

Stamp = tuple[int, int, int]


def _stamp(path: Path) -> Stamp | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _chunk(item: Any) -> str:
    """One array item exactly as ``json.dumps(items, indent=2)`` would lay it out."""
    return "  " + json.dumps(item, indent=2, ensure_ascii=False).replace("\n", "\n  ")


@dataclass(frozen=True)
class FileState:
    """An immutable snapshot of one store file. Entries are shared: treat them as read-only."""

    kind: Kind
    path: Path
    stamp: Stamp | None
    raw: tuple[Any, ...] = ()
    chunks: tuple[str | None, ...] = ()
    entries: tuple[dict, ...] = ()
    positions: dict[str, int] = field(default_factory=dict)  # id -> index in raw
    problems: tuple[str, ...] = ()
    error: CorruptStoreFile | None = None

    @property
    def entries_by_id(self) -> dict[str, dict]:
        cached = self.__dict__.get("_by_id")
        if cached is None:
            cached = {e["id"]: e for e in self.entries}
            object.__setattr__(self, "_by_id", cached)
        return cached


def _build_state(kind: Kind, path: Path, stamp: Stamp | None, raw: list, chunks: list) -> FileState:
    entries: list[dict] = []
    positions: dict[str, int] = {}
    problems: list[str] = []
    for index, item in enumerate(raw):
        entry, item_problems = model.read_entry(kind, item)
        problems.extend(f"{path.name} item {index + 1}: {p}" for p in item_problems)
        if entry is None:
            continue
        if entry["id"] in positions:
            problems.append(f"{path.name} item {index + 1}: duplicate id {entry['id']} (first one kept)")
            continue
        positions[entry["id"]] = index
        entries.append(entry)
    return FileState(kind, path, stamp, tuple(raw), tuple(chunks), tuple(entries), positions, tuple(problems))


def _parse_file(kind: Kind, path: Path, stamp: Stamp) -> FileState:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        err = CorruptStoreFile(str(path), 1, exc.start + 1, "not valid UTF-8")
        return FileState(kind, path, stamp, error=err)
    if not text.strip():
        return FileState(kind, path, stamp)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return FileState(kind, path, stamp, error=CorruptStoreFile(str(path), exc.lineno, exc.colno, exc.msg))
    if not isinstance(data, list):
        err = CorruptStoreFile(str(path), 1, 1, f"expected a JSON array of entries, found a {type(data).__name__}")
        return FileState(kind, path, stamp, error=err)
    return _build_state(kind, path, stamp, data, [None] * len(data))


class FileTxn:
    """Pending changes to one store file inside a transaction."""

    def __init__(self, state: FileState) -> None:
        if state.error is not None:
            raise state.error
        self.kind = state.kind
        self._state = state
        self._raw = list(state.raw)
        self._chunks = list(state.chunks)
        self._dirty = False

    @property
    def entries(self) -> tuple[dict, ...]:
        return self._state.entries if not self._dirty else self._current().entries

    def get(self, entry_id: str) -> dict | None:
        return (self._current() if self._dirty else self._state).entries_by_id.get(entry_id)

    def require(self, entry_id: str) -> dict:
        entry = self.get(entry_id)
        if entry is None:
            raise NotFound(f"no {self.kind.name} with id {entry_id!r} in {self._state.path.name}")
        return entry

    def raw_item(self, entry_id: str) -> dict:
        state = self._current() if self._dirty else self._state
        return dict(self._raw[state.positions[entry_id]])

    def all_ids(self) -> list[Any]:
        """Every id-like value in the file, malformed items included (for id allocation)."""
        return [item.get("id") for item in self._raw if isinstance(item, dict)]

    def append(self, item: dict) -> None:
        self._raw.append(item)
        self._chunks.append(None)
        self._changed()

    def put(self, entry_id: str, item: dict) -> None:
        """Replace the stored item of ``entry_id`` (which must exist)."""
        state = self._current() if self._dirty else self._state
        pos = state.positions[entry_id]
        self._raw[pos] = item
        self._chunks[pos] = None
        self._changed()

    def _changed(self) -> None:
        self._dirty = True
        self._cached_current = None

    def _current(self) -> FileState:
        if getattr(self, "_cached_current", None) is None:
            self._cached_current = _build_state(self.kind, self._state.path, None, self._raw, self._chunks)
        return self._cached_current

    @property
    def dirty(self) -> bool:
        return self._dirty

    def render(self) -> tuple[str, list[str]]:
        chunks = [c if c is not None else _chunk(item) for c, item in zip(self._chunks, self._raw)]
        text = "[\n" + ",\n".join(chunks) + "\n]\n" if chunks else "[]\n"
        return text, chunks


class Store:
    """One project's ``.context/`` directory. Thread-safe; share one instance per project."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.dir = self.root / CONTEXT_DIR
        self._files: dict[str, FileState] = {}
        self._config: tuple[Stamp | None, dict, list[str]] | None = None
        self._mutex = threading.RLock()
        self._lock = FileLock(str(self.dir / ".lock"), timeout=LOCK_TIMEOUT_S)
        self.generation = 0  # bumps on every change seen, for derived caches

    def path(self, kind: Kind) -> Path:
        return self.dir / kind.filename

    # ------------------------------------------------------------ reads

    def state(self, kind: Kind) -> FileState:
        """The file as it is now on disk (re-parsed only when its stamp changed)."""
        path = self.path(kind)
        stamp = _stamp(path)
        with self._mutex:
            cached = self._files.get(kind.name)
            if cached is not None and cached.stamp == stamp:
                return cached
            state = FileState(kind, path, None) if stamp is None else _parse_file(kind, path, stamp)
            self._files[kind.name] = state
            self.generation += 1
            return state

    def entries(self, kind: Kind) -> tuple[dict, ...]:
        return self.state(kind).entries

    def all_states(self) -> list[FileState]:
        return [self.state(kind) for kind in KINDS.values()]

    def find(self, entry_id: str) -> tuple[Kind, dict]:
        kind = model.kind_of_id(entry_id)
        state = self.state(kind)
        if state.error is not None:
            raise state.error
        entry = state.entries_by_id.get(entry_id.strip())
        if entry is None:
            raise NotFound(
                f"no entry with id {entry_id!r}; use query_entries or get_context to find the right id"
            )
        return kind, entry

    def config(self) -> tuple[dict, list[str]]:
        path = self.dir / "config.json"
        stamp = _stamp(path)
        with self._mutex:
            if self._config is None or self._config[0] != stamp:
                config, warnings = read_config_file(path)
                if not config.get("project_name"):
                    config["project_name"] = self.root.name
                self._config = (stamp, config, warnings)
            return self._config[1], self._config[2]

    # ------------------------------------------------------------ writes

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Hold the store lock; changes made through ``txn.file(kind)`` are written on success."""
        with self._mutex:
            self.dir.mkdir(parents=True, exist_ok=True)
            try:
                self._lock.acquire()
            except Timeout as exc:
                raise StoreError(
                    f"the store lock {self.dir / '.lock'} is held by another process for over "
                    f"{LOCK_TIMEOUT_S:.0f}s; try again, or check for a stuck context-keeper process"
                ) from exc
            try:
                txn = Transaction(self)
                yield txn
                txn.commit()
            finally:
                self._lock.release()

    def _commit_file(self, ftxn: FileTxn) -> None:
        text, chunks = ftxn.render()
        path = self.path(ftxn.kind)
        st = atomic_write_text(path, text, keep_previous=self.dir / BACKUP_DIR / path.name)
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        self._files[ftxn.kind.name] = _build_state(ftxn.kind, path, stamp, ftxn._raw, chunks)
        self.generation += 1

    def write_sidecar(self, name: str, data: Any) -> Path:
        """Write a derived JSON file (snapshot, report, state) atomically inside ``.context/``."""
        path = self.dir / name
        atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return path

    def read_sidecar(self, name: str) -> Any:
        path = self.dir / name
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None


class Transaction:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._files: dict[str, FileTxn] = {}

    def file(self, kind: Kind) -> FileTxn:
        if kind.name not in self._files:
            self._files[kind.name] = FileTxn(self._store.state(kind))
        return self._files[kind.name]

    def commit(self) -> None:
        for ftxn in self._files.values():
            if ftxn.dirty:
                self._store._commit_file(ftxn)
