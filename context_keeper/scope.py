"""Does an entry's ``scope`` cover a file? One matcher for get_context, the hooks and doctor.

A scope is ``"global"`` (or empty), a directory (``"hooks/"``), a single file (``"server.py"``)
or a glob (``"src/**/*.py"``, ``"migrations/*.sql"``). Paths are compared relative to the project
root on whole components, so ``hooks/`` covers ``hooks/a.py`` but not ``webhooks/a.py``.
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache
from pathlib import PurePosixPath

GLOBAL_SCOPES = frozenset({"", "global", "*", "**", "/"})
_GLOB_CHARS = re.compile(r"[*?\[]")


def is_global(scope: str | None) -> bool:
    return scope is None or not isinstance(scope, str) or scope.strip().lower() in GLOBAL_SCOPES


def normalize_path(path: str, project_root: str | None = None) -> str:
    """Project-relative POSIX path without ``./`` or a leading slash; absolute paths inside
    ``project_root`` are made relative. Returns ``""`` for the root itself."""
    text = str(path).strip().replace("\\", "/")
    if project_root:
        root = str(project_root).replace("\\", "/").rstrip("/")
        if text == root:
            return ""
        if text.startswith(root + "/"):
            text = text[len(root) + 1 :]
    parts = [p for p in text.split("/") if p not in ("", ".")]
    return "/".join(parts)


@lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob where ``**`` spans directories and ``*`` stays within one component."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape("["))
                i += 1
            else:
                out.append(fnmatch.translate(pattern[i : end + 1])[4:-3])
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"(?:/.*)?\Z")


def scope_covers(scope: str | None, path: str, project_root: str | None = None) -> bool:
    """True when ``scope`` applies to ``path`` (a file or directory, relative or absolute)."""
    if is_global(scope):
        return True
    target = normalize_path(path, project_root)
    pattern = normalize_path(scope, project_root)
    if not pattern:
        return True
    if _GLOB_CHARS.search(pattern):
        return bool(_glob_regex(pattern).match(target))
    if target == pattern:
        return True
    return PurePosixPath(target).is_relative_to(pattern)
