"""Crash-safe file writes: temp file in the same directory, fsync, atomic replace.

A reader (another process, an editor, ``git``) sees the old file or the new one, never a mix;
after ``atomic_write_*`` returns, the new content and the directory entry pointing at it have been
handed to the disk with ``fsync``. What the disk does with a flushed write is beyond our reach
(see docs/reliability.md).

Temp files are named ``.<name>.<random>.tmp``; one left behind means a writer died before the
rename, and its content was never acknowledged to anyone (``context-keeper doctor --fix`` removes
old ones).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path

TEMP_SUFFIX = ".tmp"
_TEMP_RANDOM_BYTES = 6
# On Windows a file another process has open (a hook or a second server reading it: Python's
# open() does not share delete access) cannot be replaced; the rename fails with "Access is
# denied" until that reader closes it, usually within milliseconds. About 1 s of retries in all.
RENAME_WAITS_FOR_READERS = os.name == "nt"
RENAME_RETRY_DELAYS_S = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.2, 0.25)
_sleep = time.sleep


class FileInUse(PermissionError):
    """The atomic rename onto a file was refused for the whole retry time (Windows): another
    program most likely has the file open."""


def _umask() -> int:
    try:  # Linux reports it without changing it
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    # Elsewhere it can only be read by setting it: once, at import, before any thread writes.
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


_UMASK = _umask() if os.name == "posix" else 0


def _create_temp(path: Path) -> tuple[int, str]:
    """A new private file beside ``path`` (like ``tempfile.mkstemp``, without importing
    ``tempfile``, which the hooks would pay for at every start)."""
    for _ in range(100):
        name = os.path.join(path.parent, f".{path.name}.{os.urandom(_TEMP_RANDOM_BYTES).hex()}{TEMP_SUFFIX}")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file beside {path}")


def temp_files_of(path: Path) -> list[Path]:
    """The temp files writers of ``path`` left beside it, sorted. Matched by their exact name
    (``.<name>.<12 hex digits>.tmp``): the directory may be the project's own, whose other files
    are someone's work."""
    prefix = f".{path.name}."
    try:
        names = os.listdir(path.parent)
    except OSError:  # no such directory, or not one: nothing was left there
        return []
    random_part = slice(len(prefix), -len(TEMP_SUFFIX))
    return sorted(
        path.parent / name for name in names
        if name.startswith(prefix) and name.endswith(TEMP_SUFFIX)
        and len(name[random_part]) == 2 * _TEMP_RANDOM_BYTES and all(c in "0123456789abcdef" for c in name[random_part])
    )


def atomic_write_bytes(
    path: Path, data: bytes | Sequence[bytes], *, fsync: bool = True, follow_symlinks: bool = False
) -> os.stat_result:
    """Replace ``path`` with ``data`` (bytes, or parts written in order) atomically. Returns the
    new file's stat (as it was before the rename, if another file has replaced it since).

    The file keeps the permission bits of the file it replaces (a new file gets the usual
    ``0o666 & ~umask``), not the private 0600 of a fresh temp file. ``fsync=False`` is for
    files whose loss on power failure is harmless (derived caches).

    A symbolic link is replaced by the new file, unless ``follow_symlinks``: then the file it
    leads to is replaced (its temp file beside it, so the rename stays on one file system) and
    the link stays a link, for a store file or a config kept in a shared or dotfiles checkout.
    Only those callers opt in: a link in place of a derived file (a cache, a last-good copy, a
    sidecar; a cloned repository can commit one) must not redirect the write to wherever it
    leads.
    """
    path = Path(path)
    if follow_symlinks and path.is_symlink():
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, (bytes, bytearray, memoryview)):
                handle.write(data)
            else:
                handle.writelines(data)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
            written = os.fstat(handle.fileno())
        if os.name == "posix":
            try:
                mode = path.stat().st_mode & 0o7777
            except FileNotFoundError:
                mode = 0o666 & ~_UMASK
            os.chmod(tmp_name, mode)
        _replace(tmp_name, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)  # a failed write or fsync names no file; the reader needs one
        raise
    if fsync:
        fsync_dir(path.parent)
    # The stat of what is at ``path`` now is ours only if it is our file: a hand edit or another
    # writer may have renamed theirs over it since, and a caller taking their stat for its own
    # would trust its cached content over theirs. Then the stat of our (replaced) file says so.
    now = path.stat()
    same = (now.st_ino, now.st_dev, now.st_size, now.st_mtime_ns) == (
        written.st_ino, written.st_dev, written.st_size, written.st_mtime_ns)
    return now if same else written


def _replace(tmp_name: str, path: Path) -> None:
    """``os.replace``, retried while Windows refuses it for a reader's open handle."""
    if not RENAME_WAITS_FOR_READERS:
        os.replace(tmp_name, path)
        return
    for delay in (*RENAME_RETRY_DELAYS_S, None):
        try:
            os.replace(tmp_name, path)
            return
        except PermissionError as exc:
            if delay is None:
                raise FileInUse(exc.errno, exc.strerror, str(path)) from exc
            _sleep(delay)


def atomic_write_text(path: Path, text: str, *, fsync: bool = True, follow_symlinks: bool = False) -> os.stat_result:
    """``atomic_write_bytes`` of ``text`` encoded as UTF-8 (always UTF-8, whatever the locale)."""
    return atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync, follow_symlinks=follow_symlinks)


def fsync_dir(directory: Path) -> None:
    """Make a rename inside ``directory`` durable (POSIX; a no-op elsewhere)."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
