"""Does an entry's ``scope`` cover a file? One matcher for get_context, the hooks and doctor.

A scope is ``"global"`` (or empty), a directory (``"hooks/"``), a single file (``"server.py"``)
or a glob (``"src/**/*.py"``, ``"migrations/*.sql"``). Paths are compared relative to the project
root on whole components, so ``hooks/`` covers ``hooks/a.py`` but not ``webhooks/a.py``.
In a glob, ``*`` and ``?`` stay within one component and ``**`` spans directories, so
``migrations/*.sql`` covers ``migrations/001.sql`` but not ``migrations/2025/001.sql``
(``migrations/**/*.sql`` covers both); a glob without a slash (``*.sql``) matches a file name at
any depth, as in ``.gitignore``.

A scope may list several of these, separated by commas (``"services/trip/, services/billing/"``,
``"Dockerfile, deploy/helm/"``): it covers what any of them covers (``scope_parts``). Braces
list alternatives as in VS Code, eslint or a shell (``"src/{api,web}/*.py"`` is
``"src/api/*.py, src/web/*.py"``). A list with a part naming the whole project (``"global"``,
``"./"``, the project's absolute path) is global, since that part already covers every file. A
comma inside a glob's bracket class (``docs/[a,b].md``) separates nothing; a path whose own name
holds a comma cannot be a scope (a glob such as ``docs/a?b.md`` matches it). An absolute path
outside the project covers nothing.

Imports nothing at load time (``re``/``fnmatch`` only for a glob): the hooks use it on their
cold path.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

GLOBAL_SCOPES = frozenset({"", "global", "*", "**", "/"})
GLOB_CHARS = "*?["
# More paths than a person lists by hand: "{a,b}{c,d}..." doubles with each group.
MAX_BRACE_PATHS = 64
_GLOB_CACHE_SIZE = 4096
_glob_cache: dict[str, _Glob] = {}


def is_global(scope: str | None, project_root: str | None = None) -> bool:
    """Whether ``scope`` covers every file: no scope, a global word, or a list with a part that
    names the project root (``"./"``; its absolute path too, with ``project_root``). The one test
    for get_context, the edit guard's index and doctor, so none of them reads such a list as
    covering only its other paths."""
    if scope is None or not isinstance(scope, str):
        return True
    if "," not in scope:
        return names_root(scope.strip(), project_root)
    parts = scope_parts(scope)
    # ", " lists no path, as "" names none; a listed "global" already covers every file
    return not parts or any(names_root(part, project_root) for part in parts)


def names_root(part: str, project_root: str | None = None) -> bool:
    """Whether one (stripped) path of a scope covers the whole project."""
    if part.lower() in GLOBAL_SCOPES:
        return True
    # Only "./", "." or an absolute path can normalise to the root: skip the work for the rest.
    if not (part.startswith(("/", "\\")) or set(part) <= _ROOT_CHARS or part[1:3] in (":/", ":\\")):
        return False
    return normalize_path(part, project_root) == ""


_ROOT_CHARS = frozenset("./\\")


def scope_parts(scope: str) -> list[str]:
    """The paths a scope lists, as written but stripped, braces expanded, without the empty ones
    (``"a/,"`` lists ``a/``): a scope without a comma is its one path."""
    return [piece for piece in split_scope(scope) if piece]


def split_scope(scope: str) -> list[str]:
    """Every comma-separated piece of ``scope``, stripped, empty ones included, and each brace
    group's alternatives (``"src/{api,web}/"`` is ``src/api/``, ``src/web/``). A comma inside a
    bracket class (``[a,b]``, closed as the glob matcher closes it) does not separate."""
    if "," not in scope:
        return [scope.strip()]
    pieces: list[str] = []
    for piece in _top_level_pieces(scope, 0, len(scope)):
        pieces.extend(expand_braces(piece.strip()) or [piece.strip()])
    return pieces


def _top_level_pieces(text: str, start: int, stop: int) -> list[str]:
    """``text[start:stop]`` split at its commas outside bracket classes and brace groups."""
    pieces, i = [], start
    while i < stop:
        char = text[i]
        if char == "[":
            end = text.find("]", i + 1, stop)
            i = end if end != -1 else i  # an unclosed "[" is a literal character
        elif char == "{":
            end = _closing_brace(text, i, stop)
            i = end if end != -1 else i
        elif char == ",":
            pieces.append(text[start:i])
            start = i + 1
        i += 1
    pieces.append(text[start:stop])
    return pieces


def _closing_brace(text: str, opening: int, stop: int) -> int:
    """Where the brace group opened at ``opening`` closes (groups nest), or -1: unclosed."""
    depth = 0
    for i in range(opening, stop):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def expand_braces(piece: str) -> list[str] | None:
    """The paths one piece of a scope stands for, each brace group with a comma replaced by
    each of its alternatives (``"{a,b}/x"`` -> ``a/x``, ``b/x``; groups nest); a group without
    a comma or without its ``}`` is literal text. None when that makes more than
    ``MAX_BRACE_PATHS`` paths (``project_scope`` refuses such a scope)."""
    if "{" not in piece:
        return [piece]
    i = piece.find("{")
    while i != -1:
        end = _closing_brace(piece, i, len(piece))
        if end == -1:
            return [piece]
        choices = _top_level_pieces(piece, i + 1, end)
        if len(choices) > 1:
            head, tail = piece[:i], piece[end + 1:]
            out: list[str] = []
            for choice in choices:
                expanded = expand_braces(head + choice + tail)
                if expanded is None or len(out) + len(expanded) > MAX_BRACE_PATHS:
                    return None
                out.extend(expanded)
            return out
        i = piece.find("{", i + 1)
    return [piece]


def normalize_path(path: str, project_root: str | None = None) -> str:
    """Project-relative POSIX path without ``./`` or a leading slash; absolute paths inside
    ``project_root`` are made relative (also through a symlink, ``project_relative``). Returns
    ``""`` for the root itself. With ``project_root``, an absolute path outside it keeps its
    leading slash (or drive), so it names no project path: "/etc/nginx/" is not
    ``<project>/etc/nginx/``."""
    text = str(path).strip().replace("\\", "/")
    outside = ""
    if project_root:
        root = str(project_root).replace("\\", "/").rstrip("/")
        if text == root:
            return ""
        if text.startswith(root + "/"):
            text = text[len(root) + 1 :]
        elif text.startswith("/"):
            relative = project_relative(text, project_root)
            text, outside = (relative, "") if relative is not None else (text, "/")
        elif text[1:3] == ":/":  # another drive, or a folder of this one beside the project
            outside = text[:2] + "/"
            text = text[2:]
    parts = [p for p in text.split("/") if p not in ("", ".")]
    return outside + "/".join(parts) if parts else ""


def project_relative(path: str, project_root: str) -> str | None:
    """An absolute ``path`` relative to the project (POSIX, ``""`` for the root itself), also
    when it reaches the project through a symlink or ``..`` ("/tmp/link/src/a.py" when the
    project is "/private/tmp/proj"); None when it lies outside."""
    import os
    import posixpath

    text = str(path).strip().replace("\\", "/")
    root = str(project_root).replace("\\", "/").rstrip("/")
    bases = dict.fromkeys((root, os.path.realpath(root).replace("\\", "/").rstrip("/")))
    for candidate in dict.fromkeys((posixpath.normpath(text), os.path.realpath(text).replace("\\", "/"))):
        for base in bases:
            if candidate == base:
                return ""
            if candidate.startswith(base + "/"):
                return candidate[len(base) + 1:]
    return None


def leaves_project(path: str, project_root: str, *, any_dotdot: bool = False) -> str | None:
    """Why ``path`` (a scope, or a file someone works on) can only lie outside the project, in
    words for an error ("is outside the project root (/x)"); None when it can lie inside. With
    ``any_dotdot`` every ``..`` component counts (a stored scope is kept as written), otherwise
    only one that climbs above the root."""
    import posixpath
    import re

    unified = str(path).strip().replace("\\", "/")
    if unified.startswith("~"):
        return "is relative to a home directory, not to the project"
    if unified.startswith("/") or re.match(r"^[A-Za-z]:/", unified):
        return None if project_relative(unified, project_root) is not None else f"is outside the project root ({project_root})"
    parts = unified.split("/") if any_dotdot else posixpath.normpath(unified).split("/")[:1]
    return "uses '..', which leaves the project root" if ".." in parts else None


def project_area(path: str, project_root: str) -> str:
    """A file, directory or glob someone works on, relative to the project like
    ``normalize_path``; an absolute path is resolved first (``project_relative``)."""
    import os
    import posixpath

    text = str(path).strip().replace("\\", "/")
    if not text:
        return ""
    if os.path.isabs(text):
        relative = project_relative(text, project_root)
        return normalize_path(text if relative is None else relative, None if relative is not None else project_root)
    return normalize_path(posixpath.normpath(text), project_root)


def outside_project(normalised: str) -> bool:
    """Whether a path as ``normalize_path`` gives it (with the project root) lies outside the
    project: it kept its leading slash or drive."""
    return normalised.startswith("/") or normalised[1:3] == ":/"


# What to do about a scope ``unclosed_brace`` finds: record_constraint's refusal and doctor say it.
UNCLOSED_BRACE_FIX = ("close it (e.g. 'src/{api,web}/*.py') or write the paths as a list "
                      "(e.g. 'src/api/*.py, src/web/*.py')")


def unclosed_brace(scope: str) -> bool:
    """Whether a ``{`` of ``scope`` that a comma follows is never closed ("src/{api,web/*.py"):
    the comma then separates two paths, which is not what was meant."""
    i = scope.find("{")
    while i != -1:
        if "," in scope[i:] and _closing_brace(scope, i, len(scope)) == -1:
            return True
        i = scope.find("{", i + 1)
    return False


def too_many_paths(scope: str) -> bool:
    """Whether a brace group of ``scope`` stands for more than ``MAX_BRACE_PATHS`` paths (the
    matcher then reads it as literal text, which names no file)."""
    return "{" in scope and any(expand_braces(piece.strip()) is None for piece in _top_level_pieces(scope, 0, len(scope)))


def comma_named_path(scope: str, project_root: str) -> str | None:
    """``"file"`` or ``"directory"`` when the whole of ``scope``, commas and all, names one of
    the project's (a path whose own name holds a comma, which a scope cannot be: it is read as
    the paths around the comma), else None."""
    if "," not in scope or len(split_scope(scope)) == 1:
        return None
    import os

    path = normalize_path(scope, project_root)
    if not path or outside_project(path) or is_glob(path):
        return None
    full = os.path.join(project_root, path)
    if os.path.isdir(full):
        return "directory"
    return "file" if os.path.lexists(full) else None


def is_glob(pattern: str) -> bool:
    return any(c in pattern for c in GLOB_CHARS)


def _glob_regex(pattern: str) -> _Glob:
    compiled = _glob_cache.get(pattern)
    if compiled is None:
        if len(_glob_cache) >= _GLOB_CACHE_SIZE:
            _glob_cache.clear()
        # "*.sql" means every SQL file, as in .gitignore, not only those at the project root.
        compiled = _glob_cache[pattern] = _translate_glob(pattern if "/" in pattern else "**/" + pattern)
    return compiled


# Glob tokens: a literal character, "?", "*" (within a component), "**" (anything), "**/"
# (nothing, or anything ending in "/"), and a bracket class.
_LIT, _ONE, _STAR, _ANY, _DIRS, _CLASS = range(6)


class _Glob:
    """A glob where ``**`` spans directories and ``*`` stays within one component, matched at
    the start of a path and covering what lies below a match (``hooks/*`` covers
    ``hooks/a/b.py``).

    Matched by stepping the set of pattern positions through the path once, so the cost is at
    most (pattern length) x (path length): the regular expression this replaced backtracked
    through every way of splitting the path among repeated ``**/``, and a scope such as
    ``**/**/**/**/**/**/**/**/**/**/x.py`` took seconds per file (minutes at a dozen), in the
    edit guard and every get_context with a scope."""

    __slots__ = ("tokens",)

    def __init__(self, tokens: list[tuple[int, Any]]) -> None:
        self.tokens = tokens

    def _closure(self, states: set[tuple[int, bool]]) -> set[tuple[int, bool]]:
        out = set(states)
        stack = list(states)
        while stack:
            i, inside = stack.pop()
            if not inside and i < len(self.tokens) and self.tokens[i][0] in (_STAR, _ANY, _DIRS):
                nxt = (i + 1, False)  # each of them may match nothing
                if nxt not in out:
                    out.add(nxt)
                    stack.append(nxt)
        return out

    def match(self, text: str) -> bool:
        end = len(self.tokens)
        states = self._closure({(0, False)})
        for position, char in enumerate(text):
            if (end, False) in states and char == "/":
                return True  # matched a directory above the path: it covers what lies below
            following: set[tuple[int, bool]] = set()
            for i, inside in states:
                if i == end:
                    continue
                kind, value = self.tokens[i]
                if inside or kind == _DIRS:  # inside "**/": any characters, leaving after a "/"
                    following.add((i, True))
                    if char == "/":
                        following.add((i + 1, False))
                elif kind == _LIT:
                    if char == value:
                        following.add((i + 1, False))
                elif kind == _ONE:
                    if char != "/":
                        following.add((i + 1, False))
                elif kind == _STAR:
                    if char != "/":
                        following.add((i, False))
                elif kind == _ANY:
                    following.add((i, False))
                elif value.match(char):  # _CLASS
                    following.add((i + 1, False))
            if not following:
                return False
            states = self._closure(following)
        return (end, False) in states


def _translate_glob(pattern: str) -> _Glob:
    """Parse a glob into the tokens ``_Glob`` matches."""
    tokens: list[tuple[int, Any]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            if not tokens or tokens[-1][0] != _DIRS:  # "**/**/" is "**/"
                tokens.append((_DIRS, None))
            i += 3
        elif pattern.startswith("**", i):
            tokens.append((_ANY, None))
            i += 2
        elif pattern[i] == "*":
            tokens.append((_STAR, None))
            i += 1
        elif pattern[i] == "?":
            tokens.append((_ONE, None))
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                tokens.append((_LIT, "["))
                i += 1
            else:
                import fnmatch
                import re

                tokens.append((_CLASS, re.compile(fnmatch.translate(pattern[i : end + 1])[4:-3])))
                i = end + 1
        else:
            tokens.append((_LIT, pattern[i]))
            i += 1
    return _Glob(tokens)


def scope_covers(scope: str | None, path: str, project_root: str | None = None) -> bool:
    """True when ``scope`` (or one of the paths it lists) applies to ``path`` (a file or
    directory, relative or absolute)."""
    if is_global(scope, project_root):
        return True
    target = normalize_path(path, project_root)
    return any(_part_covers(part, target, project_root) for part in scope_parts(scope))


def _part_covers(part: str, target: str, project_root: str | None) -> bool:
    pattern = normalize_path(part, project_root)
    if not pattern:
        return True
    if is_glob(pattern):
        return bool(_glob_regex(pattern).match(target))
    return covers_literally(pattern, target)


def covers_literally(pattern: str, target: str) -> bool:
    """``scope_covers`` for a normalised, glob-free scope and a normalised path: equal, or a
    descendant on whole components."""
    return target == pattern or target.startswith(pattern + "/")


def narrowness(scope: str | None, area: str, project_root: str | None = None) -> int:
    """How narrow the place is where ``scope`` meets ``area`` (``scope_overlaps``): the length of
    the longest literal part among its paths that overlap it, as the edit guard ranks rules
    (``src/billing/`` before ``**/*.py``); 0 when none does."""
    parts = [normalize_path(part, project_root) for part in scope_parts(scope or "")
             if scope_overlaps(part, area, project_root)]
    return max((len(_literal_prefix(part) if is_glob(part) else part) for part in parts), default=0)


def _literal_prefix(pattern: str) -> str:
    """The whole components of a glob before its first wildcard ("src/pkg/**/*.py" → "src/pkg")."""
    parts = []
    for part in pattern.split("/"):
        if is_glob(part):
            break
        parts.append(part)
    return "/".join(parts)


_OVERLAP_CACHE_SIZE = 4096
_overlap_cache: dict[tuple[str, str, str, bool, bool], bool] = {}


def _may_hold_files(path: str, raw: str, project_root: str | None, glob: bool, *, guess: bool = True) -> bool:
    """Whether the last component of ``path`` (normalised; ``raw`` as written) may be a
    directory with files below it: written with a trailing slash, ``**``, a directory in the
    project, or, when the project does not say and ``guess``, a name without an extension
    ("hooks", not "server.py" or "*.sql"); without ``guess``, such a name is a file."""
    if raw.rstrip().endswith(("/", "\\")):
        return True
    last = path.rsplit("/", 1)[-1]
    if last == "**":
        return True
    if not glob and project_root:
        import os

        full = os.path.join(str(project_root), path)
        if os.path.isdir(full):
            return True
        if os.path.exists(full):
            return False
    return guess and "." not in last.lstrip(".")


def _ends(component: str) -> tuple[str, str]:
    """The literal text of a glob component before its first and after its last wildcard."""
    first = min(component.find(c) for c in GLOB_CHARS if c in component)
    last = max(component.rfind("*"), component.rfind("?"), component.rfind("]") if "[" in component else -1)
    return component[:first], component[last + 1:] if last >= first else ""


def _components_meet(a: str, b: str) -> bool:
    """Whether one path component can match both ``a`` and ``b`` (either may be a glob; for two
    globs, their literal starts and ends must agree, which ``*.sql`` and ``*.py`` do not)."""
    a_glob, b_glob = is_glob(a), is_glob(b)
    if not a_glob and not b_glob:
        return a == b
    from fnmatch import fnmatchcase

    if not b_glob:
        return fnmatchcase(b, a)
    if not a_glob:
        return fnmatchcase(a, b)
    (a_head, a_tail), (b_head, b_tail) = _ends(a), _ends(b)
    return (a_head.startswith(b_head) or b_head.startswith(a_head)) and (a_tail.endswith(b_tail) or b_tail.endswith(a_tail))


def _paths_meet(a: list[str], a_open: bool, b: list[str], b_open: bool) -> bool:
    """Whether some file lies under both ``a`` and ``b`` (component lists, ``**`` spanning any
    number of components): one may end above the other when its last component may hold files
    (``*_open``)."""
    memo: dict[tuple[int, int], bool] = {}

    def meet(i: int, j: int) -> bool:
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(a) and j == len(b):
            result = True
        elif i == len(a):
            result = a_open or all(c == "**" for c in b[j:])
        elif j == len(b):
            result = b_open or all(c == "**" for c in a[i:])
        elif a[i] == "**":
            result = meet(i + 1, j) or meet(i, j + 1)
        elif b[j] == "**":
            result = meet(i, j + 1) or meet(i + 1, j)
        else:
            result = _components_meet(a[i], b[j]) and meet(i + 1, j + 1)
        memo[key] = result
        return result

    return meet(0, 0)


def _glob_parts(pattern: str) -> list[str]:
    # A glob without a slash names a file at any depth ("*.sql"), as _glob_regex reads it.
    parts = pattern.split("/")
    return parts if len(parts) > 1 or not is_glob(pattern) else ["**", *parts]


def scope_overlaps(scope: str | None, area: str, project_root: str | None = None) -> bool:
    """True when ``scope`` applies to some file of ``area`` — a normalised file, directory or
    glob someone is working on, or several of them separated by commas (either side's list
    overlaps when one of its paths does). A file inside the area counts: working on
    ``src/carriers/`` concerns the rule scoped to ``src/carriers/client.py``, and working on
    ``src/**/*.py`` the rule scoped to ``src/carriers/`` (some of those files are in it), as
    the rule scoped to ``*.sql`` concerns ``migrations/``. With ``project_root``, a stored
    scope written as an absolute path inside it counts as the project-relative one, as in
    ``scope_covers`` (the edit guard)."""
    if is_global(scope, project_root) or not area:
        return True
    areas = scope_parts(area) if "," in area else [area]
    return any(_part_overlaps(part, one, project_root) for part in scope_parts(scope) for one in areas)


class ScopeIndex:
    """Scopes by the whole components before their first wildcard, so that ``overlapping``
    settles with ``scope_overlaps`` only the scopes that can overlap an area: trying every scope
    for every path of a pasted ``git status`` took seconds with a few thousand scoped rules.

    Before either side's first wildcard, components must be equal for a file to lie under both,
    so the literal start of one is the other's or lies above it (``src`` for ``src/**/*.py``
    and ``src/a/``; nothing for ``*.sql``, which is tried for every area)."""

    __slots__ = ("_at", "_below", "_order", "_root")

    def __init__(self, scopes: Iterable[str], project_root: str | None = None) -> None:
        self._root = project_root
        self._order: dict[str, int] = {}
        self._at: dict[str, list[str]] = {}  # literal start -> the scopes with a path starting there
        self._below: dict[str, list[str]] = {}  # literal start -> the scopes with a path starting below it
        for scope in scopes:
            if scope in self._order:
                continue
            self._order[scope] = len(self._order)
            starts = {""} if is_global(scope, project_root) else {
                _literal_prefix(normalize_path(part, project_root)) for part in scope_parts(scope)}
            for start in starts:
                self._at.setdefault(start, []).append(scope)
                components = start.split("/") if start else []
                for depth in range(len(components)):
                    self._below.setdefault("/".join(components[:depth]), []).append(scope)

    def overlapping(self, area: str) -> list[str]:
        """The scopes for which ``scope_overlaps(scope, area, project_root)``, in the order given."""
        candidates: set[str] = set()
        for one in scope_parts(area) if "," in area else [area]:
            start = _literal_prefix(one.rstrip("/"))
            components = start.split("/") if start else []
            for depth in range(len(components) + 1):
                candidates.update(self._at.get("/".join(components[:depth]), ()))
            candidates.update(self._below.get(start, ()))
        return [s for s in sorted(candidates, key=self._order.__getitem__) if scope_overlaps(s, area, self._root)]


def _part_overlaps(scope: str, area: str, project_root: str | None) -> bool:
    pattern = normalize_path(scope, project_root)
    # An area ending in "/" was written as a directory (work_area keeps the slash).
    written_as_directory = area.endswith("/")
    area = area.rstrip("/")
    if not pattern or not area:
        return True
    pattern_glob, area_glob = is_glob(pattern), is_glob(area)
    if not pattern_glob and not area_glob:
        return covers_literally(pattern, area) or covers_literally(area, pattern)
    # Whether a name without a glob holds files is read off the project as it is now (a
    # directory may appear later), so those answers are part of the key, not of the cached value.
    # A path being worked on that the project does not have yet is a file unless written with a
    # slash: a new Dockerfile is not a directory that *.sql files could be in. A stored scope
    # keeps the guess by extension ("scanner-app" is the directory its rule was written for), as
    # does an area asked about with no project to look in.
    area_open = written_as_directory or _may_hold_files(area, area, project_root, area_glob,
                                                        guess=project_root is None)
    pattern_open = _may_hold_files(pattern, str(scope), project_root, pattern_glob)
    key = (pattern, str(scope), area, area_open, pattern_open)
    cached = _overlap_cache.get(key)
    if cached is not None:
        return cached
    if pattern_glob and not area_glob and _glob_regex(pattern).match(area):
        result = True  # exactly what the edit guard says for a file (scope_covers)
    elif pattern_glob and not area_glob and not area_open:
        result = False
    elif area_glob and not pattern_glob and _glob_regex(area).match(pattern):
        result = True
    else:
        result = _paths_meet(_glob_parts(pattern), pattern_open, _glob_parts(area), area_open)
    if len(_overlap_cache) >= _OVERLAP_CACHE_SIZE:
        _overlap_cache.clear()
    _overlap_cache[key] = result
    return result
