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
