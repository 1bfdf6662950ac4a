"""The hooks' derived caches: what they say, computed once per store change.

Three files under ``.context/``, all matching the ``*_state.json`` pattern of ``.context/.gitignore``
(``init`` writes it; where a store made by hand has none, ``locate`` adds the same patterns to
``.git/info/exclude``):

- ``hook_roots_state.json``: the (env, cwd) combinations ``resolve_project`` has mapped to this
  root, so later hooks can skip it.
- ``hook_state.json``: the session-start summary, the subagent briefing, one quality hint and
  store warnings, stamped with (mtime_ns, size, inode, ctime_ns) of the store files and ``config.json``.
- ``hook_scope_state.json``: the edit guard's index (``hooks/scope_index.py``), one part per
  file it derives from (``constraints.json``, ``decisions.json``), each stamped with that file.

All three are derived: a read-only ``.context/`` makes hooks slower (nothing is kept), not
silent.

Two paths:

- **fast** (``locate`` → ``summary``): stdlib ``os`` + ``leanjson`` only. No store, no ``re``,
  no ``pathlib``. Serves every hook invocation while the store is unchanged.
- **slow** (``build``): the core (Store, summary, quality). Runs when the stamps moved. The edit
  guard never takes it: its index is rebuilt from the raw files.

Project resolution belongs to ``context_keeper.project.resolve_project``. The fast path only
*guesses* the root with a cheap walk and accepts the guess when ``resolve_project`` already
mapped the same inputs to that root. Any other case goes through ``resolve_project``. The guess
walks the same directories in the same order, so a ``.context/`` appearing nearer than the
recorded root changes the guess and forces the slow path.
"""

from __future__ import annotations

import os
import sys

from context_keeper.gitignore import EXCLUDED, keep_bookkeeping_out_of_git
from context_keeper.hooks import leanjson
from context_keeper.store_owner import CONTEXT_DIR, home_directory, store_owner, walk_up

ENV_PROJECT = "CONTEXT_KEEPER_PROJECT"
ENV_CLIENT_PROJECT = "CLAUDE_PROJECT_DIR"
CACHE_FILE = "hook_state.json"
ROOTS_FILE = "hook_roots_state.json"
SNAPSHOT_FILE = "search_index_state.json"  # == search.snapshot.FILE (pinned by a test)
# What ``refresh`` keeps fresh after the server's own writes (each only once a hook made it).
REFRESHED = (CACHE_FILE, "hook_scope_state.json", SNAPSHOT_FILE)
FORMAT = 6  # 5: stamps carry the ctime; 6: and those of the last good copies read
STAMPED = ("decisions.json", "pipelines.json", "constraints.json", "config.json")
STORE_FILES = STAMPED[:3]  # the ones with a last good copy
LAST_GOOD_DIR = ".last-good"  # == store.BACKUP_DIR (pinned by a test)
MAX_RESOLVED_KEYS = 32
SUMMARY_BUDGET = 2000  # tokens; the get_project_summary default
BRIEFING_BUDGET = 600

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


# ------------------------------------------------------------------ fast path


def stamps(context_dir: str, names: tuple[str, ...] = STAMPED) -> dict[str, list[int] | None]:
    """``[mtime_ns, size, inode, ctime_ns]`` (None when missing) of each of ``names`` in
    ``context_dir``. The ctime as the store's own stamp has it: an in-place edit of the same size
    with the mtime put back (``cp -p``, ``touch -r``) changes nothing else."""
    out: dict[str, list[int] | None] = {}
    for name in names:
        path = os.path.join(context_dir, name)
        try:
            st = os.stat(path)
        except OSError:
            # A symbolic link to nothing (or to itself) is a broken store file, not a missing one:
            # its own stamp, so that mending or removing it is seen (store._file_stamp).
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                out[name] = None
                continue
        out[name] = [st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]
    return out


def resolution_key(env: Mapping[str, str], cwd: str | None) -> str:
    return "\x1f".join((env.get(ENV_PROJECT, ""), env.get(ENV_CLIENT_PROJECT, ""), cwd or os.getcwd()))


def _explicit_root(start: str, home: str) -> str | None:
    """``project._explicit`` for an explicit directory, when it leads to a ``.context/``: the
    working directory's walk, else the repository root or the directory itself."""
    found = _walk_up(start, home)
    if found is not None:
        return found
    directory = start
    while not os.path.exists(os.path.join(directory, ".git")):
        parent = os.path.dirname(directory)
        if parent == directory:
            directory = start  # outside a repository the explicit directory itself is the project
            break
        directory = parent
    return directory if os.path.isdir(os.path.join(directory, CONTEXT_DIR)) else None


def _walk_up(start: str, home: str) -> str | None:
    for directory in walk_up(start, home):  # the directories project._walk_up looks in
        if os.path.isdir(os.path.join(directory, CONTEXT_DIR)):
            return directory
    return None


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
        found = _explicit_root(store_owner(os.path.realpath(path)), home_directory(env))
        if found is not None and os.path.dirname(found) == found:
            return None, False  # the file system root: resolve_project refuses it
        return (found, False) if found is not None else (None, True)
    starts = [env[ENV_CLIENT_PROJECT]] if env.get(ENV_CLIENT_PROJECT) else []
    starts.append(cwd or os.getcwd())
    home = home_directory(env)
    for start in starts:
        try:
            found = _walk_up(os.path.realpath(os.path.expanduser(start)), home)
        except (OSError, ValueError):
            return None, False
        if found is not None:
            return found, False
    return None, True


def _read_json(path: str) -> Any:
    """A cache's JSON, or None (stale) when it is missing, unreadable, not a regular file, too
    large or does not parse: a cloned repository can commit any of these."""
    from context_keeper.bounded_read import CACHE_LIMIT, read_regular

    try:
        return leanjson.loads(read_regular(path, CACHE_LIMIT))
    except (OSError, ValueError):
        return None


def read(root: str) -> dict | None:
    data = _read_json(os.path.join(root, CONTEXT_DIR, CACHE_FILE))
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("root") != root:
        return None
    return data


def is_fresh(data: Mapping[str, Any], root: str) -> bool:
    """The store files are as ``data`` was built from them, and so are the last good copies it
    read for the broken or missing ones (a copy deleted on purpose must not keep its entries)."""
    context_dir = os.path.join(root, CONTEXT_DIR)
    if data.get("stamps") != stamps(context_dir):
        return False
    copies = data.get("copy_stamps")
    return isinstance(copies, dict) and (not copies or copies == stamps(os.path.join(context_dir, LAST_GOOD_DIR),
                                                                       tuple(copies)))


def locate(env: Mapping[str, str], cwd: str | None, event: str = "hook") -> str | None:
    """The project root for this call; None when there is no project to talk about.

    Fast when these inputs were resolved to the guessed root before; otherwise resolves with
    ``resolve_project`` and records the answer. Either way git ignores the bookkeeping of the
    root's ``.context/`` before anything is recorded there (``gitignore.keep_bookkeeping_out_of_git``;
    ``event`` names the hook in the log line that says it added the patterns to ``.git/info/exclude``).
    """
    guess, certainly_none = guess_root(env, cwd)
    if certainly_none or (guess and _linked_out(guess)):
        return None
    key = resolution_key(env, cwd)
    if guess:
        roots = _read_json(os.path.join(guess, CONTEXT_DIR, ROOTS_FILE))
        if isinstance(roots, dict) and roots.get("root") == guess and key in (roots.get("resolved") or ()):
            # Checked here too: an older version's hooks recorded roots in a store without a .gitignore.
            _keep_out_of_git(guess, event)
            return guess
    from context_keeper.errors import ContextKeeperError
    from context_keeper.project import resolve_project

    try:
        root = str(resolve_project(None, env=env, cwd=cwd))
    except ContextKeeperError:
        return None
    if not os.path.isdir(os.path.join(root, CONTEXT_DIR)) or _linked_out(root):
        return None
    _keep_out_of_git(root, event)
    _remember(root, key)
    return root


def _keep_out_of_git(root: str, event: str) -> None:
    """Every hook writes bookkeeping (this roots file, session state, caches): in a ``.context/``
    made by hand they would show as untracked files in git."""
    if keep_bookkeeping_out_of_git(os.path.join(root, CONTEXT_DIR)):
        from context_keeper.hookio import log_line

        log_line(root, event, EXCLUDED)


def _linked_out(root: str) -> bool:
    """``root``'s ``.context`` is a symbolic link out of the project (``confine.context_refusal``),
    which the hooks do not use, as the tools refuse it. Said on stderr: a line in ``hook.log``
    would be written where the link leads."""
    if not os.path.islink(os.path.join(root, CONTEXT_DIR)):
        return False
    from context_keeper.confine import context_refusal

    refused = context_refusal(root)
    if refused is not None:
        sys.stderr.write(f"context-keeper-hook: {refused}\n")
    return refused is not None


def summary(root: str) -> dict:
    """The session-start cache for ``root`` (already resolved), rebuilt if the store changed."""
    data = read(root)
    if data is None or not is_fresh(data, root):
        data = build(root)
    return data


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


def _remember(root: str, key: str) -> None:
    path = os.path.join(root, CONTEXT_DIR, ROOTS_FILE)
    roots = _read_json(path)
    known = (roots.get("resolved") or []) if isinstance(roots, dict) and roots.get("root") == root else []
    keys = [k for k in known if k != key and isinstance(k, str)][-(MAX_RESOLVED_KEYS - 1):] + [key]
    write_json(path, {"root": root, "resolved": keys})


def write_json(path: str, data: Any) -> bool:
    """Replace ``path`` atomically (temp file + rename, named as ``fsio`` names its temp files);
    False when it cannot be written (read-only checkout, full disk): the data is derived, the
    caller has it in hand and the next run computes it again.

    Not worth an fsync, nor the imports ``fsio`` brings.
    """
    directory, name = os.path.split(path)
    text = leanjson.dumps(data).encode("ascii")
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        except OSError:
            return False
        break
    else:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True


def _quality_hint(store: Any) -> str | None:
    from context_keeper.quality import verify_quality

    return quality_hint(verify_quality(store, include_isolated=False))  # the link suggestions are the costly part


# Which note session start shows first; a kind not listed comes after these, in its own words.
QUALITY_NOTE_ORDER = ("malformed_entry", "thin_reasoning", "thin_steps", "isolated", "missing_tags", "legacy_entry")


def quality_hint(report: dict) -> str | None:
    """The one quality note of session start, from a ``verify_quality`` report: the issue that
    matters most, and how many others there are. Any issue kind is worded (from its own
    ``detail`` when there is no phrase for it here): a KeyError at this point once made session
    start and every subagent briefing go silent."""
    from context_keeper.render import clip

    order = QUALITY_NOTE_ORDER
    # A file that does not parse is already one of the store warnings session start shows.
    issues = sorted((i for i in report["issues"] if i["issue"] != "corrupt_file"),
                    key=lambda i: order.index(i["issue"]) if i["issue"] in order else len(order))
    if not issues:
        return None
    first = issues[0]
    others = len(issues) - 1
    more = f" ({others} other quality note{'s' if others != 1 else ''}: verify_quality lists them)" if others > 0 else ""
    detail = clip(first.get("detail", ""), 240).rstrip(".")
    if first["issue"] == "malformed_entry" or "id" not in first:
        return f"Store health: {detail}{more}."
    what = {
        "thin_reasoning": "has little recorded reasoning; update_entry can add why it holds and what it prevents",
        "isolated": "shares tags with " + ", ".join(first.get("suggested_links", [])) + " but has no related_to links",
        "missing_tags": "has no tags",
        "legacy_entry": "was written by an older version: review it and save it with update_entry, which marks it "
                        "as reviewed",
    }.get(first["issue"], f"— {detail}")
    return f"Store quality note: {first['id']} ({clip(first.get('summary', ''), 80)}) {what}{more}."


def build(root: str) -> dict:
    """Recompute the session-start cache from the store and write it. Slow path only."""
    from pathlib import Path

    from context_keeper.lines import neutralize
    from context_keeper.model import KINDS
    from context_keeper.store import Store, project_name_of, readable_entries
    from context_keeper.summary import build_summary

    context_dir = os.path.join(root, CONTEXT_DIR)
    before = stamps(context_dir)  # taken first: a write racing with us makes the cache look stale
    copies_before = stamps(os.path.join(context_dir, LAST_GOOD_DIR), STORE_FILES)
    store = Store(Path(root))
    config, config_warnings = store.config()
    states = {kind.name: store.state(kind) for kind in KINDS.values()}
    # A file broken by a hand edit is read from its last good copy, as the edit guard does: one
    # typo must not tell the agent (and every subagent) that the project has no rules.
    entries, from_backup = {}, set()
    for name, state in states.items():
        entries[name], backed = readable_entries(store, state)
        if backed:
            from_backup.add(name)
    name = project_name_of(config, store.root)[0]
    full = build_summary(name, entries["decision"], entries["pipeline"], entries["constraint"], token_budget=SUMMARY_BUDGET)
    briefing = build_summary(name, entries["decision"], entries["pipeline"], entries["constraint"], token_budget=BRIEFING_BUDGET)
    # config.json included: an unreadable one means defaults (project name, confirm_absolute).
    # Neutralised like every other text here: a path is caller data and may spell the frame's tag.
    warnings = [neutralize(w) for w in (*map(str, config_warnings), *(
        str(s.error) + (" Until it is fixed, its entries here come from its last good copy (.context/.last-good/)."
                        if name in from_backup else "")
        for name, s in states.items() if s.error is not None))]

    data = {
        "format": FORMAT,
        "root": root,
        "stamps": before,
        # A missing or broken file is read from its copy (or warned about because of it): the
        # copy coming, changing or going changes what this cache says.
        "copy_stamps": {s.kind.filename: copies_before[s.kind.filename]
                        for s in states.values() if s.error is not None or before[s.kind.filename] is None},
        "project_name": name,
        "counts": full["counts"],
        "summary": full["summary"],
        "briefing": briefing["summary"],
        "quality_hint": _quality_hint(store),
        "warnings": warnings,
    }
    write_json(os.path.join(context_dir, CACHE_FILE), data)
    return data


def refresh(root: str) -> None:
    """Rebuild whichever derived caches exist for ``root`` (after a write that we made). The
    prompt hook's search index snapshot takes ~0.5 s at 2,000 entries, so it is rebuilt in a
    background process (the next prompt would otherwise pay for it)."""
    from context_keeper.hooks import scope_index

    context_dir = os.path.join(root, CONTEXT_DIR)
    if os.path.exists(os.path.join(context_dir, CACHE_FILE)):
        build(root)
    if os.path.exists(os.path.join(context_dir, scope_index.INDEX_FILE)):
        scope_index.build(root)
    if os.path.exists(os.path.join(context_dir, SNAPSHOT_FILE)):
        pid = spawn("context_keeper.hooks.user_prompt", "rebuild_main", root, site=True)
        if pid is not None:
            # The server lives on: reap the child when it ends, or every rebuild leaves a zombie.
            import threading

            threading.Thread(target=_reap, args=(pid,), daemon=True).start()


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except (ChildProcessError, OSError):
        pass


def spawn(module: str, function: str, root: str, *, site: bool = False) -> int | None:
    """Start ``module.function(root)`` in a detached process: its own session, stdio on
    /dev/null, so a client waiting for a hook's output and exit (or a server's caller) does not
    wait for it. ``site``: the function needs the installed dependencies. Returns the child's
    pid (a long-lived caller must reap it), or None where ``posix_spawn`` is missing (Windows):
    the caller does the work inline or leaves it."""
    start = getattr(os, "posix_spawn", None)
    if start is None or not sys.executable:
        return None
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = f"import sys; sys.path.insert(0, sys.argv[1]); from {module} import {function}; {function}(sys.argv[2])"
    args = [sys.executable, *([] if site else ["-S"]), "-c", code, package_parent, root]
    quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY, 0) for fd in (0, 1, 2)]
    try:
        return start(sys.executable, args, dict(os.environ), file_actions=quiet, setsid=True)
    except (OSError, ValueError, TypeError):
        return None
