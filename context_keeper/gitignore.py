"""``.context/.gitignore``: what keeps context-keeper's bookkeeping out of git.

One rule for every writer (``init``, the tools' writes, the hooks, ``get``): before context-keeper
puts a bookkeeping file (a lock, a last good copy, a cache, a session's state) into a
``.context/`` that has no ``.gitignore`` (a store made by hand, or by an older version), it writes
this one, as pytest's, mypy's and ruff's cache directories ignore themselves. Git then shows one
new file that explains itself and can be committed, instead of a handful of untracked caches.
An existing ``.gitignore`` is never touched (``doctor`` names the patterns it lacks), and none is
written into a ``.context/`` that holds no store file: that is what checking out a branch without
the store leaves behind, and an untracked ``.gitignore`` there would make git refuse to check
out again the branch that tracks one ("untracked working tree files would be overwritten").

Imports nothing but ``os``: the hooks check it on every run, on their fast path.
"""

from __future__ import annotations

import os

FILE = ".gitignore"
GITIGNORE = (
    "# Local bookkeeping; the entry files and config.json are meant to be committed.\n"
    ".lock\n.commit-token\n.last-good/\n*.tmp\n*.broken-*\nhook.log*\n*_state.json\nsessions/\n"
    "embeddings.json\ncompaction_snapshot.json\ncompaction_report.json\n"
)
STORE_FILES = ("decisions.json", "pipelines.json", "constraints.json", "config.json")
WROTE = ("wrote .context/.gitignore (there was none), so the bookkeeping files context-keeper keeps there stay "
         "out of git; commit it with the store")


def ensure_gitignore(context_dir: str | os.PathLike[str]) -> bool:
    """Write ``GITIGNORE`` as ``context_dir/.gitignore`` when nothing has that name yet and the
    directory holds a store file; True when it was written by this call. One ``lstat`` when it
    exists. A ``.context/`` that cannot be written (a read-only checkout) or does not exist is
    left as it is: the bookkeeping files cannot be written there either."""
    path = os.path.join(context_dir, FILE)
    if os.path.lexists(path):
        return False
    if not any(os.path.lexists(os.path.join(context_dir, name)) for name in STORE_FILES):
        return False
    try:
        # O_EXCL: a .gitignore another process wrote meanwhile is kept, not replaced.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(GITIGNORE.encode("utf-8"))
    except OSError:
        # A full disk: a cut-off .gitignore would ignore only part of the bookkeeping, for good.
        try:
            os.unlink(path)
        except OSError:
            pass
        return False
    return True
