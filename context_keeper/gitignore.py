"""What keeps context-keeper's bookkeeping (a lock, last good copies, caches, a session's state)
out of git.

``init`` writes ``GITIGNORE`` as ``.context/.gitignore`` for a new store: that one is meant to be
committed with the store, and shares the rule with the team. A ``.context/`` without one (made
by hand, or by an older version) gets no file in the work tree: an untracked ``.gitignore``
written there would make git refuse to check out a branch that tracks one ("untracked working
tree files would be overwritten by checkout"). Instead, before any writer (a tool's write, a
hook, ``get``) puts a bookkeeping file there, ``keep_bookkeeping_out_of_git`` adds the same
patterns, anchored to that ``.context/``, to the repository's ``info/exclude``: git's own place
for per-clone ignore rules, never committed and never in a checkout's way. It appends one
marked block per store, once, after the person's own lines, which it never rewrites. Outside a
git work tree there is nothing to keep out, and nothing is written.

An existing ``.context/.gitignore`` is never touched (``doctor`` names the patterns it lacks),
except one that holds only the start of ``GITIGNORE`` (empty, or cut short): what an older
version's write left when the disk filled up, which would keep every pattern out of git for good
as no writer fills in a file that exists. Such a file holds nothing of the person's, and is
completed.

Imports nothing but ``os`` and runs no ``git`` (which may not be installed): the hooks check this
on every run, on their fast path, where a store with its ``.gitignore`` costs one ``lstat``.
"""

from __future__ import annotations

import os
import stat

FILE = ".gitignore"
GITIGNORE = (
    "# Local bookkeeping; the entry files and config.json are meant to be committed.\n"
    ".lock\n.commit-token\n.last-good/\n*.tmp\n*.broken-*\nhook.log*\n*_state.json\nsessions/\n"
    "embeddings.json\ncompaction_snapshot.json\ncompaction_report.json\n"
)
_OURS = GITIGNORE.encode("utf-8")
EXCLUDED = ("added the patterns of context-keeper's bookkeeping files in this .context/ (which has no .gitignore) "
            "to .git/info/exclude, so they stay out of git in this clone; `context-keeper init` writes "
            ".context/.gitignore, and committing it shares that with the team")
_GLOB_CHARS = "\\*?["


def keep_bookkeeping_out_of_git(context_dir: str | os.PathLike[str]) -> bool:
    """Make git ignore the bookkeeping files of ``context_dir`` when it has no ``.gitignore``, by
    a marked block in the repository's ``info/exclude``; True when this call added the block.

    Nothing is done when ``context_dir/.gitignore`` exists (one ``lstat``), when no git
    repository holds ``context_dir``, when the block is there already, or when the exclude file
    cannot be written (a read-only checkout: the bookkeeping cannot be written either)."""
    try:
        info = os.lstat(os.path.join(context_dir, FILE))
    except OSError:
        info = None
    if info is not None:
        if info.st_size < len(_OURS) and stat.S_ISREG(info.st_mode):
            complete_cut_short(context_dir)
        return False
    found = _exclude_file(context_dir)
    if found is None or found[3]:
        return False
    exclude, anchor, before, _ = found
    return _append(exclude, before, anchor)


def cut_short(context_dir: str | os.PathLike[str]) -> bool:
    """Whether ``context_dir/.gitignore`` is a file holding only a start of ``GITIGNORE`` (empty
    included): a write cut short. A file with anything else in it is the person's, and a
    symbolic link is never one."""
    path = os.path.join(context_dir, FILE)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, "rb") as handle:
            held = handle.read(len(_OURS))
    except OSError:
        return False
    return len(held) < len(_OURS) and _OURS.startswith(held)


def complete_cut_short(context_dir: str | os.PathLike[str]) -> bool:
    """Write ``GITIGNORE`` over a ``context_dir/.gitignore`` that is ``cut_short``; True when this
    call did. A failed write changes nothing (the writer's own write then says what the disk
    refused)."""
    if not cut_short(context_dir):
        return False
    from context_keeper.fsio import atomic_write_bytes  # the rare path: the hooks start without it

    try:
        atomic_write_bytes(os.path.join(context_dir, FILE), _OURS)
    except OSError:
        return False
    return True


def excluded_in(context_dir: str | os.PathLike[str]) -> str | None:
    """The ``info/exclude`` file that holds ``context_dir``'s block, or None when none does."""
    found = _exclude_file(context_dir)
    return found[0] if found is not None and found[3] else None


def _exclude_file(context_dir: str | os.PathLike[str]) -> tuple[str, str, bytes, bool] | None:
    """``(exclude file, anchor, its bytes, whether it holds context_dir's block)``; None when no
    git repository holds ``context_dir`` or the file cannot be read (a missing one is empty)."""
    place = _exclude_place(context_dir)
    if place is None:
        return None
    exclude, anchor = place
    try:
        with open(exclude, "rb") as handle:
            before = handle.read()
    except FileNotFoundError:
        before = b""
    except OSError:
        return None
    return exclude, anchor, before, _marker(anchor) in before.splitlines()


def _exclude_place(context_dir: str | os.PathLike[str]) -> tuple[str, str] | None:
    """(the repository's ``info/exclude``, ``context_dir`` as a path from the work tree's top,
    such as ``/sub/project/.context``); None outside a git work tree."""
    context_dir = os.path.abspath(context_dir)
    found = _repository_of(os.path.dirname(context_dir))
    if found is None:
        return None
    top, common_dir = found
    return os.path.join(common_dir, "info", "exclude"), "/" + os.path.relpath(context_dir, top).replace(os.sep, "/")


def _marker(anchor: str) -> bytes:
    return f"# context-keeper: bookkeeping files of {anchor} (a store without its own .gitignore)".encode("utf-8")


def _append(exclude: str, before: bytes, anchor: str) -> bool:
    escaped = "".join("\\" + c if c in _GLOB_CHARS else c for c in anchor)
    # "/.context/**/x" matches x at any depth under that .context/ alone, as "x" in its .gitignore would.
    patterns = [f"{escaped}/**/{line}" for line in GITIGNORE.splitlines() if line and not line.startswith("#")]
    block = "\n".join([_marker(anchor).decode("utf-8"), *patterns]) + "\n"
    if before and not before.endswith(b"\n"):
        block = "\n" + block  # the person's last line stays a line of its own
    try:
        os.makedirs(os.path.dirname(exclude), exist_ok=True)
        # O_APPEND, one write: the person's lines are never rewritten, only followed.
        fd = os.open(exclude, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0), 0o666)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(block.encode("utf-8"))
    except OSError:
        return False
    return True


def _repository_of(directory: str) -> tuple[str, str] | None:
    """(work tree top, common git dir) of the repository whose work tree holds ``directory``,
    found as git finds it: the nearest ``.git`` above, a directory or a ``gitdir: …`` file (a
    worktree's or a submodule's); None when there is none."""
    here = directory
    while True:
        dot_git = os.path.join(here, ".git")
        if os.path.isdir(dot_git):
            return here, _common_dir(dot_git)
        if os.path.isfile(dot_git):
            git_dir = _pointed_to(dot_git, here)
            return None if git_dir is None else (here, _common_dir(git_dir))
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _pointed_to(dot_git_file: str, work_tree: str) -> str | None:
    try:
        with open(dot_git_file, encoding="utf-8") as handle:
            first = handle.readline().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not first.startswith("gitdir:"):
        return None
    git_dir = os.path.join(work_tree, first[len("gitdir:"):].strip())
    return git_dir if os.path.isdir(git_dir) else None


def _common_dir(git_dir: str) -> str:
    """Where ``info/exclude`` is read from: a linked worktree's git dir names it in ``commondir``
    (``git worktree add``); any other git dir is its own."""
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
            common = handle.readline().strip()
    except (OSError, UnicodeDecodeError):
        return git_dir
    return os.path.normpath(os.path.join(git_dir, common)) if common else git_dir
