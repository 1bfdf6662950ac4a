"""Which project a path names, by the one rule the server, the CLI and the hooks share.

Imports nothing but ``os``: a hook process loads it before it knows whether there is a project.
"""

from __future__ import annotations

import os

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
