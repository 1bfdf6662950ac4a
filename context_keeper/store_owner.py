"""Which project a path names, by the one rule the server, the CLI and the hooks share.

Imports nothing but ``os``: a hook process loads it before it knows whether there is a project.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # the hooks import this first: nothing but os at run time
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

CONTEXT_DIR = ".context"


def store_owner(path: str) -> str:
    """The project an absolute, resolved ``path`` names: itself, or — when it is a ``.context/``
    directory or lies inside one — the directory holding that ``.context/`` (not a new project
    whose store would be ``.context/.context/``). The one rule for ``CONTEXT_KEEPER_PROJECT``
    and ``project_dir``."""
    parts = path.split(os.sep)
    if CONTEXT_DIR not in parts:
        return path
    return os.sep.join(parts[: parts.index(CONTEXT_DIR)]) or os.sep


def home_directory(env: Mapping[str, str]) -> str:
    """The user's home directory, resolved: from ``env`` when it names one, else the process's."""
    return os.path.realpath(env.get("HOME") or env.get("USERPROFILE") or os.path.expanduser("~"))


def walk_up(start: str, home: str) -> Iterator[str]:
    """The directories, nearest first, a walk up from the resolved ``start`` looks in for a
    ``.context/``: ``start`` and its parents, except the file system root (a store there would be
    the memory of every directory on the machine without one of its own), and from below ``home``
    nothing above it, nor ``home`` itself unless it is a repository root (every project of the
    user's would share a store made there by a ``project_dir`` of ``~``)."""
    directory = start
    while os.path.dirname(directory) != directory:
        if directory == home:
            if directory == start or os.path.exists(os.path.join(home, ".git")):
                yield directory
            return
        yield directory
        directory = os.path.dirname(directory)
