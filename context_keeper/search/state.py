"""Persisted per-entry analyses: ``.context/search_state.json``.

Tokenising and stemming every entry is most of what building a ``SearchIndex`` costs, and a
short-lived process (the UserPromptSubmit hook) pays it on every run. The result of that step
for one entry — its term counts per field group and its field-group lengths — depends only on
the entry's content and on the analyser's code, so it is cached here, keyed by a hash of the
entry's JSON, under a fingerprint of the analyser (source of ``tokenize.py``/``adjectives.py``/``spelling.py``/``fields.py``, the
stemmer in use, ``FORMAT``).

Never trusted blindly: a record is used only for an entry whose hash matches; a record that is
malformed or internally inconsistent (counts that do not add up to the lengths, negative
numbers or ones above ``MAX_COUNT``, wrong types) is ignored and the entry analysed afresh; an unreadable, foreign or
garbage file is ignored as a whole. JSON only (no pickle/marshal): loading a hostile file can
at worst cost a re-analysis. The name matches the ``*_state.json`` pattern that
``context-keeper init`` git-ignores.

File layout (compact: the file is read by every hook run)::

    {"format": 1, "fingerprint": "...", "entries": {"<hash>": ["l0,l1,l2,l3", "t1\\x1ft2...", "c,c,c,c,..."]}}

``counts`` holds ``len(GROUPS)`` numbers per term, in term order.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from context_keeper.search import fields as F

FILE = "search_state.json"
FORMAT = 1
_SEP = "\x1f"  # never part of a term (tokenize.py keeps word characters and _./-:@+# only)
_G = len(F.GROUPS)
# No entry holds more terms than this: it comes from a store file of at most 128 MiB
# (bounded_read.STORE_FILE_LIMIT). Far below where the index's float arithmetic on the sums of
# lengths breaks down (an int of 10**400 raised OverflowError there, in every later process).
MAX_COUNT = 2**31 - 1

Analysis = tuple[dict[str, "list[int] | tuple[int, ...]"], tuple[int, ...]]  # counts per group, per term

_fingerprint: str | None = None


def fingerprint() -> str:
    """Identifies the analyser: a changed tokenizer/field map/stemmer invalidates the file."""
    global _fingerprint
    if _fingerprint is None:
        from importlib.util import find_spec

        from context_keeper.search import adjectives, spelling, tokenize

        digest = hashlib.blake2b(digest_size=16)
        digest.update(f"{FORMAT}|{F.GROUPS}|{sorted(F.FIELD_GROUPS.items())}|".encode())
        digest.update(b"pystemmer" if find_spec("Stemmer") is not None else b"snowball")
        for module in (tokenize, adjectives, spelling, F):
            try:
                with open(module.__file__ or "", "rb") as handle:
                    digest.update(handle.read())
            except OSError:
                digest.update(os.urandom(16))  # source unavailable: never match a file
        _fingerprint = digest.hexdigest()
    return _fingerprint


def entry_key(entry: Any) -> str | None:
    """Hash of the entry's JSON (key order irrelevant), or None when it has no JSON form."""
    try:
        text = json.dumps(entry, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return None
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _decode(record: Any) -> Analysis | None:
    """A cached analysis, or None when the record is malformed or inconsistent."""
    try:
        lens_text, terms_text, counts_text = record
        lens = list(map(int, lens_text.split(",")))
        names = terms_text.split(_SEP) if terms_text else []
        counts = list(map(int, counts_text.split(","))) if counts_text else []
    except (TypeError, ValueError, AttributeError):
        return None
    if len(lens) != _G or len(counts) != _G * len(names):
        return None
    if (counts and not 0 <= min(counts) <= max(counts) <= MAX_COUNT) or not 0 <= min(lens) <= max(lens) <= MAX_COUNT:
        return None
    for g in range(_G):
        if sum(counts[g::_G]) != lens[g]:
            return None
    columns = [iter(counts)] * _G  # consecutive groups of _G counts, one per term
    tf = dict(zip(names, zip(*columns)))  # tuples: the index only reads them
    if len(tf) != len(names) or "" in tf:
        return None
    return tf, tuple(lens)


def _encode(analysis: Analysis) -> list[str]:
    tf, lens = analysis
    return [
        ",".join(map(str, lens)),
        _SEP.join(tf),
        ",".join(str(c) for counts in tf.values() for c in counts),
    ]


class AnalysisCache:
    """Per-entry analyses for one store: loaded from / saved to ``search_state.json``."""

    def __init__(self, records: Mapping[str, Any] | None = None) -> None:
        self._records: Mapping[str, Any] = records or {}
        self._used: dict[str, Analysis] = {}
        self.hits = 0
        self.misses = 0

    @classmethod
    def from_json(cls, data: Any) -> AnalysisCache:
        """From the file's parsed JSON; anything unexpected yields an empty cache."""
        if (
            isinstance(data, dict)
            and data.get("format") == FORMAT
            and data.get("fingerprint") == fingerprint()
            and isinstance(data.get("entries"), dict)
        ):
            return cls(data["entries"])
        return cls()

    @classmethod
    def load(cls, store: Any) -> AnalysisCache:
        """The cache of ``store`` (a ``Store``); empty when the file is missing or unusable."""
        try:
            data = store.read_sidecar(FILE)
        except Exception:  # noqa: BLE001 - a derived file must never break a search
            data = None
        return cls.from_json(data)

    def analyse(self, entry: Any, compute: Callable[[Any], Analysis]) -> Analysis:
        key = entry_key(entry)
        if key is None:
            self.misses += 1
            return compute(entry)
        found = self._used.get(key)
        if found is None:
            record = self._records.get(key)
            found = _decode(record) if record is not None else None
            if found is None:
                found = compute(entry)
                self.misses += 1
            else:
                self.hits += 1
            self._used[key] = found
        else:
            self.hits += 1
        return found

    @property
    def changed(self) -> bool:
        """True when the file on disk differs from the analyses used (new or dropped entries)."""
        return self.misses > 0 or len(self._used) != len(self._records)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "fingerprint": fingerprint(),
            "entries": {key: _encode(analysis) for key, analysis in self._used.items()},
        }

    def save(self, store: Any, force: bool = False) -> bool:
        """Write the analyses used (only those: dropped entries leave the file) when something
        changed. Returns whether it wrote."""
        if not (force or self.changed):
            return False
        store.write_sidecar(FILE, self.to_json(), compact=True)  # machine-only; indented took ~1.5x as long to encode
        self._records = {key: None for key in self._used}  # in step with the file now
        self.misses = 0
        return True
