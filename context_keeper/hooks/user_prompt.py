"""UserPromptSubmit: entries confidently relevant to the prompt, each once per session.

Silent when the retrieval engine abstains (``no_confident_match``), when only weak or
historical matches come back, when every match was already shown in this session (an entry the
prompt names by id is shown again: it is asked for), for slash commands and for prompts too
short to search on. This is the one hook on the search engine's
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
# With no up-to-date snapshot, a store larger than this is indexed in a background process
# instead: building takes ~7 s per 10,000 entries here (less with search_state.json), and the
# client kills the hook at its timeout (20 s as installed), which would save nothing.
INLINE_BUILD_MAX_ENTRIES = 10_000
BUILD_MARKER = "search_index_build_state.json"  # a background build is running (git-ignored name)
BUILD_MARKER_STALE_S = 600  # a build that has left its marker this long has died


def handle(ctx: HookContext) -> str | None:
    prompt = " ".join(ctx.text("prompt").split())
    if len(prompt) < MIN_PROMPT_CHARS or _slash_command(prompt):
        return None
    if not ctx.locate():
        return None
    from context_keeper.hooks.cache import heavy

    heavy()
    from context_keeper.model import KINDS
    from context_keeper.oneshot import IndexNotReady

    service = _service(ctx.root)
    query = _query_text(ctx.text("prompt"))
    try:
        result = service.get_context(query=query, token_budget=TOKEN_BUDGET, include_related=False)
    except IndexNotReady:
        return None  # may_build logged why
    service.save_search_state()
    if result.get("no_confident_match"):
        return None
    hits = [r for r in result.get("results", [])
            if not r.get("weak_match") and not r.get("history") and not r.get("related")]
    keys = {r["entry"]["id"]: service.seen_key(r["type"], r["entry"]) for r in hits[:MAX_ENTRIES]}
    state = ctx.state()
    fresh = set(state.unseen(keys.values()))
    # The prompt's best matches minus those already shown: once they are all in the
    # conversation, the same prompt again brings nothing, not the next-best ones. An entry the
    # prompt names by id ("why did we pick dec-007?") is asked for, and shown however often.
    named = service.ids_named_in(query)
    chosen = [r for r in hits[:MAX_ENTRIES] if keys[r["entry"]["id"]] in fresh or r["entry"]["id"] in named]
    if not chosen:
        return None
    lines = ["Recorded project memory that matches this prompt (from .context/; full entries via get_context):"]
    lines += [_line(KINDS[r["type"]], r) for r in chosen]
    state.mark([keys[r["entry"]["id"]] for r in chosen])
    return frame("\n".join(lines))


def _line(kind, result: dict) -> str:  # kind: a model.Kind
    """A result's line; one the budget shortened (it may have lost its reasoning or steps) says
    so and how to read it whole, so it is not taken for the entry."""
    from context_keeper import render

    line = render.entry_line(kind, result["entry"])
    if result.get("shortened"):
        line += f' (shortened to fit; get_context with id "{render.clip(result["entry"]["id"], 40)}" has it in full)'
    return line


def _slash_command(prompt: str) -> bool:
    """``/compact keep the tests``, not ``/srv/app/db.py: which database…`` nor ``/tmp: disk
    full``: a command's name has no further ``/`` and is not followed by a colon."""
    first = prompt.split(" ", 1)[0]
    return first.startswith("/") and "/" not in first[1:] and not first.endswith(":")


QUERY_PARAGRAPH_CHARS = 600


def _query_text(raw: str) -> str:
    """What to search for a prompt. A long one is mostly pasted material (a log, a diff, a
    file) with the question in a short paragraph before or after it: those short first and
    last paragraphs are searched, else the prompt's end. A question typed on the paste's first
    or last line, with no blank line between, is such a paragraph too."""
    prompt = " ".join(raw.split())
    if len(prompt) <= MAX_QUERY_CHARS:
        return prompt
    import re

    paragraphs = [p for p in re.split(r"\n\s*\n", raw) if p.strip()]
    ends = dict.fromkeys(p for p in (_short(paragraphs[0], 0), _short(paragraphs[-1], -1)) if p)
    text = " ".join(" ".join(p.split()) for p in ends)
    return text if text else prompt[-MAX_QUERY_CHARS:]


def _short(paragraph: str, line: int) -> str | None:
    """``paragraph`` when it is short enough to be the question, else its first (``line`` 0) or
    last (-1) line when that is, else None."""
    if len(paragraph) <= QUERY_PARAGRAPH_CHARS:
        return paragraph
    edge = paragraph.strip().splitlines()[line]
    return edge if len(edge) <= QUERY_PARAGRAPH_CHARS else None


def _service(root: str):  # -> oneshot.OneShotService
    """The one-search service (oneshot.py: index restored from the snapshot when it can be),
    with the session seen-keys of the reading it searched."""
    from context_keeper.oneshot import OneShotService

    class PromptService(OneShotService):
        def ids_named_in(self, text: str) -> frozenset[str]:
            """The ids of the entries ``text`` names, in the store just searched."""
            from context_keeper.retrieval import ids_named_in

            return ids_named_in(self._store, text) if self._store is not None else frozenset()

        def seen_key(self, kind_name: str, entry: dict) -> str:
            """The session seen-key of ``entry``, an answer's entry: from its item as stored in
            the very reading the index searched (the last good copy of a broken file), as the
            edit guard's index keys it. Not from a later reading: a write landing after the
            search would have the old text shown and the new text's key marked, and the new
            text would then never reach the session."""
            from context_keeper.hooks.state import entry_key

            file_state = self.read_state(kind_name)
            position = file_state.positions.get(entry["id"]) if file_state is not None else None
            return entry_key(entry["id"], file_state.raw[position] if position is not None else entry)

        def derived_file_failed(self, store, name: str, exc: BaseException) -> None:  # store: a Store
            from context_keeper.hookio import log_line

            log_line(str(store.root), "user-prompt-submit",
                     f".context/{name} could not be used ({type(exc).__name__}: {exc}); the index was built "
                     "from the store files instead")

        def may_build(self, store, entries: int) -> bool:  # store: a Store
            if entries <= INLINE_BUILD_MAX_ENTRIES:
                return True
            started = _build_in_background(str(store.root))
            if started is None:
                return True  # no background build possible (read-only .context/): here, as before
            from context_keeper.hookio import log_line

            log_line(str(store.root), "user-prompt-submit",
                     f"{entries} entries and no up-to-date index snapshot: this prompt was not searched; "
                     + ("the index is being built in the background for the next ones" if started
                        else "a background build of the index is already running"))
            return False

    return PromptService(env={"CONTEXT_KEEPER_PROJECT": root}, cwd=root)


def _build_in_background(root: str) -> bool | None:
    """Start ``background_build_main(root)`` in a detached process unless one is running
    already (its marker is recent): True when started, False when one runs, None when none can
    (the marker cannot be made: a read-only ``.context/``, or no ``posix_spawn``)."""
    import os
    import time

    from context_keeper.hooks.cache import spawn

    marker = os.path.join(root, ".context", BUILD_MARKER)
    try:
        if time.time() - os.stat(marker).st_mtime < BUILD_MARKER_STALE_S:
            return False
        os.unlink(marker)  # left by a build that died
    except OSError:
        pass
    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644))
    except FileExistsError:
        return False  # another prompt's hook has just started one
    except OSError:
        return None
    if spawn("context_keeper.hooks.user_prompt", "background_build_main", root, site=True) is None:
        _unmark(root)
        return None
    return True


def background_build_main(root: str) -> None:
    """``rebuild_main`` in the process the prompt hook starts, which then takes its marker away."""
    try:
        rebuild_main(root)
    finally:
        _unmark(root)


def _unmark(root: str) -> None:
    import os

    try:
        os.unlink(os.path.join(root, ".context", BUILD_MARKER))
    except OSError:
        pass


def rebuild_main(root: str) -> None:
    """Rebuild and save the index snapshot for ``root`` now (a background process the server
    starts after its writes, so the next prompt restores instead of building)."""
    try:
        from context_keeper.oneshot import rebuild_snapshot

        rebuild_snapshot(root)
    except Exception as exc:  # noqa: BLE001 - a detached process has no one else to tell
        from context_keeper.hookio import log_line

        log_line(root, "user-prompt-submit", f"background index snapshot failed: {type(exc).__name__}: {exc}")
