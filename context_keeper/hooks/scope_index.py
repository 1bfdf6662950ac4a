"""The edit guard's derived index: which entries apply to which paths, and where they are.

``.context/hook_scope_state.json`` holds one part per source file, stamped with that file's
``cache.stamps``: for ``constraints.json`` the active constraints with a non-global ``scope``,
for ``decisions.json`` the active decisions with a ``scope``, a path-like tag or any plain tag.
A part has ``scoped`` rows ``[id, normalised scope, literal prefix, is_glob, kind]`` (one per
path a scope lists, ``scope.scope_parts``), ``tags`` (plain tag -> decision ids), ``absolute``
(absolute constraints), ``at`` (id -> the item's character offset in the file), ``keys`` (id ->
the session seen-key of its content, ``state.entry_key``) and, for a broken file, ``problem``
(what is wrong with it, in the store's words). A change to one file rebuilds its part only;
pipelines and config are not read at all.

Built from the raw JSON, not through ``Store`` (but for a broken file's ``problem``), and
without rendering anything: an edit right after a hand edit (or a ``git pull``) pays for one
scan of the changed file, not for the whole core. The few entries an edit shows are read back
at their offsets and rendered then. Items that are not plainly well-formed (wrong types, odd
ids, unknown status words...) go through ``model.read_entry``, so every entry is read exactly
as the store reads it; only those items pay for the import. A large changed ``decisions.json``
is rebuilt in a background process (``load``), so no edit waits for it.
"""

from __future__ import annotations

import os

from context_keeper.hooks import leanjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

INDEX_FILE = "hook_scope_state.json"
# 5: parts carry "keys"; 6: a broken file's part says what is wrong ("problem"); 7: a row per
# path a scope lists (a 6 index held "a/, b/" as one path that covers nothing)
FORMAT = 7
LAST_GOOD_DIR = ".last-good"  # == store.BACKUP_DIR (pinned by a test)
DEFER_BYTES = 512 * 1024  # decisions.json beyond this (~400 entries) is rebuilt in the background
PENDING_S = 30.0  # a background rebuild not done by then is assumed lost and started again
SOURCES = {"constraint": ("con", "constraints.json"), "decision": ("dec", "decisions.json")}
STATUSES = ("active", "superseded", "deprecated")  # == model.STATUSES (pinned by a test)
HARDNESS = ("absolute", "advisory")  # == model.HARDNESS
_TEXT_FIELDS = {
    "constraint": ("rule", "reason", "scope"),
    "decision": ("summary", "why_chosen", "scope"),
}
_WS = " \t\n\r"
_ASCII_DIGITS = frozenset("0123456789")
_ASCII_ALNUM = _ASCII_DIGITS | frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def stamps(context_dir: str) -> dict[str, list[int] | None]:
    from context_keeper.hooks.cache import stamps as file_stamps

    return file_stamps(context_dir, tuple(name for _, name in SOURCES.values()))


def load(root: str, *, defer: bool = True) -> dict:
    """The index for ``root``: each file's part rebuilt first if that file changed.

    A changed ``decisions.json`` larger than ``DEFER_BYTES`` is the one exception (with
    ``defer``): its part is rebuilt by a background process, and this call answers with the
    constraints (always exact) and no decisions. Decisions for this area then arrive with the
    next edit, since nothing unseen is marked as shown.
    """
    context_dir = os.path.join(root, ".context")
    data = _read(os.path.join(context_dir, INDEX_FILE))
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("root") != root:
        data = {"format": FORMAT, "root": root, "parts": {}}
        try:  # rendered lines that earlier versions kept beside the index
            os.remove(os.path.join(context_dir, "hook_lines_state.json"))
        except OSError:
            pass
    current = stamps(context_dir)
    parts = dict(data.get("parts") or {})
    stale = [kind for kind, (_, name) in SOURCES.items() if not _fresh(parts.get(kind), current[name], context_dir, name)]
    if not stale:
        return _view(parts)
    from context_keeper.hooks.cache import write_json

    path = os.path.join(context_dir, INDEX_FILE)
    decisions_stamp = current[SOURCES["decision"][1]]
    defer = (defer and "decision" in stale and bool(decisions_stamp) and decisions_stamp[1] > DEFER_BYTES
             and hasattr(os, "posix_spawn"))
    for kind in stale:
        if not (defer and kind == "decision"):
            parts[kind] = build_part(root, kind, current[SOURCES[kind][1]])
    if not defer:
        write_json(path, {"format": FORMAT, "root": root, "parts": parts})
        return _view(parts)
    pending = data.get("pending")
    started = (isinstance(pending, dict) and pending.get("stamp") == decisions_stamp
               and _now() - (pending.get("at") or 0) < PENDING_S)
    if not started or len(stale) > 1:
        marker = pending if started else {"stamp": decisions_stamp, "at": _now()}
        # written before the spawn: the background write must be the last one
        if not write_json(path, {"format": FORMAT, "root": root, "parts": parts, "pending": marker}):
            parts["decision"] = build_part(root, "decision", decisions_stamp)  # nothing can be kept
            return _view(parts)
    if not started and not _spawn_rebuild(root):
        parts["decision"] = build_part(root, "decision", decisions_stamp)
        write_json(path, {"format": FORMAT, "root": root, "parts": parts})
        return _view(parts)
    return _view({k: v for k, v in parts.items() if k != "decision"})


def _fresh(part: Any, stamp: list[int] | None, context_dir: str, name: str) -> bool:
    """``part`` still describes ``name`` (and, for a broken file, its last good copy)."""
    if not isinstance(part, dict) or part.get("stamp", False) != stamp:
        return False
    return not part.get("broken") or part.get("fallback_stamp") == _fallback_stamp(context_dir, name)


def _fallback_stamp(context_dir: str, name: str) -> list[int] | None:
    from context_keeper.hooks.cache import stamps as file_stamps

    return file_stamps(os.path.join(context_dir, LAST_GOOD_DIR), (name,))[name]


def _view(parts: dict) -> dict:
    """The parts merged into what the edit guard reads."""
    view: dict = {"scoped": [], "tags": {}, "absolute": [], "at": {}, "keys": {}, "stamps": {}, "sources": {},
                  "broken": {}, "problems": {}}
    for kind, part in parts.items():
        view["scoped"] += part.get("scoped") or []
        view["tags"].update(part.get("tags") or {})
        view["absolute"] += part.get("absolute") or []
        view["at"].update({entry_id: [kind, offset] for entry_id, offset in (part.get("at") or {}).items()})
        view["keys"].update(part.get("keys") or {})
        view["stamps"][kind] = part.get("stamp")
        view["sources"][kind] = part.get("source") or SOURCES[kind][1]
        if part.get("broken"):  # file name -> whether its entries come from the last good copy
            view["broken"][SOURCES[kind][1]] = part.get("source") != SOURCES[kind][1]
            view["problems"][SOURCES[kind][1]] = part.get("problem")
    return view


def read_back(root: str, index: dict, ids: list[str]) -> dict[str, tuple[str, str]]:
    """The injection line of each of ``ids``, read back from the source files at the offsets
    ``index`` recorded (a file changed since has its part rebuilt first), with the line's
    session seen-key (``state.entry_key``) beside it, taken from the item the line was rendered
    from: what is marked as shown must be the text shown."""
    from context_keeper.hooks.state import entry_key
    from context_keeper.lines import constraint_line, decision_line

    context_dir = os.path.join(root, ".context")
    current = stamps(context_dir)
    at = index.get("at") or {}
    texts: dict[str, tuple[str, bool]] = {}
    out: dict[str, tuple[str, str]] = {}
    for entry_id in ids:
        kind, offset = at.get(entry_id, (None, None))
        if kind not in SOURCES:
            continue
        if kind not in texts:
            name = SOURCES[kind][1]
            source = (index.get("sources") or {}).get(kind) or name
            if (index.get("stamps") or {}).get(kind) != current[name]:  # changed since the index was read
                part = build_part(root, kind, current[name])
                at = {**at, **{i: [kind, o] for i, o in (part.get("at") or {}).items()}}
                source = part["source"]
            texts[kind] = _source(os.path.join(context_dir, source))
        offset = at.get(entry_id, (None, None))[1]
        if offset is None:
            continue
        text, scrub = texts[kind]
        try:
            item, _ = leanjson.scan(text, offset)
        except (ValueError, IndexError):
            continue  # the file changed under us: this call shows less, the next one rebuilds
        entry = _entry(kind, item)
        if entry is None or entry["id"] != entry_id:
            continue
        line = constraint_line(entry) if kind == "constraint" else decision_line(entry, why_chars=140)
        out[entry_id] = (_replace_surrogates(line) if scrub else line, entry_key(entry_id, item))
    return out


def build(root: str) -> dict:
    """Rebuild every part now and write the index (the server's refresh after its writes)."""
    from context_keeper.hooks.cache import write_json

    current = stamps(os.path.join(root, ".context"))
    parts = {kind: build_part(root, kind, current[name]) for kind, (_, name) in SOURCES.items()}
    write_json(os.path.join(root, ".context", INDEX_FILE), {"format": FORMAT, "root": root, "parts": parts})
    return _view(parts)


def build_part(root: str, kind: str, stamp: list[int] | None) -> dict:
    """One file's part: its scoped rows, tags, absolute constraints and item offsets.
    ``stamp`` is the file's stamp taken before reading it (a racing write makes it look stale)."""
    from context_keeper.scope import is_glob, is_global, normalize_path, outside_project, scope_parts

    def scope_rows(value: Any, entry_id: str, *, listed: bool = True) -> list[list]:
        """A row for each path ``value`` lists (``listed``: a scope; a tag names one path)."""
        if not isinstance(value, str) or is_global(value, root):
            return []  # session start shows it (a part naming the project root makes the list global)
        rows = []
        for part in scope_parts(value) if listed else [value]:
            norm = normalize_path(part, root)
            if outside_project(norm):
                continue  # no file of the project is under it
            glob = is_glob(norm)
            prefix = norm[: min(norm.index(c) for c in "*?[" if c in norm)] if glob else norm
            rows.append([entry_id, norm, prefix, glob, kind])
        return rows

    from context_keeper.hooks.state import entry_key

    scoped: list[list] = []
    tag_index: dict[str, list[str]] = {}
    at: dict[str, int] = {}
    keys: dict[str, str] = {}
    absolute: list[str] = []
    fallback_stamp = _fallback_stamp(os.path.join(root, ".context"), SOURCES[kind][1])  # before reading, as stamp
    source, items, broken = _readable(root, SOURCES[kind][1])
    for offset, item, entry in _active_entries(kind, items):
        entry_id = entry["id"]
        if kind == "constraint":
            rows = scope_rows(entry.get("scope"), entry_id)
            if rows:
                scoped.extend(rows)
                at[entry_id], keys[entry_id] = offset, entry_key(entry_id, item)
                if entry.get("hardness", "absolute") == "absolute":
                    absolute.append(entry_id)
            continue
        indexed = False
        tags = entry.get("tags") or ()
        rows = [*scope_rows(entry.get("scope"), entry_id),
                *(row for t in tags if "/" in t for row in scope_rows(t, entry_id, listed=False))]
        if rows:
            scoped.extend(rows)
            indexed = True
        for tag in {t.strip().lower() for t in tags if "/" not in t and t.strip()}:
            tag_index.setdefault(tag, []).append(entry_id)
            indexed = True
        if indexed:
            at[entry_id], keys[entry_id] = offset, entry_key(entry_id, item)
    part = {"stamp": stamp, "scoped": scoped, "tags": tag_index, "absolute": absolute, "at": at, "keys": keys,
            "source": source, "broken": broken}
    if broken:
        part["fallback_stamp"] = fallback_stamp
        part["problem"] = _problem(root, kind)
    return part


def _readable(root: str, filename: str) -> tuple[str, list[tuple[int, Any]], bool]:
    """``(file read, its items, whether the live file is broken)``. A live file that does not
    parse (a bad hand edit) is read from the store's last good copy (``.last-good/``) when there
    is one: the rules it held still apply while someone fixes it."""
    context_dir = os.path.join(root, ".context")
    items = _array_items(_source(os.path.join(context_dir, filename))[0])
    if items is not None:
        return filename, items, False
    # lexists: a link to nothing is a broken store file (as the store reads it), not a missing one
    if not os.path.lexists(os.path.join(context_dir, filename)):
        return filename, [], False
    from context_keeper.confine import leads_out

    if leads_out(os.path.join(context_dir, LAST_GOOD_DIR), root) is not None:
        return filename, [], True  # another project's copy, which the store refuses to read too
    fallback = os.path.join(LAST_GOOD_DIR, filename)
    items = _array_items(_source(os.path.join(context_dir, fallback))[0])
    return (fallback, items, True) if items is not None else (filename, [], True)


def _problem(root: str, kind: str) -> str:
    """What is wrong with a broken source file, in the store's own words (those session start
    and ``doctor`` show: a directory in its place, a link to nothing, the position that does not
    parse). Only a broken file pays for the core's import, once per change of it."""
    from pathlib import Path

    from context_keeper import model
    from context_keeper.store import Store

    try:
        error: Exception | None = Store(Path(root)).state(model.KINDS[kind]).error
    except OSError as exc:  # unreadable (permissions): the OS says why
        error = exc
    return str(error) if error is not None else f".context/{SOURCES[kind][1]} does not parse"


def _now() -> float:
    import time

    return time.time()


def _spawn_rebuild(root: str) -> bool:
    """Started by a hook process, which exits right after: the child needs no reaping."""
    from context_keeper.hooks.cache import spawn

    return spawn("context_keeper.hooks.scope_index", "rebuild_main", root) is not None


def rebuild_main(root: str) -> None:
    """The background rebuild: every stale part, written; failures go to ``hook.log``."""
    try:
        load(root, defer=False)
    except Exception as exc:  # noqa: BLE001 - a detached process has no one else to tell
        from context_keeper.hookio import log_line

        log_line(root if os.path.isdir(os.path.join(root, ".context")) else None, "scope-guard",
                 f"background index rebuild failed: {type(exc).__name__}: {exc}")


def _read(path: str) -> Any:
    from context_keeper.bounded_read import CACHE_LIMIT, read_regular

    try:
        return leanjson.loads(read_regular(path, CACHE_LIMIT))
    except (OSError, ValueError):  # UnicodeDecodeError and nesting too deep are ValueErrors
        return None


def _source(path: str) -> tuple[str, bool]:
    """The file's text and whether it may hold lone surrogates; ``""`` when there is none to
    read, it is not a regular file or too large, or it is not UTF-8 (the store refuses such a
    file too; ``_problem`` says why)."""
    from context_keeper.bounded_read import STORE_FILE_LIMIT, read_regular

    try:
        text = read_regular(path, STORE_FILE_LIMIT).decode("utf-8")  # "utf-8-sig" is slower even without a BOM
    except (OSError, UnicodeDecodeError):
        return "", False
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, "\\u" in text and ("\\ud" in text or "\\uD" in text)


def _array_items(text: str) -> list[tuple[int, Any]] | None:
    """``(offset, item)`` for each item of the JSON array ``text``; None unless the whole text
    is one well-formed array (the store reads nothing from any other file either)."""
    end = len(text)
    pos = _skip(text, 0)
    if pos >= end or text[pos] != "[":
        return None
    pos = _skip(text, pos + 1)
    out: list[tuple[int, Any]] = []
    if pos < end and text[pos] == "]":
        return out if _skip(text, pos + 1) == end else None
    scan = leanjson.scan
    while True:
        try:
            item, after = scan(text, pos)
        except ValueError:
            return None
        out.append((pos, item))
        pos = _skip(text, after)
        if pos >= end:
            return None
        mark = text[pos]
        pos = _skip(text, pos + 1)
        if mark == "]":
            return out if pos == end else None
        if mark != ",":
            return None


def _skip(text: str, pos: int) -> int:
    end = len(text)
    while pos < end and text[pos] in _WS:
        pos += 1
    return pos


def _active_entries(kind: str, items: list[tuple[int, Any]]) -> list[tuple[int, Any, dict]]:
    """``(offset, item, entry)`` for the active entries among a file's items, read as ``Store``
    reads them (the first of duplicate ids wins)."""
    out: list[tuple[int, Any, dict]] = []
    seen: set[str] = set()
    for offset, item in items:
        entry = item if _plain_index_fields(item, kind) else _read_entry(kind, item)
        if entry is None:
            continue
        entry_id = entry["id"]
        if entry_id in seen:
            continue
        seen.add(entry_id)
        if entry.get("status", "active") == "active":
            out.append((offset, item, entry))
    return out


def _plain_index_fields(item: Any, kind: str) -> bool:
    """True when the fields the index uses (id, status, scope, tags, a constraint's hardness)
    are already as ``read_entry`` would leave them (which of them it keeps never depends on
    other fields)."""
    if type(item) is not dict:
        return False
    entry_id = item.get("id")
    status = item.get("status", "active")
    scope = item.get("scope", "")
    tags = item.get("tags", ())
    return (type(entry_id) is str and plain_id(entry_id, SOURCES[kind][0])
            and type(status) is str and status in STATUSES
            and type(scope) is str
            and (tags == () or type(tags) is list and all(type(t) is str for t in tags))
            and (kind != "constraint" or item.get("hardness", "absolute") in HARDNESS))


def _entry(kind: str, item: Any) -> dict | None:
    return _plain(item, kind) or _read_entry(kind, item)


def _plain(item: Any, kind: str) -> dict | None:
    """``item`` itself when every field a rendered line uses is already as ``read_entry`` would
    leave it; None to let ``read_entry`` decide."""
    if not _plain_index_fields(item, kind):
        return None
    for name in _TEXT_FIELDS[kind]:
        value = item.get(name)
        if type(value) is not str and (value is not None or name in item):
            return None
    if kind == "decision" and not item.get("why_chosen") and "rationale" in item:
        return None  # the legacy name: read_entry moves it over
    return item


def plain_id(entry_id: str, prefix: str) -> bool:
    """True when ``entry_id`` is a well-formed id with ``prefix`` (``dec-001``, ``dec-013-a7f3``)
    exactly as written; anything else is left to ``model.parse_id``."""
    parts = entry_id.split("-")
    if len(parts) not in (2, 3) or parts[0] != prefix:
        return False
    number = parts[1]
    if not 1 <= len(number) <= 9 or not set(number) <= _ASCII_DIGITS:
        return False
    return len(parts) == 2 or (1 <= len(parts[2]) <= 16 and set(parts[2]) <= _ASCII_ALNUM)


def _read_entry(kind: str, item: Any) -> dict | None:
    from context_keeper import model

    entry, _ = model.read_entry(model.KINDS[kind], item)
    return entry


def _replace_surrogates(text: str) -> str:
    """Lone surrogates (legal as JSON escapes, not as text) shown as U+FFFD, like the store."""
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
