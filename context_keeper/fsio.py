"""Crash-safe file writes: temp file in the same directory, fsync, atomic replace."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str, *, keep_previous: Path | None = None) -> os.stat_result:
    """Replace ``path`` with ``text`` so a reader sees the old or the new file, never half.

    ``keep_previous``: hard-link the file being replaced there first (no copy; the old inode
    lives on as the backup). Returns the new file's stat.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if keep_previous is not None and path.exists():
            _link_backup(path, keep_previous)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(path.parent)
    return path.stat()


def _link_backup(path: Path, backup: Path) -> None:
    backup.parent.mkdir(parents=True, exist_ok=True)
    staging = backup.with_name(backup.name + ".new")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(staging)
    try:
        os.link(path, staging)
    except OSError:
        # Filesystems without hard links: fall back to a copy.
        staging.write_bytes(path.read_bytes())
    os.replace(staging, backup)


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
