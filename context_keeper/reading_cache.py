"""What reading a store file found, kept for the next process: ``.context/store_reading_state.json``.

The prompt hook is a new process per prompt. At 50,000 entries most of its work was reading the
store: checking every entry's fields (``model.read_entry``) cost about twice parsing the JSON.
While a file is unchanged the outcome of those checks is too, so this file keeps it, one record
per store file: the items whose reading is not ``model.plain_entry`` (a field missing, coerced
or with a problem, a duplicate id: read again in full, so their problems are reported as
always), and what the reading counts over all items (``max_number``, ``link_max``,
``misfiled_max``). The items themselves are parsed from the store file as before; every other
item becomes its entry without the checks.

A record is used only for the file it was made from: the same stamp (mtime, ctime, size,
inode: a hand edit, a checkout, a copy from another clone all change the ctime or the inode)
and the same digest of the bytes read (CRC-32 and length, which the reading computes anyway),
with ``config.json``'s stamp unchanged and the fingerprint of the code that reads (this module,
``model.py``, ``store.py``) the same. Files that do not parse, have keys written twice or lone
surrogate escapes get no record: they are read in full each time, as before. Anything unexpected
in the file means "no record", never a different reading. The name matches the git-ignored
``*_state.json`` pattern.

Stores under ``MIN_ENTRIES`` entries get no file. Measured in one process per reading: at 25
entries reading the record costs what the checks it skips cost; at 100 it saves 1-3 ms a
process, and writing it (once per change; not fsynced: a crash costs a rebuild) 1-5 ms.
"""

from __future__ import annotations

import os
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FILE = "store_reading_state.json"
FORMAT = 1
MIN_ENTRIES = 100
_SOURCES = ("model.py", "store.py", "reading_cache.py")
_fingerprint: str | None = None


class Record:
    """What a full reading of one store file found; see the module docstring."""

    __slots__ = ("digest", "items", "link_max", "max_number", "misfiled_max", "not_plain", "stamp")

    def __init__(self, stamp: Any, digest: bytes, items: int, not_plain: tuple[int, ...], max_number: int,
                 link_max: dict[str, int], misfiled_max: dict[str, int]) -> None:
        self.stamp, self.digest, self.items, self.not_plain = tuple(stamp), digest, items, not_plain
        self.max_number, self.link_max, self.misfiled_max = max_number, link_max, misfiled_max

    def saved(self) -> dict[str, Any]:
        return {"stamp": list(self.stamp), "digest": self.digest.hex(), "items": self.items,
                "not_plain": list(self.not_plain), "max_number": self.max_number, "link_max": self.link_max,
                "misfiled_max": self.misfiled_max}


def fingerprint() -> str:
    """Identifies the code whose reading the records hold (a new version may read otherwise)."""
    global _fingerprint
    if _fingerprint is None:
        crc, size = zlib.crc32(str(FORMAT).encode("ascii")), 0
        here = os.path.dirname(os.path.abspath(__file__))
        for name in _SOURCES:
            try:
                with open(os.path.join(here, name), "rb") as handle:
                    source = handle.read()
            except OSError:
                source = os.urandom(16)  # source unavailable: never match a file
            crc, size = zlib.crc32(source, crc), size + len(source)
        _fingerprint = f"{crc:08x}-{size}"
    return _fingerprint


def dump(records: dict[str, Record], config_stamp: Any) -> dict[str, Any]:
    return {"format": FORMAT, "fingerprint": fingerprint(), "config": None if config_stamp is None else list(config_stamp),
            "files": {name: record.saved() for name, record in records.items()}}


def restore(data: Any, config_stamp: Any) -> dict[str, Record]:
    """The records in ``data`` (the file's JSON), by store file name; none when the file is not
    one this code wrote for this ``config.json``."""
    if (not isinstance(data, dict) or data.get("format") != FORMAT or data.get("fingerprint") != fingerprint()
            or data.get("config") != (None if config_stamp is None else list(config_stamp))
            or not isinstance(data.get("files"), dict)):
        return {}
    records = {}
    for name, saved in data["files"].items():
        record = _record(saved)
        if record is not None:
            records[name] = record
    return records


def _record(saved: Any) -> Record | None:
    try:
        stamp, items, not_plain = saved["stamp"], saved["items"], saved["not_plain"]
        digest = bytes.fromhex(saved["digest"])
        if (not _ints(stamp) or len(stamp) != 4 or type(items) is not int or not _ints(not_plain)
                or any(not 0 <= i < items for i in not_plain) or sorted(set(not_plain)) != not_plain
                or type(saved["max_number"]) is not int or not _counts(saved["link_max"])
                or not _counts(saved["misfiled_max"])):
            return None
        return Record(stamp, digest, items, tuple(not_plain), saved["max_number"], saved["link_max"],
                      saved["misfiled_max"])
    except (KeyError, TypeError, ValueError):  # bytes.fromhex of a non-string: TypeError
        return None


def _ints(values: Any) -> bool:
    return isinstance(values, list) and all(type(v) is int for v in values)


def _counts(values: Any) -> bool:
    return isinstance(values, dict) and all(type(k) is str and type(v) is int for k, v in values.items())
