"""Which project a call is about — one resolution shared by the server, the CLI and the hooks.

Order: an explicit ``project_dir`` → ``CONTEXT_KEEPER_PROJECT`` → the working directory when it
holds ``.context/`` → the nearest parent holding ``.context/`` (starting from
``CLAUDE_PROJECT_DIR`` when a client sets it, else the cwd). A directory found by walking up is
only used when ``.context/`` already exists there; nothing is created implicitly. The walk never
uses the file system root, and from below the home directory never goes above it, nor uses the
home directory itself unless it is a repository root (``store_owner.walk_up``). An explicit
directory that names the file system root is refused.

An explicit directory may be any directory inside the project and resolves as the working
directory does: the nearest directory at or above it holding ``.context/`` (by the same walk), so
``src/pkg`` and the directory above it holding the store share one memory whichever way they are
named. Only when there is none does the explicit directory name a new project: the root of the
repository holding it (the first directory at or above it holding ``.git``), else the directory
itself; a first write creates ``.context/`` there. A nested project someone deliberately set up
(``context-keeper init`` in a subdirectory) is found first once its ``.context/`` exists.

A command given no directory (``init``, ``install``) acts on ``default_project``: the project
found as above, else the root of the repository holding the working directory, else that
directory, so a store it creates is the one a client opened on the repository uses.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from context_keeper.errors import NoProject, UnsafePath
from context_keeper.store_owner import CONTEXT_DIR, home_directory, store_owner, walk_up

ENV_PROJECT = "CONTEXT_KEEPER_PROJECT"
ENV_CLIENT_PROJECT = "CLAUDE_PROJECT_DIR"


def _explicit(path: str, source: str, home: str) -> Path:
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
    # The working directory's walk, or the same directory named two ways would get two stores.
    project = _walk_up(candidate, home) or repository_root(candidate) or candidate
    if project.parent == project:
        # A first write would make /.context/: the memory of every directory without one of its own.
        raise UnsafePath(
            f"{source} {path!r} resolves to the root of the file system ({project}), where a store would be the "
            "memory of every directory on the machine without one of its own: pass the project's own root directory",
            field="project_dir" if source == "project_dir" else None,
        )
    return project


def root_spellings(root: Path, project_dir: str | None = None, *, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The caller's own spelling of ``root`` (as ``resolve_project`` found it from ``project_dir``,
    else from the environment's project path) when it is another one: through a symbolic link,
    "/home/dev/shop" for "/srv/work/shop". An absolute path the caller pastes starts with it.
    The spelling of a directory inside the project gives the directory above it that is the root."""
    env = os.environ if env is None else env
    given = project_dir or env.get(ENV_PROJECT) or env.get(ENV_CLIENT_PROJECT)
    if not given:
        return ()
    candidate = os.path.normpath(os.path.expanduser(given))
    if not os.path.isabs(candidate):
        return ()
    resolved = str(root)
    for _ in range(64):  # a deeper project_dir than this is no one's spelling of a root
        if candidate == resolved:
            return ()
        if os.path.realpath(candidate) == resolved:
            return (candidate,)
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return ()
        candidate = parent
    return ()


def repository_root(start: Path) -> Path | None:
    """The first directory at or above ``start`` holding ``.git``; None outside any repository."""
    return next((directory for directory in (start, *start.parents) if (directory / ".git").exists()), None)


def _walk_up(start: Path, home: str) -> Path | None:
    for directory in walk_up(str(start), home):
        if os.path.isdir(os.path.join(directory, CONTEXT_DIR)):
            return Path(directory)
    return None


def _passed_over(start: Path, home: str) -> str:
    """Why a ``.context/`` above ``start`` was not used, for the no-project error ("" if none was)."""
    try:
        start = start.expanduser().resolve()
    except OSError:
        return ""
    root = Path(start.anchor)
    if (root / CONTEXT_DIR).is_dir():
        return (f" ({root / CONTEXT_DIR} is never used: a store at the root of the file system would be the "
                "memory of every directory on the machine; move it into the project it belongs to.)")
    below_home = Path(home) in start.parents
    if below_home and (Path(home) / CONTEXT_DIR).is_dir() and not (Path(home) / ".git").exists():
        return (f" ({Path(home) / CONTEXT_DIR} serves only the home directory itself, not the directories below it, "
                "as home is not a repository; pass project_dir or set CONTEXT_KEEPER_PROJECT to use it.)")
    return ""


_last_working_directory: str | None = None  # what getcwd last gave this process


def working_directory(env: Mapping[str, str]) -> Path:
    """The process's working directory. A directory replaced under a running server (``rm -rf
    proj && git clone ... proj``) is gone for getcwd, though its path names the new copy: ``$PWD``
    stands in when it is a directory again at the path the process was working in."""
    global _last_working_directory
    try:
        cwd = os.getcwd()
    except FileNotFoundError:
        pwd = env.get("PWD")
        # $PWD alone is inherited from whoever started the process and may name another project.
        if pwd and os.path.isabs(pwd) and os.path.realpath(pwd) == _last_working_directory and os.path.isdir(pwd):
            return Path(pwd)
        where = f" ({_last_working_directory})" if _last_working_directory else ""
        raise NoProject(
            f"the working directory of this process{where} no longer exists (it was deleted or replaced after the "
            f"process started there), so no project can be found from it; nothing was read or saved. Pass "
            f"project_dir (an absolute path), set {ENV_PROJECT}, or restart the server from the project directory"
        ) from None
    _last_working_directory = cwd
    return Path(cwd)


def resolve_project(
    project_dir: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Path:
    """The project root for this call; raises NoProject with what to do when there is none."""
    env = os.environ if env is None else env
    home = home_directory(env)
    if project_dir:
        return _explicit(project_dir, "project_dir", home)
    if env.get(ENV_PROJECT):
        return _explicit(env[ENV_PROJECT], ENV_PROJECT, home)
    starts = []
    if env.get(ENV_CLIENT_PROJECT):
        starts.append(Path(env[ENV_CLIENT_PROJECT]))
    starts.append(Path(cwd) if cwd else working_directory(env))
    for start in starts:
        try:
            start = start.expanduser().resolve()
        except OSError:
            continue
        found = _walk_up(start, home)
        if found is not None:
            return found
    raise NoProject(
        "no context-keeper project found: no .context/ directory in "
        f"{starts[-1]} or its parents. Run `context-keeper init` in the project root, "
        f"set {ENV_PROJECT}, or pass project_dir (an absolute path).{_passed_over(starts[-1], home)}"
    )


def default_project(*, env: Mapping[str, str] | None = None, cwd: str | None = None) -> Path:
    """The project a command given no directory acts on: the one ``resolve_project`` finds, else
    (no store yet) the root of the repository holding the working directory, where a client
    opened on the repository reads its wiring and where a server started anywhere in it finds
    the store; else the working directory. A repository at or above the home directory is not
    used from below it: a dotfiles repository in ``~`` would make one store for every project."""
    env = os.environ if env is None else env
    try:
        return resolve_project(None, env=env, cwd=cwd)
    except NoProject:
        start = (Path(cwd) if cwd else working_directory(env)).resolve()
    repository = repository_root(start)
    home = Path(home_directory(env))
    if repository is not None and repository != start and (repository == home or repository in home.parents):
        return start
    return repository or start
