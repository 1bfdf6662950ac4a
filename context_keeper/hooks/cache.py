"""The hooks' derived cache: what they say, computed once per store change.

``.context/hook_state.json`` holds the session-start summary, the subagent briefing, one
quality hint and a scope index (which entries apply to which paths), keyed on the stamps
(mtime_ns, size, inode) of the store files and ``config.json``. ``hook_lines_state.json`` holds
the rendered line of every indexed entry, read only when a hook has something to inject. Both
names match the ``*_state.json`` pattern that ``context-keeper init`` puts in
``.context/.gitignore``.

Two paths:

- **fast** (``locate`` → ``read``): stdlib ``os`` + ``leanjson`` only. No store, no ``re``,
  no ``pathlib``. Serves every hook invocation while the store is unchanged.
- **slow** (``build``): the core (Store, summary, quality, render, scope, project). Runs when
  the stamps moved, or the first time a (env, cwd) combination is seen.

Project resolution belongs to ``context_keeper.project.resolve_project``. The fast path only
*guesses* the root with a cheap walk and accepts the guess when ``resolve_project`` already
mapped the same inputs to that root (the ``resolved`` keys recorded by the slow path). Any
other case goes through ``resolve_project``. The guess walks the same directories in the same
order, so a ``.context/`` appearing nearer than the cached root changes the guess and forces
the slow path.
"""

from __future__ import annotations

import os
import sys

from context_keeper.hooks import leanjson

CONTEXT_DIR = ".context"  # == context_keeper.project.CONTEXT_DIR (pinned by a test)
ENV_PROJECT = "CONTEXT_KEEPER_PROJECT"
ENV_CLIENT_PROJECT = "CLAUDE_PROJECT_DIR"
CACHE_FILE = "hook_state.json"
LINES_FILE = "hook_lines_state.json"
FORMAT = 2
STAMPED = ("decisions.json", "pipelines.json", "constraints.json", "config.json")
MAX_RESOLVED_KEYS = 32
SUMMARY_BUDGET = 2000  # tokens; the get_project_summary default
BRIEFING_BUDGET = 600
MAX_TAG_DECISIONS = 5

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


# ------------------------------------------------------------------ fast path


def stamps(context_dir: str) -> dict[str, list[int] | None]:
    out: dict[str, list[int] | None] = {}
    for name in STAMPED:
        try:
            st = os.stat(os.path.join(context_dir, name))
        except FileNotFoundError:
            out[name] = None
        else:
            out[name] = [st.st_mtime_ns, st.st_size, st.st_ino]
    return out


def resolution_key(env: Mapping[str, str], cwd: str | None) -> str:
    return "\x1f".join((env.get(ENV_PROJECT, ""), env.get(ENV_CLIENT_PROJECT, ""), cwd or os.getcwd()))


def _walk_up(start: str) -> str | None:
    directory = start
    while True:
        if os.path.isdir(os.path.join(directory, CONTEXT_DIR)):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def guess_root(env: Mapping[str, str], cwd: str | None) -> tuple[str | None, bool]:
    """A cheap guess at the project root: ``(root or None, certain_there_is_none)``.

    ``(None, True)`` means no candidate directory has a ``.context/``, so whatever
    ``resolve_project`` would return, the hooks have nothing to say there.
    """
    explicit = env.get(ENV_PROJECT)
    if explicit:
        path = os.path.expanduser(explicit)
        if not os.path.isabs(path):
            return None, False  # resolve_project reports this; let it
        path = os.path.realpath(path)
        return (path, False) if os.path.isdir(os.path.join(path, CONTEXT_DIR)) else (None, True)
    starts = [env[ENV_CLIENT_PROJECT]] if env.get(ENV_CLIENT_PROJECT) else []
    starts.append(cwd or os.getcwd())
    for start in starts:
        try:
            found = _walk_up(os.path.realpath(os.path.expanduser(start)))
        except (OSError, ValueError):
            return None, False
        if found is not None:
            return found, False
    return None, True


def _read_json(path: str) -> Any:
    try:
        with open(path, "rb") as handle:
            return leanjson.loads(handle.read())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def read(root: str) -> dict | None:
    data = _read_json(os.path.join(root, CONTEXT_DIR, CACHE_FILE))
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("root") != root:
        return None
    return data


def is_fresh(data: Mapping[str, Any], root: str) -> bool:
    return data.get("stamps") == stamps(os.path.join(root, CONTEXT_DIR))


def lines(root: str, ids: list[str]) -> dict[str, str]:
    data = _read_json(os.path.join(root, CONTEXT_DIR, LINES_FILE))
    if not isinstance(data, dict):
        return {}
    return {i: data[i] for i in ids if isinstance(data.get(i), str)}


def locate(env: Mapping[str, str], cwd: str | None) -> tuple[str | None, dict | None]:
    """``(root, cache)`` for this call; ``(None, None)`` when there is no project to talk about.

    Fast when the store is unchanged and these inputs were resolved before; otherwise resolves
    with ``resolve_project`` and (re)builds the cache.
    """
    guess, certainly_none = guess_root(env, cwd)
    if certainly_none:
        return None, None
    key = resolution_key(env, cwd)
    data = read(guess) if guess else None
    if data is not None and key in data.get("resolved", ()) and is_fresh(data, guess):
        return guess, data
    from context_keeper.errors import ContextKeeperError
    from context_keeper.project import resolve_project

    try:
        root = str(resolve_project(None, env=env, cwd=cwd))
    except ContextKeeperError:
        return None, None
    if not os.path.isdir(os.path.join(root, CONTEXT_DIR)):
        return None, None
    if data is None or root != guess:
        data = read(root)
    if data is None or not is_fresh(data, root):
        data = build(root, extra_keys=[key])
    elif key not in data.get("resolved", ()):
        data = _with_key(root, data, key)
    return root, data


# ------------------------------------------------------------------ slow path


_SITE_DONE = False


def heavy() -> None:
    """Make the installed dependencies importable (``filelock`` for store writes, the stemmer
    for searches) before using them.

    The launchers may run Python with ``-S`` (no ``site``: ~15 ms less per hook). Reading the
    store and rebuilding this cache need only the standard library, so only the hooks that
    write through the store lock or search call this.
    """
    global _SITE_DONE
    if _SITE_DONE:
        return
    _SITE_DONE = True
    if sys.flags.no_site:
        import site

        site.main()


def _with_key(root: str, data: dict, key: str) -> dict:
    keys = [k for k in data.get("resolved", []) if k != key][-(MAX_RESOLVED_KEYS - 1):] + [key]
    data = dict(data, resolved=keys)
    _write(os.path.join(root, CONTEXT_DIR, CACHE_FILE), data)
    return data


def _write(path: str, data: Any) -> None:
    import json

    from context_keeper.fsio import atomic_write_text
    from pathlib import Path

    # Derived data, rebuilt whenever it is missing or stale: atomic, but not worth an fsync.
    atomic_write_text(Path(path), json.dumps(data, ensure_ascii=False, separators=(",", ":")), fsync=False)


def _quality_hint(store: Any) -> str | None:
    from context_keeper.quality import verify_quality
    from context_keeper.render import clip

    report = verify_quality(store, include_isolated=False)  # the link suggestions are the costly part
    order = ("corrupt_file", "malformed_entry", "thin_reasoning", "isolated", "missing_tags", "legacy_entry")
    issues = sorted(report["issues"], key=lambda i: order.index(i["issue"]) if i["issue"] in order else len(order))
    if not issues:
        return None
    first = issues[0]
    others = report["issue_count"] - 1
    more = f" ({others} other quality note{'s' if others != 1 else ''}: verify_quality lists them)" if others > 0 else ""
    if first["issue"] in ("corrupt_file", "malformed_entry"):
        return f"Store health: {clip(first['detail'], 240)}{more}."
    what = {
        "thin_reasoning": "has little recorded reasoning",
        "isolated": "shares tags with " + ", ".join(first.get("suggested_links", [])) + " but has no related_to links",
        "missing_tags": "has no tags",
        "legacy_entry": "predates the current schema",
    }[first["issue"]]
    return f"Store quality note: {first['id']} ({clip(first.get('summary', ''), 80)}) {what}{more}."


def _scope_of(value: Any, root: str) -> tuple[str, str, bool] | None:
    """``(normalised scope, literal prefix, is_glob)`` or None for global/unusable scopes."""
    from context_keeper.scope import is_global, normalize_path

    if not isinstance(value, str) or is_global(value):
        return None
    norm = normalize_path(value, root)
    if not norm:
        return None
    cut = min((norm.index(c) for c in "*?[" if c in norm), default=-1)
    return norm, (norm if cut < 0 else norm[:cut]), cut >= 0


def build(root: str, extra_keys: list[str] = ()) -> dict:
    """Recompute the cache from the store and write both files. Slow path only."""
    from pathlib import Path

    from context_keeper import render
    from context_keeper.model import KINDS
    from context_keeper.store import Store
    from context_keeper.summary import build_summary

    context_dir = os.path.join(root, CONTEXT_DIR)
    before = stamps(context_dir)  # taken first: a write racing with us makes the cache look stale
    previous = read(root) or {}
    store = Store(Path(root))
    config = store.config()[0]
    states = {kind.name: store.state(kind) for kind in KINDS.values()}
    entries = {name: state.entries for name, state in states.items()}
    name = config.get("project_name") or os.path.basename(root)
    summary = build_summary(name, entries["decision"], entries["pipeline"], entries["constraint"], token_budget=SUMMARY_BUDGET)
    briefing = build_summary(name, entries["decision"], entries["pipeline"], entries["constraint"], token_budget=BRIEFING_BUDGET)
    warnings = [str(s.error) for s in states.values() if s.error is not None]

    scoped: list[list] = []
    tag_index: dict[str, list[str]] = {}
    texts: dict[str, str] = {}
    for entry in entries["constraint"]:
        if entry.get("status", "active") != "active":
            continue
        found = _scope_of(entry.get("scope"), root)
        if found:
            scoped.append([entry["id"], *found, "constraint"])
            texts[entry["id"]] = render.constraint_line(entry)
    for entry in entries["decision"]:
        if entry.get("status", "active") != "active":
            continue
        indexed = False
        for value in [entry.get("scope"), *[t for t in entry.get("tags", []) if isinstance(t, str) and "/" in t]]:
            found = _scope_of(value, root)
            if found:
                scoped.append([entry["id"], *found, "decision"])
                indexed = True
        for tag in {t.strip().lower() for t in entry.get("tags", []) if isinstance(t, str) and "/" not in t and t.strip()}:
            tag_index.setdefault(tag, []).append(entry["id"])
            indexed = True
        if indexed:
            texts[entry["id"]] = render.decision_line(entry, why_chars=140)

    data = {
        "format": FORMAT,
        "root": root,
        "stamps": before,
        "resolved": list(dict.fromkeys([*previous.get("resolved", []), *extra_keys]))[-MAX_RESOLVED_KEYS:],
        "project_name": name,
        "counts": summary["counts"],
        "summary": summary["summary"],
        "briefing": briefing["summary"],
        "quality_hint": _quality_hint(store),
        "warnings": warnings,
        "scoped": scoped,
        "tags": tag_index,
    }
    _write(os.path.join(context_dir, LINES_FILE), texts)
    _write(os.path.join(context_dir, CACHE_FILE), data)
    return data


def ensure(root: str) -> dict:
    """The cache for ``root`` (already resolved), rebuilt if the store changed."""
    data = read(root)
    if data is None or not is_fresh(data, root):
        data = build(root)
    return data
