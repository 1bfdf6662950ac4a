"""Output paths chosen by callers or config must stay inside the project root."""

from __future__ import annotations

from pathlib import Path

from context_keeper.errors import UnsafePath


def inside_project(root: Path, relative: str) -> Path:
    """Resolve ``relative`` against ``root``; refuse anything that lands outside it
    (``..``, absolute paths elsewhere, symlinks leading out)."""
    if not isinstance(relative, str) or not relative.strip():
        raise UnsafePath("path must be a non-empty path relative to the project root", field="path")
    if "\x00" in relative:
        raise UnsafePath("path contains a NUL byte", field="path")
    root = Path(root).resolve()
    candidate = Path(relative.strip())
    target = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if target != root and root not in target.parents:
        raise UnsafePath(
            f"path {relative!r} resolves to {target}, outside the project root {root}; "
            "give a path inside the project such as 'DECISIONS.md' or 'docs/decisions.md'",
            field="path",
        )
    if target == root or target.is_dir():
        raise UnsafePath(f"path {relative!r} is a directory; name a file such as 'DECISIONS.md'", field="path")
    return target


MARKDOWN_SUFFIXES = (".md", ".markdown", ".txt")
_PROTECTED_DIRS = (".context", ".git")


def markdown_target(root: Path, relative: str) -> Path:
    """Where a Markdown export may be written: inside the project, a Markdown or text file, and
    never inside ``.context/`` (the store itself lives there) or ``.git/``."""
    target = inside_project(root, relative)
    parts = target.relative_to(Path(root).resolve()).parts
    if any(part in _PROTECTED_DIRS for part in parts[:-1]):
        raise UnsafePath(
            f"path {relative!r} is inside {parts[0]}/, which holds the store or the repository; "
            "export to a file such as 'DECISIONS.md' or 'docs/decisions.md'",
            field="path",
        )
    if target.suffix.lower() not in MARKDOWN_SUFFIXES:
        raise UnsafePath(
            f"path {relative!r} is not a Markdown file; the export only writes files ending in "
            f"{', '.join(MARKDOWN_SUFFIXES)} (for example 'DECISIONS.md'), so it cannot replace code or data",
            field="path",
        )
    return target
