"""Per-session memory of what the hooks already told the agent, one file per session.

``.context/sessions/<session_id>.seen`` holds one key per line: ``<entry id>#<content version>``
(``entry_key``), ``commit:<sha>``, ``summary:<hash>``. An entry is keyed by its content too, not
by its id alone: after a pull renumbered entries an id can name another rule, and a teammate's
edit can widen a rule, and either must reach the session. Files written before keys carried the
version hold bare entry ids; they are read as before, but a bare id matches no entry key now, so
such a session is shown each entry once more (better than a changed rule never).
Lines are appended with a single ``O_APPEND`` write, so parallel hooks of the same session (the
agent editing several files at once) and concurrent sessions never lose each other's lines; the
worst race is one entry shown twice. Files untouched for ``STALE_AFTER_S`` are pruned at
session start, as are the session's compaction files beside it (``COMPACTION_SUFFIXES``: the
snapshot its pending loss check compares with, a note that the check could not run; see
compaction.py). A ``sessions/`` that is a symbolic link out of the project (a cloned repository
can commit one) is neither read, written nor pruned: ``refused`` says why, for the hook's log. A
session file that is itself a link (``unknown.seen``, the key of a hook input without a session
id, is the one a repository would commit) is neither read nor written through either; a ``.seen``
file above ``SESSION_LIMIT`` is deleted, so that its session starts remembering again.
Standard library only: this sits on every hook's fast path.
"""

from __future__ import annotations

import os
import time

SESSIONS_DIR = "sessions"
SUFFIX = ".seen"
COMPACTION_SNAPSHOT_SUFFIX = ".compaction_snapshot.json"
COMPACTION_FAILED_SUFFIX = ".compaction_failed.json"
COMPACTION_SUFFIXES = (COMPACTION_SNAPSHOT_SUFFIX, COMPACTION_FAILED_SUFFIX)
STALE_AFTER_S = 7 * 24 * 3600
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")

# The stored fields the hooks' lines are made of (render.entry_line; ``rationale`` is the legacy
# name of why_chosen). A change to any other field (verified_at, tags...) is not worth repeating.
SHOWN_FIELDS = ("rule", "reason", "scope", "hardness", "summary", "why_chosen", "rationale", "name",
                "when_to_invoke", "steps")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


def session_key(session_id: object) -> str:
    """A file-name-safe form of the client's session id (``unknown`` when there is none)."""
    text = str(session_id or "").strip()
    safe = "".join(c if c in _SAFE else "_" for c in text)[:120].strip(".")
    return safe or "unknown"


def entry_key(entry_id: str, item: Mapping) -> str:
    """The seen-key of entry ``entry_id`` whose stored item (as parsed from the file, before any
    defaulting, so every hook computes the same key from whatever it read) is ``item``."""
    import zlib

    shown = repr([item.get(name) for name in SHOWN_FIELDS])
    return f"{entry_id}#{zlib.crc32(shown.encode('utf-8', 'surrogatepass')):08x}"


def session_file(session_id: object, suffix: str) -> str:
    """The path, relative to ``.context/``, of the session's file ending in ``suffix``."""
    return f"{SESSIONS_DIR}/{session_key(session_id)}{suffix}"


def refused(context_dir: str) -> str | None:
    """Why ``sessions/`` is not used (it leads out of the project), or None."""
    from context_keeper.confine import refusal

    return refusal(os.path.join(context_dir, SESSIONS_DIR), os.path.dirname(context_dir),
                   "what the hooks showed this session is not remembered there")


class SessionState:
    def __init__(self, context_dir: str, session_id: object) -> None:
        self.dir = os.path.join(context_dir, SESSIONS_DIR)
        self.path = os.path.join(context_dir, session_file(session_id, SUFFIX))
        self.refused = refused(context_dir)
        # Refused: nothing is remembered, so entries show again, as with a read-only .context/.
        self._seen: set[str] | None = set() if self.refused else None
        self._appendable = True

    def seen(self) -> set[str]:
        if self._seen is None:
            from context_keeper.bounded_read import SESSION_LIMIT, FileTooLarge, NotRegularFile, read_regular

            try:
                # A stray byte only spoils its own line, which then matches no key.
                text = read_regular(self.path, SESSION_LIMIT, follow_links=False).decode("utf-8", "replace")
            except NotRegularFile:
                # A FIFO would block the hook; a link is no file of ours (a cloned repository can
                # commit sessions/unknown.seen leading anywhere). Read as nothing seen, and not
                # appended to: nothing is written through a link, or into what cannot be read back.
                self._seen, self._appendable = set(), False
                return self._seen
            except FileTooLarge:
                # A regular file of the session's own (a link is refused above), too big to read:
                # deleted, so the session shows each entry once more and is remembered again,
                # instead of re-shown everything until pruned. Deleting removes the name in
                # sessions/ only, never what a link would lead to.
                try:
                    os.unlink(self.path)
                except OSError:  # a read-only .context/: as a FIFO, nothing seen and left as it is
                    self._seen, self._appendable = set(), False
                    return self._seen
                text = ""
            except OSError:  # none yet, or unreadable: nothing shown as far as we can tell
                text = ""
            self._seen = {line.strip() for line in text.split("\n") if line.strip()}
        return self._seen

    def unseen(self, keys: Iterable[str]) -> list[str]:
        seen = self.seen()
        return [k for k in keys if k not in seen]

    def mark(self, keys: Iterable[str]) -> None:
        keys = [k for k in keys if k and "\n" not in k]
        if not keys or self.refused:
            return
        self.seen().update(keys)
        if not self._appendable:
            return
        from context_keeper.bounded_read import NOFOLLOW

        data = "".join(k + "\n" for k in keys).encode("utf-8")
        try:
            os.makedirs(self.dir, exist_ok=True)
            # No link is appended through, should one have replaced the file since it was read.
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | NOFOLLOW, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError:
            pass  # a read-only .context/: entries show again next time rather than never

    def reset(self) -> None:
        """Forget everything (the conversation was compacted or cleared)."""
        # Any failure (a read-only .context/, a directory in the file's place) only means the
        # old file stays: the summary it gates still has to be injected.
        if not self.refused:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        self._seen = set()


def prune(context_dir: str, *, now: float | None = None, max_age_s: float = STALE_AFTER_S) -> int:
    """Delete session files (seen-sets and compaction files) untouched for ``max_age_s``;
    returns how many were removed. Nothing in a ``sessions/`` that leads out of the project: the
    ``*.seen`` files there are someone else's."""
    if refused(context_dir):
        return 0
    directory = os.path.join(context_dir, SESSIONS_DIR)
    cutoff = (time.time() if now is None else now) - max_age_s
    removed = 0
    # Housekeeping only: what cannot be listed or deleted (read-only mount, another user's files,
    # a directory where a file should be) is left for a later session, never raised.
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        if not entry.name.endswith((SUFFIX, *COMPACTION_SUFFIXES)):
            continue
        try:
            if entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue
    return removed
