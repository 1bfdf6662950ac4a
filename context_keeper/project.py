"""Which project a call is about — one resolution shared by the server, the CLI and the hooks.

Order: an explicit ``project_dir`` → ``CONTEXT_KEEPER_PROJECT`` → the working directory when it
holds ``.context/`` → the nearest parent holding ``.context/`` (starting from
``CLAUDE_PROJECT_DIR`` when a client sets it, else the cwd). A directory found by walking up is
only used when ``.context/`` already exists there; nothing is created implicitly.

An explicit directory may be any directory inside a repository: the nearest directory at or
above it holding ``.context/``, not above the repository root (the first directory holding
``.git``), is used, else the repository root. Outside any repository the directory itself is the
project. Either way a first write creates ``.context/`` there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from context_keeper.errors import NoProject, UnsafePath
from context_keeper.store_owner import CONTEXT_DIR, store_owner

ENV_PROJECT = "CONTEXT_KEEPER_PROJECT"
ENV_CLIENT_PROJECT = "CLAUDE_PROJECT_DIR"


def _explicit(path: str, source: str) -> Path:
    candidate = Path(path).expanduser()
    if not candidate.is_absolute():
        raise UnsafePath(
            f"{source} must be an absolute path to the project directory, got {path!r}",
            field="project_dir",
        )
    if not candidate.is_dir():
        raise NoProject(f"{source} {path!r} is not an existing directory; pass the project's root directory",
                        field="project_dir" if source == "project_dir" else None)
    candidate = Path(store_owner(str(candidate.resolve())))
    return enclosing_project(candidate) or candidate


def enclosing_project(start: Path) -> Path | None:
    """Within the repository holding ``start``: the nearest directory at or above it holding
    ``.context/``, else the repository root. None outside any repository."""
    found = None
    for directory in (start, *start.parents):
        if found is None and (directory / CONTEXT_DIR).is_dir():
            found = directory
        if (directory / ".git").exists():
            return found or directory
    return None


def _walk_up(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / CONTEXT_DIR).is_dir():
            return directory
    return None


def resolve_project(
    project_dir: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Path:
    """The project root for this call; raises NoProject with what to do when there is none."""
    env = os.environ if env is None else env
    if project_dir:
        return _explicit(project_dir, "project_dir")
    if env.get(ENV_PROJECT):
        return _explicit(env[ENV_PROJECT], ENV_PROJECT)
    starts = []
    if env.get(ENV_CLIENT_PROJECT):
        starts.append(Path(env[ENV_CLIENT_PROJECT]))
    starts.append(Path(cwd) if cwd else Path.cwd())
    for start in starts:
        try:
            start = start.expanduser().resolve()
        except OSError:
            continue
        found = _walk_up(start)
        if found is not None:
            return found
    raise NoProject(
        "no context-keeper project found: no .context/ directory in "
        f"{starts[-1]} or its parents. Run `context-keeper init` in the project root, "
        f"set {ENV_PROJECT}, or pass project_dir (an absolute path)."
    )
