"""Reading a file under ``.context/`` that a cloned repository may have put there.

Every hook runs at session start, on every prompt and on every edit, under a client timeout of
20-30 s, so a file must not be able to hang a reader or exhaust its memory. ``read_regular``
reads only a regular file (a symbolic link is followed, a store file kept in a dotfiles
checkout is one, unless the caller refuses links: no hook ever makes a session file one), only
up to a cap, and never blocks on opening: a FIFO would wait forever for a writer, ``/dev/zero``
never ends. The refusals are ``OSError``s, so a reader that already
treats an unreadable file as missing (a cache: rebuilt) needs nothing more; the store turns them
into a store-health message.

Light on purpose (``os`` only): the hooks import it on their cold path.
"""

from __future__ import annotations

import errno
import os
import stat

MIB = 1 << 20
# The 50,000-entry benchmark store (benchmarks/bench_scale.py) has a 43 MB decisions.json:
# 128 MiB leaves room for three times that, and stays well inside what a hook reads in time.
STORE_FILE_LIMIT = 128 * MIB
# A config is a few hundred bytes of settings.
CONFIG_LIMIT = 1 * MIB
# A session's .seen file holds a ~20-byte line per entry shown (hooks/state.py): every entry of
# the 50,000-entry store, shown once, is about 1 MB. Above the cap the session reads as having
# seen nothing and the file is deleted, which costs entries shown once more, never data.
SESSION_LIMIT = 16 * MIB
# A client's config file (.claude/settings.json, .mcp.json, config.toml) holds a few kB of
# settings that install and doctor read.
CLIENT_CONFIG_LIMIT = 16 * MIB
# Caches derived from the store files (search_state.json is 65 MB at 50,000 entries). Above the
# cap one is treated as stale and rebuilt: that costs time, never data.
CACHE_LIMIT = 512 * MIB

# Where the platform has none (Windows), a link is checked for before opening instead.
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class NotRegularFile(OSError):
    """Something other than a file where a file is read: ``what`` says which ("a FIFO")."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(errno.EINVAL, f"is not a regular file ({what})", path)
        self.what = what


class FileTooLarge(OSError):
    """A file above the cap this tool reads for it."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"is {shown_size(size)}, above the {shown_size(limit)} this tool reads", path)
        self.size, self.limit = size, limit


def shown_size(size: int) -> str:
    """``2.1 GB``, ``43 MB``, ``128 MiB`` (a cap, a power of two, is shown in its own unit)."""
    if size >= MIB and size % MIB == 0:
        return f"{size // MIB} MiB"
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= scale:
            value = size / scale
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{size} byte" if size == 1 else f"{size} bytes"


def special_kind(mode: int) -> str:
    """What a file that is neither a regular file nor a directory is: "a FIFO"."""
    return next((what for test, what in _KINDS if test(mode)), "a special file")


def read_regular(path: str | os.PathLike, limit: int, *, follow_links: bool = True) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them. Raises
    ``FileNotFoundError`` and friends as ``open`` does, ``IsADirectoryError`` for a directory,
    ``NotRegularFile`` for a FIFO, a device or a socket, and for a symbolic link unless
    ``follow_links``; ``FileTooLarge`` above ``limit``."""
    name = os.fspath(path)
    if not follow_links and not NOFOLLOW and os.path.islink(name):
        raise NotRegularFile(name, "a symbolic link")
    try:
        fd = os.open(name, _OPEN_FLAGS | (0 if follow_links else NOFOLLOW))
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # what opening a socket gives
            raise NotRegularFile(name, "a socket") from None
        # ELOOP on Linux and macOS, EMLINK on FreeBSD: asked again, so that no other cause of
        # those errors is taken for a link.
        if not follow_links and exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(name):
            raise NotRegularFile(name, "a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(name, special_kind(info.st_mode))
        if info.st_size > limit:
            raise FileTooLarge(name, info.st_size, limit)
        return _read_at_most(fd, name, info.st_size, limit)
    finally:
        os.close(fd)


def _read_at_most(fd: int, name: str, size: int, limit: int) -> bytes:
    # One read of the size fstat gave (plus one byte, to see a file that grew since); more only
    # for a file written meanwhile, and never past the cap.
    chunks, total, want = [], 0, size + 1
    while True:
        chunk = os.read(fd, min(want, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise FileTooLarge(name, total, limit)
        want = MIB
