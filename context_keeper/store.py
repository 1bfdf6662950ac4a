"""The ``.context/`` store: cached reads, locked read-modify-write, atomic files.

Each store file is a JSON array of entry objects. Reads are served from memory and checked
against the file's (mtime, ctime, size, inode) on every call, so a hand edit or another
process's write is picked up without re-parsing unchanged files. Writes happen inside ``transaction()``,
which holds a cross-process ``filelock`` on ``.context/.lock`` and works on the file as it is on
disk at that moment (confirmed by content, not only by the stamp).

The raw items of a file are kept alongside the normalised entries: a rewrite reproduces every
item it did not change byte for byte as it was written (a teammate's hand formatting, unknown
fields, a malformed item), and lays out only the items it adds or changes. Every successful
write also leaves a copy of the new file in ``.context/.last-good/`` for ``context-keeper doctor
--fix`` to restore after a bad hand edit.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import json
import os
import re
import stat
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from context_keeper import model
from context_keeper.bounded_read import (CACHE_LIMIT, STORE_FILE_LIMIT, FileTooLarge, NotRegularFile, read_regular,
                                        shown_size, special_kind)
from context_keeper.confine import leads_out, refusal
from context_keeper.config import checked, read_config_file
from context_keeper.errors import (CorruptStoreFile, InvalidInput, MisencodedStoreFile, NotAStoreFile, NotFound,
                                   StoreError)
from context_keeper.fsio import FileInUse, atomic_write_bytes, atomic_write_text
from context_keeper.gitignore import EXCLUDED, GITIGNORE, keep_bookkeeping_out_of_git
from context_keeper.model import KINDS, Kind
from context_keeper.project import CONTEXT_DIR
from context_keeper.reading_cache import Record

TYPE_CHECKING = False  # typing costs ~5 ms to import on the hooks' cold path
if TYPE_CHECKING:
    from typing import Any


LOCK_TIMEOUT_S = 30.0
BACKUP_DIR = ".last-good"
KEPT_ASIDE = ".before-"  # a last good copy renamed aside: it held entries the file written over lacked
COMMIT_TOKEN = ".commit-token"
_CLOSE = b"\n]\n"
_MAX_PARTS = 64
_MAX_ID_NUMBER = 10**9 - 1  # model.ID_RE allows up to 9 digits

Stamp = tuple[int, int, int, int]
_WS = re.compile(r"[ \t\n\r]*")
_BOM = "\ufeff"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],]', re.S)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_CONFLICT_MARKER = re.compile(r"^(?:<{7}|\|{7}|={7}|>{7})(?:[ \t][^\n]*)?\r?$", re.M)


def _warn(message: str, *args: Any) -> None:
    import logging  # only on this rare path: the hooks import this module and start fast

    logging.getLogger("context_keeper.store").warning(message, *args)


def _not_a_directory(path: Path) -> str | None:
    """What is at ``path`` when it is something other than a directory, else None."""
    if not os.path.lexists(path) or path.is_dir():
        return None
    if path.is_symlink():
        return f"a symbolic link to {os.readlink(path)}, not to a directory"
    return "a file, not a directory"


def in_the_way(path: Path) -> str | None:
    """What to do about the nearest of ``path`` and its parents that exists but is not a
    directory (a file named ``.context``, or a link to one): what makes a read or write there
    fail with "not a directory". None when there is none."""
    for candidate in (path, *path.parents):
        what = _not_a_directory(candidate)
        if what is not None:
            return f"{candidate} is {what}: move it aside (mv {candidate} {candidate}.aside)"
    return None


def _nothing_saved(path: Path, exc: OSError) -> StoreError:
    """The error for a write refused before any store file was replaced: the caller can say for
    certain that nothing changed, instead of sending the agent off to check."""
    where = path.parent
    if path.is_symlink():  # a linked store file is replaced where the link leads (fsio)
        where = Path(os.path.realpath(path)).parent
    blocked = in_the_way(path) if exc.errno in (errno.EEXIST, errno.ENOTDIR) else None
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        remedy = "The disk (or your quota) is full: free some space"
    elif blocked is not None:
        # ``.context`` is a file (or a link to one): "check it is writable" would send the person
        # off to check permissions that are fine.
        remedy = blocked
    elif exc.errno == errno.EISDIR and path.is_dir():
        # The lock file (or a store file) made a directory by hand or by a stray tool.
        remedy = f"{path} is a directory where context-keeper keeps a file: remove it (rmdir {path})"
    elif exc.errno == errno.ELOOP and path.is_symlink():
        # The lock file is opened without following links: a link there (to any file) is refused,
        # and the directory the link leads to has nothing to do with it.
        what = "its lock file" if path.name == ".lock" else "a file of its own"
        remedy = (f"{path} is a symbolic link to {os.readlink(path)}, where context-keeper keeps {what}: remove the "
                  f"link (rm {path}; the next write makes the file again)")
    elif isinstance(exc, FileInUse):
        # Windows refuses to replace a file another program has open; the directory is writable.
        remedy = (f"Another program has {path.name} open (a second context-keeper, an editor, a sync tool or a "
                  "virus scanner), and Windows does not replace a file while it is open: close that program or "
                  "wait a moment. If it persists, check that the file is not marked read-only")
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        remedy = f"{where} is not writable (a read-only mount or checkout?): make it writable"
    else:
        remedy = f"Check that {where} is writable and the disk has room"
    reason = exc.strerror or type(exc).__name__
    return StoreError(f"nothing was saved: {path} could not be written ({reason}). {remedy}, then try again.")


def _stamp(path: Path) -> Stamp | None:
    try:
        return _stamp_of(path.stat())
    except FileNotFoundError:
        return None


def _stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _file_stamp(path: Path) -> Stamp | None:
    """``_stamp`` of a store file, except that a symbolic link whose target is gone has one (its
    own): it reads as a broken store file, not as no file, until it is mended or removed."""
    try:
        stamp = _stamp(path)
    except OSError as exc:
        if exc.errno != errno.ELOOP:  # a link that leads back to itself: broken like one to nothing
            raise
        stamp = None
    if stamp is not None:
        return stamp
    try:
        return _stamp_of(path.lstat())
    except OSError:
        return None


# read_bytes() of a store file that is missing, a directory, or a link to nothing or to itself
_NOTHING_TO_READ = frozenset((errno.ENOENT, errno.EISDIR, errno.ELOOP))
_REFUSED = frozenset((errno.EACCES, errno.EPERM))


def _store_bytes(kind: Kind, path: Path, stamp: Stamp | None) -> bytes | FileState:
    """The file's bytes, or the state of a file with none to read (``_absent_state`` says why): a
    FIFO or a device in its place, or a file above ``STORE_FILE_LIMIT``, is refused too, as a
    cloned repository can commit one to hang or exhaust every hook. A file this process may not
    open is broken like those: the other files keep working, and its last good copy stands in."""
    try:
        return read_regular(path, STORE_FILE_LIMIT)
    except (NotRegularFile, FileTooLarge):
        pass
    except OSError as exc:
        if exc.errno in _REFUSED:
            return FileState(kind, path, stamp, error=_not_readable(path, exc))
        if exc.errno not in _NOTHING_TO_READ:
            raise
    return _absent_state(kind, path, stamp)


def _not_readable(path: Path, exc: OSError) -> NotAStoreFile:
    """A store file the OS refuses to open for reading: most often one a command run with sudo
    left owned by root with mode 0600. Its owner and mode say why, where they can be read."""
    why = exc.strerror or "permission denied"
    try:
        info = path.stat()
    except OSError:
        pass
    else:
        try:
            owner = path.owner()
        except (KeyError, NotImplementedError):  # a uid with no name, or no owners (Windows)
            owner = f"uid {info.st_uid}"
        why += f"; owned by {owner}, mode {stat.S_IMODE(info.st_mode):04o}"
    return NotAStoreFile(
        str(path), f"is not readable ({why})",
        f"let the user context-keeper runs as read and write it (for example sudo chown $(id -un) {path}, "
        "typed as that user); its last good copy, where there is one, stands in meanwhile, and nothing is "
        "written over it")


def _absent_state(kind: Kind, path: Path, stamp: Stamp | None) -> FileState:
    """A store file with no bytes to read: not created yet, or something else in its place."""
    broken = _not_a_file(path) or _deleted(path)
    return FileState(kind, path, None) if broken is None else FileState(kind, path, stamp, error=broken)


def last_good_refusal(context_dir: Path, skipped: str) -> str | None:
    """Why ``.context/.last-good/`` is not to be used (a link out of the project: a cloned
    repository can commit one, to have copies written over another project's store files and
    read back as this one's), saying ``skipped``; None when it may be."""
    return refusal(context_dir / BACKUP_DIR, context_dir.parent, skipped)


def _last_good_copy(context_dir: Path, filename: str) -> Path | None:
    """The last good copy of ``filename`` to read, or None when ``.last-good/`` leads out."""
    if leads_out(context_dir / BACKUP_DIR, context_dir.parent) is not None:
        return None
    return context_dir / BACKUP_DIR / filename


def _deleted(path: Path) -> NotAStoreFile | None:
    """A store file that is gone although context-keeper wrote entries to it (its last good copy
    holds them): a stray rm, a stash. Writing would start the ids again at 001, under links that
    still name the old entries, and replace that copy, the one way back."""
    backup = _last_good_copy(path.parent, path.name)
    if backup is None:
        return None  # no copy this project may read
    try:
        data = read_regular(backup, STORE_FILE_LIMIT)
    except OSError:
        return None  # never written here: a new store
    if data.strip() in (b"", b"[]"):
        return None  # it held no entries: nothing to lose
    return NotAStoreFile(
        str(path), f"is missing, but its last good copy (.context/{BACKUP_DIR}/{path.name}) holds entries",
        f"copy that back (cp .context/{BACKUP_DIR}/{path.name} .context/{path.name}) or restore the file from "
        f"version control; if the entries were removed on purpose, delete the copy as well")


def _not_a_file(path: Path) -> NotAStoreFile | None:
    """Why ``path`` has no bytes to read although something is there: a directory, a link to
    nothing, a FIFO or a device, a file too large to read. None: nothing is there (a store file
    not created yet)."""
    unreadable = _unreadable(path)
    if unreadable is not None:
        return unreadable
    if path.is_dir():
        link = f"a symbolic link to the directory {os.readlink(path)}" if path.is_symlink() else "a directory"
        return NotAStoreFile(str(path), f"is {link}, not a JSON file",
                             f"move it out of {path.parent} (a store file holds a JSON array of entries)")
    if path.is_symlink():
        return NotAStoreFile(str(path), f"is a symbolic link to {os.readlink(path)}, which leads to no file",
                             "restore the file it points to, or replace the link with the file itself")
    return None


def _unreadable(path: Path) -> NotAStoreFile | None:
    """A FIFO, a device or a socket (through a link or not), or a regular file above the cap."""
    try:
        info = path.stat()
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        return None  # _not_a_file's own case
    if not stat.S_ISREG(info.st_mode):
        return NotAStoreFile(str(path), f"is not a regular file ({special_kind(info.st_mode)})",
                             "replace it with the JSON file (a store file holds a JSON array of entries)")
    if info.st_size > STORE_FILE_LIMIT:
        return NotAStoreFile(
            str(path), f"is {shown_size(info.st_size)}, above the {shown_size(STORE_FILE_LIMIT)} this tool reads",
            "restore it from version control, or move the entries you do not need out of it until it is smaller "
            "(its last good copy stands in meanwhile, and nothing is written over it)")
    return None


def _digest(data: bytes | tuple[bytes, ...]) -> bytes:
    """Change detection, not security: CRC-32 plus length is ~5x cheaper than a cryptographic
    hash on a multi-megabyte store file, and this runs on every write."""
    parts = (data,) if isinstance(data, bytes) else data
    crc, size = 0, 0
    for part in parts:
        crc = zlib.crc32(part, crc)
        size += len(part)
    return crc.to_bytes(4, "big") + size.to_bytes(8, "big")


def _not_finite(value: Any, path: str = "") -> tuple[str, str, str] | None:
    """The first NaN or infinity in ``value``: what it is, where (``key.sub[2]``), and what a
    JSON encoder that allows it would write."""
    if isinstance(value, float) and value != value:
        return "NaN", path or "a value", "NaN"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "a number beyond what a float can carry (such as 1e400)", path or "a value", "Infinity"
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        found = _not_finite(child, f"{path}.{key}" if path and isinstance(key, str) else f"{path}[{key}]" if path else str(key))
        if found:
            return found
    return None


# The indent of a store file's items, when a person or another tool wrote it with other than two
# spaces (four, a tab): an item rewritten in two spaces beside theirs made a diff of every line.
_ITEM_INDENT = re.compile(rb"\A(?:\xef\xbb\xbf)?\[\r?\n( {1,8}|\t)[{\[]")


def _file_indent(head: bytes | None) -> str:
    match = _ITEM_INDENT.match(head or b"")
    return match.group(1).decode("ascii") if match else "  "


def _chunk(item: Any, indent: str = "  ") -> str:
    """One array item exactly as ``json.dumps(items, indent=indent)`` would lay it out."""
    try:
        text = json.dumps(item, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError:
        # 1e400 in a hand-added key reads as inf, NaN (which Python's json.dump writes) as nan:
        # written back as Infinity or NaN, no JSON parser but Python's reads them, so the file
        # would be broken for everyone else.
        entry = item.get("id") if isinstance(item, dict) else None
        what, where, written = _not_finite(item) or ("a number JSON cannot carry", "a value", "Infinity")
        raise StoreError(
            f"{entry or 'an entry'} holds {what} in {where}, which would be written back as {written}, and that "
            "is not JSON. Nothing was written; write that value as a string or a finite number by hand "
            "(\"1e400\", null), then try again"
        ) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (legal in JSON text, not in UTF-8): keep it as an escape.
        text = json.dumps(item, indent=indent, ensure_ascii=True)
    return indent + text.replace("\n", "\n" + indent)


class FileState:
    """An immutable snapshot of one store file. Entries are shared: treat them as read-only.

    Fields: ``raw`` items as parsed; ``chunks`` each item's kept source text (None: rendered
    canonically); ``entries_by_id`` the normalised usable entries in file order; ``positions``
    id -> index in ``raw``; ``item_problems`` raw index -> problems; ``max_number`` the highest
    numeric id part among all items (malformed ones included); ``link_max`` id prefix -> the
    highest number the items' history links (superseded_by, supersedes) name; ``misfiled_max`` id prefix
    of another kind -> the highest number of the items here that carry such an id (an entry put in
    the wrong file: skipped here, but its id is taken); ``error`` when the file does not
    parse; ``digest`` of the bytes on disk (confirms the cache under the lock); ``scrub`` the file
    has \\uD800-style escapes; ``data`` the bytes this process last wrote (in parts, for cheap
    appends); ``source`` the parsed text, split into per-item chunks only when a write needs them;
    ``repeated`` id(item) -> (item, problems) for items with a key written twice in one object;
    ``not_plain`` the indexes of the items whose entry is not ``model.plain_entry`` (None: not
    known, or the file is not one ``reading_cache`` keeps a record of).

    A plain class, not a dataclass: the hooks import this module on their cold path.
    """

    _FIELDS = ("kind", "path", "stamp", "raw", "chunks", "entries_by_id", "positions", "item_problems",
               "max_number", "link_max", "error", "digest", "scrub", "data", "source", "repeated", "misfiled_max",
               "not_plain")
    __slots__ = (*_FIELDS, "_entries", "_ids")

    def __init__(
        self,
        kind: Kind,
        path: Path,
        stamp: Stamp | None,
        raw: tuple[Any, ...] = (),
        chunks: tuple[str | None, ...] = (),
        entries_by_id: dict[str, dict] | None = None,
        positions: dict[str, int] | None = None,
        item_problems: dict[int, tuple[str, ...]] | None = None,
        max_number: int = 0,
        link_max: dict[str, int] | None = None,
        error: CorruptStoreFile | None = None,
        digest: bytes | None = None,
        scrub: bool = False,
        data: tuple[bytes, ...] | None = None,
        source: str | None = None,
        repeated: dict[int, tuple[Any, tuple[str, ...]]] | None = None,
        misfiled_max: dict[str, int] | None = None,
        not_plain: tuple[int, ...] | None = None,
    ) -> None:
        self.kind, self.path, self.stamp, self.raw, self.chunks = kind, path, stamp, raw, chunks
        self.entries_by_id = {} if entries_by_id is None else entries_by_id
        self.positions = {} if positions is None else positions
        self.item_problems = {} if item_problems is None else item_problems
        self.max_number, self.error, self.digest, self.scrub = max_number, error, digest, scrub
        self.link_max = {} if link_max is None else link_max
        self.data, self.source = data, source
        self.repeated = {} if repeated is None else repeated
        self.misfiled_max = {} if misfiled_max is None else misfiled_max
        self.not_plain = not_plain
        self._entries: tuple[dict, ...] | None = None
        self._ids: IdLookup | None = None

    def replace(self, **changes: Any) -> FileState:
        values = {name: getattr(self, name) for name in self._FIELDS}
        values.update(changes)
        return FileState(**values)

    @property
    def entries(self) -> tuple[dict, ...]:
        if self._entries is None:
            self._entries = tuple(self.entries_by_id.values())
        return self._entries

    @property
    def ids(self) -> IdLookup:
        """The ids of this file by their spellings, made on first use."""
        if self._ids is None:
            self._ids = IdLookup(self.entries_by_id, self.raw)
        return self._ids

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(p for index in sorted(self.item_problems) for p in self.item_problems[index])

    def raw_item(self, entry_id: str) -> dict:
        """The stored item of entry ``entry_id``, under the id the entry is known by (as ``FileTxn.raw_item``)."""
        return {**self.raw[self.positions[entry_id]], "id": entry_id}

    def repeats_keys(self, index: int) -> bool:
        """Whether raw item ``index`` has a key written twice in one object (see ``_repeated_keys``)."""
        return id(self.raw[index]) in self.repeated

    def problems_of(self, entry_id: str) -> tuple[str, ...]:
        """The problems of the items that carry ``entry_id`` (why such an id is not usable)."""
        key = model.id_key(entry_id)
        return tuple(p for index in sorted(self.item_problems)
                     if isinstance(self.raw[index], dict) and isinstance(self.raw[index].get("id"), str)
                     and (self.raw[index]["id"].strip() == entry_id.strip()
                          or key is not None and model.id_key(self.raw[index]["id"]) == key)
                     for p in self.item_problems[index])


def project_name_of(config: dict[str, Any], root: Path) -> tuple[str, str | None]:
    """The project's name: config's ``project_name``, else the folder's name; and, when the
    setting is there but unusable, a sentence saying so (a number or a list was shown as its
    repr, "['a']", and one replaced without a word read as a setting ignored)."""
    folder = folder_name(root)
    name, problem = checked(config, "project_name", instead=f"the folder name {folder!r} is used")
    return name or folder, problem


def folder_name(root: Path) -> str:
    """The project folder's name as text: bytes that are not UTF-8 (a Latin-1 directory name)
    become U+FFFD, as Python's surrogate escapes cannot be written as UTF-8 or sent as JSON."""
    return os.fsencode(root.name).decode("utf-8", "replace")


def _scrub(value: Any) -> tuple[Any, bool]:
    """``value`` with lone surrogates replaced by U+FFFD (they cannot be sent as UTF-8)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _LONE_SURROGATE.sub("\ufffd", value), True
        return value, False
    if isinstance(value, dict):
        out, hit = {}, False
        for key, item in value.items():
            key, k_hit = _scrub(key)
            out[key], v_hit = _scrub(item)
            hit = hit or k_hit or v_hit
        return (out, True) if hit else (value, False)
    if isinstance(value, list):
        pairs = [_scrub(item) for item in value]
        if any(hit for _, hit in pairs):
            return [item for item, _ in pairs], True
        return value, False
    return value, False


def _id_number(kind: Kind, item: Any) -> int:
    return _own_number(kind, _item_id_key(item))


def _item_id_key(item: Any) -> tuple[str, int, str] | None:
    return model.id_key(item.get("id")) if isinstance(item, dict) else None


def _own_number(kind: Kind, parsed: tuple[str, int, str] | None) -> int:
    # In any case: a hand-typed "DEC-004" is skipped as malformed, but the next record handing out
    # dec-004 too would make doctor's advice (lower-case it) collide.
    return parsed[1] if parsed and parsed[0] == kind.prefix else 0


# The history links only: they always name an entry of the same kind that existed (record and
# deprecate check it), while related_to may name one not recorded yet ("dec-045", about to be
# written), and counting that would hand the next entry a different id than the link expects.
_LINK_FIELDS = ("superseded_by", "supersedes")


def _note_links(item: Any, link_max: dict[str, int]) -> None:
    """Raise ``link_max[prefix]`` to every id number ``item``'s links name (malformed values skipped)."""
    if not isinstance(item, dict):
        return
    for field in _LINK_FIELDS:
        value = item.get(field)
        if value is None:  # no link (the usual case): nothing to parse
            continue
        for target in value if isinstance(value, list) else (value,):
            parsed = model.id_key(target)
            if parsed is not None and parsed[1] > link_max.get(parsed[0], 0):
                link_max[parsed[0]] = parsed[1]


def _note_misfiled(kind: Kind, parsed: tuple[str, int, str] | None, misfiled_max: dict[str, int]) -> None:
    """Raise ``misfiled_max[prefix]`` to the number of an item's id (``parsed``, its ``model.id_key``)
    when it is of another kind."""
    if (parsed is not None and parsed[0] != kind.prefix and parsed[0] in model.BY_PREFIX
            and parsed[1] > misfiled_max.get(parsed[0], 0)):
        misfiled_max[parsed[0]] = parsed[1]


def misfiled_number(store: Store, kind: Kind) -> int:
    """The highest number of a ``kind`` id that an item in another kind's file carries (0: none).
    Such an entry is skipped there, but its id is given out: handing it out again would leave two
    entries with one id once it is moved where it belongs."""
    return max((store.state(other).misfiled_max.get(kind.prefix, 0) for other in KINDS.values() if other is not kind),
               default=0)


class _Builder:
    """Normalises items one at a time, so a write re-reads only the items it touched."""

    def __init__(self, kind: Kind, path: Path, base: FileState | None = None) -> None:
        self.kind, self.path = kind, path
        self.raw = list(base.raw) if base else []
        self.chunks = list(base.chunks) if base else []
        self.entries = dict(base.entries_by_id) if base else {}
        self.positions = dict(base.positions) if base else {}
        self.problems = dict(base.item_problems) if base else {}
        self.max_number = base.max_number if base else 0
        self.link_max = dict(base.link_max) if base else {}
        self.misfiled_max = dict(base.misfiled_max) if base else {}
        self.scrub = base.scrub if base else False
        self.repeated = dict(base.repeated) if base else {}
        self.not_plain: list[int] | None = None  # kept for a file read whole (_build_state)

    def _admit(self, index: int, item: Any) -> None:
        entry, problems, plain = model.read_entry_checked(self.kind, item)
        held = self.repeated.get(id(item))
        if held is not None and held[0] is item:
            # Only the last of each repeated key was parsed: the entry shown (or updated and
            # written back) would silently drop the other values, so it is skipped instead.
            entry, problems = None, [*held[1], *problems]
        if self.scrub and entry is not None:
            entry, replaced = _scrub(entry)
            if replaced:
                problems = [*problems, f"{entry['id']}: text with a lone surrogate (invalid \\u escape), shown as \ufffd"]
        parsed = _item_id_key(item)  # once for both: this runs for every item of every file read
        self.max_number = max(self.max_number, _own_number(self.kind, parsed))
        _note_links(item, self.link_max)
        _note_misfiled(self.kind, parsed, self.misfiled_max)
        if entry is not None and self.positions.get(entry["id"], index) != index:
            problems = [*problems, f"duplicate id {entry['id']} (first one kept)"]
            entry = None
        if problems:
            self.problems[index] = tuple(f"{self.path.name} item {index + 1}: {p}" for p in problems)
        else:
            self.problems.pop(index, None)
        if entry is not None:
            self.positions[entry["id"]] = index
            self.entries[entry["id"]] = entry
        if self.not_plain is not None and (not plain or problems or entry is None):
            self.not_plain.append(index)

    def append_plain(self, item: dict) -> None:
        """``append`` of an item a record says is plain (``reading_cache``): its entry without the
        checks. Its id and counts are the record's to know."""
        index = len(self.raw)
        entry = model.plain_entry(self.kind, item)
        self.raw.append(item)
        self.chunks.append(None)
        self.positions[entry["id"]] = index
        self.entries[entry["id"]] = entry

    def append(self, item: Any, chunk: str | None = None) -> None:
        self.raw.append(item)
        self.chunks.append(chunk)
        self._admit(len(self.raw) - 1, item)

    def put(self, entry_id: str, item: dict) -> None:
        index = self.positions[entry_id]
        if item.get("id") != entry_id:
            raise ValueError("put() cannot change an entry's id")
        self.raw[index] = item
        self.chunks[index] = None
        self._admit(index, item)

    def state(self, stamp: Stamp | None, digest: bytes | None = None, data: tuple[bytes, ...] | None = None) -> FileState:
        return FileState(self.kind, self.path, stamp, tuple(self.raw), tuple(self.chunks), dict(self.entries),
                         dict(self.positions), dict(self.problems), self.max_number, dict(self.link_max), digest=digest, scrub=self.scrub,
                         data=data, repeated=dict(self.repeated), misfiled_max=dict(self.misfiled_max),
                         not_plain=None if self.not_plain is None else tuple(self.not_plain))


def _build_state(
    kind: Kind,
    path: Path,
    stamp: Stamp | None,
    raw: list,
    digest: bytes | None = None,
    scrub: bool = False,
    repeated: dict[int, list[str]] | None = None,
) -> FileState:
    builder = _Builder(kind, path)
    builder.scrub = scrub
    if not scrub and not repeated:  # the files reading_cache keeps a record of
        builder.not_plain = []
    for index, problems in (repeated or {}).items():
        builder.repeated[id(raw[index])] = (raw[index], tuple(problems))  # the item itself held: its id stays unique
    for item in raw:
        builder.append(item)
    return builder.state(stamp, digest)


def _repeated_keys(text: str) -> dict[int, list[tuple[str, int, int]]]:
    """Top-level item index -> (key, offset of its first use, offset of the repeat) for each key
    written twice in one object of that item. ``text`` must parse as a JSON array.

    Keeping both sides of a merge conflict inside one entry ("accept both") writes ``summary``,
    ``problem``... twice; a JSON parser keeps the last of each without a word.
    """
    found: dict[int, list[tuple[str, int, int]]] = {}
    stack: list[dict[str, int] | None] = []  # per open container: its keys so far, None for an array
    item, expect_key = 0, False
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        mark = token[0]
        if mark == '"':
            if expect_key:
                key, seen = json.loads(token), stack[-1]
                if key in seen:
                    found.setdefault(item, []).append((key, seen[key], match.start()))
                else:
                    seen[key] = match.start()
                expect_key = False
        elif mark == "{":
            stack.append({})
            expect_key = True
        elif mark == "[":
            stack.append(None)
        elif mark in "}]":
            stack.pop()
            expect_key = False
        else:  # ","
            if len(stack) == 1:
                item += 1
            expect_key = stack[-1] is not None
    return found


def _repeated_key_problems(text: str, raw: list) -> dict[int, list[str]]:
    problems = {}
    # Found once: counting from the start of the file for each repeat made a merged file whose
    # thousands of entries all repeat a key take a minute to read.
    newlines = [match.start() for match in re.finditer("\n", text)]

    def line(offset: int) -> int:
        return bisect.bisect_left(newlines, offset) + 1

    for index, repeats in _repeated_keys(text).items():
        item = raw[index]
        entry_id = item.get("id") if isinstance(item, dict) else None
        name = entry_id.strip() if isinstance(entry_id, str) and entry_id.strip() else "the item"
        where = ", ".join(f"{key!r} (lines {line(first)} and {line(again)})" for key, first, again in repeats)
        problems[index] = [f"{name} has keys written twice in one object: {where}; only the last of each would "
                           "be read, so the entry is skipped (and kept as written) until it is split"]
    return problems


def _split_array(text: str) -> tuple[list, list[str]] | None:
    """The items of a JSON array and each item's source text (its indentation included).

    None when ``text`` is not one well-formed array.
    """
    decoder = json.JSONDecoder()
    pos = _WS.match(text).end()
    if text[pos : pos + 1] != "[":
        return None
    pos += 1
    items: list = []
    chunks: list[str] = []
    after = _WS.match(text, pos).end()
    if text[after : after + 1] == "]":
        pos = after + 1
    else:
        while True:
            start = pos
            pos = _WS.match(text, pos).end()
            try:
                item, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError:
                return None
            chunk = text[start:end]
            for newline in ("\r\n", "\n"):
                if chunk.startswith(newline):
                    chunk = chunk[len(newline) :]
                    break
            items.append(item)
            chunks.append(chunk)
            pos = _WS.match(text, end).end()
            mark = text[pos : pos + 1]
            pos += 1
            if mark == "]":
                break
            if mark != ",":
                return None
    if _WS.match(text, pos).end() != len(text):
        return None
    return items, chunks


def _parse_file(
    kind: Kind, path: Path, stamp: Stamp, data: bytes | None = None, own_digest: bytes | None = None,
    record: Record | None = None,
) -> FileState:
    """Parse one store file. ``own_digest``: digest of the last file this tool wrote there;
    ``record``: what reading it found before (``reading_cache``), used if the bytes are the same."""
    if data is None:
        data = _store_bytes(kind, path, stamp)
        if isinstance(data, FileState):
            return data
    digest = _digest(data)
    text = _text_of(data) if record is not None and record.digest == digest else None
    if text is not None:
        state = _recorded_state(kind, path, stamp, text, digest, record)
        if state is not None:
            return _with_source(state, data, own_digest, text)
    wide = _wide_encoding(data)
    if wide is not None:
        return FileState(kind, path, stamp, error=MisencodedStoreFile(str(path), wide), digest=digest)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        # In characters, as an editor counts them: the line's valid start decodes.
        column = len(data[data.rfind(b"\n", 0, exc.start) + 1:exc.start].decode("utf-8", "replace")) + 1
        if _legacy_8bit(data):
            err = MisencodedStoreFile(str(path), MisencodedStoreFile.LEGACY, line, column)
        else:
            err = CorruptStoreFile(str(path), line, column, "not valid UTF-8")
        return FileState(kind, path, stamp, error=err, digest=digest)
    if text.startswith(_BOM):  # editors on Windows add one; JSON forbids it, people don't see it
        text = text[1:]
    if not text.strip():
        # Never what this tool writes ("[]" is): a truncation. Writing over it would also replace
        # the last good copy, so it is refused like any other unparsable file.
        detail = "the file is empty (expected a JSON array; write [] for an empty store)"
        return FileState(kind, path, stamp, error=CorruptStoreFile(str(path), 1, 1, detail), digest=digest)
    if not text.strip(" \t\r\n\0"):
        detail = (f"it holds only NUL bytes, {len(data):,} of them: what a crash leaves on a disk that kept the "
                  "file's size but not its data")
        return FileState(kind, path, stamp, error=CorruptStoreFile(str(path), 1, 1, detail, crashed=True),
                         digest=digest)
    repeats: list[bool] = []

    def pairs(items: list[tuple[str, Any]]) -> dict:
        obj = dict(items)
        if len(obj) != len(items):
            repeats.append(True)
        return obj

    try:
        data_value = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        marker = _CONFLICT_MARKER.search(text)
        if marker is not None:  # the parser's own message would only point near it
            line = text.count("\n", 0, marker.start()) + 1
            err = CorruptStoreFile(str(path), line, 1, "<<<<<<< ======= >>>>>>>", conflict=True)
        else:
            err = _parse_error(path, text, exc)
        return FileState(kind, path, stamp, error=err, digest=digest)
    except RecursionError:  # deeper than the parser goes; no entry nests more than a few levels
        line, column = _too_deep_at(text)
        err = CorruptStoreFile(str(path), line, column, f"nested too deeply: more than {_DEEP} levels")
        return FileState(kind, path, stamp, error=err, digest=digest)
    if not isinstance(data_value, list):
        err = _not_an_array(path, text, data_value)
        return FileState(kind, path, stamp, error=err, digest=digest)
    repeated = _repeated_key_problems(text, data_value) if repeats else None
    state = _build_state(kind, path, stamp, data_value, digest, bool(_SURROGATE_ESCAPE.search(text)), repeated)
    return _with_source(state, data, own_digest, text)


def _with_source(state: FileState, data: bytes, own_digest: bytes | None, text: str) -> FileState:
    # Only bytes this tool wrote are known to end the way an append expects.
    parts = (data[:-3], _CLOSE) if state.digest == own_digest and data.endswith(_CLOSE) and state.raw else None
    return state.replace(source=text, data=parts)


def _text_of(data: bytes) -> str | None:
    """The text of bytes a record says were read before (None: not UTF-8, so not those bytes)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text[1:] if text.startswith(_BOM) else text


def _recorded_state(kind: Kind, path: Path, stamp: Stamp, text: str, digest: bytes, record: Record) -> FileState | None:
    """The reading of ``text`` that ``record`` was made from, with only its not-plain items
    checked (reading_cache.py); None when the record does not fit the text after all."""
    try:
        items = json.loads(text)
        if type(items) is not list or len(items) != record.items:
            return None
        builder = _Builder(kind, path)
        builder.not_plain = []
        checked = iter(record.not_plain)
        next_checked = next(checked, None)
        for index, item in enumerate(items):
            if index == next_checked:
                builder.append(item)
                next_checked = next(checked, None)
            elif type(item) is dict and type(item.get("id")) is str:
                builder.append_plain(item)
            else:
                return None
        if builder.not_plain != list(record.not_plain):
            return None  # an item said to need checking read plain: not this record's file
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None
    builder.max_number, builder.link_max, builder.misfiled_max = record.max_number, record.link_max, record.misfiled_max
    return builder.state(stamp, digest)


def _parse_error(path: Path, text: str, exc: json.JSONDecodeError) -> CorruptStoreFile:
    """The error for a store file the JSON parser refused, naming a known hand-edit slip (a
    comment, a trailing or missing comma) as that, not in the parser's words."""
    from context_keeper import json_slips  # the error path only

    slip = json_slips.find(text, exc)
    if slip is None:
        return CorruptStoreFile(str(path), exc.lineno, exc.colno, exc.msg)
    line, column = json_slips.position(text, slip.offset)
    return CorruptStoreFile(str(path), line, column, slip.detail, remedy=slip.remedy,
                            mendable=json_slips.mend(text) is not None)


def _not_an_array(path: Path, text: str, value: Any) -> CorruptStoreFile:
    from context_keeper import json_slips

    if json_slips.is_single_entry(value):
        slip = json_slips.single_entry()
        return CorruptStoreFile(str(path), 1, 1, slip.detail, remedy=slip.remedy, mendable=True)
    found = model._json_kind(value)  # "an object", "null": JSON's words, not Python's
    return CorruptStoreFile(str(path), 1, 1, f"expected a JSON array of entries, found {found}")


_DEEP = 100


def _too_deep_at(text: str) -> tuple[int, int]:
    """Line and column of the first ``[`` or ``{`` nested more than ``_DEEP`` levels deep."""
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        mark = match.group()[0]
        if mark in "[{":
            depth += 1
            if depth > _DEEP:
                start = match.start()
                return text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start)
        elif mark in "]}":
            depth -= 1
    return 1, 1


def _wide_encoding(data: bytes) -> str | None:
    """"UTF-16" or "UTF-32" when ``data`` is plainly text in one of them (a byte order mark, or the
    NUL bytes ASCII text gets between its characters: JSON text never holds a raw NUL)."""
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    head = data[:4096]
    if b"\x00" not in head:
        return None
    # Share of NUL bytes at each position mod 4. A UTF-32 unit holds a code point of at most
    # 0x10FFFF: its top byte (3 little-endian, 0 big-endian) is always NUL, the next one is NUL for
    # any character short of the emoji planes, Japanese as much as ASCII; its low byte carries
    # the character (a file of zeros left by a crash is no text at all). As UTF-16, ASCII has
    # NULs at every odd (or every even) position.
    nul = [head[i::4].count(0) / max(1, len(head[i::4])) for i in range(4)]
    for top, plane, low in ((3, 2, 0), (0, 1, 3)):
        if nul[top] >= 0.9 and nul[plane] >= 0.5 and nul[low] <= 0.1:
            return "UTF-32"
    even, odd = (nul[0] + nul[2]) / 2, (nul[1] + nul[3]) / 2
    return "UTF-16" if max(even, odd) >= 0.5 and min(even, odd) <= 0.1 else None


def _legacy_8bit(data: bytes) -> bool:
    """Is ``data`` (not valid UTF-8) text in an 8-bit encoding such as Windows-1252: it decodes as
    that, and holds no valid UTF-8 sequence beyond ASCII? A file that has some is UTF-8 with a bad
    byte, whose position is the thing to fix."""
    try:
        data.decode("cp1252")
    except UnicodeDecodeError:
        return False
    text = data.decode("utf-8", "surrogateescape")
    return not any("\x7f" < ch and not "\udc80" <= ch <= "\udcff" for ch in text)


def _line_end(text: str) -> str:
    """The line end most lines of ``text`` have: "\r\n" when CRLF lines outnumber LF ones (a
    file saved on Windows, or with git's autocrlf), else "\n". A file of mixed line ends is
    written back in its majority style; a tie goes to "\n", what this tool writes."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf * 2 > text.count("\n") else "\n"


def random_suffix() -> str:
    """Four hex digits: one clone in 65,536 draws the same for the same number."""
    return os.urandom(2).hex()


def next_number(max_number: int, link_max: dict[str, int], kind: Kind) -> int:
    """The numeric part of the next id of ``kind``, from a file's ``max_number`` and ``link_max``."""
    linked = link_max.get(kind.prefix, 0)
    if linked < _MAX_ID_NUMBER:  # a link to dec-999999999 must not push ids past the 9-digit format
        max_number = max(max_number, linked)
    return max_number + 1


def _not_usable(state: FileState, entry_id: str) -> NotFound | None:
    """The error for an id that only a skipped (malformed) item carries: says why, not just "no entry"."""
    problems = state.problems_of(entry_id)
    if not problems:
        return None
    return NotFound(f"{entry_id.strip()} is in .context/{state.path.name} but cannot be used: {'; '.join(problems)}. "
                    "Fix the item by hand; `context-keeper doctor` says how")


def spelled_otherwise(entries: Mapping[str, Any], entry_id: str) -> str:
    """" (did you mean dec-013-a7f3?)" when ids of the same kind and number exist spelled
    otherwise (a suffix from a teammate's clone, no zero padding): the usual wrong guess."""
    return IdLookup(entries).spelled_otherwise(entry_id)


def as_stored(entries: Mapping[str, Any], entry_id: str) -> str:
    """``entry_id`` as the store spells it when they differ only in case ("DEC-1000" for
    dec-1000, as the read tools take it), else stripped. Not the number's padding: dec-5 and
    dec-005 can be two entries, so a write is told the stored spelling instead of guessing."""
    return IdLookup(entries).as_stored(entry_id)


class IdLookup:
    """The ids of ``entries`` (and of the items ``raw``) by their spellings, for ``as_stored``,
    ``spelled_otherwise`` and ``carried``, each table made on its first use. ``FileState.ids``
    keeps one per file state: each id of a question that no entry has was compared with every id
    of the store several times."""

    __slots__ = ("_carried", "_entries", "_folded", "_numbered", "_raw")

    def __init__(self, entries: Mapping[str, Any], raw: tuple[Any, ...] = ()) -> None:
        self._entries, self._raw = entries, raw
        self._folded: dict[str, str] | None = None
        self._numbered: dict[tuple[str, int], list[str]] | None = None
        self._carried: dict[str, str] | None = None

    def as_stored(self, entry_id: str) -> str:
        wanted = entry_id.strip()
        if wanted in self._entries:
            return wanted
        if self._folded is None:
            self._folded = {}
            for stored in self._entries:
                self._folded.setdefault(stored.lower(), stored)
        return self._folded.get(wanted.lower(), wanted)

    def spelled_otherwise(self, entry_id: str) -> str:
        parsed = model.id_key(entry_id)  # "DEC-1000" is asked as often as "dec-1"
        if parsed is None:
            return ""
        if self._numbered is None:
            self._numbered = {}
            for stored in self._entries:
                key = model.id_key(stored)
                if key is not None:
                    self._numbered.setdefault(key[:2], []).append(stored)
        close = self._numbered.get(parsed[:2], [])[:3]
        return f" (did you mean {' or '.join(close)}?)" if close else ""

    def carried(self, entry_id: str) -> str | None:
        """How the first item of ``raw`` that carries ``entry_id``, in any case, writes it."""
        if self._carried is None:
            self._carried = {}
            for written, _ in _carried(self._raw):
                self._carried.setdefault(written.lower(), written)
        return self._carried.get(entry_id.strip().lower())


def _carried(raw: tuple[Any, ...]) -> Iterator[tuple[str, Any]]:
    """(id, item) for every item of a file (``FileState.raw``) that carries an id, malformed items included."""
    for item in raw:
        if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"].strip():
            yield item["id"].strip(), item


def ids_gone(copy: FileState, state: FileState) -> tuple[str, ...]:
    """The ids items of ``copy`` (a last good copy) carry and no item of ``state`` does, in
    ``copy``'s order. An entry ``state`` holds under another id (its ``created_at`` is there: an
    id corrected by hand) is not gone."""
    have = {entry_id for entry_id, _ in _carried(state.raw)}
    born = {item["created_at"] for _, item in _carried(state.raw) if isinstance(item.get("created_at"), str)}
    return tuple(dict.fromkeys(entry_id for entry_id, item in _carried(copy.raw) if entry_id not in have
                               and not (isinstance(item.get("created_at"), str) and item["created_at"] in born)))


def parse_bytes(kind: Kind, path: Path, data: bytes) -> FileState:
    """Parse store-file content that is not (or not yet) the live file, e.g. a backup."""
    return _parse_file(kind, path, None, data)


class FileTxn:
    """Pending changes to one store file inside a transaction."""

    def __init__(self, state: FileState, id_suffix: bool = False, misfiled: Callable[[], int] | None = None,
                 dropped: Callable[[], tuple[str, ...]] | None = None, kept_aside: Callable[[], int] | None = None,
                 ) -> None:
        if state.error is not None:
            raise state.error.for_write()
        self.kind = state.kind
        self._id_suffix = id_suffix
        # misfiled_number, asked only when an id is allocated: an update reads no other file
        self._misfiled = misfiled
        # Store.dropped and Store.kept_aside_number, asked only when an id is allocated or the
        # file written: each reads the last good copies
        self._dropped_by, self._kept_aside = dropped, kept_aside
        self._dropped: tuple[str, ...] | None = None
        self._path = state.path
        self._builder = _Builder(state.kind, state.path, state)
        self._dirty = False
        self._base = state
        self._only_appended = True  # lets render() extend the bytes last written instead of joining
        self._newline = "\n"  # the file's line end (_line_end), once _materialize_chunks has read it

    @property
    def entries(self) -> tuple[dict, ...]:
        return tuple(self._builder.entries.values())

    def get(self, entry_id: str) -> dict | None:
        return self._builder.entries.get(entry_id)

    def require(self, entry_id: str) -> dict:
        """The entry ``entry_id`` names, in any case; its ``id`` is the stored spelling."""
        entry = self.get(self.stored_id(entry_id))
        if entry is None:
            raise _not_usable(self._base, entry_id) or NotFound(
                f"no {self.kind.name} with id {entry_id!r} in {self._path.name}"
                f"{spelled_otherwise(self._builder.entries, entry_id)}; check the id "
                "(query_entries or get_context finds the right one)")
        return entry

    def stored_id(self, entry_id: str) -> str:
        """``as_stored`` over this file's entries, the pending ones included."""
        return as_stored(self._builder.entries, entry_id)

    def repeats_keys(self, item: Any) -> bool:
        """Whether ``item`` (from ``items()``) has a key written twice: only its source text is whole."""
        held = self._builder.repeated.get(id(item))
        return held is not None and held[0] is item

    def raw_item(self, entry_id: str) -> dict:
        """A copy of the stored item, to change and hand back through ``put``. Its id is the one
        the entry is known by: a hand-written id with stray spaces ("  dec-050 ") is read
        stripped, ``put`` refuses an item whose id differs, so the rewrite stores it stripped."""
        raw = dict(self._builder.raw[self._builder.positions[entry_id]])
        raw["id"] = entry_id
        return raw

    def dropped(self) -> tuple[str, ...]:
        """``Store.dropped`` for the file this transaction started from, asked once."""
        if self._dropped is None:
            self._dropped = self._dropped_by() if self._dropped_by is not None else ()
        return self._dropped

    def next_id(self) -> str:
        """Max numeric part among all ids of the kind (malformed items included) + 1, and above
        every id of the kind that a history link of the file still names.

        Those links count because a successor deleted by hand leaves them behind: reusing its
        id would make the old entry's ``superseded_by`` point at an unrelated entry. So do the
        ids of this kind on items in another kind's file (``misfiled_number``), and the ids its
        last good copy holds that the file lacks (``Store.dropped``) or a copy kept aside holds
        (``Store.kept_aside_number``): that copy may be the one way back to the entry, and links
        may still name it.

        With ``"id_suffix": true`` in config.json the id also carries four random hex digits
        (``dec-013-a7f3``): clones that record in parallel then allocate the same number but
        not the same id, so a merge keeps both entries apart.
        """
        number = self.next_number()
        if number > _MAX_ID_NUMBER:
            # dec-1000000000 is no id: the entry would be written, acknowledged, and skipped by
            # every tool from then on. Such a number is a typo in a hand edit; say where it is.
            holder = next((i["id"] for i in self._builder.raw if _id_number(self.kind, i) == self._builder.max_number),
                          f"{self.kind.prefix}-{self._builder.max_number}")
            raise StoreError(
                f"{holder} in {self._path.name} has the highest number an id can have (9 digits), so there is no "
                f"next {self.kind.name} id; nothing was recorded. Give that entry a lower free number by hand "
                "(and fix any link that names it), then try again"
            )
        entry_id = model.format_id(self.kind, number)
        return f"{entry_id}-{random_suffix()}" if self._id_suffix else entry_id

    def next_number(self) -> int:
        """The numeric part of ``next_id`` (doctor suggests the ids ``--fix`` will give from it)."""
        misfiled = self._misfiled() if self._misfiled is not None else 0
        misfiled = misfiled if misfiled < _MAX_ID_NUMBER else 0  # as for links (next_number)
        held = max((_own_number(self.kind, model.id_key(i)) for i in self.dropped()), default=0)
        held = max(held, self._kept_aside() if self._kept_aside is not None else 0)
        return next_number(max(self._builder.max_number, misfiled, held), self._builder.link_max, self.kind)

    def append(self, item: dict) -> None:
        self._builder.append(item)
        self._dirty = True

    def put(self, entry_id: str, item: dict) -> None:
        """Replace the stored item of ``entry_id`` (which must exist)."""
        self._builder.put(entry_id, item)
        self._dirty = True
        self._only_appended = False

    def _materialize_chunks(self) -> None:
        """Give every unchanged item its source text, so a write changes only the items it
        touched: a teammate's hand formatting that came in with a pull is not reflowed (a diff
        and a merge conflict in entries nobody changed), and an item with a problem is kept
        byte for byte for the person fixing it."""
        base = self._base
        source = base.source
        if source is None and base.data is not None:
            # A record that only appended kept the file's bytes, not its text: they are the file
            # as written (and confirmed under the lock), so they split the same way.
            source = b"".join(base.data).decode("utf-8")
        if source is None:
            return
        split = _split_array(source)
        if split is None or len(split[1]) != len(base.raw):
            return
        builder = self._builder
        crlf = "\r" in source
        if crlf:
            self._newline = _line_end(source)
        for index, chunk in enumerate(split[1]):
            if index >= len(builder.raw) or builder.chunks[index] is not None:
                continue
            if builder.raw[index] is base.raw[index]:
                if crlf:
                    # Laid out with "\n" like the items written around it, and all of them then
                    # given the file's line end in render(): one style per file (an item with a
                    # problem too: its bytes are kept, not its line ends). A raw CR can only be
                    # whitespace between tokens (JSON strings escape it).
                    chunk = chunk.replace("\r\n", "\n")
                builder.chunks[index] = chunk

    def items(self) -> list[tuple[Any, str | None]]:
        """Every stored item with its kept source text (None: rendered canonically), in order."""
        self._materialize_chunks()
        return list(zip(self._builder.raw, self._builder.chunks))

    def replace_items(self, items: list[tuple[Any, str | None]]) -> None:
        """Rewrite the whole item list (for repairs such as dropping an exact duplicate)."""
        builder = _Builder(self.kind, self._path)
        builder.scrub = self._builder.scrub
        builder.repeated = self._builder.repeated
        for item, chunk in items:
            builder.append(item, chunk)
        self._builder = builder
        self._dirty = True
        self._only_appended = False

    @property
    def dirty(self) -> bool:
        return self._dirty

    def render(self) -> tuple[bytes, ...]:
        """The file's new bytes, in parts whose join is ``json.dumps(items, indent=2)`` plus a
        newline; the last part is always the closing ``\\n]\\n`` (or the whole ``[]\\n``). A
        file whose lines mostly end in CRLF keeps that: every line of it then ends in ``\\r\\n``."""
        base = self._base
        first_new = len(base.raw)
        chunks = self._builder.chunks
        appending = self._only_appended and base.data and first_new and base.data[-1] == _CLOSE
        if not appending:
            self._materialize_chunks()
        head = base.data[0][:64] if base.data else base.source[:64].encode("utf-8") if base.source else None
        indent = _file_indent(head)
        for index in range(first_new if appending else 0, len(chunks)):
            if chunks[index] is None:
                chunks[index] = _chunk(self._builder.raw[index], indent)
        if appending:
            # A record only appends: reuse the parts already on disk instead of re-joining and
            # re-encoding the whole file (the hot path on large stores).
            tail = (",\n" + ",\n".join(chunks[first_new:])).encode("utf-8")
            body = base.data[:-1] if len(base.data) < _MAX_PARTS else (b"".join(base.data[:-1]),)
            return (*body, tail, _CLOSE)
        newline = self._newline
        if not chunks:
            return (f"[]{newline}".encode("ascii"),)
        body = "[\n" + ",\n".join(chunks)
        if newline != "\n":
            return (body.replace("\n", newline).encode("utf-8"), f"{newline}]{newline}".encode("ascii"))
        return (body.encode("utf-8"), _CLOSE)

    def committed_state(self, stamp: Stamp, digest: bytes | None = None, data: tuple[bytes, ...] | None = None) -> FileState:
        return self._builder.state(stamp, digest, data)


def readable_entries(store: Store, state: FileState) -> tuple[list | tuple, bool]:
    """The entries of a file state, or, when the file is broken by a hand edit, those of its last
    good copy (``.last-good/``): ``(entries, from_last_good)``. What the summaries show, so one
    typo does not read as "0 constraints"."""
    readable, from_last_good = readable_state(store, state)
    return (list(readable.entries), True) if from_last_good else (state.entries, False)


def readable_stamp(store: Store, state: FileState) -> Any:
    """The stamp of what ``readable_entries`` reads for ``state``: the file's, joined for a
    broken or missing one by its last good copy's. A cache keyed on the file's stamp alone kept
    serving a copy's entries after the copy was deleted (a missing file stamps None before and
    after). Take it before reading, so a copy changed meanwhile reads as a change next time."""
    if state.error is None:
        return state.stamp
    copy = _last_good_copy(store.dir, state.kind.filename)
    return state.stamp, (_stamp(copy) if copy is not None else None)


def readable_state(store: Store, state: FileState) -> tuple[FileState, bool]:
    """``readable_entries`` as a whole file state: ``state`` itself, or the parsed last good copy
    (stamped with the copy's own stamp) and True. For callers that need the items as stored too
    (the prompt hook keys what it shows by them, as the edit guard does)."""
    if state.error is None:
        return state, False
    path = _last_good_copy(store.dir, state.kind.filename)
    if path is None:
        return state, False
    stamp = _stamp(path)
    # A broken file can stay broken for a whole session (an unresolved merge), and one answer asks
    # for its copy several times (index, scope rules, notes): parsed once per copy on disk.
    cached = store._last_good.get(state.kind.name)
    if cached is not None and stamp is not None and cached[0] == stamp:
        backup = cached[1]
    else:
        try:
            backup = parse_bytes(state.kind, path, read_regular(path, STORE_FILE_LIMIT)).replace(stamp=stamp)
        except OSError:
            return state, False
        if stamp is not None:
            store._last_good[state.kind.name] = (stamp, backup)
    return (backup, True) if backup.error is None else (state, False)


def odd_statuses(store: Store, entries: list) -> dict[str, str]:
    """id -> a warning, for each of ``entries`` whose stored status is outside the list (a
    hand-typed "retired"): how it is read and what to write. The entry itself shows the status
    it is read as, so without this the person's word would vanish from the answer unexplained."""
    return {entry_id: f".context/{state.path.name}: {model.odd_status(raw)}"
            for entry_id, state, raw in _odd_status_items(store, entries)}


ODD_STATUS_IDS_NAMED = 3


def odd_status_notes(store: Store, entries: list) -> list[str]:
    """``odd_statuses``' warnings, one per file and status word: a store whose every decision
    says "accepted" gave an answer one warning per entry, each as long as an entry. The note
    names the first ``ODD_STATUS_IDS_NAMED`` of them, in the order given, and counts the rest."""
    groups: dict[tuple[str, str, str], tuple[Any, list[str]]] = {}
    for entry_id, state, raw in _odd_status_items(store, entries):
        written, read_as = model.odd_status_word(raw)  # type: ignore[misc]
        key = (state.path.name, model.shown(written), read_as)
        groups.setdefault(key, (written, []))[1].append(entry_id)
    notes = []
    for (name, _, read_as), (written, ids) in groups.items():
        named = ", ".join(ids[:ODD_STATUS_IDS_NAMED])
        if len(ids) > ODD_STATUS_IDS_NAMED:
            named += f" and {len(ids) - ODD_STATUS_IDS_NAMED} more"
        notes.append(f".context/{name}: {model.status_problem(named, written, read_as)}")
    return notes


def _odd_status_items(store: Store, entries: list) -> Iterator[tuple[str, FileState, Any]]:
    """(id, its file's state, its stored item) for each of ``entries`` (once each) whose stored
    status is outside the list."""
    if not entries or not any(store.state(kind).item_problems for kind in model.KINDS.values()):
        return  # an odd status is one of an item's problems; most stores have none
    states: dict[str, FileState] = {}  # one read of each file, however many entries
    done: set[str] = set()
    for entry in entries:
        entry_id = entry.get("id") if isinstance(entry, dict) else None
        parsed = model.id_key(entry_id)
        if parsed is None or parsed[0] not in model.BY_PREFIX or entry_id in done:
            continue
        done.add(entry_id)
        state = states.get(parsed[0])
        if state is None:
            state = states[parsed[0]] = store.state(model.BY_PREFIX[parsed[0]])
        index = state.positions.get(entry_id)
        # An odd status is one of the item's problems: most files have none, and every answer asks.
        if index is not None and index in state.item_problems and model.odd_status_word(state.raw[index]) is not None:
            yield entry_id, state, state.raw[index]


def write_gitignore(context_dir: Path) -> None:
    """The .context/.gitignore for local bookkeeping, unless the person already has one (or a
    link by that name). Atomic: a write the disk refuses leaves no file, where an empty one would
    have stayed empty, as no writer fills in a .gitignore that exists."""
    ignore = context_dir / ".gitignore"
    if not os.path.lexists(ignore):
        atomic_write_text(ignore, GITIGNORE)


class Store:
    """One project's ``.context/`` directory. Thread-safe; share one instance per project."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.dir = self.root / CONTEXT_DIR
        self._files: dict[str, FileState] = {}
        self._own_token: str | None = None
        self._config: tuple[Stamp | None, dict, list[str]] | None = None
        self._last_good: dict[str, tuple[Stamp, FileState]] = {}  # kind -> parsed .last-good copy (readable_entries)
        self._aside_numbers: dict[Path, tuple[Stamp | None, int]] = {}  # copy kept aside -> its highest id number
        self._records: dict[str, Record] | None = None  # reading_cache's, read at the first parse
        self._mutex = threading.RLock()
        # Writers of this instance take turns on their own lock: waiting for another process's
        # store lock under ``_mutex`` stalled every read of every thread for as long.
        self._writer = threading.RLock()
        self._lock: Any = None  # a filelock.FileLock, made on the first write (keeps read-only start-up light)
        self.generation = 0  # bumps on every change seen, for derived caches
        self._pins = threading.local()  # pinned(): per thread, what the block has read (or None)
        # Every read stats these: joined once (a Path also keeps its string, which stat uses).
        self._paths = {kind.name: self.dir / kind.filename for kind in KINDS.values()}
        self._config_path = self.dir / "config.json"

    def path(self, kind: Kind) -> Path:
        return self._paths[kind.name]

    # ------------------------------------------------------------ reads

    @contextmanager
    def pinned(self) -> Iterator[None]:
        """Within the block, this thread reads each store file and config.json once: later
        ``state`` and ``config`` calls return what the first one found. For one answer made from
        several reads, which should see the store as it was when the answer began (get_context
        read each file three times, and every read costs a stat). A write inside the block is
        not seen by the block's later reads, so a block that writes must not read back what it
        wrote (get_context writes no store file). A nested block keeps the outer one's reads."""
        if getattr(self._pins, "read", None) is not None:
            yield
            return
        self._pins.read = {}
        try:
            yield
        finally:
            self._pins.read = None

    def state(self, kind: Kind) -> FileState:
        """The file as it is now on disk (re-parsed only when its stamp changed), or as it was
        at its first read inside ``pinned``."""
        pins = getattr(self._pins, "read", None)
        if pins is None:
            return self._state(kind)
        state = pins.get(kind.name)
        if state is None:
            state = pins[kind.name] = self._state(kind)
        return state

    def _state(self, kind: Kind) -> FileState:
        path = self.path(kind)
        stamp = _file_stamp(path)
        with self._mutex:
            cached = self._files.get(kind.name)
            if cached is not None and cached.stamp == stamp and stamp is not None:
                return cached
            if stamp is None:
                # No file: asked again each time, as its last good copy can come or go.
                state = _absent_state(kind, path, None)
                if cached is not None and cached.stamp is None and str(cached.error) == str(state.error):
                    return cached
            else:
                state = _parse_file(kind, path, stamp, None, self._backup_digest(kind), self._record(kind, stamp))
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
        # In any case, as FileTxn.require: "dec-010-a7f3" names a hand-written dec-010-A7F3.
        entry = state.entries_by_id.get(state.ids.as_stored(entry_id))
        if entry is None:
            raise _not_usable(state, entry_id) or self._misfiled(kind, entry_id) or NotFound(
                f"no entry with id {model.shown(entry_id)}{state.ids.spelled_otherwise(entry_id)}; "
                "use query_entries or get_context to find the right id"
            )
        return kind, entry

    def _misfiled(self, kind: Kind, entry_id: str) -> NotFound | None:
        """The error for an id that an item in another kind's file carries: where it is and
        where it belongs, instead of "no entry" (it is read only from its own kind's file)."""
        key = entry_id.strip()
        for other in KINDS.values():
            if other is kind:
                continue
            # In any case, as reads take ids and as misfiled_number counts them ("DEC-002").
            written = self.state(other).ids.carried(key)
            if written is not None:
                spelled = "" if written == key else f" (written {json.dumps(written, ensure_ascii=False)})"
                return NotFound(
                    f"{key} is in .context/{other.filename}{spelled}, but a {kind.name} id is read only from "
                    f".context/{kind.filename}, so no tool sees it: move that item into {kind.filename}'s array "
                    f"(cut it from {other.filename}, paste it into {kind.filename}), then try again")
        return None

    def config(self) -> tuple[dict, list[str]]:
        pins = getattr(self._pins, "read", None)
        if pins is None:
            return self._read_config()
        if "config.json" not in pins:  # not a kind's name
            pins["config.json"] = self._read_config()
        return pins["config.json"]

    def _read_config(self) -> tuple[dict, list[str]]:
        path = self._config_path
        stamp = _stamp(path)
        with self._mutex:
            if self._config is None or self._config[0] != stamp:
                config, warnings = read_config_file(path)
                self._config = (stamp, config, warnings)
            return self._config[1], self._config[2]

    # ------------------------------------------------------------ writes

    @contextmanager
    def locked(self, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
        """Hold the cross-process store lock (and this instance's thread lock), waiting at most
        ``timeout`` seconds for another process to let it go."""
        from filelock import FileLock, Timeout

        with self._writer:
            try:
                if not self.dir.is_dir():
                    # Created by a first write (no `init`): its bookkeeping stays out of git all the same.
                    self.dir.mkdir(parents=True, exist_ok=True)
                    try:
                        write_gitignore(self.dir)
                    except OSError:
                        # Nothing is left for the next write to take for a store made by hand
                        # (whose patterns would go to .git/info/exclude instead).
                        with contextlib.suppress(OSError):
                            self.dir.rmdir()
                        raise
                else:  # before the lock file and the last good copies, in a .context/ made by hand
                    self.keep_bookkeeping_out_of_git()
                if self._lock is None:
                    self._lock = FileLock(str(self.dir / ".lock"), timeout=LOCK_TIMEOUT_S)
                self._lock.acquire(timeout=timeout)
            except Timeout as exc:  # before OSError: Timeout is a TimeoutError
                raise StoreError(
                    f"the store lock {self.dir / '.lock'} is held by another process for over "
                    f"{timeout:.0f}s; try again, or check for a stuck context-keeper process"
                ) from exc
            except OSError as exc:  # a read-only or full disk refuses the lock file
                raise _nothing_saved(Path(exc.filename) if exc.filename else self.dir / ".lock", exc) from exc
            try:
                with self._mutex:
                    yield
            finally:
                self._lock.release()

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Hold the store lock; changes made through ``txn.file(kind)`` are written on success."""
        with self.locked():
            txn = Transaction(self)
            yield txn
            txn.commit()

    def file_txn(self, kind: Kind, state: FileState, id_suffix: bool = False) -> FileTxn:
        """Changes to ``state``'s file, allocating ids past every one of its kind this store
        still holds anywhere. Written only through a transaction, which passes the locked state."""
        return FileTxn(state, id_suffix=id_suffix, misfiled=lambda: misfiled_number(self, kind),
                       dropped=lambda: self.dropped(kind, state), kept_aside=lambda: self.kept_aside_number(kind))

    def _locked_state(self, kind: Kind) -> FileState:
        """The file as it is on disk, confirmed by content (call with the lock held).

        The cheap stamp check could be fooled by a same-size rewrite within one timestamp tick
        on a recycled inode; under the lock the bytes are compared, so a write never works on a
        stale copy (which would drop another process's entry).
        """
        path = self.path(kind)
        stamp = _file_stamp(path)
        cached = self._files.get(kind.name)
        if cached is not None and cached.stamp == stamp and stamp is not None and self._no_commits_since_ours():
            return cached  # nobody committed since our own last write: no need to read it back
        data = _store_bytes(kind, path, stamp)
        if isinstance(data, FileState):
            state = data
        elif cached is not None and cached.digest is not None and cached.digest == _digest(data):
            if cached.stamp == stamp:
                return cached
            state = cached.replace(stamp=stamp)
        else:
            state = _parse_file(kind, path, stamp, data, self._backup_digest(kind), self._record(kind, stamp))
        self._files[kind.name] = state
        self.generation += 1
        return state

    def _record(self, kind: Kind, stamp: Stamp) -> Record | None:
        """The reading cache's record of ``kind``'s file as it has ``stamp`` (call with ``_mutex`` held)."""
        from context_keeper import reading_cache

        if self._records is None:
            self._records = reading_cache.restore(self.read_sidecar(reading_cache.FILE, follow_links=False),
                                                  self._config_stamp())
        record = self._records.get(kind.filename)
        return record if record is not None and record.stamp == stamp else None

    def _config_stamp(self) -> Stamp | None:
        """What the reading cache's records hold for ``config.json`` (a change to it drops them)."""
        return _stamp(self._config_path)

    def save_reading_cache(self) -> None:
        """Leave what reading the store files found for the next process (``reading_cache``), when
        it is not there already and the store is large enough for it to pay. Derived: a
        ``.context/`` that cannot be written keeps none."""
        from context_keeper import reading_cache

        with self._mutex:
            states = [self._files.get(kind.name) for kind in KINDS.values()]
            known = self._records or {}
        records = {s.path.name: Record(s.stamp, s.digest, len(s.raw), s.not_plain, s.max_number, s.link_max,
                                       s.misfiled_max)
                   for s in states if s is not None and s.not_plain is not None and s.stamp is not None
                   and s.digest is not None and s.error is None}
        if sum(record.items for record in records.values()) < reading_cache.MIN_ENTRIES:
            return
        if records.keys() == known.keys() and all(known[n].saved() == r.saved() for n, r in records.items()):
            return
        try:
            self.write_sidecar(reading_cache.FILE, reading_cache.dump(records, self._config_stamp()), compact=True,
                               fsync=False)
        except (OSError, StoreError):
            return
        with self._mutex:
            self._records = records

    def _no_commits_since_ours(self) -> bool:
        """True when the commit token is still the one our last commit wrote (lock held).

        Every commit, by any process, writes a fresh random token; so an unchanged token plus an
        unchanged stamp means the cached state is what is on disk, without hashing the file.
        """
        if self._own_token is None:
            return False
        try:
            return (self.dir / COMMIT_TOKEN).read_text(encoding="ascii") == self._own_token
        except (OSError, UnicodeDecodeError):
            return False

    def _commit_file(self, ftxn: FileTxn, warnings: list[str]) -> Stamp:
        """Write ``ftxn``'s file; returns the stamp of the file as written. What the answer should
        say about it (its last good copy not kept) is added to ``warnings``."""
        data = ftxn.render()
        path = self.path(ftxn.kind)
        self._own_token = None  # until the new token is down, trust nothing cached
        st = atomic_write_bytes(path, data, follow_symlinks=True)  # a linked store file stays linked
        stamp = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        self._files[ftxn.kind.name] = ftxn.committed_state(stamp, _digest(data), data)
        self.generation += 1
        token = os.urandom(16).hex()
        try:
            # Not fsynced: after a crash a stale token only costs one full content check.
            atomic_write_bytes(self.dir / COMMIT_TOKEN, token.encode("ascii"), fsync=False)
            self._own_token = token
        except OSError as exc:
            _warn("could not write %s: %s", self.dir / COMMIT_TOKEN, exc)
        self._keep_last_good(ftxn.kind, data, warnings, ftxn.dropped())
        return stamp

    def _keep_last_good(self, kind: Kind, data: bytes, warnings: list[str], dropped: tuple[str, ...] = ()) -> None:
        """Copy what was just written to ``.last-good/``: a hand edit that breaks the file can be
        undone without losing this write. A separate file (not a hard link), so an editor that
        rewrites the live file in place cannot damage it. Not fsynced: the live file is the
        durable copy; this one guards against bad edits, not power loss. The write itself is
        done, so a copy that cannot be kept never fails it: a refused directory adds to
        ``warnings`` (the answer's), other failures are logged.

        When the file written over lacked ids the copy holds (``dropped``: an editor's stale copy
        saved over the file, an entry deleted by hand), the copy is not replaced but renamed
        aside (``<name>.before-<UTC time>``, beside it), and the answer says so: it may be the
        one place left that holds those entries."""
        refused = last_good_refusal(self.dir, f"the last good copy of {kind.filename} was not kept (the write "
                                              "itself is saved)")
        if refused is not None:
            _warn("%s", refused)
            warnings.append(refused)
            return
        if dropped and not self._keep_aside(kind, dropped, warnings):
            return
        try:
            atomic_write_bytes(self.backup_path(kind), data, fsync=False)
        except OSError as exc:
            _warn("could not refresh %s: %s", self.backup_path(kind), exc)

    def _keep_aside(self, kind: Kind, dropped: tuple[str, ...], warnings: list[str]) -> bool:
        """Rename the last good copy of ``kind``'s file aside, saying so in ``warnings``; False
        when it could not be (then it stays, to be replaced by no write until it can)."""
        import time  # only on this rare path

        copy = self.backup_path(kind)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = copy.with_name(f"{copy.name}{KEPT_ASIDE}{stamp}")
        for n in range(2, 100):
            if not os.path.lexists(aside):
                break
            aside = copy.with_name(f"{copy.name}{KEPT_ASIDE}{stamp}-{n}")
        ids = ", ".join(dropped[:10]) + (f" and {len(dropped) - 10} more" if len(dropped) > 10 else "")
        try:
            os.replace(copy, aside)
        except OSError as exc:
            _warn("could not keep %s aside: %s", copy, exc)
            warnings.append(f"{kind.filename} lacked {ids}, which its last good copy holds (an entry deleted by "
                            f"hand, or an editor's stale copy saved over the file?); that copy could not be renamed "
                            f"aside ({exc.strerror or exc}), so it was left as it is, and not refreshed: copy them "
                            f"back from .context/{BACKUP_DIR}/{kind.filename} if they were not removed on purpose")
            return False
        warnings.append(f"{kind.filename} lacked {ids}, which its last good copy held (an entry deleted by hand, or "
                        f"an editor's stale copy saved over the file?): that copy is kept as .context/{BACKUP_DIR}/"
                        f"{aside.name}, and no new entry takes those ids. If they were not removed on purpose, copy "
                        f"them back into {kind.filename} from it; `context-keeper doctor` names them until it is "
                        "deleted")
        return True

    def dropped(self, kind: Kind, state: FileState) -> tuple[str, ...]:
        """The ids the last good copy of ``kind``'s file holds that ``state`` (the file as it is,
        parsed) lacks (``ids_gone``). None when the file is what this tool last wrote, or either
        of them does not parse (those have their own errors)."""
        if state.error is not None or state.data is not None:  # data: the bytes this tool last wrote
            return ()
        copy = self.last_good_copy(kind)
        try:
            data = read_regular(copy, STORE_FILE_LIMIT) if copy is not None else None
        except OSError:
            return ()
        if data is None or _digest(data) == state.digest:
            return ()
        backup = parse_bytes(kind, copy, data)
        return () if backup.error is not None else ids_gone(backup, state)

    def kept_aside(self, kind: Kind) -> list[Path]:
        """The last good copies of ``kind``'s file that writes kept aside (``_keep_aside``), oldest first."""
        directory = self.dir / BACKUP_DIR
        if leads_out(directory, self.root) is not None:
            return []
        prefix = f"{kind.filename}{KEPT_ASIDE}"
        try:
            names = os.listdir(directory)
        except OSError:  # none yet
            return []
        return sorted(directory / name for name in names if name.startswith(prefix))

    def kept_aside_number(self, kind: Kind) -> int:
        """The highest number of a ``kind`` id that a copy kept aside holds (0: none)."""
        highest = 0
        for path in self.kept_aside(kind):
            stamp = _stamp(path)
            cached = self._aside_numbers.get(path)
            if cached is None or cached[0] != stamp:
                try:
                    number = parse_bytes(kind, path, read_regular(path, STORE_FILE_LIMIT)).max_number
                except OSError:
                    number = 0
                cached = self._aside_numbers[path] = (stamp, number)
            highest = max(highest, cached[1])
        return highest

    def _backup_digest(self, kind: Kind) -> bytes | None:
        copy = self.last_good_copy(kind)
        try:
            return _digest(read_regular(copy, STORE_FILE_LIMIT)) if copy is not None else None
        except OSError:
            return None

    def last_good_copy(self, kind: Kind) -> Path | None:
        """``backup_path`` to read from, or None when ``.last-good/`` is a link out of the project."""
        return _last_good_copy(self.dir, kind.filename)

    def backup_path(self, kind: Kind) -> Path:
        """Where the last version of ``kind``'s file written by context-keeper is kept."""
        return self.dir / BACKUP_DIR / kind.filename

    def _sidecar_path(self, name: str) -> Path:
        parts = str(name).replace("\\", "/").split("/")
        if (
            not name
            or "\x00" in name
            or name.startswith("/")
            or any(part in ("", ".", "..") for part in parts)
            or ":" in parts[0]
        ):
            raise InvalidInput(f"{name!r} is not a file name inside .context/", field="name")
        return self.dir.joinpath(*parts)

    def keep_bookkeeping_out_of_git(self) -> None:
        """``gitignore.keep_bookkeeping_out_of_git`` for this store, said in the log when it acted."""
        if keep_bookkeeping_out_of_git(self.dir):
            import logging  # rare: once per store and clone

            logging.getLogger("context_keeper.store").info("%s: %s", self.dir, EXCLUDED)

    def write_sidecar(self, name: str, data: Any, *, compact: bool = False, fsync: bool = True) -> Path:
        """Write a derived JSON file (snapshot, report, state) atomically inside ``.context/``.

        ``name`` is relative to ``.context/`` (``"sessions/abc.json"`` is fine; ``..`` is not).
        Sidecars are whole-file replacements, so they need no store lock; two writers of the
        same sidecar leave one complete version (the last). ``compact``: no indentation, for
        large machine-only files (the embedding cache). ``fsync=False``: for a cache that is
        checked when read and rebuilt when missing, where a crash costs only a rebuild.
        """
        path = self._sidecar_path(name)
        refused = refusal(path.parent, self.root, f"{name} was not written")
        if refused is not None:
            raise StoreError(refused)
        text = json.dumps(data, separators=(",", ":")) if compact else json.dumps(data, indent=2, ensure_ascii=False)
        self.keep_bookkeeping_out_of_git()
        atomic_write_text(path, text + "\n", fsync=fsync)
        return path

    def read_sidecar(self, name: str, *, follow_links: bool = True) -> Any:
        """A sidecar's JSON, or None when it is missing or unreadable (or, unless
        ``follow_links``, a symbolic link)."""
        path = self._sidecar_path(name)
        if leads_out(path.parent, self.root) is not None:
            return None  # another project's (or anyone's) file, as write_sidecar refuses to write it
        try:
            return json.loads(read_regular(path, CACHE_LIMIT, follow_links=follow_links).decode("utf-8-sig"))
        except (OSError, ValueError, RecursionError):  # RecursionError: nested past the parser's depth
            return None


class Transaction:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._files: dict[str, FileTxn] = {}
        # kind name -> stamp of the file this transaction wrote. A derived cache brought up to
        # date with our write is current as of this stamp, not of whatever is on disk by the
        # time it looks: another process may have committed since we released the lock.
        self.committed: dict[str, Stamp] = {}
        # What the answer of the write should say beside its success (a last good copy not kept).
        self.warnings: list[str] = []

    def file(self, kind: Kind) -> FileTxn:
        if kind.name not in self._files:
            # Only a literal true turns suffixes on: doctor reports any other value of the key.
            suffix = self._store.config()[0].get("id_suffix") is True
            self._files[kind.name] = self._store.file_txn(kind, self._store._locked_state(kind), id_suffix=suffix)
        return self._files[kind.name]

    def commit(self) -> None:
        for ftxn in self._files.values():
            if ftxn.dirty:
                try:
                    self.committed[ftxn.kind.name] = self._store._commit_file(ftxn, self.warnings)
                except OSError as exc:
                    # Only when no file of ours was replaced is "nothing saved" certain; the
                    # file's stamp shows the failure came before the atomic replace.
                    if self.committed or _file_stamp(ftxn._path) != ftxn._base.stamp:
                        raise
                    raise _nothing_saved(ftxn._path, exc) from exc
