"""Every use-case of context-keeper, once: the MCP tools, the CLI and the hooks call these.

A ``Service`` keeps one ``Store`` and one search index per project for the life of the process,
so repeated calls are served from memory and see other processes' writes on the next call.
Functions return plain dicts in the answer shapes of COMPAT.md and raise ``errors`` exceptions.
"""

from __future__ import annotations

import atexit
import copy
import functools
import logging
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from context_keeper import model, render
from context_keeper.budget import chars_to_tokens, json_chars
from context_keeper.config import checked, read_user_config
from context_keeper.confine import context_refusal
from context_keeper.errors import ContextKeeperError, InvalidInput, NotAStoreFile, NotFound, NoProject, StoreError
from context_keeper.model import DECISION, KINDS, Kind
from context_keeper.paths import established_exports, markdown_target
from context_keeper.project import CONTEXT_DIR, repository_root, resolve_project, root_spellings
from context_keeper.secrets import check_secrets
from context_keeper.similarity import classify_relation
from context_keeper.store_owner import store_owner
from context_keeper.store import (Store, folder_name, in_the_way, odd_statuses, project_name_of, readable_entries,
                                  readable_stamp, spelled_otherwise, write_gitignore)
from context_keeper.summary import build_summary

Clock = Callable[[], datetime]
log = logging.getLogger("context_keeper")


@dataclass
class _IndexState:
    index: Any  # search.SearchIndex; the engine is imported on first use to keep start-up fast
    stamps: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _warns_of_config_problems(tool: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """A tool whose answer read config.json (through ``Service.config``) carries what is wrong
    with the file (it does not parse: defaults were used) in its warnings: the user's settings
    silently replaced by defaults read as honoured. One place for every tool, so a tool that
    starts reading config is covered without remembering to add the warning."""

    @functools.wraps(tool)
    def warned(self: Service, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if getattr(self._config_reads, "problems", None) is not None:
            return tool(self, *args, **kwargs)  # called by another tool: that one reports them
        self._config_reads.problems = []
        try:
            answer = tool(self, *args, **kwargs)
            problems = self._config_reads.problems
        finally:
            self._config_reads.problems = None
        if isinstance(answer, dict):
            said = answer.get("warnings") or []
            unsaid = [p for p in dict.fromkeys(problems) if p not in said]  # get_context says them already
            if unsaid:
                answer["warnings"] = [*unsaid, *said]
        return answer

    return warned


class Service:
    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        clock: Clock | None = None,
        hook_cache_delay: float | None = 0.3,
        dense_scoring: bool = True,
    ) -> None:
        self._env = env
        # A long-lived server scores large stores over NumPy arrays; a one-shot command would pay
        # more for NumPy's import than the arrays save it (search/dense.py).
        self._dense_scoring = dense_scoring
        self._cwd = cwd
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        # After a write, refresh the hooks' derived cache in the background (None: never), so the
        # next hook run finds it fresh instead of rebuilding it inside the agent's turn.
        self._hook_cache_delay = hook_cache_delay
        self._hook_timers: dict[Path, threading.Timer] = {}
        self._stores: dict[Path, Store] = {}
        self._indexes: dict[Path, _IndexState] = {}
        self._summaries: dict[tuple, tuple[dict[str, Any], dict[str, Any]]] = {}  # key -> (config, answer)
        self._mutex = threading.Lock()
        self._config_reads = threading.local()  # per tool call: config.json's problems (_warns_of_config_problems)

    # ------------------------------------------------------------ plumbing

    def now(self) -> datetime:
        return self._clock()

    def project_root(self, project_dir: str | None = None) -> Path:
        return resolve_project(project_dir, env=self._env if self._env is not None else os.environ, cwd=self._cwd)

    def root_spellings(self, root: Path, project_dir: str | None = None) -> tuple[str, ...]:
        """Other spellings of ``root`` (found for ``project_dir``) that the caller used (project.root_spellings)."""
        return root_spellings(root, project_dir, env=self._env if self._env is not None else os.environ)

    def store(self, project_dir: str | None = None, *, recorded: bool = False) -> Store:
        """The store of the project; ``recorded``: for reads, which refuse a project that has no
        ``.context/`` (an empty answer would read as "nothing recorded" for a mistyped path)."""
        root = self.project_root(project_dir)
        with self._mutex:
            store = self._stores.get(root)
            if store is None:
                store = self._stores[root] = Store(root)
        linked_out = context_refusal(root)
        if linked_out is not None:
            raise StoreError(linked_out)
        blocked = None if store.dir.is_dir() else in_the_way(store.dir)
        if blocked is not None:
            # Every read and write would fail on a path inside it, with an error naming that path.
            raise StoreError(f"nothing was read or saved: {blocked}, then try again.")
        if recorded and not store.dir.is_dir():
            raise NoProject(
                f"{root} has no {CONTEXT_DIR}/ directory, so nothing is recorded there. Pass the project's root "
                f"directory, or run `context-keeper init {root}` (the first record_* call also creates it)."
            )
        return store

    def index(self, store: Store) -> _IndexState:
        """The search index for ``store``, brought in step with the files on disk."""
        from context_keeper.search import Doc, SearchIndex

        with self._mutex:
            state = self._indexes.get(store.root)
            if state is None:
                index = SearchIndex()
                index.dense_scoring = self._dense_scoring
                state = self._indexes[store.root] = _IndexState(index)
        with state.lock:
            read = {s.kind.name: (s, readable_stamp(store, s)) for s in map(store.state, KINDS.values())}
            changed = {name: stamp for name, (_, stamp) in read.items() if state.stamps.get(name, "never") != stamp}
            if changed:
                # A file broken by a merge or a hand edit is searched in its last good copy, as
                # the summary shows it: an empty kind would read as "nothing recorded".
                # Settled: scored with exact averages, however the index was loaded.
                state.index.replace_kinds({name: [Doc(name, e) for e in readable_entries(store, read[name][0])[0]]
                                           for name in changed})
                state.stamps.update(changed)
        return state

    def _refresh_hook_cache_soon(self, store: Store) -> None:
        """Debounced rebuild of the hooks' derived caches (``.context/hook_*state.json``) when
        the hooks use them."""
        from context_keeper.hooks.cache import REFRESHED

        if self._hook_cache_delay is None or not any((store.dir / name).exists() for name in REFRESHED):
            return
        if self._hook_cache_delay <= 0:
            _refresh_hook_cache(store.root)
            return
        with self._mutex:
            pending = self._hook_timers.pop(store.root, None)
            if pending is not None:
                pending.cancel()
            timer = threading.Timer(self._hook_cache_delay, _refresh_hook_cache, args=(store.root,))
            timer.daemon = True
            self._hook_timers[store.root] = timer
            timer.start()
            _WITH_PENDING_REFRESH.add(self)

    def flush_hook_caches(self) -> None:
        """Rebuild now what a write scheduled for later: a server that exits within the delay
        (a one-shot client) left the hooks' cache stale, and the next prompt rebuilt it all."""
        with self._mutex:
            pending, self._hook_timers = self._hook_timers, {}
        for root, timer in pending.items():
            not_run = not timer.finished.is_set()  # set once it has run (or been cancelled)
            timer.cancel()
            if not_run:
                _refresh_hook_cache(root)

    def _index_after_write(self, store: Store, kind: Kind, before: Any, txn: Any, changed: Iterable[dict]) -> None:
        """Apply our own write to the index incrementally instead of re-indexing the kind.

        Runs after the lock is released; the index is stamped with the file as our transaction
        wrote it, so a write another process made since then still reads as a change."""
        from context_keeper.search import Doc

        self._refresh_hook_cache_soon(store)
        state = self._indexes.get(store.root)
        written = txn.committed.get(kind.name)
        if state is None or written is None:
            return
        with state.lock:
            if state.stamps.get(kind.name, "never") != before:
                return  # the index was already behind; the next read re-indexes the kind
            for entry in changed:
                state.index.upsert(Doc(kind.name, entry))
            state.stamps[kind.name] = written

    def config(self, store: Store) -> dict[str, Any]:
        config, problems = store.config()
        reads = getattr(self._config_reads, "problems", None)
        if reads is not None:
            reads.extend(problems)
        return config

    def _said(self, problem: str | None) -> None:
        """``problem`` (a setting that breaks its rule) into the warnings of the tool answering, as
        config.json's other problems go (_warns_of_config_problems)."""
        reads = getattr(self._config_reads, "problems", None)
        if problem and reads is not None:
            reads.append(problem)

    def _setting(self, store: Store, key: str) -> Any:
        """A setting by its rule (config.checked): "false" is not true. What is wrong with it is said."""
        value, problem = checked(self.config(store), key)
        self._said(problem)
        return value

    def _project_name(self, store: Store) -> str:
        name, problem = project_name_of(self.config(store), store.root)
        self._said(problem)
        return name

    def _warnings(self, store: Store) -> list[str]:
        warnings = list(store.config()[1])
        for state in store.all_states():
            if state.error is not None:
                warnings.append(str(state.error))
            elif state.misfiled_max:
                warnings.append(_misfiled_warning(state))
        return warnings

    # ------------------------------------------------------------ init

    def init_project(self, directory: str, project_name: str | None = None) -> dict[str, Any]:
        root = Path(directory).expanduser().resolve()
        if not root.is_dir():
            raise InvalidInput(f"{directory!r} is not an existing directory", field="directory")
        if root.parent == root:
            raise InvalidInput(f"{str(root)!r} is the root of the file system, which no tool uses as a project (its "
                               "store would be the memory of every directory without one); run init in the project's "
                               "own root directory", field="directory")
        owner = Path(store_owner(str(root)))
        if owner != root:
            # Resolution from here names the project holding the store: a store made here
            # would be one no tool ever reads.
            raise InvalidInput(f"{str(root)!r} is inside the store of the project {owner}, not a project of its own; "
                               f"run `context-keeper init {owner}` instead", field="directory")
        if project_name is not None and not project_name.strip():
            raise InvalidInput("name: give the project a name with at least one visible character, or leave it out "
                               f"to use the folder's name ({folder_name(root)!r})", field="name")
        project_name = project_name.strip() if project_name is not None else None
        linked_out = context_refusal(root)
        if linked_out is not None:
            raise StoreError(linked_out)
        context = root / CONTEXT_DIR
        existed = context.exists()
        store = Store(root)
        warnings = []
        with store.transaction() as txn:
            # Opened first: one that refuses (a missing file whose last good copy holds entries)
            # must find nothing written yet, or a config.json left behind blocks a git checkout.
            missing = [txn.file(kind) for kind in KINDS.values() if not store.path(kind).exists()]
            config_path = context / "config.json"
            # Decided under the lock: two inits at once both found no .context/ before it, and the
            # one that waited would say "Created" for the files the other had just written.
            created = not existed and len(missing) == len(KINDS) and not config_path.exists()
            if not config_path.exists():
                store.write_sidecar("config.json", {"project_name": project_name or folder_name(root)})
            elif project_name and _configured_name(config_path) != project_name:
                # init never rewrites an existing config, so a --name there would be lost unsaid.
                warnings.append(f"{config_path} already exists, so the name {project_name!r} was not written; "
                                "set \"project_name\" in it by hand to rename the project")
            for ftxn in missing:
                # Written as any store write is, so with a last-good copy: constraints.json is
                # the file people edit by hand, and a broken first edit needs one to fall back on.
                ftxn.replace_items([])
            write_gitignore(context)
        warnings += txn.warnings
        answer = {"success": True, "project_dir": str(root), "context_dir": str(context), "created": created}
        outer = next((d for d in root.parents if (d / CONTEXT_DIR).is_dir()), None)
        repository = repository_root(root)
        if created and outer is not None:
            warnings.append(
                f"{outer} already has a .context/: this is a second, separate project memory inside it. "
                f"Tools and hooks started in {root} or below now use this one, not {outer}'s. If that is "
                f"not what you meant, remove {context} and run init in {outer} (or not at all)."
            )
        elif created and repository is not None and repository != root:
            warnings.append(
                f"{root} is inside the git repository {repository}, not its root: a client opened on the "
                f"repository, and tools started outside {root}, will not use this memory. If you meant one for "
                f"the whole repository, remove {context} and run init in {repository}."
            )
        if warnings:
            answer["warnings"] = warnings
        return answer

    # ------------------------------------------------------------ record

    @_warns_of_config_problems
    def record(
        self,
        kind_name: str,
        values: Mapping[str, Any],
        *,
        supersedes: list[str] | None = None,
        project_dir: str | None = None,
        allow_secrets: bool = False,
    ) -> dict[str, Any]:
        kind = model.kind_named(kind_name)
        values = {k: v for k, v in values.items() if v is not None}
        if kind is DECISION and not values.get("why_chosen") and values.get("rationale"):
            values["why_chosen"] = values.pop("rationale")
        values.pop("rationale", None)
        for managed in (*model.MANAGED, "status", "superseded_by", "updated_at", "verified_at"):
            values.pop(managed, None)
        unknown = sorted(set(values) - {f.name for f in kind.fields})
        if unknown:
            raise InvalidInput(
                f"unknown field(s) for a {kind.name}: {', '.join(unknown)}. "
                f"Valid fields: {', '.join(f.name for f in kind.fields if f.name not in ('status', 'superseded_by'))}",
                field=unknown[0],
            )
        supersedes = model.clean_ids("supersedes", supersedes or [])
        now = model.now_iso(self.now())
        entry = model.new_entry(kind, values, f"{kind.prefix}-000", now)
        model.check_text(entry)
        if not allow_secrets:
            check_secrets(entry)
        # Only a plain record may create .context/: one superseding an entry there cannot succeed, and
        # a refused call must not leave a new directory behind (with a mistyped project_dir).
        store = self.store(project_dir, recorded=bool(supersedes))
        if kind.spec("scope") is not None:
            entry["scope"] = project_scope(store.root, entry["scope"])
        index_state = self.index(store)
        from context_keeper.search import Doc

        with index_state.lock:
            similar_hits = index_state.index.similar(Doc(kind.name, entry), limit=5)

        with self._exported_after(store, kind) as export_warnings, store.transaction() as txn:
            ftxn = txn.file(kind)
            before = readable_stamp(store, store.state(kind))
            supersedes = _as_stored(store, ftxn, supersedes)
            if entry.get("related_to"):
                entry["related_to"] = _as_stored(store, ftxn, entry["related_to"])
            for old_id in supersedes:
                if model.parse_id(old_id)[0] != kind.prefix:
                    raise InvalidInput(f"supersedes: {old_id} is not a {kind.name}; only a {kind.name} can be superseded by one", field="supersedes")
                old = _require_named(ftxn, old_id, "supersedes")
                status = old.get("status", "active")
                if status != "active":
                    # As deprecate_entry: a retired entry keeps its first successor and reason.
                    hint = (f"supersede its successor {old['superseded_by']} instead" if status == "superseded" and old.get("superseded_by")
                            else "restore it first with update_entry {\"status\": \"active\"} if it should be replaced")
                    raise InvalidInput(f"supersedes: {old_id} is already {status}; nothing was recorded. To replace today's "
                                       f"answer, {hint}", field="supersedes")
            entry["id"] = ftxn.next_id()
            if entry["id"] in entry.get("related_to", []):
                # update_entry refuses a link to the entry itself; a record learns its id only here.
                raise InvalidInput(f"related_to: {entry['id']} is the id this {kind.name} gets, so it would link to "
                                   "itself; nothing was recorded. Link other, recorded entries only", field="related_to")
            changed = []
            for old_id in supersedes:
                raw = ftxn.raw_item(old_id)
                raw.update(status="superseded", superseded_by=entry["id"], updated_at=now)
                ftxn.put(old_id, raw)
                changed.append(ftxn.get(old_id))
            if supersedes:
                entry["supersedes"] = list(supersedes)
            ftxn.append(entry)
            changed.append(ftxn.get(entry["id"]))
        self._index_after_write(store, kind, before, txn, changed)

        answer: dict[str, Any] = {"success": True, "id": entry["id"], "entry": entry}
        if supersedes:
            answer["superseded"] = list(supersedes)
        similar = self._similar_entries(store, kind, entry, similar_hits, exclude=set(supersedes))
        if similar:
            answer["similar_entries"] = similar
        # A setting that did nothing would otherwise look like no duplicate, or no suffix, found.
        warnings = [p for key in ("similar_threshold", "id_suffix") if (p := checked(self.config(store), key)[1])]
        warnings += self._dangling_links(store, entry)
        # Similar entries were looked for in a broken file's last good copy, as get_context reads it.
        warnings += [str(s.error) for s in store.all_states() if s.error is not None] + self._last_good_notes(store)
        if warnings:
            answer["warnings"] = warnings
        if export_warnings or txn.warnings:
            answer.setdefault("warnings", []).extend([*txn.warnings, *export_warnings])
        return answer

    def _similar_entries(self, store: Store, kind: Kind, entry: dict, hits: list, exclude: set[str]) -> list[dict]:
        threshold = checked(self.config(store), "similar_threshold")[0]
        out = []
        for hit in hits:
            other = hit.entry
            if other["id"] in exclude or other.get("status") == "deprecated" or hit.relevance < threshold:
                continue
            other_kind = KINDS[hit.kind]
            item = {
                "id": other["id"],
                "type": hit.kind,
                "summary": model.entry_title(other_kind, other),
                "similarity": round(hit.relevance, 3),
                "origin": other.get("origin", "agent"),
                "status": other.get("status", "active"),
                "relation": classify_relation(kind, entry, other_kind, other),
            }
            # Restating a replaced entry is going back on its successor, not a harmless duplicate.
            if other.get("superseded_by"):
                item["superseded_by"] = other["superseded_by"]
            out.append(item)
        return out

    def _dangling_links(self, store: Store, entry: Mapping[str, Any]) -> list[str]:
        missing, unchecked = [], {}
        for linked in entry.get("related_to", []):
            try:
                store.find(linked)
            except NotFound:
                # "dec-1" for dec-001 is no future id (related_to does not count for the next one).
                missing.append(linked + store.state(model.kind_of_id(linked)).ids.spelled_otherwise(linked))
            except InvalidInput:
                missing.append(linked)
            except StoreError as exc:
                # The entry is already saved: an error here would make the client record it again.
                unchecked.setdefault(getattr(exc, "path", None) or str(exc), []).append(linked)
        warnings = [f"related_to names ids that do not exist yet: {', '.join(missing)}"] if missing else []
        for path, ids in unchecked.items():
            warnings.append(f"related_to: {', '.join(ids)} could not be checked, as {Path(path).name} cannot be read "
                            "(`context-keeper doctor` says why)")
        return warnings

    # ------------------------------------------------------------ update / deprecate

    @_warns_of_config_problems
    def update_entry(self, entry_id: str, updates: Mapping[str, Any], *, project_dir: str | None = None,
                     allow_secrets: bool = False) -> dict[str, Any]:
        kind = model.kind_of_id(entry_id)
        if not isinstance(updates, Mapping) or not updates:
            raise InvalidInput("updates must be a non-empty object of {field: new value}", field="updates")
        for frozen in model.MANAGED:
            if frozen in updates:
                raise InvalidInput(f"{frozen} cannot be changed; record a new entry instead", field=frozen)
        for stamped in ("updated_at", "verified_at"):
            # Every update stamps both with now, so a given value would be reported as updated
            # and then thrown away.
            if stamped in updates:
                raise InvalidInput(
                    f"{stamped} is set by context-keeper: every update_entry sets updated_at and verified_at "
                    f"to now. Leave {stamped} out of updates (to mark an entry verified, update it or send "
                    "verified_sha)",
                    field=stamped,
                )
        store = self.store(project_dir, recorded=True)  # an entry to change needs a store: never create one
        now = model.now_iso(self.now())
        with self._exported_after(store, kind) as export_warnings, store.transaction() as txn:
            ftxn = txn.file(kind)
            before = readable_stamp(store, store.state(kind))
            current = ftxn.require(entry_id.strip())
            raw = ftxn.raw_item(current["id"])
            cleaned: dict[str, Any] = {}
            for name, value in updates.items():
                off_kind = name in ("deprecated_reason", "verified_sha") or (name == "rationale" and kind is DECISION)
                if kind.spec(name) is None and name not in raw and not off_kind:
                    raise InvalidInput(
                        f"{name if len(name) <= 80 else name[:79] + '…'} is not a field of a {kind.name}. Valid fields: "
                        + ", ".join([f.name for f in kind.fields if f.name not in model.MANAGED]
                                    + ["deprecated_reason", "verified_sha"] + (["rationale"] if kind is DECISION else [])),
                        field=name,
                    )
                spec = kind.spec(name)
                if value is None and spec is not None and spec.shape == "enum":
                    # null reads as "unset", but there is no unset status, hardness or origin: it
                    # quietly became the default (a retired entry active again, a rule absolute).
                    raise InvalidInput(f"{name}: null is not allowed; use one of: {', '.join(spec.choices)}",
                                       field=name)
                cleaned[name] = model.clean_value(kind, name, value)
            if kind is DECISION and "rationale" in cleaned:
                # The legacy alias, as record_decision takes it: the why_chosen text the answers show.
                if "why_chosen" in cleaned:
                    raise InvalidInput("give why_chosen or its legacy name rationale, not both", field="rationale")
                cleaned["why_chosen"] = cleaned.pop("rationale")
            for name in ("related_to", "supersedes", "superseded_by"):
                if cleaned.get(name):  # links are written as the store spells the ids they name
                    linked = _as_stored(store, ftxn, [cleaned[name]] if name == "superseded_by" else cleaned[name])
                    cleaned[name] = linked[0] if name == "superseded_by" else linked
            if "scope" in cleaned and kind.spec("scope") is not None and cleaned["scope"] != current.get("scope"):
                cleaned["scope"] = project_scope(store.root, cleaned["scope"])  # a value sent back unchanged passes
            if "related_to" in cleaned:
                _check_new_links(store, ftxn, current, cleaned["related_to"])
            for old_id in cleaned.get("supersedes") or []:
                if old_id == current["id"] or model.parse_id(old_id)[0] != kind.prefix:
                    raise InvalidInput(f"supersedes: {old_id} is not another {kind.name}; list the ids of the "
                                       f"{kind.plural} {current['id']} replaced, e.g. [\"{kind.prefix}-001\"]",
                                       field="supersedes")
                if old_id.lower() not in {i.lower() for i in model.supersedes_ids(current)}:
                    # As related_to: a link added now must name an entry (one kept as stored passes).
                    old = _require_named(ftxn, old_id, "supersedes")
                    if model.id_key(old.get("superseded_by")) != model.id_key(current["id"]):
                        # Only one end of the link: both entries would read as the current answer.
                        raise InvalidInput(
                            f"supersedes: {old_id} does not name {current['id']} as its successor "
                            f"({old.get('status', 'active')}"
                            + (f", replaced by {old['superseded_by']}" if old.get("superseded_by") else "")
                            + f"); to record that {current['id']} replaced it, call deprecate_entry with id "
                            f"{old_id} and superseded_by {current['id']}, then add it here",
                            field="supersedes")
            cleared = _apply_status_rules(ftxn, kind, current, raw, cleaned)
            if kind is DECISION and "why_chosen" in cleaned and "rationale" in raw:
                # A legacy entry's rationale is what its why_chosen replaces: kept, the old reason
                # went on matching searches though no answer showed it.
                cleared = [*cleared, "rationale"]
            model.check_text(cleaned)
            if not allow_secrets:
                check_secrets(cleaned)
            raw.update(cleaned)
            for name in cleared:
                raw.pop(name, None)
            raw["updated_at"] = now
            raw["verified_at"] = now
            # An entry from an older version (verify_quality's legacy_entry) was just reviewed and
            # written by this one; without the stamp no update could ever clear the flag.
            raw.setdefault("schema_version", model.SCHEMA_VERSION)
            ftxn.put(current["id"], raw)
            entry = ftxn.get(current["id"])
            changed = [entry]
            released = _release_from_successor(ftxn, current, entry, now)
            if released is not None:
                changed.append(released)
        self._index_after_write(store, kind, before, txn, changed)
        answer = {"success": True, "id": entry["id"], "updated_fields": sorted({*cleaned, *cleared}), "entry": entry}
        if released is not None:
            answer["also_updated"] = [f"{released['id']}: no longer lists {entry['id']} in supersedes"]
        if export_warnings or txn.warnings:
            answer.setdefault("warnings", []).extend([*txn.warnings, *export_warnings])
        return answer

    @_warns_of_config_problems
    def deprecate_entry(
        self,
        entry_id: str,
        reason: str = "",
        *,
        superseded_by: str | None = None,
        merge_into: str | None = None,
        project_dir: str | None = None,
        allow_secrets: bool = False,
    ) -> dict[str, Any]:
        kind = model.kind_of_id(entry_id)
        for name, value in (("superseded_by", superseded_by), ("merge_into", merge_into)):
            if value and model.id_key(value) is None:  # else kind_of_id blames "id", the entry's own
                raise InvalidInput(f"{name}: {value!r} is not an entry id (ids look like {kind.prefix}-001, "
                                   f"or {kind.prefix}-013-a7f3 with a suffix)", field=name)
        superseded_by = model.canonical_id(superseded_by) if superseded_by and superseded_by.strip() else superseded_by
        merge_into = model.canonical_id(merge_into) if merge_into else merge_into
        reason = (reason or "").strip()
        if merge_into and not reason:
            reason = f"merged into {merge_into}"
        elif isinstance(superseded_by, str) and superseded_by.strip() and not reason:
            # The tool schema leaves reason optional, and naming the successor already says why.
            reason = f"superseded by {superseded_by.strip()}"
        if len(reason) < 5:
            raise InvalidInput("reason: say in a few words why the entry no longer holds (at least 5 characters)", field="reason")
        model.check_text({"reason": reason})
        if not allow_secrets:
            check_secrets({"reason": reason})
        store = self.store(project_dir, recorded=True)  # an entry to change needs a store: never create one
        now = model.now_iso(self.now())
        with self._exported_after(store, kind) as export_warnings, store.transaction() as txn:
            ftxn = txn.file(kind)
            before = readable_stamp(store, store.state(kind))
            target = ftxn.require(entry_id.strip())
            # Written into the entries as the store spells them ("DEC-7" given for dec-7).
            superseded_by, merge_into = (_as_stored(store, ftxn, [v])[0] if v else v for v in (superseded_by, merge_into))
            if target.get("status", "active") != "active":
                # Refused rather than overwritten: the first reason and successor are the history.
                raw_target = ftxn.raw_item(target["id"])
                earlier = [f"reason: {raw_target['deprecated_reason']!r}"] if raw_target.get("deprecated_reason") else []
                if target.get("superseded_by"):
                    earlier.append(f"superseded by {target['superseded_by']}")
                raise InvalidInput(
                    f"id: {target['id']} is already {target['status']} ({'; '.join(earlier) or 'no reason recorded'}); "
                    "nothing was changed and the "
                    "first reason is kept. To reword it use update_entry with updates.deprecated_reason; to retire "
                    "it differently, first restore it with update_entry {\"status\": \"active\"}",
                    field="id",
                )
            if merge_into and superseded_by and merge_into.strip() != superseded_by.strip():
                raise InvalidInput(
                    "superseded_by: give either merge_into or superseded_by (the merge survivor becomes the "
                    "successor), not two different ids",
                    field="superseded_by",
                )
            changed = []
            answer: dict[str, Any] = {"success": True, "id": target["id"]}
            successor = superseded_by
            if merge_into:
                if model.kind_of_id(merge_into) is not kind:
                    raise InvalidInput(f"merge_into must be another {kind.name} id", field="merge_into")
                if merge_into.strip() == target["id"]:
                    raise InvalidInput("merge_into must name a different entry", field="merge_into")
                survivor = _require_named(ftxn, merge_into.strip(), "merge_into")
                if survivor.get("status", "active") != "active":
                    # Folded into a retired entry, the content left every answer; folded into its
                    # own predecessor, the two named each other as successor and neither was current.
                    by = f" by {survivor['superseded_by']}" if survivor.get("superseded_by") else ""
                    raise InvalidInput(
                        f"merge_into: {survivor['id']} is {survivor['status']}{by}, so the merged entry would "
                        f"survive nowhere; merge into an active {kind.name} (or restore {survivor['id']} first "
                        "with update_entry {\"status\": \"active\"})",
                        field="merge_into",
                    )
                merged = _merge_fields(kind, ftxn.raw_item(survivor["id"]), survivor, target)
                merged["updated_at"] = now
                ftxn.put(survivor["id"], merged)
                changed.append(ftxn.get(survivor["id"]))
                successor = survivor["id"]
                answer["merged_into"] = survivor["id"]
            elif superseded_by:
                _check_successor(ftxn, kind, target, superseded_by.strip())
            raw = ftxn.raw_item(target["id"])
            raw["status"] = "superseded" if superseded_by and not merge_into else "deprecated"
            raw["deprecated_reason"] = reason
            if successor:
                raw["superseded_by"] = successor.strip()
            raw["updated_at"] = now
            ftxn.put(target["id"], raw)
            changed.append(ftxn.get(target["id"]))
            answer["status"] = raw["status"]
            answer["entry"] = ftxn.get(target["id"])
            if merge_into:
                answer["survivor"] = ftxn.get(successor)
        self._index_after_write(store, kind, before, txn, changed)
        if export_warnings or txn.warnings:
            answer.setdefault("warnings", []).extend([*txn.warnings, *export_warnings])
        return answer

    # ------------------------------------------------------------ markdown

    @_warns_of_config_problems
    def export_markdown(self, path: str | None = None, *, project_dir: str | None = None) -> dict[str, Any]:
        store = self.store(project_dir, recorded=True)
        target = markdown_target(store.root, path or self._export_path(store))
        with ExitStack() as held:
            try:
                # As the refresh after a write: one export cannot replace a newer one.
                held.enter_context(store.locked())
            except StoreError as exc:
                if not _lock_file_refused(exc):
                    raise
                # A store whose lock file cannot be opened (a read-only checkout or mount) has no
                # writer to be ordered with, and exporting it only reads it.
            return self._write_markdown(store, target)

    def _write_markdown(self, store: Store, target: Path) -> dict[str, Any]:
        from context_keeper.fsio import atomic_write_text

        state = store.state(DECISION)
        if state.error is not None:
            raise state.error
        _refuse_to_replace_other_writing(target, established_exports(store.root, self.config(store)))
        from context_keeper.retrieval import current_replacement  # the successor get_context names

        chains: dict = {}  # shared: a long chain is walked once, not once per entry on it
        replacements = {e["id"]: current_replacement(store, e, chains) for e in state.entries if e.get("superseded_by")}
        text = render.decisions_markdown(self._project_name(store), state.entries, replacements)
        atomic_write_text(target, text)
        return {"success": True, "path": str(target), "decisions": len(state.entries)}

    def _export_path(self, store: Store) -> str:
        """Where the Markdown projection goes: config ``markdown_export.path``, else DECISIONS.md.
        export_markdown without a path and the export after each write use it, so they write one file."""
        return self._setting(store, "markdown_export.path") or "DECISIONS.md"

    @contextmanager
    def _exported_after(self, store: Store, kind: Kind) -> Iterator[list[str]]:
        """Hold the store lock across a write of ``kind`` and, for a decision, the DECISIONS.md
        refresh after it; yields the list the refresh's warning (if any) is added to.

        Exported once the lock was let go, a writer that read the decisions before another's
        commit could replace that one's newer export: the file then lacked a decision whose
        record had returned. Under the lock each export sees every commit before it, and the
        last one to run wrote the file as the store is. Its cost: other writers wait for the
        render too."""
        warnings: list[str] = []
        if kind is not DECISION:
            yield warnings
            return
        with store.locked():
            yield warnings  # the write's transaction commits before this returns
            warnings += self._auto_export(store)

    def _auto_export(self, store: Store) -> list[str]:
        """Refresh DECISIONS.md after a decision changed (with the store lock held). The change is
        already on disk, so a failure here is a warning in the answer, never an error (a client
        would retry the write)."""
        if self._setting(store, "markdown_export.enabled") is True:
            path = self._export_path(store)
            try:
                self._write_markdown(store, markdown_target(store.root, path))
            except (ContextKeeperError, OSError) as exc:
                # The configured file by name: "DECISIONS.md" sent people looking for the default one.
                return [f"the change is saved, but the Markdown export {path} was not updated: {exc}"]
        return []

    # ------------------------------------------------------------ summary / constraints

    @_warns_of_config_problems
    def get_project_summary(self, token_budget: int | None = None, *, project_dir: str | None = None) -> dict[str, Any]:
        store = self.store(project_dir, recorded=True)
        budget = int(token_budget or 2000)
        if budget < 100:
            raise InvalidInput(f"token_budget must be at least 100 tokens (got {budget}); leave it out (or give 0) "
                               "for the default of 2000", field="token_budget")
        states = {s.kind.name: s for s in store.all_states()}
        # Session start asks for the same summary over and over; it only changes with the files.
        # The entry keeps the config it was made with: by id() alone, a later config read that
        # got a freed config's address was served that older config's summary (another name).
        config = self.config(store)
        title = self._project_name(store)  # before the cache: a summary served from it says the problem too
        key = (store.root, budget, tuple(readable_stamp(store, s) for s in states.values()), id(config))
        cached = self._summaries.get(key)
        if cached is not None and cached[0] is config:
            return copy.deepcopy(cached[1])
        # A file broken by a hand edit is summarised from its last good copy, as the hooks do:
        # "0 constraints" would tell the agent the project has no rules.
        entries, from_backup = {}, []
        for name, state in states.items():
            entries[name], backed = readable_entries(store, state)
            if backed:
                from_backup.append(_shown_from_last_good(state, "the summary shows its last good copy"))
        shown = [e for kind_entries in entries.values() for e in kind_entries if e.get("status") == "active"]
        warnings = self._warnings(store) + from_backup + list(odd_statuses(store, shown).values())

        def built(envelope: int) -> dict[str, Any]:
            answer = build_summary(title, entries["decision"], entries["pipeline"],
                                   entries["constraint"], token_budget=budget, envelope=envelope)
            if warnings:
                answer["warnings"] = warnings
            return answer

        # token_budget bounds the answer as it is sent (compact JSON: the keys, counts, warnings
        # and escaped line breaks around the text), as for get_context; the text gives way to them.
        # Each refit can only shrink the text; it stops where the text has nothing left to give
        # (warnings longer than a small budget).
        answer, envelope = built(0), 0
        for _attempt in range(8):
            sent = chars_to_tokens(json_chars({**answer, "tokens_used": budget}))
            if sent <= budget or envelope > budget:
                break
            # What the sent answer takes beyond its text, at the least: the text left room for
            # its own lines, not for the keys around them.
            envelope = max(envelope + 1, envelope + sent - budget, sent - answer["tokens_used"])
            answer = built(envelope)
        answer["tokens_used"] = chars_to_tokens(json_chars({**answer, "tokens_used": budget}))
        with self._mutex:
            if len(self._summaries) > 16:
                self._summaries.clear()
            self._summaries[key] = (config, copy.deepcopy(answer))
        return answer

    @_warns_of_config_problems
    def reload_constraints(self, *, project_dir: str | None = None) -> dict[str, Any]:
        store = self.store(project_dir, recorded=True)
        state = store.state(KINDS["constraint"])
        entries, from_backup = readable_entries(store, state)
        if state.error is not None and not from_backup:
            raise state.error  # "No active constraints" would tell the agent the project has no rules
        active = [c for c in entries if c.get("status", "active") == "active"]
        answer = {
            "constraints": [
                {"id": c["id"], "rule": c.get("rule", ""), "scope": c.get("scope") or "global",
                 "hardness": c.get("hardness", "absolute"), "reason": c.get("reason", "")}
                for c in sorted(active, key=lambda e: model.id_sort_key(e["id"]))
            ],
            "count": len(active),
            "text": render.constraints_block(active),
        }
        warnings = list(odd_statuses(store, active).values())
        if from_backup:
            # As the summary and the edit guard do: the rules of the last good copy, said so.
            note = _shown_from_last_good(state, "these are its last good copy's active constraints")
            warnings = [str(state.error), note] + warnings
            answer["text"] += "\n(" + note + ")"
        if warnings:
            answer["warnings"] = warnings
        return answer

    @_warns_of_config_problems
    def get_compaction_report(self, *, project_dir: str | None = None) -> dict[str, Any]:
        store = self.store(project_dir, recorded=True)
        report = store.read_sidecar("compaction_report.json")
        if not isinstance(report, dict):
            path = store.dir / "compaction_report.json"
            if path.exists():
                # "No report yet" for a report that exists would hide the entries it says were lost.
                raise StoreError(f"{path} exists but cannot be read as a JSON object (a cut-off write or a hand "
                                 "edit); the last compaction's check is in it. Look at the file, or delete it: the "
                                 "next compaction writes a new one")
            return {"status": "no_report", "message": "No compaction report yet: it is written after a context compaction when the hooks are installed."}
        return report

    # ------------------------------------------------------------ retrieval

    def min_relevance(self, store: Store, override: float | None = None) -> float:
        if override is not None:
            # The MCP schema bounds it; the CLI and other callers come through here.
            if isinstance(override, bool) or not isinstance(override, (int, float)) or not 0.0 <= override <= 1.0:
                raise InvalidInput(f"min_relevance must be a number from 0 to 1 (got {override!r}); leave it out "
                                   "for the configured threshold (default 0.5)", field="min_relevance")
            return float(override)
        from context_keeper.config import checked

        value = checked(self.config(store), "min_relevance")[0]  # out of range: the default (and a warning)
        if value is not None:
            return float(value)
        from context_keeper.search import DEFAULT_MIN_RELEVANCE

        return DEFAULT_MIN_RELEVANCE

    @_warns_of_config_problems
    def get_context(self, **kwargs: Any) -> dict[str, Any]:
        from context_keeper.retrieval import get_context

        return get_context(self, **kwargs)

    @_warns_of_config_problems
    def query_entries(self, **kwargs: Any) -> dict[str, Any]:
        from context_keeper.query import query_entries

        return query_entries(self, **kwargs)

    @_warns_of_config_problems
    def verify_quality(self, min_reason_chars: int = 80, *, project_dir: str | None = None) -> dict[str, Any]:
        from context_keeper.quality import verify_quality

        return verify_quality(self.store(project_dir, recorded=True), min_reason_chars)

    @_warns_of_config_problems
    def prune_stale(self, days: int | None = None, *, project_dir: str | None = None) -> dict[str, Any]:
        from context_keeper.quality import prune_stale

        store = self.store(project_dir, recorded=True)
        problem = None
        if days is None:
            configured, problem = checked(self.config(store), "stale_threshold_days")
            days = int(configured)
        answer = prune_stale(store, days, self.now())
        warnings = self._warnings(store) + self._last_good_notes(store) + ([problem] if problem else [])
        if warnings:
            answer["warnings"] = warnings
        return answer

    def _last_good_notes(self, store: Store) -> list[str]:
        """The note get_context and query_entries give for each store file read from its last good copy."""
        from context_keeper.retrieval import last_good_notes

        return last_good_notes(store, [s for s in store.all_states() if s.error is not None])


def _lock_file_refused(exc: StoreError) -> bool:
    """Whether ``store.locked()`` failed because the lock file could not be opened (a read-only
    or full disk), rather than because another process held the lock too long."""
    cause = exc.__cause__
    return isinstance(cause, OSError) and not isinstance(cause, TimeoutError)


def _refuse_to_replace_other_writing(target: Path, established: set[Path]) -> None:
    """An existing file is replaced only when an export wrote it (its generated-by line), it is
    empty, or it is an established export target (the project's DECISIONS.md or the configured
    markdown_export path, whatever wrote them: older versions wrote no generated-by line). A
    README, an ADR or a hand-written docs/DECISIONS.md is someone's writing, not a projection."""
    if not target.exists() or target in established:
        return
    try:
        head = target.read_text(encoding="utf-8", errors="replace")[:2000]
    except OSError:
        return  # the write reports it
    # The line itself, near the top: a README that mentions the words is still someone's writing.
    if not head.strip() or render.GENERATED_BY in (line.strip() for line in head.splitlines()[:5]):
        return
    raise InvalidInput(
        f"{target.name} exists and was not written by export_markdown; it would be overwritten. "
        "Export to a new file (for example 'DECISIONS.md' or 'docs/decisions.md'), or delete it first",
        field="path",
    )


# Services with a refresh scheduled: flushed when the process exits normally (a daemon timer is
# dropped at exit, with the write it was for already on disk).
_WITH_PENDING_REFRESH: weakref.WeakSet[Service] = weakref.WeakSet()


def _flush_pending_refreshes() -> None:
    for service in list(_WITH_PENDING_REFRESH):
        service.flush_hook_caches()


atexit.register(_flush_pending_refreshes)


def _refresh_hook_cache(root: Path) -> None:
    from context_keeper.hooks import cache

    try:
        cache.refresh(str(root))
    except (ContextKeeperError, OSError, ValueError) as exc:  # the hooks rebuild it themselves
        log.info("hook cache refresh skipped: %s", exc)


def _as_stored(store: Store, ftxn: Any, ids: Iterable[str]) -> list[str]:
    """``ids`` as the store spells them (``as_stored``: "DEC-7" names dec-7), once each: links
    written with another spelling would name no entry for exact lookups. An id of the file being
    changed is looked up there (it may be pending); an id no entry has is kept as given."""
    out: list[str] = []
    for entry_id in ids:
        key = model.id_key(entry_id)
        kind = model.BY_PREFIX.get(key[0]) if key is not None else None
        if kind is ftxn.kind:
            entry_id = ftxn.stored_id(entry_id)
        elif kind is not None:
            entry_id = store.state(kind).ids.as_stored(entry_id)
        if entry_id not in out:
            out.append(entry_id)
    return out


def _require_named(ftxn: Any, entry_id: str, parameter: str) -> dict:
    """``ftxn.require`` for an id given in ``parameter``: the error names it, as one of several
    ids in a call ("no decision with id ..." did not say which parameter held it)."""
    try:
        return ftxn.require(entry_id)
    except NotFound as exc:
        raise NotFound(f"{parameter}: {exc}") from None


def _require_link(store: Store, ftxn: Any, target_id: str) -> None:
    """A link target must exist; look in the file being changed first (it may be pending)."""
    if model.kind_of_id(target_id) is ftxn.kind:
        ftxn.require(target_id)
    else:
        store.find(target_id)


_RETIREMENT_FIELDS = ("status", "superseded_by", "deprecated_reason")


def _check_successor(ftxn: Any, kind: Kind, target: Mapping[str, Any], successor: str) -> dict:
    """The rules ``supersedes`` and ``merge_into`` already enforce, for ``superseded_by``: another
    existing entry of the same kind, which does not itself name ``target`` as its successor."""
    other = model.kind_of_id(successor)
    if other is not kind:
        raise InvalidInput(
            f"superseded_by: {successor} is a {other.name}; a {kind.name} can only be superseded by another "
            f"{kind.name} (give a {kind.prefix}-... id, or link the {other.name} with related_to instead)",
            field="superseded_by",
        )
    if successor == target["id"]:
        raise InvalidInput(
            f"superseded_by: {target['id']} cannot supersede itself; name the {kind.name} that replaces it",
            field="superseded_by",
        )
    try:
        found = ftxn.require(successor)
    except NotFound as exc:
        if spelled_otherwise({e["id"]: e for e in ftxn.entries}, successor):
            # It exists spelled otherwise (dec-005 for "DEC-5"): "record it first" sent people to
            # record a duplicate; the id it may have meant is the answer.
            raise NotFound(f"superseded_by: {exc}") from None
        raise NotFound(
            f"superseded_by: no {kind.name} with id {successor!r}; record the replacement first "
            "(or use query_entries to find its id)"
        ) from None
    if found.get("superseded_by") == target["id"]:
        raise InvalidInput(
            f"superseded_by: {successor} is itself superseded by {target['id']}; the two would replace each other",
            field="superseded_by",
        )
    if found.get("status") == "deprecated" and not found.get("superseded_by"):
        # As merge_into and supersedes refuse it: replaced by a retired entry, the content
        # leaves every answer with nothing current in its place.
        raise InvalidInput(
            f"superseded_by: {successor} is deprecated, so nothing current would replace {target['id']}; name an "
            f"active {kind.name} (or restore {successor} first with update_entry {{\"status\": \"active\"}})",
            field="superseded_by",
        )
    # A longer loop (a → b → c → a) leaves no current entry at all: the summary drops all of them.
    chain, seen = [successor], {successor}
    while True:
        step = ftxn.get(chain[-1])
        following = step.get("superseded_by") if step is not None else None
        if not isinstance(following, str) or following.strip() in seen:
            break
        chain.append(following.strip())
        seen.add(chain[-1])
        if chain[-1] == target["id"]:
            raise InvalidInput(
                f"superseded_by: {successor}'s successors lead back to {target['id']} ({' → '.join(chain)}), so the "
                "entries would replace each other in a loop and none would be current. Name the entry that is "
                "today's answer",
                field="superseded_by",
            )
    return found


def _check_new_links(store: Store, ftxn: Any, current: Mapping[str, Any], related: list[str]) -> None:
    """Links added by an update must name other, existing entries. Links already stored are
    left alone, so an entry with an old dangling link can still be edited."""
    kept = {i.lower() for i in current.get("related_to") or [] if isinstance(i, str)}  # "DEC-19" typed by hand
    for linked in related:
        if linked.lower() in kept:
            continue
        if linked == current["id"]:
            raise InvalidInput(f"related_to: {linked} is the entry itself; link other entries only", field="related_to")
        try:
            _require_link(store, ftxn, linked)
        except NotFound:
            raise NotFound(
                f"related_to: no entry with id {linked!r}; link only recorded entries "
                "(use query_entries or get_context to find the right id)"
            ) from None


def _release_from_successor(ftxn: Any, current: Mapping[str, Any], entry: Mapping[str, Any], now: str) -> dict | None:
    """An entry no longer replaced by its successor (brought back to active, retired without a
    successor, or given another one): that entry no longer claims to replace it (its
    ``supersedes`` loses the id), or both would read as the current answer, or doctor would find
    two links that disagree. Returns the old successor as rewritten, or None when there was
    nothing to change."""
    successor = current.get("superseded_by")
    if current.get("status") != "superseded" or not isinstance(successor, str):
        return None
    # Retired with its successor named (deprecate_entry's merge_into writes that) is still
    # replaced by it: the successor keeps saying so.
    now_by = entry.get("superseded_by") if entry.get("status", "active") in ("superseded", "deprecated") else None
    if isinstance(now_by, str) and now_by.strip() == successor.strip():
        return None
    successor = ftxn.get(successor.strip())
    if successor is None or current["id"] not in model.supersedes_ids(successor):
        return None
    raw = ftxn.raw_item(successor["id"])
    raw["supersedes"] = [i for i in model.supersedes_ids(raw) if i != current["id"]]
    raw["updated_at"] = now
    ftxn.put(successor["id"], raw)
    return ftxn.get(successor["id"])


def _apply_status_rules(ftxn: Any, kind: Kind, current: Mapping[str, Any], raw: Mapping[str, Any],
                        cleaned: dict[str, Any]) -> list[str]:
    """Hold a status change made through update_entry to deprecate_entry's rules, in place in
    ``cleaned``. Returns the fields to remove from the stored entry (on reactivation).

    - ``superseded`` needs ``superseded_by``: another existing entry of the same kind.
    - ``deprecated`` needs ``deprecated_reason`` (at least 5 characters, given now or stored).
    - ``active`` clears ``superseded_by`` and ``deprecated_reason``; giving either with it is refused.
    """
    if not any(name in cleaned for name in _RETIREMENT_FIELDS):
        return []
    if "deprecated_reason" in cleaned:
        reason = cleaned["deprecated_reason"]
        if reason is not None and not isinstance(reason, str):
            raise InvalidInput(f"deprecated_reason: must be a string, got {type(reason).__name__}", field="deprecated_reason")
        cleaned["deprecated_reason"] = (reason or "").strip()
    status = cleaned.get("status", current.get("status", "active"))
    successor = cleaned["superseded_by"] if "superseded_by" in cleaned else current.get("superseded_by")
    reason = cleaned["deprecated_reason"] if "deprecated_reason" in cleaned else raw.get("deprecated_reason")
    if status == "active":
        for name in ("superseded_by", "deprecated_reason"):
            if cleaned.get(name):
                raise InvalidInput(
                    f"{name}: only a superseded or deprecated entry has one, and {current['id']} would be active; "
                    "set updates.status too, or use deprecate_entry",
                    field=name,
                )
        if "status" not in cleaned or current.get("status", "active") == "active":
            return []
        cleaned["superseded_by"] = None
        return ["deprecated_reason"] if "deprecated_reason" in raw else []
    if status == "superseded" and not successor:
        raise InvalidInput(
            "superseded_by: status 'superseded' needs updates.superseded_by, the id of the "
            f"{kind.name} that replaces {current['id']} (or use deprecate_entry with superseded_by)",
            field="superseded_by",
        )
    unchanged = successor == current.get("superseded_by") and status == current.get("status", "active")
    if successor and not unchanged and (cleaned.get("superseded_by") or cleaned.get("status") == "superseded"):
        _check_successor(ftxn, kind, current, successor)  # a stored value sent back as it was passes
    if status == "deprecated" and (not isinstance(reason, str) or len(reason.strip()) < 5):
        raise InvalidInput(
            "deprecated_reason: status 'deprecated' needs updates.deprecated_reason, a few words (at least "
            "5 characters) on why the entry no longer holds (or use deprecate_entry with reason)",
            field="deprecated_reason",
        )
    return []


def project_scope(root: Path, scope: str) -> str:
    """A constraint scope as stored: ``global``, or a path or glob relative to the project root,
    or several of them separated by commas (``scope.scope_parts``).

    An absolute path inside the root is made relative; anything that can only point outside
    the root (an absolute path elsewhere, ``..``, a home-relative ``~`` path) is refused, since
    it would never match a file of the project and the constraint would silently never apply.
    A list is kept as written when each of its paths is; otherwise (an absolute path made
    relative, an empty piece as in ``"a/, , b/"``) it is stored as its paths joined by ``", "``.
    Brace groups (``"src/{api,web}/"``) list paths too. A comma in the name of an existing file
    or directory is refused with the glob that matches it: stored, the scope would name two
    other paths (``scope.py``).
    """
    from context_keeper.scope import is_global, scope_parts, split_scope

    text = (scope or "").strip()
    if not text:
        return "global"  # the field's default: record_entry stored "global", record_constraint ""
    if is_global(text):
        return text
    _check_scope_list(root, text, scope)
    pieces = split_scope(text)
    if len(pieces) == 1:
        return _scope_path(root, text, scope)
    parts = scope_parts(text)
    stored = [_scope_path(root, part, scope, listed=True) for part in parts]
    return text if stored == pieces else ", ".join(stored)


def _check_scope_list(root: Path, text: str, scope: str) -> None:
    """Refuse a scope whose commas or braces would not list what was meant (``project_scope``)."""
    from context_keeper.scope import (MAX_BRACE_PATHS, UNCLOSED_BRACE_FIX, comma_named_path, too_many_paths,
                                      unclosed_brace)

    named = comma_named_path(text, str(root))
    if named is not None:
        raise InvalidInput(
            f"scope: {scope!r} names a {named} of the project, but a comma separates a scope's paths, so a path "
            f"whose own name holds a comma cannot be a scope; match it with a glob, e.g. {text.replace(',', '?')!r}",
            field="scope")
    if unclosed_brace(text):
        raise InvalidInput(f"scope: {scope!r} opens a brace group with '{{' and never closes it, so its commas "
                           f"separate paths; {UNCLOSED_BRACE_FIX}", field="scope")
    if too_many_paths(text):
        raise InvalidInput(f"scope: {scope!r} stands for more than {MAX_BRACE_PATHS} paths; "
                           "name the directories they share instead (e.g. 'src/**/*.py')", field="scope")


def _scope_path(root: Path, path: str, scope: str, *, listed: bool = False) -> str:
    """One (stripped) path of a scope as stored; ``scope`` as given, for the error."""
    from context_keeper.scope import leaves_project, project_relative

    reason = leaves_project(path, str(root), any_dotdot=True)
    if reason is not None:
        hint = "give a path relative to the project root, e.g. 'hooks/', 'server.py' or 'src/**/*.py', or 'global'"
        which = f": its path {path!r}" if listed else ""
        raise InvalidInput(f"scope: {scope!r}{which} {reason}, so it would never match; {hint}", field="scope")
    unified = path.replace("\\", "/")
    if unified.startswith("/") or re.match(r"^[A-Za-z]:/", unified):
        relative = project_relative(unified, str(root)) or ""
        if not relative:
            return "global"
        return relative + "/" if unified.endswith("/") else relative
    return path


def _merge_fields(kind: Kind, survivor_raw: dict, survivor: Mapping[str, Any], merged: Mapping[str, Any]) -> dict:
    """Fold ``merged`` into the survivor: union list fields, fill empty text fields, and take the
    merged pipeline's steps when the survivor has none (two workflows run end to end are neither)."""
    out = dict(survivor_raw)
    for spec in kind.fields:
        # An empty scope is "global", not a blank to fill: filled, a rule for the whole project
        # would hold only where the merged one did.
        if spec.name in ("status", "superseded_by", "origin", "scope"):
            continue
        mine, theirs = survivor.get(spec.name), merged.get(spec.name)
        if spec.shape in ("text_list", "id_list", "alternatives"):
            union = list(mine or [])
            same = model.tag_key if spec.name == "tags" else (lambda item: item)
            held = {same(item) for item in union if isinstance(item, str)}
            for item in theirs or []:
                if item == survivor["id"] or item in union or isinstance(item, str) and same(item) in held:
                    continue
                union.append(item)
                if isinstance(item, str):
                    held.add(same(item))
            if spec.name == "related_to":
                union = [i for i in union if i != merged["id"] and i != survivor["id"]]
            if union or spec.name in out:  # an older entry without the field is not given an empty one
                out[spec.name] = union
        elif spec.shape in ("text", "short") and not (mine or "").strip() and (theirs or "").strip():
            out[spec.name] = theirs
        elif spec.shape == "steps" and not mine and theirs:
            out[spec.name] = [dict(step) for step in theirs]
    return out


def _misfiled_warning(state: Any) -> str:
    """Entries put in another kind's file are read by no tool: an answer that says "nothing
    matches" would otherwise send the agent off to record them again."""
    ids = [item["id"].strip() for item in state.raw if isinstance(item, dict) and isinstance(item.get("id"), str)
           and (key := model.id_key(item["id"])) is not None and key[0] != state.kind.prefix
           and key[0] in model.BY_PREFIX]
    homes = sorted({model.kind_of_id(i).filename for i in ids})
    return (f"{state.path.name} holds {', '.join(ids[:5])}{' and more' if len(ids) > 5 else ''}, which belong"
            f"{'s' if len(ids) == 1 else ''} in {' / '.join(homes)}: no tool reads {'it' if len(ids) == 1 else 'them'} "
            f"there; move {'it' if len(ids) == 1 else 'them'} by hand")


def _shown_from_last_good(state: Any, shown: str) -> str:
    """The warning of an answer made from a store file's last good copy: why, and until when."""
    return f"{state.kind.filename} {_unreadable_because(state)}; {shown} (.context/.last-good/) until it is fixed"


def _unreadable_because(state: Any) -> str:
    """Why a store file is read from its last good copy, as its own error tells it."""
    if state.stamp is None:
        return "is missing"  # not "does not parse": there is nothing there to parse
    # A directory, a FIFO, a file too large or not readable: each in its own words.
    return state.error.what if isinstance(state.error, NotAStoreFile) else "does not parse"


def _configured_name(config_path: Path) -> Any:
    user, _ = read_user_config(config_path)
    return user.get("project_name") if isinstance(user, dict) else None
