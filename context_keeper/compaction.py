"""Compaction loss check: snapshot the live (active and superseded) entries before a compaction,
compare after.

Files in ``.context/`` (shapes as in COMPAT.md; extra keys are additions):

- ``compaction_snapshot.json`` ``{"timestamp", "trigger", "session_id", "entries": {decisions,
  pipelines, constraints}, "counts"}`` — the non-deprecated entries when PreCompact last fired,
  in any session.
- ``sessions/<session>.compaction_snapshot.json`` — the same snapshot, kept for the session that
  compacted until its own Stop or SessionStart(compact) has compared the store with it. The
  check is that session's: another session's Stop must not use it up (its session start would
  be told a report made before the loss), nor its PreCompact replace it. Its presence is the
  pending mark, so the Stop hook costs one ``exists`` call the rest of the time.
- ``compaction_report.json`` ``{"timestamp", "snapshot_timestamp", "session_id", "status":
  "clean" | "discrepancies_found", "missing_entries": [{type, id, summary, entry}],
  "modified_entries": [{type, id, summary, changes: {field: {before, after}}}], "missing_count",
  "modified_count", "checked_count", "checked_superseded_count"}`` — the last check, read by
  ``Service.get_compaction_report`` and by the checked session's next SessionStart.
- ``sessions/<session>.compaction_failed.json`` ``{"error"}`` — that session's check could not run.

What counts as loss: an entry of the snapshot that is gone from the store, or whose fields
differ while no tool has stamped it since. Every change made through the tools (update,
deprecate, supersede, merge) stamps ``updated_at``, so deliberate edits after the snapshot are
never reported; hand edits, reverted files and clobbered stores are. A stamp later than the
entry's own ``updated_at`` in the snapshot is a tool's (later than the snapshot itself, for an
entry that had none: a version a revert brings back may carry a stamp after the snapshot's
time, from a clock ahead of the hook's). A stamp that merely differs is not proof: a file reverted to an older version (git checkout, an editor
saving a stale buffer) brings an older stamp back, and that is a loss. Yet the server's clock
may run behind the hook's (a container, a VM, an NTP step), so a tool edit can stamp an
earlier time than the snapshot's or the entry's previous stamp (written on another clock).
The clock-free evidence is the last-good copy, which every tool write refreshes: the
snapshot keeps the (mtime_ns, size, inode) of each file's copy, and an entry with a different
``updated_at`` counts as a tool edit when the copy was rewritten since and holds exactly that
version of the entry. A revert followed by a tool write to another entry of the same file goes
unreported: that write put the reverted version in the copy too.
"""

from __future__ import annotations

import contextlib
import os
import time

from context_keeper.bounded_read import CACHE_LIMIT, STORE_FILE_LIMIT, read_regular

SNAPSHOT_FILE = "compaction_snapshot.json"
REPORT_FILE = "compaction_report.json"
LEGACY_PENDING_FILE = "compaction_pending_state.json"  # the project-wide mark of earlier versions
IGNORED_FIELDS = frozenset({"verified_at", "verified_sha"})  # re-verification is not a loss
MAX_NOTE_ITEMS = 12

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from datetime import datetime
    from typing import Any


def _context(root: str) -> str:
    return os.path.join(str(root), ".context")


def _pending_name(session_id: object) -> str:
    from context_keeper.hooks.state import COMPACTION_SNAPSHOT_SUFFIX, session_file

    return session_file(session_id, COMPACTION_SNAPSHOT_SUFFIX)


def _failed_name(session_id: object) -> str:
    from context_keeper.hooks.state import COMPACTION_FAILED_SUFFIX, session_file

    return session_file(session_id, COMPACTION_FAILED_SUFFIX)


def _session_field(session_id: object) -> str | None:
    """The session id as the snapshot and report carry it (None when the client sent none)."""
    text = "" if session_id is None else str(session_id).strip()
    return text or None


def pending(root: str, session_id: object = None) -> bool:
    """Whether ``session_id`` compacted and its loss check has not run yet."""
    return os.path.exists(os.path.join(_context(root), _pending_name(session_id)))


def _store(root: str):
    from pathlib import Path

    from context_keeper.store import Store

    return Store(Path(root))


def _now(now: datetime | None) -> datetime:
    from datetime import datetime, timezone

    return now or datetime.now(timezone.utc)


def take_snapshot(root: str, *, session_id: object = None, trigger: str | None = None,
                  now: datetime | None = None) -> dict[str, Any]:
    """Write the snapshot of the non-deprecated (active and superseded) entries and mark a check
    as pending for ``session_id``."""
    from context_keeper.model import KINDS, now_iso

    store = _store(root)
    timestamp = now_iso(_now(now))
    entries: dict[str, list] = {}
    copies: dict[str, list[int] | None] = {}
    unreadable: list[str] = []
    for kind in KINDS.values():
        state = store.state(kind)
        if state.error is not None:
            # Left out rather than snapshotted empty (which would report false losses); the
            # readable files are still covered.
            unreadable.append(kind.filename)
            continue
        entries[kind.plural] = [dict(e) for e in state.entries if e.get("status", "active") != "deprecated"]
        copy = store.last_good_copy(kind)
        copies[kind.plural] = _copy_stamp(str(copy)) if copy is not None else None
    snapshot = {
        "timestamp": timestamp,
        "trigger": trigger,
        "session_id": _session_field(session_id),
        "entries": entries,
        "counts": {plural: len(items) for plural, items in entries.items()},
        "last_good": copies,
    }
    if unreadable:
        snapshot["unreadable"] = unreadable
    store.write_sidecar(SNAPSHOT_FILE, snapshot)
    os.makedirs(os.path.dirname(os.path.join(_context(root), _pending_name(session_id))), exist_ok=True)
    # The session's own copy is read only by this code: compact, it costs a fifth of the shared
    # one to write (a pretty-printed second copy doubled PreCompact's time on a large store).
    store.write_sidecar(_pending_name(session_id), snapshot, compact=True)
    _remove(os.path.join(_context(root), LEGACY_PENDING_FILE))  # would never be cleared now
    return snapshot


def _copy_stamp(path: str) -> list[int] | None:
    # The ctime as the hook caches stamp it: a copy rewritten in place with its mtime put back
    # still counts as rewritten.
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns]


def _copy_unchanged(path: str, recorded: Any) -> bool:
    """Whether the copy at ``path`` still has the ``recorded`` stamp. Snapshots from before the
    ctime joined the stamp recorded three numbers; those are compared on those three."""
    now = _copy_stamp(path)
    if now is None or not isinstance(recorded, list) or len(recorded) not in (3, 4):
        return now == recorded
    return now[:len(recorded)] == recorded


def compare(snapshot: Mapping[str, Any], current: Mapping[str, Sequence[Mapping[str, Any]]],
            *, now: datetime | None = None,
            written_since: Callable[[str], Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The report for ``snapshot`` against ``current`` ({plural: entries}). Pure but for
    ``written_since(plural)``: {id: entry} as the tools wrote them after the snapshot (from the
    last-good copy; empty when it was not rewritten), asked only about a stamp that moved back."""
    from context_keeper.model import BY_PLURAL, entry_title, id_sort_key, now_iso, parse_time

    taken = parse_time(snapshot.get("timestamp"))
    missing: list[dict] = []
    modified: list[dict] = []
    checked = superseded = 0
    entries = snapshot.get("entries")
    for plural, before_items in (entries.items() if isinstance(entries, dict) else ()):
        kind = BY_PLURAL.get(plural)
        if kind is None or not isinstance(before_items, list):
            continue
        now_by_id = {e.get("id"): e for e in current.get(plural, ())}
        for before in before_items:
            if not isinstance(before, dict) or not isinstance(before.get("id"), str) or not before["id"]:
                continue
            checked += 1
            superseded += before.get("status") == "superseded"
            entry_id = before["id"]
            after = now_by_id.get(entry_id)
            if after is None:
                missing.append({"type": kind.name, "id": entry_id, "summary": entry_title(kind, before), "entry": before})
                continue
            changed_at = parse_time(after.get("updated_at"))
            stamped = parse_time(before.get("updated_at"))
            # A tool stamped it since the snapshot: deliberate. Its own earlier stamp is the
            # measure when it has one; the snapshot's time only for an entry that had none, as
            # a version brought back by a revert can be stamped after the snapshot by a clock
            # ahead of the hook's.
            since = stamped if stamped is not None else taken
            if changed_at is not None and since is not None and changed_at > since:
                continue
            if (after.get("updated_at") and after.get("updated_at") != before.get("updated_at")
                    and written_since is not None and written_since(plural).get(entry_id) == after):
                continue  # stamped by a tool whose clock is behind: that write left this very version
            changes = {
                key: {"before": before.get(key), "after": after.get(key)}
                for key in sorted(set(before) | set(after))
                if key not in IGNORED_FIELDS and before.get(key) != after.get(key)
            }
            if changes:
                modified.append({"type": kind.name, "id": entry_id, "summary": entry_title(kind, after), "changes": changes})
    missing.sort(key=lambda m: id_sort_key(m["id"]))
    modified.sort(key=lambda m: id_sort_key(m["id"]))
    return {
        "timestamp": now_iso(_now(now)),
        "snapshot_timestamp": snapshot.get("timestamp"),
        "status": "discrepancies_found" if missing or modified else "clean",
        "missing_entries": missing,
        "modified_entries": modified,
        "missing_count": len(missing),
        "modified_count": len(modified),
        "checked_count": checked,
        "checked_superseded_count": superseded,  # the rest of checked_count are active
    }


def check_pending(root: str, *, session_id: object = None, now: datetime | None = None) -> dict[str, Any] | None:
    """Compare the store with ``session_id``'s pending snapshot, write the report, clear the
    pending mark."""
    from context_keeper.model import KINDS

    store = _store(root)
    marker = os.path.join(_context(root), _pending_name(session_id))
    # A link there is no snapshot of ours (a cloned repository can commit one leading to anything).
    snapshot = store.read_sidecar(_pending_name(session_id), follow_links=False)
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("entries"), dict):
        _remove(marker)  # missing, or damaged past use: nothing to compare with
        return None
    current: dict[str, tuple] = {}
    unreadable = snapshot.get("unreadable")
    unchecked: list[str] = [name for name in unreadable if isinstance(name, str)] if isinstance(unreadable, list) else []
    for kind in KINDS.values():
        state = store.state(kind)
        if state.error is not None:
            unchecked.append(kind.filename)  # an unreadable file is not a lost entry: not compared
            continue
        current[kind.plural] = state.entries
    compared = dict(snapshot, entries={plural: items for plural, items in snapshot["entries"].items()
                                       if plural in current})
    report = compare(compared, current, now=now, written_since=_written_since(store, snapshot.get("last_good")))
    report["session_id"] = _session_field(session_id)
    if unchecked:
        report["unchecked_files"] = sorted(set(unchecked))
    store.write_sidecar(REPORT_FILE, report)
    _remove(marker)
    _remove(os.path.join(_context(root), _failed_name(session_id)))
    return report


def check_pending_in_hook(root: str, log: Callable[[str], None], *, session_id: object = None) -> str | None:
    """``check_pending`` for a hook, whose injection must not be lost to it: any failure (a full
    disk, a directory where the report goes, a snapshot damaged in a way nobody foresaw) is
    logged through ``log`` and the pending mark removed, so the next Stop or session start does
    not fail the same way again. Returns a line saying the check could not run, or None."""
    try:
        check_pending(root, session_id=session_id)
    except Exception as exc:  # noqa: BLE001 - the documented boundary: the check is an extra, the summary is not
        log(f"compaction check failed, not retried for this compaction: {type(exc).__name__}: {exc}")
        try:
            _remove(os.path.join(_context(root), _pending_name(session_id)))
        except OSError:
            pass  # the next hook tries again, and logs again
        # Left for the session start after a Stop hook that failed (unless writing is what
        # fails, as on a full disk). Not in the report file, whose shape clients read.
        with contextlib.suppress(Exception):
            _store(root).write_sidecar(_failed_name(session_id), {"error": type(exc).__name__})
        return _failed_note(type(exc).__name__)
    return None


def _written_since(store: Any, stamps: Any) -> Callable[[str], Mapping[str, Any]] | None:
    """``compare``'s ``written_since`` for the last-good copies the snapshot recorded (None for a
    snapshot from a version that recorded none). Each copy is read at most once, when asked."""
    if not isinstance(stamps, dict):
        return None
    from context_keeper.model import BY_PLURAL
    from context_keeper.store import parse_bytes

    read: dict[str, Mapping[str, Any]] = {}

    def written(plural: str) -> Mapping[str, Any]:
        if plural not in read:
            read[plural] = {}
            kind = BY_PLURAL.get(plural)
            copy = store.last_good_copy(kind) if kind is not None and plural in stamps else None
            path = str(copy) if copy is not None else None
            if path is not None and not _copy_unchanged(path, stamps[plural]):
                try:
                    data = read_regular(path, STORE_FILE_LIMIT)
                except OSError:
                    return read[plural]
                state = parse_bytes(kind, store.backup_path(kind), data)
                read[plural] = state.entries_by_id if state.error is None else {}
        return read[plural]

    return written


def _remove(path: str) -> None:
    from context_keeper.confine import leads_out
    from context_keeper.store_owner import store_owner

    if leads_out(os.path.dirname(path), store_owner(os.path.abspath(path))) is not None:
        return  # sessions/ linked out of the project: that file is not this project's to delete
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


RECENT_REPORT_S = 15 * 60


def session_note(root: str, *, session_id: object = None, max_age_s: float | None = None,
                 now: float | None = None) -> str | None:
    """The compaction check of ``session_id`` as factual text for its post-compaction
    SessionStart: the newer of the report (when it is of this session's check) and a note that
    this session's check could not run. With ``max_age_s``, one written longer ago than that is
    not shown: without a snapshot taken for this compaction, the report left by an earlier one
    would read as this one's."""
    from context_keeper.hooks import leanjson

    found = []
    for name in (REPORT_FILE, _failed_name(session_id)):
        path = os.path.join(_context(root), name)
        try:
            # The session's own note is never a link; a link there leads to no note of ours.
            data = leanjson.loads(read_regular(path, CACHE_LIMIT, follow_links=name == REPORT_FILE))
            written = os.stat(path).st_mtime
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and (name != REPORT_FILE or _reports_on(data, session_id)):
            found.append((written, name, data))
    if not found:
        return None
    written, name, data = max(found, key=lambda item: item[0])
    if max_age_s is not None and (time.time() if now is None else now) - written > max_age_s:
        return None
    if name != REPORT_FILE:
        return _failed_note(data.get("error") if isinstance(data.get("error"), str) else "an error")
    return describe(data)


def _reports_on(report: Mapping[str, Any], session_id: object) -> bool:
    """Whether ``report`` may be told to ``session_id``: it is of that session's check, or one
    of them does not say which session it is (a client that sends no id, a report written
    before reports named their session)."""
    checked, asking = _session_field(report.get("session_id")), _session_field(session_id)
    return checked is None or asking is None or checked == asking


def _failed_note(error: str) -> str:
    from context_keeper.render import clip

    return (f"Compaction check: it could not run ({clip(error, 60)}), so what the compaction may have lost is "
            "not known; .context/hook.log has the details.")


def describe(report: Mapping[str, Any]) -> str | None:
    from context_keeper.render import clip, counted

    when = report.get("snapshot_timestamp") or "the last compaction"
    missing = [m for m in report.get("missing_entries") or [] if isinstance(m, dict)]
    modified = [m for m in report.get("modified_entries") or [] if isinstance(m, dict)]
    unchecked = [clip(f, 40) for f in report.get("unchecked_files") or [] if isinstance(f, str)]
    not_checked = (f" Not checked: {', '.join(unchecked)} (does not parse; `context-keeper doctor` shows where)."
                   if unchecked else "")
    if report.get("status") == "clean" or not (missing or modified):
        checked = report.get("checked_count")
        if checked == 0 and not unchecked:
            return None  # nothing was recorded before the compaction: nothing to say
        superseded = report.get("checked_superseded_count")
        if not isinstance(checked, int):
            count, checked = "all entries", None
        elif not isinstance(superseded, int):  # a report from before superseded entries were counted
            count = counted(checked, "entry", "entries")
        elif superseded:
            count = f"{counted(checked, 'entry', 'entries')} ({checked - superseded} active, {superseded} superseded)"
        else:
            count = counted(checked, "active entry", "active entries")
        if checked is not None:
            count = ("the " if checked == 1 else "all ") + count
        return (f"Compaction check: {count} recorded before the compaction (snapshot {when}) "
                f"{'is' if checked == 1 else 'are'} unchanged in the store.{not_checked}")
    lines = [
        f"Compaction check: the store differs from the snapshot taken before the compaction ({when}) "
        f"in ways the tools did not record — {counted(len(missing), 'entry', 'entries')} missing, "
        f"{len(modified)} changed:"
    ]
    items = [("missing", m) for m in missing] + [("changed", m) for m in modified]
    for what, item in items[:MAX_NOTE_ITEMS]:
        entry = item.get("entry") if isinstance(item.get("entry"), dict) else {}
        entry_id = clip(item.get("id") or entry.get("id") or "?", 40)
        summary = clip(item.get("summary") or entry.get("summary") or entry.get("rule") or entry.get("name") or "", 160)
        detail = ""
        if what == "changed" and isinstance(item.get("changes"), dict):
            detail = " (fields: " + ", ".join(clip(k, 30) for k in list(item["changes"])[:6]) + ")"
        lines.append(f"- {entry_id} {what}{detail}: {summary}")
    if len(items) > MAX_NOTE_ITEMS:
        lines.append(f"- … and {len(items) - MAX_NOTE_ITEMS} more")
    lines.append("These may be deliberate hand edits by the user: ask before restoring anything. "
                 "get_compaction_report has the before/after values and each missing entry in full."
                 + not_checked)
    return "\n".join(lines)
