"""Output paths chosen by callers or config must stay inside the project root."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from context_keeper.errors import UnsafePath


def _shown(path: str, limit: int = 80) -> str:
    text = repr(path)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def inside_project(root: Path, relative: str) -> Path:
    """Resolve ``relative`` against ``root``; refuse anything that lands outside it
    (``..``, absolute paths elsewhere, symlinks leading out)."""
    if not isinstance(relative, str) or not relative.strip():
        raise UnsafePath("path must be a non-empty path relative to the project root", field="path")
    if "\x00" in relative:
        raise UnsafePath("path contains a NUL byte", field="path")
    root = Path(root).resolve()
    candidate = Path(relative.strip())
    if candidate.parts and candidate.parts[0].startswith("~"):
        # No shell expands it here: "~/notes.md" would make a directory named "~" in the project.
        raise UnsafePath(f"path {_shown(relative)} starts with '~', which is not expanded here; give a path relative to "
                         "the project root such as 'DECISIONS.md' or 'docs/decisions.md'", field="path")
    long = next((part for part in candidate.parts if len(part.encode("utf-8", "surrogateescape")) > 255), None)
    if long is not None:
        raise UnsafePath(f"path {_shown(relative)} has a name of {len(long.encode('utf-8', 'surrogateescape'))} bytes; file "
                         "systems allow at most 255: give a shorter name such as 'DECISIONS.md'", field="path")
    target = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if target != root and root not in target.parents:
        raise UnsafePath(
            f"path {_shown(relative)} resolves to {target}, outside the project root {root}; "
            "give a path inside the project such as 'DECISIONS.md' or 'docs/decisions.md'",
            field="path",
        )
    try:
        is_dir = target.is_dir()
    except OSError as exc:  # a path too long as a whole, say
        raise UnsafePath(f"path {_shown(relative)} cannot be used: {exc.strerror or exc}; give a shorter path such as "
                         "'DECISIONS.md'", field="path") from None
    if target == root or is_dir:
        raise UnsafePath(f"path {_shown(relative)} is a directory; name a file such as 'DECISIONS.md'", field="path")
    blocking = _file_on_the_way(root, target)
    if blocking is not None:
        # Else the write's mkdir fails with FileExistsError, reported as a disk or permission problem.
        raise UnsafePath(f"path {_shown(relative)}: {_shown(blocking.relative_to(root).as_posix())} is a file, not a "
                         "directory; choose another path such as 'DECISIONS.md' or 'docs/decisions.md'", field="path")
    return target


def _file_on_the_way(root: Path, target: Path) -> Path | None:
    """The existing non-directory among ``target``'s parents below ``root``, if there is one."""
    for parent in target.parents:
        if parent == root:
            return None
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


MARKDOWN_SUFFIXES = (".md", ".markdown", ".txt")
_PROTECTED_DIRS = (".context", ".git")


def markdown_target(root: Path, relative: str) -> Path:
    """Where a Markdown export may be written: inside the project, a Markdown or text file, and
    never inside ``.context/`` (the store itself lives there) or ``.git/``."""
    target = inside_project(root, relative)
    parts = target.relative_to(Path(root).resolve()).parts
    if any(part in _PROTECTED_DIRS for part in parts[:-1]):
        raise UnsafePath(
            f"path {_shown(relative)} is inside {parts[0]}/, which holds the store or the repository; "
            "export to a file such as 'DECISIONS.md' or 'docs/decisions.md'",
            field="path",
        )
    if target.suffix.lower() not in MARKDOWN_SUFFIXES:
        raise UnsafePath(
            f"path {_shown(relative)} is not a Markdown file; the export only writes files ending in "
            f"{', '.join(MARKDOWN_SUFFIXES)} (for example 'DECISIONS.md'), so it cannot replace code or data",
            field="path",
        )
    return target


def established_exports(root: Path, config: Mapping) -> set[Path]:
    """The project's DECISIONS.md and the configured ``markdown_export`` path (when it is one an
    export accepts): the Markdown files an export may always replace."""
    established = {markdown_target(root, "DECISIONS.md")}
    export = config.get("markdown_export")
    configured = export.get("path") if isinstance(export, Mapping) else None
    if isinstance(configured, str) and configured.strip():
        try:
            established.add(markdown_target(root, configured))
        except UnsafePath:
            pass  # doctor reports it; the export refuses it
    return established
