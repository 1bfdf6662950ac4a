"""UserPromptSubmit: entries confidently relevant to the prompt, each once per session.

Silent when the retrieval engine abstains (``no_confident_match``), when only weak or
historical matches come back, when every match was already shown in this session, for slash
commands and for prompts too short to search on. This is the one hook on the search engine's
path (it imports the core, never the MCP SDK); Claude Code allows it 30 s.
"""

from __future__ import annotations

from context_keeper.hookio import frame

TYPE_CHECKING = False
if TYPE_CHECKING:
    from context_keeper.hookio import HookContext

MIN_PROMPT_CHARS = 12
MAX_QUERY_CHARS = 2000
MAX_ENTRIES = 5
TOKEN_BUDGET = 1500


def handle(ctx: HookContext) -> str | None:
    prompt = " ".join(ctx.text("prompt").split())
    if len(prompt) < MIN_PROMPT_CHARS or _slash_command(prompt):
        return None
    if not ctx.locate():
        return None
    from context_keeper.hooks.cache import heavy

    heavy()
    from context_keeper import render
    from context_keeper.model import KINDS

    service = _service(ctx.root)
    query = {"query": _query_text(ctx.text("prompt")), "token_budget": TOKEN_BUDGET, "include_related": False}
    try:
        result = service.get_context(**query)
    except (ValueError, LookupError, TypeError):
        # A damaged snapshot shows only when a list is read (restore checks what it can): any
        # such failure of a restored index means building one. A built index's errors stand.
        if not service.discard_snapshot():
            raise
        result = service.get_context(**query)
    service.save_search_state()
    if result.get("no_confident_match"):
        return None
    hits = [r for r in result.get("results", [])
            if not r.get("weak_match") and not r.get("history") and not r.get("related")]
    keys = {r["entry"]["id"]: service.seen_key(r["type"], r["entry"]) for r in hits[:MAX_ENTRIES]}
    state = ctx.state()
    fresh = set(state.unseen(keys.values()))
    # The prompt's best matches minus those already shown: once they are all in the
    # conversation, the same prompt again brings nothing, not the next-best ones.
    chosen = [r for r in hits[:MAX_ENTRIES] if keys[r["entry"]["id"]] in fresh]
    if not chosen:
        return None
    lines = ["Recorded project memory that matches this prompt (from .context/; full entries via get_context):"]
    lines += [render.entry_line(KINDS[r["type"]], r["entry"]) for r in chosen]
    state.mark([keys[r["entry"]["id"]] for r in chosen])
    return frame("\n".join(lines))


def _slash_command(prompt: str) -> bool:
    """``/compact keep the tests``, not ``/srv/app/db.py: which database…`` nor ``/tmp: disk
    full``: a command's name has no further ``/`` and is not followed by a colon."""
    first = prompt.split(" ", 1)[0]
    return first.startswith("/") and "/" not in first[1:] and not first.endswith(":")


QUERY_PARAGRAPH_CHARS = 600


def _query_text(raw: str) -> str:
    """What to search for a prompt. A long one is mostly pasted material (a log, a diff, a
    file) with the question in a short paragraph before or after it: those short first and
    last paragraphs are searched, else the prompt's end."""
    prompt = " ".join(raw.split())
    if len(prompt) <= MAX_QUERY_CHARS:
        return prompt
    import re

    paragraphs = [p for p in re.split(r"\n\s*\n", raw) if p.strip()]
    ends = dict.fromkeys(p for p in (paragraphs[0], paragraphs[-1]) if len(p) <= QUERY_PARAGRAPH_CHARS)
    text = " ".join(" ".join(p.split()) for p in ends)
    return text if text else prompt[-MAX_QUERY_CHARS:]


def _service(root: str, *, restore: bool = True):  # -> Service whose index comes from a snapshot when it can
    """A ``Service`` whose search index is restored from ``.context/search_index_state.json``
    (search/snapshot.py) when the store is unchanged since it was written, and otherwise built
    the way ``Service.index`` builds it (one ``replace_kind`` per kind, in ``KINDS`` order, the
    last one settling the index),
    reusing the per-entry analyses of ``search_state.json`` (search/state.py), then saved for
    the next prompt. This process is short-lived: without either file it would tokenise the
    whole store and compute every posting weight on every prompt."""
    import os
    import threading

    from context_keeper.model import KINDS
    from context_keeper.search import Doc, SearchIndex, snapshot
    from context_keeper.search.state import AnalysisCache
    from context_keeper.search.tuning import DEFAULT_TUNING
    from context_keeper.service import Service
    from context_keeper.store import readable_state

    class _IndexState:  # what retrieval.get_context uses of Service.index()'s result
        def __init__(self, index: SearchIndex) -> None:
            self.index = index
            self.lock = threading.Lock()

    class PromptService(Service):
        _state: _IndexState | None = None
        _analyses: AnalysisCache | None = None
        _snapshot: dict | None = None
        _store = None
        _read: dict | None = None  # kind name -> the file state the index was built from
        _use_snapshot = restore

        def index(self, store):  # noqa: ANN001, ANN201 - same contract as Service.index
            if self._state is None:
                # One state per kind for both: a write between two reads would save old entries
                # under the new stamps, and every later prompt would trust that stale index.
                states = [store.state(kind) for kind in KINDS.values()]
                # A file broken by a hand edit is searched in its last good copy, as Service.index
                # searches it; the copy's stamp joins the file's, so the snapshot follows it too.
                readable = [readable_state(store, s) for s in states]
                docs = {s.kind.name: [Doc(s.kind.name, e) for e in r.entries] for s, (r, _) in zip(states, readable)}
                stamps = [(*s.stamp, *r.stamp) if backed and s.stamp and r.stamp else s.stamp
                          for s, (r, backed) in zip(states, readable)]
                saved = snapshot.load(os.path.join(store.dir, snapshot.FILE)) if self._use_snapshot else None
                index = snapshot.restore(saved, docs, stamps, DEFAULT_TUNING)
                if index is None:
                    self._analyses = AnalysisCache.load(store)
                    index = SearchIndex(DEFAULT_TUNING, analyses=self._analyses)
                    index.dense_scoring = False  # one search per process: NumPy's import would cost more
                    last = list(KINDS.values())[-1]
                    for kind in KINDS.values():
                        index.replace_kind(kind.name, docs[kind.name], settle=kind is last)
                    self._snapshot = snapshot.dump(index, stamps)
                self._state, self._store = _IndexState(index), store
                self._read = {s.kind.name: r for s, (r, _) in zip(states, readable)}
            return self._state

        def seen_key(self, kind_name: str, entry: dict) -> str:
            """The session seen-key of ``entry``, an answer's entry: from its item as stored in
            the very reading the index searched (the last good copy of a broken file), as the
            edit guard's index keys it. Not from a later reading: a write landing after the
            search would have the old text shown and the new text's key marked, and the new
            text would then never reach the session."""
            from context_keeper.hooks.state import entry_key

            file_state = (self._read or {}).get(kind_name)
            position = file_state.positions.get(entry["id"]) if file_state is not None else None
            return entry_key(entry["id"], file_state.raw[position] if position is not None else entry)

        def discard_snapshot(self) -> bool:
            """Forget an index restored from a snapshot (the next search builds one); False
            when the index was not restored."""
            if self._state is None or not isinstance(self._state.index, snapshot.SnapshotIndex):
                return False
            self._state, self._use_snapshot = None, False
            return True

        def save_search_state(self) -> None:
            if self._store is None:
                return
            try:
                if self._analyses is not None:
                    self._analyses.save(self._store)
                if self._snapshot is not None:
                    snapshot.save(os.path.join(self._store.dir, snapshot.FILE), self._snapshot)
            except OSError:
                pass  # read-only checkout, full disk: the next run builds again

    return PromptService(env={"CONTEXT_KEEPER_PROJECT": root}, cwd=root)


def rebuild_main(root: str) -> None:
    """Rebuild and save the index snapshot for ``root`` now (a background process the server
    starts after its writes, so the next prompt restores instead of building)."""
    try:
        service = _service(root, restore=False)
        service.index(service.store())
        service.save_search_state()
    except Exception as exc:  # noqa: BLE001 - a detached process has no one else to tell
        from context_keeper.hookio import log_line

        log_line(root, "user-prompt-submit", f"background index snapshot failed: {type(exc).__name__}: {exc}")
