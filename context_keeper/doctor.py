"""``context-keeper doctor [--fix]``: find what is wrong with a project's store, repair what is safe.

Checks: ``.context`` (or a store file) being a symlink that leads out of the project; a
directory, or a symlink to nothing, where a store file belongs; store files that do not parse
(file, line, column); malformed entries; entries with a key written
twice (both sides of a merge kept in one object: an error); duplicate ids; ids that
differ only in zero padding or suffix case (``dec-5``, ``dec-005``); dangling
``related_to`` / ``superseded_by`` / ``supersedes`` links, and history links whose two ends
disagree; constraint scopes that match no file
or directory, or whose commas or braces do not list what they seem to; an unreadable
``config.json`` and values in it that are unknown, of the wrong type or out of range; missing or
unusable last-good copies; temp files left by a writer that died; bookkeeping files that neither
``.context/.gitignore`` nor (in a store without one) the patterns the writers add to the clone's
``.git/info/exclude`` keep out of git; context-keeper's hooks and
server in the project's Claude Code files (``.claude/settings.json``, ``settings.local.json``,
``.mcp.json``) naming a program that is not there (see ``wiring_check``); with the semantic blend
on, which environment variable's value is sent as a key, and to which host, and whether the
endpoint answers one small embedding request (what is wrong when it does not).

``--fix`` changes only what can be changed without losing anything, under the store lock:

- a store file broken only by missing or trailing commas (or holding one entry object, not an
  array) is mended in place (``json_slips``), after the broken file has been saved aside as
  ``<name>.broken-<UTC timestamp>`` (fsynced): every character the person wrote stays;
- another corrupt store file is restored from ``.context/.last-good/`` — after saving it aside
  the same way, only when the last-good copy parses, and only when the broken file holds nothing
  the copy lacks apart from JSON punctuation at the broken position itself (the copy follows
  tool writes only, so a pull, a merge or a hand edit since then lives only in the broken file:
  then the person is told what would be lost instead);
- an item that repeats another item exactly (same id, same content) is dropped; of two items
  that share an id with different content, the one git does not show as already pushed (see
  ``gitshared``; else the later one) gets the next free id and keeps the old one as
  ``previous_id``, and a link naming that id moves with it when the other end of the link is on
  the renumbered item (``superseded_by`` for a ``supersedes``, and so on); a link no other end
  decides is left as it is and reported; two that also share ``created_at`` are one entry
  edited on two sides (each edit re-stamps ``updated_at`` or ``verified_at``) unless they are a
  copy and its original (below), reported for a person to merge and left alone;
- an entry without an id (none, null or blank; a hand-added entry, or half of a split merge
  hunk) that has its title field gets the next free id, the time of the fix as its
  ``created_at`` where it has none and its ``created_at`` as its ``updated_at`` where it has
  none (else ``--since`` leaves it out);
- an item that shares its id and every date stamp (``created_at``, ``updated_at``,
  ``verified_at``) with an earlier one but whose title field says something else is a copy used
  as a template for a new entry: it gets the next free id (no
  ``previous_id``; links naming the id stay with the original), unless a link naming the id may
  be meant for the copy (the copy links back to the entry holding it), then it is reported;
- a missing or unusable last-good copy is replaced with a copy of the current (good) file;
- temp files older than ten minutes are removed (no live writer keeps one that long);
- in a git work tree, bookkeeping patterns missing from ``.context/.gitignore`` (an older
  version wrote a shorter list) are appended; the person's own lines stay.

Malformed entries, ids spelled two ways, dangling or disagreeing links and unmatched scopes need a person: they are reported with
what to do. Exit codes: 0 healthy · 1 warnings (the store works; something deserves a look) ·
5 errors (a store file is unusable or ``.context`` is unsafe), or ``--fix`` stopped (the store lock
held elsewhere too long, a write refused) · 4 no project. With ``--fix``
the code describes the store after the repairs (a file mended or restored is checked again, and
what its parse error hid is repaired in the same run).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from context_keeper import model
from context_keeper.bounded_read import SESSION_LIMIT, STORE_FILE_LIMIT, read_regular, shown_size, special_kind
from context_keeper.render import console_json
from context_keeper.config import (checked, config_problems, key_destination, read_user_config, unapproved_host,
                                   unapproved_host_problem)
from context_keeper.confine import context_refusal, leads_out
from context_keeper.errors import (ContextKeeperError, CorruptStoreFile, InvalidInput, MisencodedStoreFile, NoProject,
                                   NotAStoreFile, StoreError)
from context_keeper.fsio import TEMP_SUFFIX, atomic_write_bytes, atomic_write_text, fsync_dir, temp_files_of
from context_keeper.gitignore import (EXCLUDED, complete_cut_short, cut_short, excluded_in,
                                      keep_bookkeeping_out_of_git)
from context_keeper.gitshared import CommittedVersions, run_git
from context_keeper.hooks import state as session_state
from context_keeper.model import KINDS, Kind
from context_keeper.paths import established_exports, markdown_target
from context_keeper.project import CONTEXT_DIR, resolve_project
from context_keeper.scope import (
    UNCLOSED_BRACE_FIX,
    comma_named_path,
    is_glob,
    is_global,
    leaves_project,
    normalize_path,
    scope_covers,
    scope_parts,
    too_many_paths,
    unclosed_brace,
)
from context_keeper.store import BACKUP_DIR, GITIGNORE, KEPT_ASIDE, Store, ids_gone, parse_bytes, random_suffix
from context_keeper.wiring_check import wiring_problems

ERROR, WARNING, INFO = "error", "warning", "info"
EXIT_OK, EXIT_WARNINGS, EXIT_NO_PROJECT, EXIT_ERRORS = 0, 1, 4, 5
STALE_TEMP_S = 600
MAX_SCAN_PATHS = 200_000
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", CONTEXT_DIR, "node_modules", "__pycache__", ".venv", "venv",
                        ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".gradle", ".idea"})


@dataclass
class Finding:
    severity: str  # error | warning | info
    code: str  # corrupt_file, malformed_entry, duplicate_id, dangling_link, unmatched_scope, ...
    message: str
    file: str | None = None
    fix: str | None = None  # what --fix would do; None when a person has to act
    fixed: bool = False
    # A finding that stands for many entries of one cause (hundreds of links to one deleted
    # entry were hundreds of near-identical lines): how many, and all their ids. In --json only.
    count: int | None = None
    entries: list[str] | None = None


@dataclass
class Report:
    project: str
    findings: list[Finding]

    @property
    def exit_code(self) -> int:
        open_findings = [f for f in self.findings if not f.fixed]
        if any(f.severity == ERROR for f in open_findings):
            return EXIT_ERRORS
        if any(f.severity == WARNING for f in open_findings):
            return EXIT_WARNINGS
        return EXIT_OK

    def as_dict(self) -> dict[str, Any]:
        return {"project": self.project, "exit_code": self.exit_code,
                "findings": [{k: v for k, v in asdict(f).items() if v is not None or k not in _GROUP_KEYS}
                             for f in self.findings]}


_GROUP_KEYS = ("count", "entries")
LISTED = 10  # ids a grouped finding names in its message; its ``entries`` holds them all


def _grouped(entries: list[str]) -> dict[str, Any]:
    """The ``count`` and ``entries`` of a finding about ``entries`` (each id once)."""
    ids = list(dict.fromkeys(entries))
    return {"count": len(ids), "entries": ids}


# ---------------------------------------------------------------- checks


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _check_context_dir(root: Path) -> list[Finding]:
    context = root / CONTEXT_DIR
    findings = []
    if context.is_symlink():
        target = leads_out(context, root)
        if target is not None:
            findings.append(Finding(
                ERROR, "context_symlink",
                f"{CONTEXT_DIR} is a symlink to {target}, outside the project: every write would land "
                f"there. Replace it with a real directory (move the files into {context}).",
            ))
    findings += _bookkeeping_links_out(root)
    lock, copies = context / ".lock", context / BACKUP_DIR
    if lock.is_dir():
        findings.append(Finding(
            ERROR, "bookkeeping_in_the_way",
            f"{CONTEXT_DIR}/.lock is a directory, where context-keeper keeps its lock file: every write fails. "
            f"Remove it (rmdir {CONTEXT_DIR}/.lock); the lock file is made again on the next write.",
        ))
    if copies.exists() and not copies.is_dir():
        findings.append(Finding(
            ERROR, "bookkeeping_in_the_way",
            f"{CONTEXT_DIR}/{BACKUP_DIR} is a file, where context-keeper keeps the last good copy of each store "
            f"file: writes go on without that protection and `doctor --fix` cannot restore anything. Move it "
            f"aside (mv {CONTEXT_DIR}/{BACKUP_DIR} {CONTEXT_DIR}/last-good.aside); the copies come back with the "
            "next writes.",
        ))
    for kind in KINDS.values():
        path = context / kind.filename
        # A link to a directory or to nothing is an error of its own (_check_file).
        if path.is_symlink() and path.is_file():
            target = path.resolve()
            if _inside(target, root):
                findings.append(Finding(
                    INFO, "file_symlink",
                    f"{kind.filename} is a symlink to {target}, elsewhere in the project; writes go "
                    "to that file and the link stays.",
                    file=kind.filename,
                ))
                continue
            findings.append(Finding(
                WARNING, "file_symlink",
                f"{kind.filename} is a symlink to {target}, outside the project; writes go to that "
                "file, but this project's store lock does not cover another project writing it and "
                "git here sees only the link. Replace the link with the file unless it is meant to "
                "be shared.",
                file=kind.filename,
            ))
    return findings


# The directories under .context/ that context-keeper writes into or deletes from, and what
# each holds: a link out of the project in place of one is refused by every writer (confine).
_BOOKKEEPING_DIRS = {
    BACKUP_DIR: "the last good copy of each store file (writes there are skipped, and copies there not read)",
    "sessions": "what the hooks showed each session (nothing is remembered or pruned there)",
    "install-backups": "the backups `install` makes (they go to ~/.local/state/context-keeper/ instead)",
}


def _bookkeeping_links_out(root: Path) -> list[Finding]:
    context = root / CONTEXT_DIR
    if leads_out(context, root) is not None:
        return []  # the .context link itself is the finding
    findings = []
    for name, holds in _BOOKKEEPING_DIRS.items():
        real = leads_out(context / name, root)
        if real is not None:
            findings.append(Finding(
                ERROR, "bookkeeping_symlink",
                f"{CONTEXT_DIR}/{name} is a symbolic link to {real}, outside the project, where context-keeper "
                f"keeps {holds}: it never writes or deletes there. Remove the link (rm {CONTEXT_DIR}/{name}); "
                "the directory is made again when needed.",
            ))
    return findings


def _check_session_files(store: Store) -> list[Finding]:
    """Session files the hooks cannot use: a symbolic link (a cloned repository can commit one,
    ``unknown.seen`` above all), something other than a file, a ``.seen`` file too big to read."""
    directory = store.dir / session_state.SESSIONS_DIR
    if leads_out(store.dir, store.root) is not None or leads_out(directory, store.root) is not None:
        return []  # the link of .context or of sessions/ is the finding
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError:
        return []  # none yet
    findings = []
    for entry in entries:
        if not entry.name.endswith((session_state.SUFFIX, *session_state.COMPACTION_SUFFIXES)):
            continue
        name = f"{session_state.SESSIONS_DIR}/{entry.name}"
        remove = f"rm {CONTEXT_DIR}/{name}"
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # deleted meanwhile
        if entry.is_symlink():
            problem = (f"is a symbolic link to {os.path.realpath(entry.path)}: the hooks neither read nor "
                       "write through it, so that session's hooks remember nothing there")
        elif entry.is_dir(follow_symlinks=False):
            problem, remove = "is a directory: the hooks remember nothing there", f"rm -r {CONTEXT_DIR}/{name}"
        elif not entry.is_file(follow_symlinks=False):
            problem = f"is {special_kind(info.st_mode)}, not a file: the hooks remember nothing there"
        elif entry.name.endswith(session_state.SUFFIX) and info.st_size > SESSION_LIMIT:
            problem = (f"is {shown_size(info.st_size)}, above the {shown_size(SESSION_LIMIT)} the hooks read: that "
                       "session's next hook deletes it and shows every entry once more")
        else:
            continue
        findings.append(Finding(
            WARNING, "session_file",
            f"{CONTEXT_DIR}/{name} {problem}. Delete it ({remove}); the hooks make a new one when needed, "
            "and nothing stored is lost.",
            file=name,
        ))
    return findings


def _check_file(store: Store, kind: Kind) -> list[Finding]:
    state = store.state(kind)
    name = kind.filename
    if state.error is not None and state.error.conflict:
        err = state.error
        return [Finding(
            ERROR, "corrupt_file",
            f"{name} has unresolved git merge conflict markers (<<<<<<< ======= >>>>>>>), the first at line "
            f"{err.line}. Resolve the merge conflict: keep each side's entries as separate objects, each with "
            "its own id, and delete the marker lines; then run `context-keeper doctor` again. Until then writes "
            "to it are refused and reads use its last good copy where there is one, which lacks what the merge "
            "brought. `doctor --fix` does not put that copy back: it would throw the merge away.",
            file=name,
        )]
    if isinstance(state.error, NotAStoreFile):
        err = state.error
        return [Finding(
            ERROR, "not_a_file",
            f"{name} {err.what}: reads skip it and writes to it are refused. To mend it, {err.remedy}.",
            file=name,
        )]
    if isinstance(state.error, MisencodedStoreFile):
        # No `doctor --fix`: the file is whole, only its encoding is wrong, and putting the last
        # good copy over it would lose what it gained since.
        return [Finding(
            ERROR, "misencoded_file",
            f"{name} is {state.error.detail}: reads skip it (its last good copy stands in where there is one) "
            "and writes to it are refused. Re-save it as UTF-8 (in an editor: save with encoding UTF-8), then "
            "run `context-keeper doctor` again.",
            file=name,
        )]
    if state.error is not None:
        err = state.error
        at = "" if err.crashed else f" at line {err.line}, column {err.column}"  # no position to fix
        said = f"{name} does not parse: {err.detail}{at}. Reads skip it and writes to it are refused until it is fixed"
        if err.remedy is not None:
            said += f". To fix it by hand, {err.remedy}"
        mended = _mended(_read_live(store.path(kind)))
        if mended is not None:
            # Mending keeps every character the person wrote; the last good copy would not.
            return [Finding(ERROR, "corrupt_file", said + ".", file=name,
                            fix=f"save the broken file aside, then {'; '.join(todo for todo, _ in mended[1])}, "
                                "keeping the rest as written")]
        good = _usable_backup(store, kind)
        usable = good is not None
        broken = _read_live(store.path(kind)) if usable else None
        losses = _restore_losses(broken, good, err.line)[0] if broken is not None else []
        return [Finding(
            ERROR, "corrupt_file", said + ".",
            file=name,
            fix="save the broken file aside and restore the last good copy" if usable and not losses else None,
        )] + ([Finding(
            ERROR, "restore_would_lose",
            f"`doctor --fix` will not restore the last good copy of {name}: that would lose what the broken "
            f"file has and the copy lacks ({'; '.join(losses)}). The copy only follows writes made through "
            "context-keeper, not a pull, a merge or a hand edit. Fix the JSON at line "
            f"{err.line}, column {err.column} by hand; `diff .context/{BACKUP_DIR}/{name} .context/{name}` "
            "shows the difference",
            file=name,
        )] if losses else []) + ([] if usable else [Finding(
            ERROR, "no_backup",
            f"{name} has no usable last-good copy (it was never written through context-keeper, or the copy "
            "is broken too), so `doctor --fix` cannot restore it: "
            + ("nothing in it is left to fix by hand; " if err.crashed else "fix the JSON at the position above by "
               "hand, or ") + "restore the file from version control (git checkout -- .context/" + name + ")",
            file=name,
        )])
    findings = []
    duplicates = _duplicates(store, kind)
    skip = [state.repeats_keys(i) for i in range(len(state.raw))]
    edited = _edited_on_two_sides(kind, list(state.raw), skip)
    for index in sorted({i for group in edited.values() for i in group[1:]}):
        duplicates.pop(index, None)  # not renumbered: no id to suggest
    copies = _copies(kind, state.raw, skip, duplicates, edited)
    holders, unreadable = _link_holders(kind, list(state.raw), lambda other: _parsed(store.state(other)))
    links = _links_by_target(holders) if copies and not unreadable else {}
    linked = {index: "another store file does not parse, so the links naming its id could not be checked"
              if unreadable else _copy_link(state.raw[index], state.raw[index]["id"].strip(), links)
              for index in copies}
    for index, why in linked.items():
        if why:
            duplicates.pop(index, None)  # left for a person: no id to suggest
    # Counted as --fix counts (past ids a last good copy or another file holds), so the id a
    # finding names is the one the repair gives, and one typed by hand collides with none of them.
    free = store.file_txn(kind, state).next_number()
    suffix = store.config()[0].get("id_suffix") is True  # as Transaction.file reads it
    suggested = _suggested_ids(state, duplicates, free, {index for index, why in linked.items() if why})
    item_lines = _item_lines(state.path) if not all(isinstance(item, dict) for item in state.raw) else []
    for index, problems in sorted(state.item_problems.items()):
        if state.repeats_keys(index):
            findings.append(Finding(
                ERROR, "repeated_keys",
                f"{'; '.join(problems)}. Tools do not see this entry, so what it records is missing from "
                "every answer. Keeping both sides of a merge conflict in one object does this: split it by "
                f"hand in .context/{name} into one object per side, give the second its own id "
                f"({_to_type(suggested[index], suffix)} is free) and fix any link meant for it; then run "
                "`context-keeper doctor` again",
                file=name,
            ))
            continue
        for problem in problems:
            item = state.raw[index]
            if _id_to_correct(kind, item):
                findings.append(_id_finding(kind, index, item, suggested[index], suffix))
            elif "duplicate id" in problem and item["id"].strip() in edited:
                group = edited[item["id"].strip()]
                if index == group[1]:
                    findings.append(_edit_finding(kind, item["id"].strip(), group, state.raw))
            elif "duplicate id" in problem and index in copies:
                findings.append(_copy_finding(kind, state.raw, index, copies[index],
                                              suggested[index], linked[index], suffix))
            elif "duplicate id" in problem:
                exact = duplicates.get(index)
                findings.append(Finding(
                    WARNING, "duplicate_id",
                    f"{problem}; the later item is hidden from every tool",
                    file=name,
                    fix=("drop it: it repeats the first one exactly" if exact else
                         "give the next free id to the copy git shows is not pushed yet, else to the later "
                         "one (the old id is kept as previous_id), and move the links that link back to it"),
                ))
            else:
                # An item with no id has nothing to search the file for: its line says where it is.
                at = "" if isinstance(item, dict) or index >= len(item_lines) else f" (line {item_lines[index]})"
                findings.append(Finding(
                    WARNING, "malformed_entry",
                    f"{problem}{at}. Fix the item by hand; until then it is kept as written but "
                    "skipped or shown with defaults.",
                    file=name,
                ))
    if state.stamp is not None:
        backup = store.backup_path(kind)
        if (backup.parent.exists() and not backup.parent.is_dir()) or store.last_good_copy(kind) is None:
            pass  # no copy can be kept there: reported by _check_context_dir
        elif not backup.exists():
            findings.append(Finding(INFO, "missing_backup", f"{name} has no last-good copy yet", file=name,
                                    fix="copy the current file to .context/.last-good/"))
        elif _usable_backup(store, kind) is None:
            findings.append(Finding(WARNING, "bad_backup", f"the last-good copy of {name} does not parse",
                                    file=name, fix="replace it with a copy of the current file"))
    return findings


def _check_dropped(store: Store, kind: Kind) -> list[Finding]:
    """Entries a last good copy holds and the file lacks: an editor's stale copy of the file saved
    over a newer one drops what was recorded meanwhile, and nothing else says so. Named with the
    way back while the copy (or the one a write kept aside) still has them."""
    state = store.state(kind)
    name = kind.filename
    if state.error is not None or store.last_good_copy(kind) is None:
        return []  # a broken file is reported as such; a copy out of the project is not this one's
    findings = []
    gone = store.dropped(kind, state)
    if gone:
        findings.append(Finding(
            WARNING, "dropped_entries",
            f"{name} lacks {_some(list(gone), 10)}, which its last good copy (.context/{BACKUP_DIR}/{name}) holds: "
            "entries deleted by hand, or an editor's stale copy of the file saved over a newer one. If they were "
            f"not removed on purpose, copy them back from that copy (`diff .context/{BACKUP_DIR}/{name} "
            f".context/{name}` shows them). The next write keeps the copy aside as .context/{BACKUP_DIR}/"
            f"{name}{KEPT_ASIDE}<time>, and no new entry takes those ids",
            file=name, count=len(gone), entries=list(gone)))
    for kept in store.kept_aside(kind):
        shown = f".context/{BACKUP_DIR}/{kept.name}"
        try:
            copy = parse_bytes(kind, kept, read_regular(kept, STORE_FILE_LIMIT))
        except OSError:
            continue
        missing = list(ids_gone(copy, state))
        if missing:
            findings.append(Finding(
                WARNING, "dropped_entries",
                f"{name} lacks {_some(missing, 10)}, which {shown} holds: a write kept that last good copy aside "
                f"when it found them gone from {name} (deleted by hand, or an editor's stale copy saved over the "
                f"file). If they were not removed on purpose, copy them back into {name} from it; then, or if they "
                f"were, delete {shown}",
                file=name, count=len(missing), entries=missing))
        else:
            findings.append(Finding(
                INFO, "kept_copy",
                f"{shown} is a last good copy a write kept aside; {name} has every entry it holds: delete it",
                file=f"{BACKUP_DIR}/{kept.name}"))
    return findings


def _item_lines(path: Path) -> list[int]:
    """The line where each item of the JSON array in ``path`` starts, as far as the file can be
    walked (it parsed a moment ago; it may have changed since). One walk for every item: walking
    from the start for each one made a file of thousands of bare numbers take a minute."""
    lines: list[int] = []
    try:
        text = path.read_text(encoding="utf-8-sig")
        decoder = json.JSONDecoder()
        at = counted = text.index("[") + 1
        line = text.count("\n", 0, at) + 1
        while True:
            while text[at] in " \t\r\n,":
                at += 1
            if text[at] == "]":
                return lines
            line += text.count("\n", counted, at)
            counted = at
            lines.append(line)
            at = decoder.raw_decode(text, at)[1]
    except (OSError, ValueError, IndexError):
        pass
    return lines


def _needs_id(kind: Kind, item: Any) -> bool:
    """An object with no id (none, null or blank) that names what it is: ``--fix`` gives it one.
    A malformed id is left to a person: it may be a typo that links spell the intended way."""
    if not isinstance(item, dict):
        return False
    title = item.get(kind.title_field)
    return _blank(item.get("id")) and isinstance(title, str) and bool(title.strip())


def _blank(value: Any) -> bool:
    """None, or a string of nothing but blanks: a field that says nothing."""
    return value is None or (isinstance(value, str) and not value.strip())


def _id_to_correct(kind: Kind, item: Any) -> bool:
    """An object whose id is not an id of its file's kind, nor another kind's in any case (that
    one is an entry in the wrong file: it is moved, not renumbered)."""
    return (isinstance(item, dict) and model.parse_id(item.get("id")) is None
            and model.misfiled_home(kind, item.get("id")) is None)


def _suggested_ids(state: Any, duplicates: dict[int, bool], number: int, by_hand: set[int]) -> dict[int, str]:
    """raw index -> the id ``--fix`` would give it (in file order, as the repair allocates them
    from ``number``), for conflicting duplicates and items without an id; other unusable ids, and
    the items of ``by_hand`` (copies left for a person), are suggested after. An item with a key
    written twice gets no id from ``--fix``: it is suggested one after them all, to split it."""
    out: dict[int, str] = {}
    later = []
    for index, item in enumerate(state.raw):
        if state.repeats_keys(index) or index in by_hand:
            later.append(index)
        elif (index in duplicates and not duplicates[index]) or _needs_id(state.kind, item):
            out[index] = model.format_id(state.kind, number)
            number += 1
        elif _id_to_correct(state.kind, item):
            later.append(index)
    for index in later:
        out[index] = model.format_id(state.kind, number)
        number += 1
    return out


def _to_type(entry_id: str, suffix: bool) -> str:
    """``entry_id`` as a person should type it: with ``id_suffix`` on, with a random suffix as the
    tools give one (without it, two clones that each type it collide, which the suffix prevents)."""
    return f"{entry_id}-{random_suffix()}" if suffix else entry_id


def _to_give(entry_id: str, suffix: bool) -> str:
    """``entry_id`` as ``--fix`` will give it, said before its random suffix is drawn."""
    return f"{entry_id} with a random suffix, as id_suffix is on" if suffix else entry_id


def _id_finding(kind: Kind, index: int, item: dict, free: str, suffix: bool) -> Finding:
    name, field = kind.filename, kind.title_field
    suggested = _to_type(free, suffix)
    what = (f"the {kind.name} whose {field} is {_title(kind, item)}" if isinstance(item.get(field), str)
            and item[field].strip() else f"a {kind.name} with no {field}")
    if _needs_id(kind, item):
        return Finding(
            WARNING, "missing_id",
            f"{name} item {index + 1}: {what} has no id, so every tool and hook skips it (it stays in the "
            f"file as written). Add \"id\": \"{suggested}\" to it, or let `doctor --fix` do that",
            file=name, fix=f"give it the next free id ({_to_give(free, suffix)}), the time of the fix as its "
                           "created_at where it has none, and its created_at as its updated_at where it has none")
    entry_id = item.get("id")
    if _blank(entry_id):
        remedy = f"Give it a {field} and \"id\": \"{suggested}\" by hand, or remove the item"
        have = "has no id"
    else:
        remedy = (f"Correct the id by hand, for instance to \"id\": \"{suggested}\" (ids look like {kind.prefix}-001), "
                  "and any link that names the old spelling")
        have = f"has the id {json.dumps(entry_id, ensure_ascii=False)}, which is not an id"
    return Finding(WARNING, "malformed_entry",
                   f"{name} item {index + 1}: {what} {have}, so every tool and hook skips it (it stays in the file "
                   f"as written). {remedy}", file=name)


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON text, key order aside: Python's == has true == 1 == 1.0, so a copy that
    differs only there was dropped as an exact repeat."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _duplicates(store: Store, kind: Kind) -> dict[int, bool]:
    """raw index of each later duplicate -> whether it equals the first item with that id."""
    state = store.state(kind)
    first: dict[str, Any] = {}
    out: dict[int, bool] = {}
    for index, item in enumerate(state.raw):
        if not isinstance(item, dict) or model.parse_id(item.get("id")) is None or state.repeats_keys(index):
            continue
        key = item["id"].strip()
        if key in first:
            out[index] = _same_json(item, first[key])
        else:
            first[key] = item
    return out


_STAMPS = ("created_at", "updated_at", "verified_at")


def _a_copy(kind: Kind, item: dict, first: dict) -> bool:
    """Whether ``item``, sharing its id with the earlier ``first``, is a copy of it used as a
    template for a new entry: every date stamp copied along with the rest (a set ``created_at``,
    the same ``updated_at`` and ``verified_at``) under another title. Two edits of one entry
    re-stamp ``updated_at`` or ``verified_at`` each; how many title words they share tells
    nothing ("24h TTL" edited to "1h TTL" shares one of three)."""
    created = item.get("created_at")
    return (isinstance(created, str) and bool(created.strip())
            and all(item.get(stamp) == first.get(stamp) for stamp in _STAMPS)
            and len({" ".join(str(i.get(kind.title_field) or "").split()) for i in (item, first)}) == 2)


def _copies(kind: Kind, raw: list[Any], skip: list[bool], duplicates: dict[int, bool],
            edited: dict[str, list[int]]) -> dict[int, int]:
    """raw index of each differing duplicate (of ``_duplicates``) that is a copy (``_a_copy``)
    of the first item with its id -> the index of that first item."""
    first: dict[str, int] = {}
    out = {}
    for index, item in enumerate(raw):
        if index in duplicates:
            key = item["id"].strip()
            if not duplicates[index] and key not in edited and _a_copy(kind, item, raw[first[key]]):
                out[index] = first[key]
        elif isinstance(item, dict) and model.parse_id(item.get("id")) is not None and not skip[index]:
            first.setdefault(item["id"].strip(), index)
    return out


def _copy_link(copy: dict, key: str, links: dict[str, list[tuple[dict, str]]]) -> str | None:
    """A link naming ``key`` that may be meant for ``copy`` (it links back to the entry holding
    the link), said as "dec-017.related_to names con-001 ..."; None when no link is. Without one,
    every link naming the id was written for the original, and giving the copy a new id is safe.
    ``links`` is ``_links_by_target`` of the holders."""
    for holder, field in links.get(key, ()):
        if holder["id"].strip() != key and _says(copy, field, _names(holder)):
            return (f"{holder['id'].strip()}.{field} names {key} and the copy links back to it, so that link "
                    "may be meant for the copy: check it")
    return None


def _links_by_target(holders: list[Holder]) -> dict[str, list[tuple[dict, str]]]:
    """id -> (holder, field) of each link naming it, in the holders' order: made once, since
    looking through every holder for each copy of an entry took a minute at thousands of copies."""
    links: dict[str, list[tuple[dict, str]]] = {}
    for _, holder, _ in holders:
        if not isinstance(holder.get("id"), str):
            continue
        for field in ("supersedes", "superseded_by", "related_to"):
            value = holder.get(field)
            targets = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            for target in dict.fromkeys(t.strip() for t in targets if isinstance(t, str)):
                links.setdefault(target, []).append((holder, field))
    return links


def _copy_finding(kind: Kind, raw: list[Any], index: int, original: int, free: str, linked: str | None,
                  suffix: bool) -> Finding:
    key, field, new_id = raw[index]["id"].strip(), kind.title_field, _to_type(free, suffix)
    said = (f"{kind.filename} item {index + 1}: {_title(kind, raw[index])} has the id {key} and the dates of item "
            f"{original + 1}, {_title(kind, raw[original])}, but a different {field}: most likely a copy of it used "
            f"as a template for a new {kind.name}, not an edit of it. Tools see only the first, so this {kind.name} "
            f"is missing from every answer. Give it its own id (\"id\": \"{new_id}\")")
    if linked:
        return Finding(WARNING, "duplicate_id", f"{said} by hand; `doctor --fix` leaves it, as {linked}",
                       file=kind.filename)
    return Finding(WARNING, "duplicate_id", f"{said}, or let `doctor --fix` do that", file=kind.filename,
                   fix=f"give it the next free id ({_to_give(free, suffix)}); the links naming {key} stay with item "
                       f"{original + 1}")


def _edited_on_two_sides(kind: Kind, items: list[Any], skip: list[bool]) -> dict[str, list[int]]:
    """id -> indexes (in file order) of every item with that id, for each id where two items
    that differ have the same ``created_at`` and are not a copy and its original (``_a_copy``):
    one entry edited on two sides of a merge, not two entries. Renumbering would split one decision in two,
    so ``--fix`` leaves the whole id to a person. Items in ``skip`` (repeated keys: not
    comparable) are left out."""
    by_id: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        if isinstance(item, dict) and model.parse_id(item.get("id")) is not None and not skip[index]:
            by_id.setdefault(item["id"].strip(), []).append(index)
    out = {}
    for key, indexes in by_id.items():
        stamps: dict[str, Any] = {}
        for index in indexes:
            created, item = items[index].get("created_at"), items[index]
            if isinstance(created, str) and created.strip():
                if created in stamps and stamps[created] != item and not _a_copy(kind, item, stamps[created]):
                    out[key] = indexes
                    break
                stamps.setdefault(created, item)
    return out


def _edit_finding(kind: Kind, key: str, group: list[int], raw: Any) -> Finding:
    copies = "; ".join(f"item {i + 1}: {_title(kind, raw[i])}" for i in group)
    stamps = [raw[i].get("created_at") for i in group]
    created = next(c for c in stamps if isinstance(c, str) and c.strip() and stamps.count(c) > 1)
    return Finding(
        WARNING, "conflicting_edit",
        f"{kind.filename}: {key} was edited on two sides of a merge and both versions were kept ({copies}; "
        f"{'both were' if len(group) == 2 else 'two of them were'} created at {created}, so they are one entry, "
        "not two). Tools see only the first "
        f"one. Merge them by hand in .context/{kind.filename} into one object with the id {key}, keeping "
        "what each side changed; `doctor --fix` leaves them alone, as giving one a new id would split one "
        f"{kind.name} in two. Then run `context-keeper doctor` again",
        file=kind.filename)


_ENTRY_ID = re.compile(r'"id"\s*:\s*"([^"\\]*)"')
_MAX_DIFF_LINES = 5_000  # past this the differing region is reported as one range (difflib slows down)
_BLANK = " \t\r\n\x00"


def _lines(text: str) -> list[str]:
    # "\n" only, as the JSON parser counts lines; "\r" dropped so CRLF line endings alone are no change
    return [line.removesuffix("\r") for line in text.split("\n")]


def _ranges(numbers: list[int]) -> str:
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans[:8])
    return text + (f" and {len(spans) - 8} more" if len(spans) > 8 else "")


def _changed_blocks(broken: list[str], good: list[str]) -> list[tuple[list[str], list[int], list[str]]]:
    """Each place where ``broken`` has lines that ``good`` does not have there: (the lines of
    ``good`` they stand in for, their 1-based numbers in ``broken``, the lines themselves)."""
    head = 0
    while head < min(len(good), len(broken)) and good[head] == broken[head]:
        head += 1
    tail = 0
    while tail < min(len(good), len(broken)) - head and good[-1 - tail] == broken[-1 - tail]:
        tail += 1
    a, b = good[head:len(good) - tail], broken[head:len(broken) - tail]
    if len(a) > _MAX_DIFF_LINES or len(b) > _MAX_DIFF_LINES:
        return [(a, list(range(head + 1, head + len(b) + 1)), b)] if b else []
    import difflib  # only here: doctor's other checks do not need it

    return [(a[i1:i2], [head + j + 1 for j in range(j1, j2)], b[j1:j2])
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes()
            if tag in ("replace", "insert")]


def _restore_losses(broken: bytes, good: bytes, error_line: int) -> tuple[list[str], list[int]]:
    """What putting ``good`` in place of ``broken`` would lose, as phrases (empty: nothing that
    can be detected), and the lines at the broken position that it replaces.

    Only the broken position may differ: the error's line and the one before it (a dropped comma
    is reported on the next line), and there only in JSON's punctuation (commas, colons, quotes,
    brackets) and blanks. A new field or a reworded value on that line is an edit, not the typo:
    the copy would throw it away. Lines the broken file lacks are no loss (a truncated file gets
    them back). Entry ids the copy lacks are named on their own: they are what a person misses.
    """
    text = broken.decode("utf-8", "replace").removeprefix("\ufeff")
    good_text = good.decode("utf-8", "replace")
    if not text.strip(_BLANK) or good_text.startswith(text.rstrip(_BLANK)):
        return [], []  # emptied, zero-filled or truncated: every byte it still has is in the copy
    losses = []
    new_ids = sorted(set(_ENTRY_ID.findall(text)) - set(_ENTRY_ID.findall(good_text)), key=model.id_sort_key)
    if new_ids:
        shown = ", ".join(new_ids[:12]) + (f" and {len(new_ids) - 12} more" if len(new_ids) > 12 else "")
        losses.append(f"{'entries' if len(new_ids) > 1 else 'entry'} {shown}")
    blocks = _changed_blocks(_lines(text), _lines(good_text))
    changed = [n for _copy, numbers, _edited in blocks for n in numbers]
    beyond = [n for n in changed if n not in (error_line - 1, error_line)]
    if not beyond and any(_words(edited) != _words(copy) for copy, _numbers, edited in blocks):
        # The broken position holds more than the slip (a field added or a value reworded next to
        # it; on a file written on one line, anything in the file): putting the copy back loses it.
        beyond = changed
    if beyond:  # then the broken position is no longer just a typo: all of it is reported
        losses.append(f"line{'s' if len(changed) > 1 else ''} {_ranges(changed)} (changed or added)")
    return losses, [n for n in changed if n not in beyond]


_PUNCTUATION = re.compile(r'[\s,:"{}\[\]]+')


def _words(lines: list[str]) -> str:
    """``lines`` without JSON's punctuation and blanks: what a slip of syntax leaves unchanged."""
    return _PUNCTUATION.sub("", "".join(lines))


def _mended(broken: bytes | None) -> tuple[bytes, list[tuple[str, str]]] | None:
    """The broken file with its missing or trailing commas mended (or its lone entry put inside
    ``[ ]``) and what was done, when that alone makes it parse; None otherwise."""
    from context_keeper import json_slips

    if broken is None:
        return None
    try:
        text = broken.decode("utf-8")
    except UnicodeDecodeError:
        return None
    bom = text.startswith("\ufeff")
    mended = json_slips.mend(text.removeprefix("\ufeff"))
    if mended is None:
        return None
    return ("\ufeff" * bom + mended[0]).encode("utf-8"), mended[1]


def _read_live(path: Path) -> bytes | None:
    try:
        return read_regular(path, STORE_FILE_LIMIT)  # a FIFO would hang doctor
    except OSError:
        return None


def _usable_backup(store: Store, kind: Kind) -> bytes | None:
    path = store.last_good_copy(kind)
    if path is None:
        return None  # .last-good/ leads out of the project: not this project's copy to restore
    try:
        data = read_regular(path, STORE_FILE_LIMIT)
    except OSError:
        return None
    state = parse_bytes(kind, path, data)
    return data if state.error is None else None


def _check_links(store: Store) -> list[Finding]:
    known: set[str] = set()
    states = [store.state(kind) for kind in KINDS.values()]
    for state in states:
        known.update(state.entries_by_id)
        # ids of items skipped as malformed still exist for a reader of the file
        known.update(i["id"].strip() for i in state.raw if isinstance(i, dict) and isinstance(i.get("id"), str))
    # Ids in a file that does not parse cannot be known: a link into it is not reported as
    # dangling (that advice would strip real links); the corrupt file is reported instead.
    unreadable = {KINDS[state.kind.name].prefix for state in states if state.error is not None}
    # One finding per missing id: a central entry deleted by hand is one cause, however many
    # entries link to it.
    holders: dict[str, list[tuple[str, str, str, str]]] = {}
    for state in states:
        for entry in state.entries:
            for field_name, target in _links(entry):
                if target.strip() not in known and target.strip().split("-")[0] not in unreadable:
                    holders.setdefault(target.strip(), []).append((entry["id"], field_name, target, state.path.name))
    return [_dangling_finding(links) for links in holders.values()]


def _dangling_finding(links: list[tuple[str, str, str, str]]) -> Finding:
    """The finding for the links (holder id, field, target as written, file) that name one missing id."""
    files = list(dict.fromkeys(file for *_rest, file in links))
    fix = (f"correct the id or remove it: edit {' and '.join(f'.context/{f}' for f in files)} by hand, "
           "or have the agent call update_entry")
    if len(links) == 1:
        holder, field_name, target, file = links[0]
        return Finding(WARNING, "dangling_link", f"{holder}.{field_name} names {target}, which no entry has; {fix}",
                       file=file)
    group = _grouped([holder for holder, *_rest in links])
    fields = " / ".join(dict.fromkeys(field_name for _holder, field_name, *_rest in links))
    noun = "entry's" if group["count"] == 1 else "entries'"
    return Finding(
        WARNING, "dangling_link",
        f"{links[0][2].strip()}, which no entry has, is named by {group['count']} {noun} {fields}: "
        f"{_some(group['entries'], LISTED)}; {fix}",
        file=files[0], **group,
    )


def _check_numbers(store: Store) -> list[Finding]:
    """NaN or Infinity in an item (Python's json.dump writes them): only Python reads them back,
    and context-keeper refuses to write the entry again until they are gone."""
    from context_keeper.store import _not_finite

    findings = []
    for kind in KINDS.values():
        state = store.state(kind)
        for index, item in enumerate(state.raw):
            found = _not_finite(item)
            if found:
                label = item.get("id") if isinstance(item, dict) and isinstance(item.get("id"), str) else f"item {index + 1}"
                findings.append(Finding(
                    WARNING, "not_json_number",
                    f"{label} holds {found[0]} in {found[1]}: Python reads it, but jq, JavaScript and most JSON "
                    "parsers refuse the file, and context-keeper will not write it back, so updates to the entry "
                    f"are refused. Write a finite number, a string or null there in .context/{state.path.name}",
                    file=state.path.name,
                ))
    return findings


def _check_titles(store: Store) -> list[Finding]:
    """An entry without its one-line label: shown as a blank line by every summary and hook."""
    import difflib

    findings = []
    for kind in KINDS.values():
        state = store.state(kind)
        by_key: dict[str | None, list[str]] = {}  # the misspelt key (one import's cause) -> entries
        for entry in state.entries:
            title = entry.get(kind.title_field)
            if isinstance(title, str) and title.strip():
                continue
            # An entry as read keeps the keys it was stored with: a misspelt one is among them.
            near = difflib.get_close_matches(kind.title_field, [k for k in entry if isinstance(k, str)
                                                                 and kind.spec(k) is None], n=1, cutoff=0.7)
            by_key.setdefault(near[0] if near else None, []).append(entry["id"])
        for near, ids in by_key.items():
            one = len(ids) == 1
            hint = f' ({"it has" if one else "they have"} "{near}": rename that key to "{kind.title_field}")' if near else ""
            who = ids[0] if one else f"{len(ids)} entries ({_some(ids, LISTED)})"
            findings.append(Finding(
                WARNING, "missing_title",
                f"{who} {'has' if one else 'have'} no {kind.title_field}{hint}, so summaries and hooks show "
                f"{'it as a blank line' if one else 'them as blank lines'}. "
                f"Give {'it' if one else 'each'} a \"{kind.title_field}\" in .context/{state.path.name}",
                file=state.path.name, **({} if one else _grouped(ids)),
            ))
    return findings


def _check_timestamps(store: Store) -> list[Finding]:
    findings = []
    for kind in KINDS.values():
        state = store.state(kind)
        by_field: dict[str, list[tuple[str, Any]]] = {}  # one importer's format: every entry, one field
        for entry in state.entries:
            for field_name in model.TIMESTAMPS:
                value = entry.get(field_name)
                if value is not None and model.parse_time(value) is None:
                    by_field.setdefault(field_name, []).append((entry["id"], value))
        for field_name, bad in by_field.items():
            advice = f"Write it like 2026-01-31T12:00:00+00:00 in .context/{state.path.name}"
            if len(bad) == 1:
                (entry_id, value), = bad
                findings.append(Finding(
                    WARNING, "bad_timestamp",
                    f"{entry_id}.{field_name} is {model.shown(value)}, which is not a readable ISO-8601 time; "
                    f"recency, `since`/`before` and prune_stale treat the entry as having none. {advice}",
                    file=state.path.name,
                ))
                continue
            ids = [entry_id for entry_id, _value in bad]
            findings.append(Finding(
                WARNING, "bad_timestamp",
                f"{field_name} of {len(ids)} entries ({_some(ids, LISTED)}) is not a readable ISO-8601 time "
                f"({ids[0]} has {model.shown(bad[0][1])}); recency, `since`/`before` and prune_stale treat them as "
                f"having none. {advice}",
                file=state.path.name, **_grouped(ids),
            ))
    return findings


def _check_history(store: Store) -> list[Finding]:
    """History links whose two ends disagree: an entry says it supersedes one that is still
    the current answer or names another successor, or an entry names a successor yet is active.

    A ``superseded_by`` with no ``supersedes`` coming back is not one of them: deprecate_entry
    writes only that side. ``supersedes`` is only ever written together with the other end.
    """
    findings = []
    for state in (store.state(kind) for kind in KINDS.values()):
        name, entries = state.path.name, state.entries_by_id
        held = Counter(i["id"].strip() for i in state.raw if isinstance(i, dict) and isinstance(i.get("id"), str))
        shared = {i for i, times in held.items() if times > 1}
        for entry in entries.values():
            for old_id in model.supersedes_ids(entry):
                old = entries.get(old_id)
                if old is None or old.get("superseded_by") == entry["id"]:
                    continue  # a missing one is a dangling link (reported there)
                if old_id in shared or entry["id"] in shared:
                    findings.append(Finding(
                        WARNING, "history_link",
                        f"{entry['id']}.supersedes names {old_id}, but the {old_id} every tool sees does not name "
                        f"{entry['id']} as its successor; {old_id if old_id in shared else entry['id']} is a duplicate "
                        "id (reported above), and `doctor --fix` renumbers one copy and moves the links that "
                        "link back to it: run it, then doctor again",
                        file=name,
                    ))
                    continue
                if old.get("superseded_by"):
                    state_of_old = f"{old_id} names {old['superseded_by']} as its successor"
                else:
                    state_of_old = f"{old_id} is {old.get('status', 'active')} and names no successor"
                # An older `doctor --fix` renumbered a duplicate without its links: the entry
                # that was old_id and names this one as successor is the one the link meant.
                moved = [e["id"] for e in entries.values()
                         if e.get("previous_id") == old_id and e.get("superseded_by") == entry["id"]]
                hint = (f" ({_some(moved)}, which was {old_id} before a renumbering, names {entry['id']} as its "
                        f"successor: the link probably means {_some(moved)})" if moved else "")
                findings.append(Finding(
                    WARNING, "history_link",
                    f"{entry['id']}.supersedes names {old_id}, but {state_of_old}"
                    + (", so both read as the current answer" if old.get("status", "active") == "active" else "")
                    + hint + f". If {entry['id']} replaced {old_id}, have the agent call deprecate_entry "
                    f"{old_id} with superseded_by {entry['id']}; if not (a merge or a renumbering can leave an "
                    f"old id behind), remove {old_id} from {entry['id']}.supersedes: edit .context/{name} by hand, "
                    "or have the agent call update_entry",
                    file=name,
                ))
            if entry.get("status") == "superseded" and not entry.get("superseded_by") and entry["id"] not in shared:
                findings.append(Finding(
                    WARNING, "history_link",
                    f"{entry['id']} is superseded but names no successor (superseded_by), so nothing says what "
                    "replaced it and no summary shows it. Set \"superseded_by\" to the id of the entry that replaced "
                    f"it, or set \"status\": \"active\" (or \"deprecated\" with a deprecated_reason) if nothing did: "
                    f"edit .context/{name} by hand",
                    file=name,
                ))
            if entry.get("superseded_by") and entry.get("status", "active") == "active":
                findings.append(Finding(
                    WARNING, "history_link",
                    f"{entry['id']} names {entry['superseded_by']} as its successor (superseded_by) but its "
                    f"status is active, so it still reads as the current answer. If it was replaced, set "
                    f"\"status\": \"superseded\"; if not, set \"superseded_by\": null: edit .context/{name} by "
                    "hand, or have the agent call update_entry",
                    file=name,
                ))
        findings += _successor_loops(entries, name)
    return findings


def _successor_loops(entries: dict[str, dict], name: str) -> list[Finding]:
    """Entries whose successors lead back to them (a hand edit, a merge: the tools refuse to make
    one): none of them is the current answer, so the summary and every answer lose the topic."""
    findings, reported = [], set()
    walked: set[str] = set()  # entries whose successors were followed already: linear, not cubic
    for start in entries:
        if start in walked:
            continue
        chain, at = [start], start
        on_chain = {start: 0}
        while True:
            following = entries[at].get("superseded_by")  # read_entry drops the spaces around it
            if following not in entries or following in walked and following not in on_chain:
                break
            at = following
            if at in on_chain:
                loop = chain[on_chain[at]:]
                if not reported.intersection(loop):
                    reported.update(loop)
                    findings.append(Finding(
                        WARNING, "history_loop",
                        (f"{at} names itself as its successor (superseded_by), so it is never the current "
                         "answer and its topic is missing from " if len(loop) == 1 else
                         f"{' → '.join([*loop, at])}: these entries name each other as successors "
                         "(superseded_by), so none of them is the current answer and the topic is missing from ")
                        + "the summary and from answers. Make the one that holds today current: set its "
                        "\"status\": \"active\" and \"superseded_by\": null (and take it out of the others' "
                        f"supersedes): edit .context/{name} by hand, or have the agent call update_entry",
                        file=name,
                    ))
                break
            on_chain[at] = len(chain)
            chain.append(at)
        walked.update(chain)
    return findings


def _links(entry: dict) -> list[tuple[str, str]]:
    """(field, target id as written) for each link of a usable entry."""
    links = [("related_to", t) for t in entry.get("related_to") or []]
    if entry.get("superseded_by"):
        links.append(("superseded_by", entry["superseded_by"]))
    supersedes = entry.get("supersedes")
    if isinstance(supersedes, list):
        links += [("supersedes", t) for t in supersedes if isinstance(t, str)]
    return links


def _check_id_spellings(store: Store) -> list[Finding]:
    """Entries whose ids differ only in zero padding (or suffix case): each lives on, and a
    link reaches only the one it spells exactly."""
    states = [store.state(kind) for kind in KINDS.values()]
    linked_from: dict[str, list[str]] = {}
    for state in states:
        for entry in state.entries:
            for field_name, target in _links(entry):
                linked_from.setdefault(target.strip(), []).append(f"{entry['id']}.{field_name}")
    findings = []
    for state in states:
        groups: dict[tuple[str, int, str], list[str]] = {}
        for entry_id in state.entries_by_id:
            key = model.id_key(entry_id)
            if key is not None:
                groups.setdefault(key, []).append(entry_id)
        for ids in groups.values():
            # Once all but one were folded into another spelling (merge_into, as the advice says),
            # the old spelling is history: a link to it reaches what it was, and the finding would
            # never clear.
            folded = [i for i in ids if str(state.entries_by_id[i].get("superseded_by") or "").strip() in ids]
            if len(ids) - len(folded) < 2:
                continue
            name = state.path.name
            named = " and ".join(f"{i} (item {state.positions[i] + 1})" for i in ids)
            reach = "; ".join(
                f"{i} is named by {_some(linked_from[i])}" if i in linked_from else f"no link names {i}"
                for i in ids)
            findings.append(Finding(
                WARNING, "id_spelling",
                f"{name}: {named} are one id written {len(ids)} ways, yet every tool treats them as "
                f"separate entries and a link reaches only the one it spells exactly ({reach}). "
                f"If they record the same thing, fold one into the other: have the "
                f"agent call deprecate_entry with merge_into, or merge them by hand in .context/{name}. "
                f"Otherwise give one an unused id by hand in .context/{name} and correct the links that name it",
                file=name,
            ))
    return findings


def _some(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _check_config(store: Store) -> list[Finding]:
    """Values in config.json that are read as the default or ignored (an unreadable file is
    reported from ``store.config()``)."""
    user, _ = read_user_config(store.dir / "config.json")
    problems = config_problems(user)
    export = user.get("markdown_export") if isinstance(user, dict) else None
    path = export.get("path") if isinstance(export, dict) else None
    if isinstance(path, str):
        try:
            markdown_target(store.root, path)
        except InvalidInput as exc:
            problems.append(f"markdown_export.path cannot be used ({exc}); the export refuses it, so the "
                            "Markdown file is not written")
    problems += [f"{key} is written {count} times; only the last value ({shown}) is used"
                 for key, count, shown in _repeated_config_keys(store.dir / "config.json")]
    return [Finding(WARNING, "config", f"config.json: {problem}. Edit .context/config.json by hand",
                    file="config.json") for problem in problems]


# Words in the name of a variable set for an embedding endpoint's key. Any other (GITHUB_TOKEN,
# AWS_SECRET_ACCESS_KEY, NPM_TOKEN) is a credential for something else, that a config.json from
# someone else could have picked to have it sent out.
_KEY_NAME_WORDS = ("EMBED", "OPENAI", "OLLAMA", "API_KEY", "APIKEY")


def _check_semantic_key(store: Store) -> list[Finding]:
    """Which variable's value the semantic blend sends as a Bearer token, and where: a committed
    config.json chooses both, so doctor shows them (a warning when the name does not look like a
    key meant for an embedding API), or, for another machine this user has not allowed, that
    nothing is sent there and how to allow it. Plain http to another machine is _check_config's finding."""
    semantic = store.config()[0].get("semantic")
    if not isinstance(semantic, dict) or semantic.get("enabled") is not True:
        return []
    host_problem = unapproved_host_problem(semantic, os.environ, "the blend is not used here (nothing is sent)")
    if host_problem is not None:
        return [Finding(WARNING, "semantic_host", f"config.json: {host_problem}", file="config.json")]
    destination = key_destination(semantic)
    if destination is None:
        return []
    variable, host = destination
    here = "set here" if os.environ.get(variable) else "not set in this environment, so nothing is sent from here"
    message = (f"config.json: semantic.api_key_env sends the value of the environment variable {variable} ({here}) "
               f"as a Bearer token, with the text of entries and questions, to {host}")
    if any(word in variable.upper() for word in _KEY_NAME_WORDS):
        return [Finding(INFO, "semantic_key", message, file="config.json")]
    return [Finding(WARNING, "semantic_key", message + f". {variable} does not look like a key for an embedding API "
                    f"(its name has none of {', '.join(_KEY_NAME_WORDS)}): unless that is the endpoint's key, set "
                    "semantic.api_key_env to the variable that holds it, or remove it", file="config.json")]


def _check_semantic_endpoint(store: Store) -> list[Finding]:
    """With the blend on, one small embedding request (``embeddings.probe``): a blend that fails
    falls back to lexical ranking on every query, so this is where a person learns why. Not when
    the config keeps any request from being sent (_check_config and _check_semantic_key say so)."""
    semantic = store.config()[0].get("semantic")
    if not isinstance(semantic, dict) or semantic.get("enabled") is not True:
        return []
    if (checked({"semantic": semantic}, "semantic.url")[1] is not None
            or unapproved_host(semantic, os.environ) is not None):
        return []
    from context_keeper import embeddings

    problem, answered = embeddings.probe(semantic)
    if problem is None:
        return [Finding(INFO, "semantic_endpoint", f"semantic blend: {answered}", file="config.json")]
    return [Finding(WARNING, "semantic_endpoint", f"semantic blend: {problem}. Until then answers are ranked "
                    "lexically", file="config.json")]


def _repeated_config_keys(path: Path) -> list[tuple[str, int, str]]:
    """Keys written twice in one object of config.json (a merge that kept both sides): JSON
    keeps the last silently, so a setting the person sees may not be the one in force."""
    repeated: list[tuple[str, int, str]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict:
        obj = dict(items)  # the last value of a repeated key, as json keeps it
        if len(obj) < len(items):
            keys = [k for k, _ in items]
            repeated.extend((key, keys.count(key), model.shown(obj[key])) for key in obj if keys.count(key) > 1)
        return obj

    try:
        json.loads(path.read_text(encoding="utf-8-sig"), object_pairs_hook=pairs)
    except (OSError, ValueError, RecursionError):
        return []  # missing or unreadable: reported from store.config()
    return repeated


def _project_paths(root: Path, enter: frozenset[str] = frozenset()) -> Iterator[str]:
    """Project-relative paths of files and directories (VCS, dependency and cache dirs skipped,
    except those named in ``enter``)."""
    count = 0
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS or d in enter)
        rel = os.path.relpath(directory, root).replace(os.sep, "/")
        prefix = "" if rel == "." else rel + "/"
        for name in (*dirnames, *filenames):
            count += 1
            if count > MAX_SCAN_PATHS:
                return
            yield prefix + name


def _check_scopes(store: Store) -> list[Finding]:
    state = store.state(KINDS["constraint"])
    root = str(store.root)
    scoped = [e for e in state.entries if e.get("status", "active") == "active" and not is_global(e.get("scope"), root)]
    if not scoped:
        return []
    pending: dict[tuple[str, str], str] = {}  # (id, a path its scope lists) -> the scope
    findings = []
    for e in scoped:
        unusable = _unusable_scope(e["id"], e["scope"], root, state.path.name)
        if unusable is not None:
            findings.append(unusable)
            continue
        parts = scope_parts(e["scope"])
        for part in parts:
            outside = leaves_project(part, root, any_dotdot=True)
            if outside is not None:
                findings.append(_outside_scope(e["id"], e["scope"], part if len(parts) > 1 else None, outside,
                                               state.path.name))
                continue
            pattern = normalize_path(part, root)
            components = pattern.split("/") if pattern else []
            # A glob's folders before its first wildcard are plain names: looked up like a path, they
            # show "src/auth/**/*.py" was written for src/Auth/, which no scan would.
            literal = list(itertools.takewhile(lambda name: not is_glob(name), components))
            spelled, complete = _spelling_on_disk(root, literal)
            if spelled != literal[:len(spelled)]:
                slash = "/" if part.endswith(("/", "\\")) else ""
                corrected = "/".join(spelled + components[len(spelled):]) + slash
                whole = ", ".join(corrected if other is part else other for other in parts)
                findings.append(_miscased_scope(e["id"], e["scope"], part if len(parts) > 1 else None,
                                                components[:len(spelled)], spelled, corrected, whole, root,
                                                state.path.name))
            elif is_glob(pattern) or not complete or not components:
                # A plain path is there or not: no scan needed, and the scan skips node_modules/
                # and the like, which a rule may well be about.
                pending[e["id"], part] = e["scope"]
    # A rule about node_modules/ (or .venv/, ...) is looked for there: the scan skips those
    # directories only for speed, and the edit guard applies the rule to files in them.
    enter = frozenset(name for _, part in pending for name in normalize_path(part, root).split("/")
                      if name in _SKIP_DIRS and name != CONTEXT_DIR)
    scanned = 0
    for path in _project_paths(store.root, enter) if pending else ():
        scanned += 1
        for key in [key for key in pending if scope_covers(key[1], path, root)]:
            del pending[key]
        if not pending:
            break
    unmatched: dict[str, tuple[str, list[str]]] = {}  # id -> (scope, the paths it lists that match nothing)
    for (entry_id, part), scope in sorted(pending.items(), key=lambda kv: model.id_sort_key(kv[0][0])):
        unmatched.setdefault(entry_id, (scope, []))[1].append(part)
    if scanned >= MAX_SCAN_PATHS:
        # The scan stopped before the end of the project: "matches nothing" would be a guess.
        return findings + ([Finding(INFO, "unmatched_scope",
                                    f"{', '.join(unmatched)}: scope not checked against "
                                    f"the files, as the project has more than {MAX_SCAN_PATHS:,} paths",
                                    file=state.path.name)] if unmatched else [])
    # A note, not a warning: a rule for a directory about to be created (or that another branch
    # has) is right, and the edit guard applies it to the first file written there.
    return findings + [
        Finding(INFO, "unmatched_scope",
                f"{entry_id} has scope {scope!r}, {_unmatched_words(scope, missing)} no file or directory in the "
                "project yet: the edit guard applies it to files created there, but a misspelt path never "
                "applies. If it is misspelt or obsolete, correct the scope or retire the constraint (\"status\": "
                "\"deprecated\"): edit .context/constraints.json by hand, or have the agent call update_entry or "
                "deprecate_entry.",
                file=state.path.name)
        for entry_id, (scope, missing) in unmatched.items()
    ]


_FIX_BY_HAND = "edit .context/constraints.json by hand, or have the agent call update_entry"


def _unusable_scope(entry_id: str, scope: str, root: str, file: str) -> Finding | None:
    """A scope whose commas or braces do not list what they seem to, which record_constraint
    refuses (``service.project_scope``), or None."""
    named = comma_named_path(scope, root)
    if named is not None:
        parts = ", ".join(repr(part) for part in scope_parts(scope))
        return Finding(WARNING, "comma_in_scope",
                       f"{entry_id} has scope {scope!r}, which names a {named} of the project, but a comma separates "
                       f"a scope's paths: the edit guard and get_context read it as {parts} instead. A path whose own "
                       f"name holds a comma cannot be a scope; match it with a glob, e.g. "
                       f"{scope.replace(',', '?')!r}: {_FIX_BY_HAND}.", file=file)
    if unclosed_brace(scope):
        parts = ", ".join(repr(part) for part in scope_parts(scope))
        return Finding(WARNING, "unclosed_brace_in_scope",
                       f"{entry_id} has scope {scope!r}, which opens a brace group with '{{' and never closes it, so "
                       f"its commas separate paths: the edit guard and get_context read it as {parts} instead. To "
                       f"list alternatives, {UNCLOSED_BRACE_FIX}: {_FIX_BY_HAND}.", file=file)
    if too_many_paths(scope):
        return Finding(WARNING, "scope_too_many_paths",
                       f"{entry_id} has scope {scope!r}, whose braces stand for more paths than a scope may list, so "
                       f"it is read as written and matches no file; name the directories they share instead (e.g. "
                       f"'src/**/*.py'): {_FIX_BY_HAND}.", file=file)
    return None


def _outside_scope(entry_id: str, scope: str, listed: str | None, reason: str, file: str) -> Finding:
    """A scope (``listed``: the path of its list) that can name no path of the project."""
    subject = "which" if listed is None else f"whose path {listed!r}"
    return Finding(WARNING, "scope_outside_project",
                   f"{entry_id} has scope {scope!r}, {subject} {reason}: it never applies, since the edit guard and "
                   "get_context match a scope against the project's own files. Write it relative to the project root "
                   f"(e.g. 'hooks/' or 'src/**/*.py'), or 'global': {_FIX_BY_HAND}.", file=file)


def _unmatched_words(scope: str, missing: list[str]) -> str:
    """What of ``scope`` matches nothing: the scope itself, or the paths of its list that do not."""
    if len(scope_parts(scope)) == 1:
        return "which matches"
    if len(missing) == 1:
        return f"whose path {missing[0]!r} matches"
    return f"whose paths {', '.join(repr(part) for part in missing)} match"


def _spelling_on_disk(root: str, parts: list[str]) -> tuple[list[str], bool]:
    """The leading ``parts`` of a project-relative path as the names on disk spell them, up to
    the first that does not exist, and whether all exist. Each part is looked up in its parent's
    listing, because on a case-insensitive volume (macOS, Windows) ``os.path.lexists`` is true
    for any case of a name: ``src/auth/oauth`` -> ``src/Auth`` when the folder is ``src/Auth``
    and has no ``oauth`` yet."""
    directory, spelled = root, []
    for index, part in enumerate(parts):
        try:
            names = os.listdir(directory)
        except OSError:  # unreadable or not a directory: only the rest as written can be tried
            rest = parts[index:]
            return (spelled + rest, True) if os.path.lexists(os.path.join(directory, *rest)) else (spelled, False)
        if part not in names:
            same = sorted(name for name in names if name.casefold() == part.casefold())
            if same:
                part = same[0]
            elif not os.path.lexists(os.path.join(directory, part)):  # not a name spelt otherwise (NFD)
                return spelled, False
        spelled.append(part)
        directory = os.path.join(directory, part)
    return spelled, True


def _miscased_scope(entry_id: str, scope: str, listed: str | None, written: list[str], spelled: list[str],
                    corrected: str, whole: str, root: str, file: str) -> Finding:
    """``listed``: the path of a scope's list that is miscased (None for a scope of one path),
    ``corrected`` that path as the disk spells it, ``whole`` the scope so corrected."""
    # Scopes match paths case for case, as git and a case-sensitive checkout (Linux, CI) see them;
    # a case-insensitive volume makes the path exist, not the scope match.
    on_disk = "/".join(spelled)
    kind = "folder" if os.path.isdir(os.path.join(root, on_disk)) else "file"
    if corrected.rstrip("/") == on_disk:  # the whole path names that file or folder
        subject = "which" if listed is None else f"whose path {listed!r}"
        differs, target = f"{subject} differs in case from the {kind} {corrected!r}", repr(corrected)
    else:
        differs = f"whose {'/'.join(written)!r} differs in case from the {kind} {on_disk!r}"
        target = f"{on_disk + '/'!r} or what it holds"
    return Finding(WARNING, "miscased_scope",
                   f"{entry_id} has scope {scope!r}, {differs}: scopes match paths case for case, so the edit "
                   f"guard and get_context never apply it to {target}, on a case-insensitive disk too. Write it "
                   f"as {whole!r}: edit .context/constraints.json by hand, or have the agent call update_entry.",
                   file=file)


def _in_git(root: Path) -> bool:
    return any((directory / ".git").exists() for directory in (root, *root.parents))


def _ignore_key(pattern: str) -> str:
    # "/sessions", "sessions" and "sessions/" all keep sessions/ out of git here
    return pattern.strip().lstrip("/").rstrip("/")


def _missing_ignores(context_dir: Path) -> list[str] | None:
    """The bookkeeping patterns of ``GITIGNORE`` that ``.context/.gitignore`` lacks (all of them
    when there is none; None when it cannot be read). A pattern the person negates (``!name``)
    counts as present: tracking that file is their choice."""
    try:
        text = (context_dir / ".gitignore").read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError):
        return None
    have = {_ignore_key(line.strip().removeprefix("!")) for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")}
    if "*" in have:
        return []
    wanted = [line for line in GITIGNORE.splitlines() if line and not line.startswith("#")]
    missing = [pattern for pattern in wanted if _ignore_key(pattern) not in have]
    return _not_ignored_by_git(context_dir, missing)


def _not_ignored_by_git(context_dir: Path, patterns: list[str]) -> list[str]:
    """The patterns whose files git would not ignore, asked of git itself when it can answer
    (a project's top-level .gitignore or the user's excludes may already cover them)."""
    if not patterns:
        return patterns
    samples = {pattern: CONTEXT_DIR + "/" + pattern.replace("*", "x") + ("x" if pattern.endswith("/") else "")
               for pattern in patterns}
    proc = run_git(context_dir.parent, "check-ignore", "--no-index", "--stdin", stdin="\n".join(samples.values()) + "\n")
    if proc is None or proc.returncode not in (0, 1):  # 128: not a work tree after all, or git failed
        return patterns
    ignored = set(proc.stdout.splitlines())
    return [pattern for pattern in patterns if samples[pattern] not in ignored]


def _check_gitignore(store: Store) -> list[Finding]:
    """Bookkeeping files that git would offer for commit: an older version wrote a shorter
    ``.context/.gitignore``, and ``init`` never rewrites one that exists."""
    if not _in_git(store.root):
        return []
    missing = _missing_ignores(store.dir)
    exists = (store.dir / ".gitignore").exists()
    if not missing:
        return [] if exists else _excluded_locally(store)
    where = ".context/.gitignore does not list" if exists else "there is no .context/.gitignore to ignore"
    return [Finding(
        WARNING, "gitignore",
        f"{where} {', '.join(missing)}: these bookkeeping files show as untracked, and `git add .context` would "
        "commit them (they change on every tool call or session, and conflict between teammates). "
        + ("A write cut short (a full disk?) left it with only the start of context-keeper's list: the next "
           "write completes it, or `doctor --fix` does" if exists and cut_short(store.dir) else
           "An older context-keeper wrote a shorter list. Add those lines to .context/.gitignore, or let "
           "`doctor --fix` do that" if exists else
           "`doctor --fix` adds them to the clone's .git/info/exclude, as the tools and hooks do before they write "
           "there (no file in the work tree, which could block a checkout); `context-keeper init` writes "
           ".context/.gitignore, and committing it shares them with the team"),
        file=".gitignore",
        fix=("append the missing patterns (your own lines stay)" if exists else
             "add them to .git/info/exclude (this clone only)"),
    )]


def _excluded_locally(store: Store) -> list[Finding]:
    """A store without a ``.gitignore`` whose bookkeeping the writers keep out of git through the
    clone's ``info/exclude``: fine here, but a teammate's clone, and CI, would show those files."""
    exclude = excluded_in(store.dir)
    if exclude is None:
        return []
    inside = os.path.relpath(exclude, store.root)
    shown = exclude if inside.startswith("..") else inside  # a worktree's or a submodule's is elsewhere
    return [Finding(
        INFO, "gitignore_local",
        f"there is no .context/.gitignore: its bookkeeping files are kept out of git in this clone only, by "
        f"patterns context-keeper added to {shown}. `context-keeper init` writes .context/.gitignore (in an existing "
        "store it rewrites nothing, and adds only the entry files that are missing, empty); committing it shares "
        "that with the team",
        file=".gitignore")]


def _fix_gitignore(store: Store) -> str | None:
    # No .gitignore: its patterns go to .git/info/exclude, as before any write, not into the work
    # tree. First of the repairs: the lock they take would do the same unsaid.
    if complete_cut_short(store.dir):
        return "completed .context/.gitignore, which a write cut short had left with only the start of its list"
    if keep_bookkeeping_out_of_git(store.dir):
        return EXCLUDED
    with store.locked():
        missing = _missing_ignores(store.dir)
        return _append_ignores(store.dir / ".gitignore", missing) if missing else None


def _append_ignores(path: Path, missing: list[str]) -> str:
    try:
        old = path.read_bytes()
    except FileNotFoundError:
        # .git/info/exclude could not be written: the one place left is the work tree's
        atomic_write_text(path, GITIGNORE)
        return "wrote .context/.gitignore for the bookkeeping files"
    head = old if not old or old.endswith(b"\n") else old + b"\n"  # the person's bytes, as they are
    added = "# Bookkeeping added by `context-keeper doctor --fix`.\n" + "\n".join(missing) + "\n"
    atomic_write_bytes(path, head + added.encode("utf-8"))
    return f"added {', '.join(missing)} to .context/.gitignore"


def _temp_files(store: Store) -> list[Path]:
    """Temp files writers may have left: in ``.context/`` and its last-good copies, beside the
    file a linked store file leads to, and beside the Markdown export (only those files' own:
    the directory may be shared, or the project's)."""
    found = []
    for directory in (store.dir, store.dir / BACKUP_DIR):
        if directory.is_dir() and leads_out(directory, store.root) is None:
            found += sorted(directory.glob(f".*{TEMP_SUFFIX}"))
    for kind in KINDS.values():
        path = store.path(kind)
        if path.is_symlink() and path.is_file():
            target = path.resolve()
            if target.parent != store.dir:
                found += sorted(target.parent.glob(f".{target.name}.*{TEMP_SUFFIX}"))
    for export in sorted(_export_targets(store)):
        found += temp_files_of(export)
    return found


def _export_targets(store: Store) -> set[Path]:
    """Where the Markdown export writes: a writer killed mid-export leaves its temp file there."""
    try:
        return established_exports(store.root, store.config()[0])
    except InvalidInput:  # DECISIONS.md is a directory, say: no export writes beside it
        return set()


def _check_leftovers(store: Store) -> list[Finding]:
    findings = []
    now = time.time()
    for path in _temp_files(store):
        try:
            age = now - path.stat().st_mtime
        except FileNotFoundError:
            continue
        if age > STALE_TEMP_S:
            name = str(path.relative_to(store.dir)) if store.dir in path.parents else str(path)
            findings.append(Finding(
                INFO, "stale_temp",
                f"{name} was left by a writer that stopped before finishing (its content was never "
                "acknowledged)",
                file=name, fix="remove it"))
    for path in sorted(store.dir.glob("*.broken-*")):
        shown = f"{CONTEXT_DIR}/{path.name}"  # also listed by the --fix that just saved it
        findings.append(Finding(INFO, "broken_copy",
                                f"{shown} is the broken file a repair saved aside: once nothing in it is needed, "
                                f"delete it (rm {shown})", file=path.name))
    return findings


def diagnose(root: Path, *, probe: bool = True) -> Report:
    """Every finding about the store at ``root``; ``probe=False`` sends the semantic endpoint no request."""
    root = Path(root).resolve()
    if not (root / CONTEXT_DIR).is_dir():
        from context_keeper.store import in_the_way

        # A file (or a link to one) named .context: "run init" would fail on it the same way.
        blocked = in_the_way(root / CONTEXT_DIR) if os.path.lexists(root / CONTEXT_DIR) else None
        raise NoProject(f"{blocked}, then run `context-keeper doctor` again" if blocked else
                        f"{root} has no {CONTEXT_DIR}/ directory; run `context-keeper init` there first")
    store = Store(root)
    findings = _check_context_dir(root)
    for kind in KINDS.values():
        findings += _check_file(store, kind)
        findings += _check_dropped(store, kind)
    findings += [Finding(WARNING, "config", f"{w}; fix config.json by hand", file="config.json")
                 for w in store.config()[1]]
    findings += _check_config(store)
    findings += _check_semantic_key(store)
    findings += _check_semantic_endpoint(store) if probe else []
    findings += _check_links(store)
    findings += _check_timestamps(store)
    findings += _check_titles(store)
    findings += _check_numbers(store)
    findings += _check_history(store)
    findings += _check_id_spellings(store)
    findings += _check_scopes(store)
    findings += _check_leftovers(store)
    findings += _check_session_files(store)
    findings += _check_gitignore(store)
    findings += [Finding(WARNING, "wiring", message, file=name) for name, message in wiring_problems(root)]
    return Report(str(root), findings)


# ---------------------------------------------------------------- repairs


def _aside_path(path: Path, now: datetime) -> Path:
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.broken-{stamp}")
    n = 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.broken-{stamp}-{n}")
    return candidate


def _mend(store: Store, kind: Kind, now: datetime) -> str | None:
    """Save the broken file aside, then mend its commas (or brackets) in place. Lock held."""
    path = store.path(kind)
    broken = path.read_bytes()
    error = parse_bytes(kind, path, broken).error
    mended = _mended(broken) if error is not None and not error.conflict else None
    if mended is None or parse_bytes(kind, path, mended[0]).error is not None:
        return None
    aside = _aside_path(path, now)
    atomic_write_bytes(aside, broken)
    atomic_write_bytes(path, mended[0], follow_symlinks=True)
    fsync_dir(path.parent)
    return (f"saved the broken {kind.filename} as {aside.name} and mended it in place: "
            f"{'; '.join(done for _, done in mended[1])}; "
            "everything else is kept as written")


def _restore(store: Store, kind: Kind, now: datetime) -> str | None:
    """Save the broken file aside, then put the last good copy in its place. Lock held."""
    path = store.path(kind)
    broken = path.read_bytes()
    error = parse_bytes(kind, path, broken).error
    if error is None or error.conflict:
        return None  # fixed by someone else meanwhile, or a merge left unfinished since the check
    good = _usable_backup(store, kind)
    if good is None:
        return None
    losses, replaced = _restore_losses(broken, good, error.line)
    if losses:
        return None  # it changed since the check; the next run reports what would be lost
    aside = _aside_path(path, now)
    atomic_write_bytes(aside, broken)
    atomic_write_bytes(path, good, follow_symlinks=True)  # the live store file, as a write does
    fsync_dir(path.parent)
    done = f"saved the broken {kind.filename} as {aside.name} and restored the last good copy"
    back = sorted(set(_ENTRY_ID.findall(good.decode("utf-8", "replace")))
                  - set(_ENTRY_ID.findall(broken.decode("utf-8", "replace"))), key=model.id_sort_key)
    if back:
        done += f"; {', '.join(back)}, missing from the broken file, {'are' if len(back) > 1 else 'is'} back"
    if replaced:
        # The broken line itself may hold a wanted edit next to the typo: say what went.
        text = _lines(broken.decode("utf-8", "replace").removeprefix("\ufeff"))
        shown = "; ".join(f"line {n}: {_clip(text[n - 1])}" for n in replaced)
        done += f" (the copy's version replaces the broken {shown})"
    return done


def _clip(line: str, limit: int = 70) -> str:
    line = line.strip()
    return repr(line if len(line) <= limit else line[: limit - 1] + "…")


def _fix_ids(store: Store, kind: Kind, now: datetime) -> tuple[list[str], list[str]]:
    """Drop exact repeats, renumber conflicting duplicates (taking along the links that belong
    to a renumbered entry), give a copy used as a template its own id, and give an id (and the
    dates a record gets) to each entry that has none, in file order.
    Returns (what was done, links left for a person to check)."""
    done: list[str] = []
    with store.transaction() as txn:
        ftxn = txn.file(kind)
        items = ftxn.items()
        # Reported by diagnose as conflicting_edit, which says --fix leaves them alone.
        edited = _edited_on_two_sides(kind, [item for item, _ in items], [ftxn.repeats_keys(item) for item, _ in items])
        holders, unreadable = _link_holders(kind, [item for item, _ in items], txn.file)
        links = _links_by_target(holders) if not unreadable else {}
        first: dict[str, int] = {}
        kept: list[tuple[Any, str | None]] = []
        renumber: list[int] = []
        copies: list[int] = []  # renumbered as new entries: no previous_id, no link moves with them
        at: list[int] = []  # each kept item's number in the file as diagnosed, before any repeat was dropped
        for position, (item, chunk) in enumerate(items):
            entry_id = item.get("id") if isinstance(item, dict) else None
            key = entry_id.strip() if isinstance(entry_id, str) and model.parse_id(entry_id) else None
            if ftxn.repeats_keys(item):
                # Parsed, it lacks the values its repeated keys shadow: neither compared, dropped
                # nor renumbered (which would write it back without them). A person splits it.
                key = None
            elif key is None and _needs_id(kind, item):
                renumber.append(len(kept))
            if key is not None and key in first:
                if _same_json(item, kept[first[key]][0]):
                    done.append(f"{kind.filename}: dropped item {position + 1}, an exact repeat of {key} "
                                f"(item {at[first[key]] + 1})")
                    continue
                if key in edited:
                    pass
                elif not _a_copy(kind, item, kept[first[key]][0]):
                    renumber.append(len(kept))
                elif not unreadable and _copy_link(item, key, links) is None:
                    copies.append(len(kept))  # else reported by diagnose for a person, and left
            elif key is not None:
                first[key] = len(kept)
            kept.append((item, chunk))
            at.append(position)
        ftxn.replace_items(kept)
        rules = _choose_keepers(CommittedVersions(store.root, f"{CONTEXT_DIR}/{kind.filename}"), kind, kept,
                                first, renumber)
        groups: dict[str, list[int]] = {}  # an id that was shared -> indexes of its owners, the keeper first
        for index in sorted(renumber + copies):  # in file order, as diagnose suggested the ids
            item = dict(kept[index][0])
            new_id = ftxn.next_id()
            if _needs_id(kind, item):
                item.pop("id", None)
                # Dated as a record is, or --since leaves it out and nothing says it is undated.
                # A date in another form (an epoch number) is the author's: bad_timestamp reports it.
                for field in ("created_at", "updated_at"):
                    if _blank(item.get(field)):
                        item[field] = item.get("created_at") if field == "updated_at" else model.now_iso(now)
                kept[index] = ({"id": new_id, **item}, None)
                ftxn.replace_items(kept)
                done.append(f"{kind.filename}: item {at[index] + 1}, the {kind.name} whose {kind.title_field} is "
                            f"{_title(kind, item)}, had no id and is now {new_id}")
                continue
            if index in copies:
                old_id = item["id"].strip()
                kept[index] = ({**item, "id": new_id}, None)
                ftxn.replace_items(kept)
                done.append(f"{kind.filename}: item {at[index] + 1}, {_title(kind, item)}, had the id and dates of "
                            f"{old_id} {_title(kind, kept[first[old_id]][0])} (item {at[first[old_id]] + 1}) but "
                            f"another {kind.title_field}, a copy used as a template, and is now {new_id}; the links "
                            f"naming {old_id} stay with item {at[first[old_id]] + 1}")
                continue
            old_id = item["id"].strip()
            earlier = model.previous_ids(item)
            later = [i for i in dict.fromkeys([*earlier[1:], old_id]) if earlier and i != earlier[0]]
            if later:
                # Renumbered before: previous_id keeps the first old id (what an older reader
                # follows) and previous_ids the later ones, so every id it had still leads to it.
                # previous_id is written too: a hand edit may have left only previous_ids.
                item["previous_id"], item["previous_ids"] = earlier[0], later
                kept_as = f"previous_ids keeps {old_id} (previous_id keeps {earlier[0]})"
            else:
                item["previous_id"] = item["id"]
                kept_as = f"previous_id keeps {old_id}"
            done.append(f"{kind.filename}: {old_id} {_title(kind, item)} (item {at[index] + 1}) is now {new_id}, "
                        f"{kept_as}; {old_id} stays with {_title(kind, kept[first[old_id]][0])} "
                        f"(item {at[first[old_id]] + 1}): {rules[old_id]}")
            item["id"] = new_id
            kept[index] = (item, None)
            ftxn.replace_items(kept)
            groups.setdefault(old_id, [first[old_id]]).append(index)
        moved, unresolved = _relink(txn, kind, kept, groups)
        ftxn.replace_items(kept)
    return done + moved, unresolved


Holder = tuple[str, dict, Any]  # an item that may hold a link: (its file's name, it, its FileState / FileTxn or None)


def _link_holders(kind: Kind, items: list[Any], open_file: Callable[[Kind], Any]) -> tuple[list[Holder], list[str]]:
    """Every item whose links may name an id of ``kind``: the items of its file (as given) and
    the entries of every other store file (what tools see), each with its file's name and the
    FileState or FileTxn ``open_file`` gave for it (None for ``kind``'s own); and the names of
    the files ``open_file`` found do not parse (CorruptStoreFile), whose links cannot be looked
    at. Diagnose and ``--fix`` both ask this, so what one says is left for a person the other leaves."""
    holders: list[Holder] = [(kind.filename, item, None) for item in items if isinstance(item, dict)]
    unreadable = []
    for other in KINDS.values():
        if other is kind:
            continue
        try:
            source = open_file(other)
        except CorruptStoreFile:
            unreadable.append(other.filename)
            continue
        holders += [(other.filename, source.raw_item(entry["id"]), source) for entry in source.entries]
    return holders, unreadable


def _parsed(state: Any) -> Any:
    """``state`` when its file parses; else its error raised, as ``txn.file`` does."""
    if state.error is not None:
        raise state.error
    return state


def _choose_keepers(versions: CommittedVersions, kind: Kind, kept: list[tuple[Any, str | None]],
                    first: dict[str, int], renumber: list[int]) -> dict[str, str]:
    """Let the copy of each shared id that git shows is already pushed keep it, updating
    ``first`` (id -> index of the copy that keeps it) and ``renumber`` (indexes to renumber, in
    file order). Returns id -> why that copy keeps it, for the message."""
    rules: dict[str, str] = {}
    for key in dict.fromkeys(kept[i][0]["id"].strip() for i in renumber if not _needs_id(kind, kept[i][0])):
        members = [first[key]] + [i for i in renumber if not _needs_id(kind, kept[i][0])
                                  and kept[i][0]["id"].strip() == key]
        chosen, why = versions.keeper([kept[i][0] for i in members])
        if chosen is None:
            rules[key] = f"it comes first in the file, as git cannot tell which one is already shared ({why})"
            continue
        rules[key] = why
        keeper = members[chosen]
        if keeper != first[key]:
            renumber[:] = sorted([i for i in renumber if i != keeper] + [first[key]])
            first[key] = keeper
    return rules


def _title(kind: Kind, item: Any) -> str:
    text = item.get(kind.title_field) if isinstance(item, dict) else None
    if not isinstance(text, str) or not text.strip():
        return f"(no {kind.title_field})"
    text = " ".join(text.split())
    return '"' + (text if len(text) <= 60 else text[:59] + "…") + '"'


def _names(item: dict) -> set[str]:
    """Every id an item is known by: the one it has and, once renumbered, the ones it had."""
    return {*(model.previous_ids(item)), *([item["id"].strip()] if isinstance(item.get("id"), str) else [])}


def _says(owner: dict, field: str, holder: set[str]) -> bool:
    """Whether ``owner`` carries the other end of a ``field`` link that an entry known as
    ``holder`` points at it."""
    if field == "supersedes":
        return isinstance(owner.get("superseded_by"), str) and owner["superseded_by"].strip() in holder
    if field == "superseded_by":
        return bool(holder & set(model.supersedes_ids(owner)))
    related = owner.get("related_to")
    return isinstance(related, list) and any(isinstance(t, str) and t.strip() in holder for t in related)


def _relink(txn: Any, kind: Kind, kept: list[tuple[Any, str | None]],
            groups: dict[str, list[int]]) -> tuple[list[str], list[str]]:
    """Point each link that names a shared id at the owner that links back to its holder.

    Both clones allocated the id after they parted, so every link naming it was written on one
    side; the other end of a history link (or a related_to going both ways) says which. A link
    with no such end, or with one on several owners, is left as it is and reported.
    """
    if not groups:
        return [], []
    owners = {old_id: [kept[i][0] for i in indexes] for old_id, indexes in groups.items()}
    holders, unreadable = _link_holders(kind, [item for item, _ in kept], txn.file)
    moved: list[str] = []
    unresolved = [f"{name} does not parse, so its links to {', '.join(sorted(owners))} could not be checked after "
                  f"the renumbering in {kind.filename}: once it is fixed, check them" for name in unreadable]
    changed: dict[int, dict] = {}
    for name, item, other_txn in holders:
        holder = _names(item)
        if not isinstance(item.get("id"), str):
            continue
        new_item = dict(item)
        for field in ("supersedes", "superseded_by", "related_to"):
            value = item.get(field)
            targets = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            for target in targets:
                shared = target.strip() if isinstance(target, str) else None
                if shared not in owners or any(o is item for o in owners[shared]):
                    continue
                sayers = [o for o in owners[shared] if _says(o, field, holder)]
                where = f"{item['id'].strip()}.{field} names {shared}"
                if len(sayers) != 1:
                    others = ", ".join(f"{o['id']} {_title(kind, o)}" for o in owners[shared][1:])
                    why = "no entry links back to it" if not sayers else "several entries link back to it"
                    unresolved.append(
                        f"{name}: {where}, which stays with {_title(kind, owners[shared][0])}; it may mean {others} "
                        f"(renumbered from {shared}) instead, and {why}. Check it, and change it by hand in "
                        f".context/{name} if so")
                    continue
                if sayers[0]["id"] == shared:
                    continue
                new_id = sayers[0]["id"]
                if isinstance(new_item.get(field), str):
                    new_item[field] = new_id
                else:
                    new_item[field] = [new_id if isinstance(t, str) and t.strip() == shared else t
                                       for t in new_item[field]]
                moved.append(f"{name}: {where} and {new_id} links back to it, so the link now names {new_id}")
        if new_item != item:
            if other_txn is not None:
                other_txn.put(item["id"], new_item)
            else:
                changed[id(item)] = new_item
    for index, (item, _) in enumerate(kept):
        if id(item) in changed:
            kept[index] = (changed[id(item)], None)
    return moved, unresolved


def repair(report: Report, *, now: datetime | None = None) -> Report:
    """Apply every safe fix the report lists; marks findings as fixed and adds what was done."""
    now = now or datetime.now(timezone.utc)
    if context_refusal(report.project) is not None:
        # Every repair would be written where the link leads; the findings still offer --fix.
        if not any(f.fix for f in report.findings):
            return report
        return Report(report.project, report.findings + [Finding(
            INFO, "not_repaired",
            f"`doctor --fix` repaired nothing: every repair would be written where {CONTEXT_DIR} leads, outside "
            f"the project. First replace the link with a directory (see above), then run `context-keeper doctor "
            "--fix` again")])
    store = Store(Path(report.project))
    actions: list[Finding] = []
    try:
        _apply_fixes(report, store, actions, now)
    except (StoreError, OSError) as exc:
        # The store lock held by another process past its wait, or a write the disk refused. With
        # nothing repaired yet, the one-line error says it all; else the repairs made are said too.
        if not actions:
            raise
        why = (str(exc).rstrip(".") if isinstance(exc, StoreError) else
               f"the file system refused a write ({exc}); check that the disk has room and .context/ is writable")
        actions.append(Finding(
            ERROR, "fix_stopped",
            f"`doctor --fix` stopped: {why}. The repairs listed as FIXED were made, the others were not: run "
            "`context-keeper doctor --fix` again"))
    return Report(report.project, report.findings + actions)


def _apply_fixes(report: Report, store: Store, actions: list[Finding], now: datetime) -> None:
    """``repair``'s work: each fix the report offers, marking its finding fixed and adding what
    was done to ``actions``."""
    by_code: dict[str, list[Finding]] = {}
    for finding in report.findings:
        if finding.fix:
            by_code.setdefault(finding.code, []).append(finding)
    for finding in by_code.get("gitignore", []):
        done = _fix_gitignore(store)
        finding.fixed = True
        if done:
            actions.append(Finding(INFO, "fixed", done, file=finding.file))
    for finding in by_code.get("corrupt_file", []):
        kind = model.BY_PLURAL[finding.file.removesuffix(".json")]
        with store.locked():
            done = _mend(store, kind, now) or _restore(store, kind, now)
        if done:
            finding.fixed = True
            actions.append(Finding(INFO, "fixed", done, file=finding.file))
    if any(f.fixed for f in by_code.get("corrupt_file", [])):
        _look_again(report)
        by_code = {}
        for finding in report.findings:
            if finding.fix and not finding.fixed:
                by_code.setdefault(finding.code, []).append(finding)
    id_findings = by_code.get("duplicate_id", []) + by_code.get("missing_id", [])
    for name in sorted({f.file for f in id_findings}):
        kind = model.BY_PLURAL[name.removesuffix(".json")]
        done, unresolved = _fix_ids(store, kind, now)
        actions += [Finding(INFO, "fixed", message, file=name) for message in done]
        actions += [Finding(WARNING, "renumbered_link", message, file=name) for message in unresolved]
        for finding in id_findings:
            if finding.file == name:
                finding.fixed = True
    if by_code.get("duplicate_id"):
        # A link that disagreed only because it named a shared id is right once its entry moved.
        still = {f.message for f in _check_history(store)}
        for finding in report.findings:
            if finding.code == "history_link" and finding.message not in still:
                finding.fixed = True
    for finding in by_code.get("missing_backup", []) + by_code.get("bad_backup", []):
        kind = model.BY_PLURAL[finding.file.removesuffix(".json")]
        with store.locked():
            state = store._locked_state(kind)
            if state.error is None and state.stamp is not None:
                atomic_write_bytes(store.backup_path(kind), store.path(kind).read_bytes())
                finding.fixed = True
                actions.append(Finding(INFO, "fixed", f"saved a last-good copy of {finding.file}", file=finding.file))
    for finding in by_code.get("stale_temp", []):
        with store.locked():
            try:
                (store.dir / finding.file).unlink()
            except FileNotFoundError:
                pass
        finding.fixed = True
        actions.append(Finding(INFO, "fixed", f"removed {finding.file}", file=finding.file))


def _look_again(report: Report) -> None:
    """Bring ``report`` up to date once a store file that did not parse is mended or restored:
    the findings its parse error hid (entries without an id, links, a last-good copy to seed) are
    there to be repaired in the same run, and the exit code tells of them; a second ``--fix``
    finds nothing left. The semantic endpoint is not asked twice: no repair changes its answer."""
    done = [f for f in report.findings if f.fixed]
    seen = {(f.code, f.message) for f in done}
    probed = [f for f in report.findings if f.code == "semantic_endpoint"]
    fresh = [f for f in diagnose(Path(report.project), probe=False).findings if (f.code, f.message) not in seen]
    report.findings[:] = done + probed + fresh


# ---------------------------------------------------------------- CLI


_LABEL = {ERROR: "ERROR", WARNING: "WARNING", INFO: "note"}


def _render(report: Report, fix: bool) -> str:
    lines = [f"context-keeper doctor: {report.project}"]
    for f in report.findings:
        if f.code == "fixed":
            lines.append(f"  FIXED    {f.message}")
            continue
        mark = " (fixed)" if f.fixed else ""
        hint = f" [--fix: {f.fix}]" if f.fix and not fix and not f.fixed else ""
        lines.append(f"  {_LABEL[f.severity]:<8} {f.message}{mark}{hint}")
    open_ = [f for f in report.findings if not f.fixed and f.code != "fixed"]
    errors = sum(f.severity == ERROR for f in open_)
    warnings = sum(f.severity == WARNING for f in open_)
    fixable = sum(bool(f.fix) for f in open_ if f.severity != INFO)
    if not errors and not warnings:
        lines.append("Healthy: every store file parses and every entry is usable.")
    else:
        summary = f"{errors} error(s), {warnings} warning(s)."
        if fixable and not fix:
            summary += f" `context-keeper doctor --fix` can repair {fixable} of them safely."
        lines.append(summary)
    return "\n".join(lines)


def cmd_doctor(args: argparse.Namespace) -> int:
    from context_keeper.cli import cli_message  # in the flags typed (--project DIR), not project_dir

    try:
        root = resolve_project(args.project)
    except NoProject as exc:
        print(f"context-keeper doctor: {cli_message(exc)}", file=sys.stderr)
        return EXIT_NO_PROJECT
    try:
        report = diagnose(root)
        if args.fix:
            report = repair(report)
    except NoProject as exc:
        print(f"context-keeper doctor: {cli_message(exc)}", file=sys.stderr)
        return EXIT_NO_PROJECT
    except ContextKeeperError as exc:
        print(f"context-keeper doctor: {cli_message(exc)}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        _emit(console_json(report.as_dict()))
    else:
        _emit(_render(report, args.fix))
    return report.exit_code


def _emit(text: str) -> None:
    """Print even on a console that cannot show every character (paths and entries are Unicode)."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        text = text.encode(encoding, "backslashreplace").decode(encoding, "replace")
    sys.stdout.write(text + "\n")


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "doctor",
        help="check the store for corrupt files, malformed entries, broken links, and the Claude Code wiring for "
             "missing programs; --fix repairs what is safe",
        description=__doc__.split("\n\n")[0],
        epilog="exit codes: 0 healthy; 1 warnings only (the store works, something deserves a look); 2 bad input (an "
               "empty --project); 4 no project; 5 errors (a store file is unusable, or .context leads out of the "
               "project), or --fix stopped (another process held the store lock for over 30 s, or the disk refused "
               "a write; any repairs made before it are listed); 6 the report could not be written. With --fix, "
               "the code describes the store after the repairs.",
    )
    p.add_argument("--fix", action="store_true", help="repair what can be repaired without losing anything")
    p.add_argument("--project", help="project root (default: resolved from the current directory)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_doctor)
