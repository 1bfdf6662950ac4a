"""A built index saved whole: ``.context/search_index_state.json``.

The UserPromptSubmit hook is a fresh process per prompt. Rebuilding the index there costs
~0.25 s at 2,000 entries even with the per-entry analyses of ``state.py`` (decoding them and
computing ~130,000 posting weights in Python). A query touches a few dozen posting lists, so
the hook instead restores the index from this file, decoding only the lists it asks for.

The file holds the postings exactly (each list as two base64 strings: its slots as 32-bit
integers and its weights as 64-bit floats, in this machine's byte order, which the fingerprint
names; lists in their original order), the average field lengths they were computed with, and which entry sits in which slot.
It is used only when the store files have the same stamps (mtime, ctime, size, inode) as when
it was written and the fingerprint matches: the analyser, this module and ``index.py`` (whose
code the weights come from) and the tuning. So a restored index ranks exactly as one built
from the store; a test pins that. Anything unexpected means "rebuild", never a wrong answer;
JSON only, so a hostile file can at worst cost a rebuild. The name matches the git-ignored
``*_state.json`` pattern.

A restored index is for searching only: it keeps no per-entry term counts, so it refuses
``similar``, updates and pseudo-relevance feedback (``tuning.prf``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import sys
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

from context_keeper.search.contract import Doc
from context_keeper.search.engine import SearchIndex
from context_keeper.search.fields import GROUPS, entry_id
from context_keeper.search.index import _analyse
from context_keeper.search.state import MAX_COUNT
from context_keeper.search.tuning import Tuning

FILE = "search_index_state.json"
FORMAT = 2  # 1: slots and weights as comma-separated decimals (2x slower to write and read)

_SLOT, _WEIGHT = "i", "d"  # array typecodes of a posting list's slots and weights
Stamps = Sequence[Any]  # one stamp per store file, in KINDS order


class SnapshotIndex(SearchIndex):
    """A ``SearchIndex`` restored from a snapshot: search only."""

    def _refuse(self, *_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("an index restored from a snapshot is read-only; build a SearchIndex to change it")

    upsert = remove = replace_kind = replace_kinds = similar = _refuse
    # A hook process searches once: importing NumPy would cost it more than the arrays save.
    dense_scoring = False


class _LazyPostings(dict):
    """``term -> {slot: weight}``, each list decoded from its saved text on first use. A list
    that does not decode to slots of the index and finite weights raises ``ValueError``: the
    caller builds the index instead (only decoding can tell, and that is what stays lazy)."""

    def __init__(self, saved: Mapping[str, Sequence[str]], size: int) -> None:
        super().__init__()
        self._saved = saved
        self._size = size

    def __missing__(self, term: str) -> dict[int, float]:
        texts = self._saved.get(term)
        if texts is None:
            raise KeyError(term)
        slots, weights = array(_SLOT), array(_WEIGHT)
        try:  # shapes checked by restore; binascii.Error is a ValueError
            slots.frombytes(base64.b64decode(texts[0], validate=True))
            weights.frombytes(base64.b64decode(texts[1], validate=True))
        except ValueError:
            slots = array(_SLOT)
        plist = dict(zip(slots, weights))
        if (not slots or len(slots) != len(weights) or len(plist) != len(slots)
                or not 0 <= min(slots) <= max(slots) < self._size or not all(map(math.isfinite, weights))):
            raise ValueError(f"damaged posting list for {term!r} in {FILE}")
        self[term] = plist
        return plist

    def __contains__(self, term: object) -> bool:
        return dict.__contains__(self, term) or term in self._saved

    def get(self, term: str, default: Any = None) -> Any:
        try:
            return self[term]
        except KeyError:
            return default


class _LazyEntries(list):
    """``slot -> _Entry`` (None for a free slot), each entry analysed on first use: a query
    reads the few dozen entries of its shortlist, and analysing all of them (dates, tags,
    priors) was most of a restore at 50,000 entries. Read by slot or iterated, as the index
    reads its list."""

    def __init__(self, pending: list[Any]) -> None:
        super().__init__([None] * len(pending))
        self._pending = pending  # slot -> (doc, key, lens) until analysed, else None

    def __getitem__(self, slot: Any) -> Any:
        if type(slot) is not int:
            raise TypeError("an index restored from a snapshot reads its entries one slot at a time")
        info = list.__getitem__(self, slot)
        if info is None:
            todo = self._pending[slot]
            if todo is not None:
                doc, key, lens = todo
                info = _analyse(doc, key, terms=({}, lens))
                list.__setitem__(self, slot, info)
                self._pending[slot] = None
        return info

    def __iter__(self) -> Any:
        return map(self.__getitem__, range(len(self)))


def fingerprint(tuning: Tuning) -> str:
    """Identifies what the saved weights depend on besides the store."""
    from context_keeper.search import index, state

    digest = hashlib.blake2b(digest_size=16)
    layout = f"{sys.byteorder}|{array(_SLOT).itemsize}|{array(_WEIGHT).itemsize}"  # of the packed lists
    digest.update(f"{FORMAT}|{layout}|{state.fingerprint()}|{tuning!r}|".encode())
    for source in (index.__file__, __file__):
        try:
            with open(source or "", "rb") as handle:
                digest.update(handle.read())
        except OSError:
            digest.update(os.urandom(16))  # source unavailable: never match a file
    return digest.hexdigest()


def dump(index: SearchIndex, stamps: Stamps) -> dict[str, Any]:
    """The snapshot of ``index``, built from store files with ``stamps``."""
    slots = [None if info is None else [slot, info.key[0], info.key[1], list(info.lens)]
             for slot, info in enumerate(index._entries)]
    return {
        "format": FORMAT,
        "fingerprint": fingerprint(index.tuning),
        "stamps": _as_saved(stamps),
        "avg_used": index._avg_used,
        "len_sums": index._len_sums,
        "anon": index._anon,
        "free": index._free,
        "entries": [s for s in slots if s is not None],
        "size": len(index._entries),
        "postings": {term: [_packed(_SLOT, plist), _packed(_WEIGHT, plist.values())]
                     for term, plist in index._postings.items()},
    }


def _as_saved(stamps: Stamps) -> Any:
    """``stamps`` as they read back from the file (tuples, nested ones too, become lists)."""
    return json.loads(json.dumps(list(stamps)))


def _packed(typecode: str, values: Any) -> str:
    return base64.b64encode(array(typecode, values).tobytes()).decode("ascii")


def restore(data: Any, docs_by_kind: Mapping[str, Sequence[Doc]], stamps: Stamps, tuning: Tuning) -> SnapshotIndex | None:
    """The index saved in ``data`` over ``docs_by_kind`` (the store's entries, kinds in the
    order the index was built), or None when the snapshot does not fit them exactly."""
    if tuning.prf or not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    try:
        if data["stamps"] != _as_saved(stamps):
            return None
        if data["fingerprint"] != fingerprint(tuning):
            return None
        index = SnapshotIndex(tuning)
        by_key: dict[tuple[str, str], Doc] = {}
        anon = 0
        for kind, docs in docs_by_kind.items():  # keys as InvertedIndex._key makes them
            for doc in docs:
                eid = entry_id(doc.entry) if isinstance(doc.entry, Mapping) else None
                if eid is None:
                    anon += 1
                    eid = f"<no-id-{anon}>"
                by_key[(kind, eid)] = doc
        if anon != data["anon"] or len(by_key) != len(data["entries"]):
            return None
        size, free = data["size"], data["free"]
        # Every slot is an entry's or free: a size beyond that would only allocate (a hostile
        # file could ask for gigabytes).
        if type(size) is not int or not isinstance(free, list) or size != len(by_key) + len(free):
            return None
        pending: list[Any] = [None] * size
        for slot, kind, eid, lens in data["entries"]:
            if type(slot) is not int or not 0 <= slot < size or pending[slot] is not None or not _counts(lens):
                return None
            pending[slot] = (by_key[(kind, eid)], (kind, eid), tuple(lens))
            index._slots[(kind, eid)] = slot
        entries = _LazyEntries(pending)
        for slot, todo in enumerate(pending):
            # Only an entry naming a successor can be one's predecessor: the others stay lazy.
            if todo is not None and isinstance(todo[0].entry, Mapping) and todo[0].entry.get("superseded_by") is not None:
                successor = index._successor_key(entries[slot])
                if successor is not None:
                    index._predecessors.setdefault(successor, set()).add(slot)
        postings = data["postings"]
        # Each list's shape now (cheap); its slots and weights when a query decodes it.
        if not isinstance(postings, dict) or not all(
                type(texts) is list and len(texts) == 2 and type(texts[0]) is str and type(texts[1]) is str
                for texts in postings.values()):
            return None
        avg_used, len_sums = data["avg_used"], data["len_sums"]
        if (not isinstance(avg_used, list) or len(avg_used) != len(GROUPS) or not _counts(len_sums, _MAX_SUM)
                or any(type(s) is not int or not 0 <= s < size or pending[s] is not None for s in free)):
            return None
        index._entries = entries
        index._postings = _LazyPostings(postings, size)
        index._avg_used = [float(x) for x in avg_used]
        if not all(math.isfinite(x) and x >= 0.0 for x in index._avg_used):
            return None
        index._len_sums = list(len_sums)
        index._anon = anon
        index._free = list(free)
    except (KeyError, TypeError, ValueError, IndexError, ArithmeticError):  # float(10**400): OverflowError
        return None
    return index


# Field lengths of one entry, and their sums over a store, bounded as state.py bounds a record's:
# a crafted 10**400 must mean "rebuild", not an OverflowError in every later search.
_MAX_SUM = 2**53  # floats stay exact below it


def _counts(values: Any, limit: int = MAX_COUNT) -> bool:
    """One count per field group, each in ``0..limit``, as an index keeps them."""
    return (isinstance(values, list) and len(values) == len(GROUPS)
            and all(type(n) is int and 0 <= n <= limit for n in values))


def save(path: str, data: dict[str, Any]) -> None:
    from pathlib import Path

    from context_keeper.fsio import atomic_write_text

    # Derived and rebuilt whenever missing or stale: atomic, but not worth an fsync.
    atomic_write_text(Path(path), json.dumps(data, ensure_ascii=False, separators=(",", ":")), fsync=False)


def load(path: str) -> Any:
    """The snapshot's JSON, or None: missing, unreadable, not a regular file, above the cache
    cap, or not JSON (nested too deeply included)."""
    from context_keeper.bounded_read import CACHE_LIMIT, read_regular

    try:
        return json.loads(read_regular(path, CACHE_LIMIT))
    except (OSError, ValueError, RecursionError):
        return None
