"""Directories context-keeper writes into or deletes from must stay inside the project.

A cloned repository can commit a symbolic link in place of ``.context/`` itself or of a
directory under it (``.last-good/``, ``sessions/``, ``install-backups/``). Writing a file into
such a directory, or pruning it, would land wherever the link leads (another project's store,
the user's files), so every writer asks ``leads_out`` first and skips what it refuses. A link
that stays inside the project (``.context -> meta/context``) is fine.

Imports nothing but ``os``: the hooks check ``sessions/`` on their fast path.
"""

from __future__ import annotations

import os


def leads_out(path: str | os.PathLike, root: str | os.PathLike) -> str | None:
    """The real path of ``path`` when it lies outside the real path of the project ``root``
    (through a symbolic link at any level, to a place that may not exist yet), else None."""
    real = os.path.realpath(path)
    boundary = os.path.realpath(root)
    if real == boundary or real.startswith(os.path.join(boundary, "")):
        return None
    return real


def refusal(directory: str | os.PathLike, root: str | os.PathLike, skipped: str) -> str | None:
    """A sentence saying that ``directory`` (inside the project ``root``) leads out of the
    project, so ``skipped`` (what was not done) and how to fix it; None when it stays inside."""
    real = leads_out(directory, root)
    if real is None:
        return None
    shown = os.path.relpath(os.path.abspath(directory), os.path.abspath(root))
    return (f"{shown} is a symbolic link to {real}, outside the project, so {skipped}: context-keeper never "
            f"writes or deletes there. Remove the link (rm {shown}); the directory is made again when needed")


def context_refusal(root: str | os.PathLike) -> str | None:
    """Why the project ``root``'s ``.context`` is not used: it is a symbolic link out of the
    project, as doctor reports it (a cloned repository can commit one, to have another project's
    private memory read as this one's and this one's records written into it). None otherwise."""
    context = os.path.join(root, ".context")
    # A link to a file or to nothing is no store at all, which the callers name as such.
    real = leads_out(context, root) if os.path.islink(context) and os.path.isdir(context) else None
    if real is None:
        return None
    return (f"{context} is a symbolic link to {real}, outside the project, so context-keeper does not use it: "
            "nothing was read or saved. Replace the link with a directory (rm the link, then mkdir .context and "
            f"copy in the files you mean to keep), or work in the project it leads to ({os.path.dirname(real)}) "
            "instead")
