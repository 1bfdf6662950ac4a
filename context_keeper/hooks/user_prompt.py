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
    if len(prompt) < MIN_PROMPT_CHARS or prompt.startswith("/"):
        return None
    if not ctx.locate():
        return None
    from context_keeper.hooks.cache import heavy

    heavy()
    from context_keeper import render
    from context_keeper.model import KINDS

    service = _service(ctx.root)
    result = service.get_context(query=prompt[:MAX_QUERY_CHARS], token_budget=TOKEN_BUDGET, include_related=False)
    service.save_search_state()
    if result.get("no_confident_match"):
        return None
    hits = [r for r in result.get("results", [])
            if not r.get("weak_match") and not r.get("history") and not r.get("related")]
    state = ctx.state()
    fresh = set(state.unseen(r["entry"]["id"] for r in hits))
    chosen = [r for r in hits if r["entry"]["id"] in fresh][:MAX_ENTRIES]
    if not chosen:
        return None
    lines = ["Recorded project memory that matches this prompt (from .context/; full entries via get_context):"]
    lines += [render.entry_line(KINDS[r["type"]], r["entry"]) for r in chosen]
    state.mark([r["entry"]["id"] for r in chosen])
    return frame("\n".join(lines))


def _service(root: str):  # -> Service with a cached-analysis index
    """A ``Service`` whose search index reuses the per-entry analyses persisted in
    ``.context/search_state.json`` (search/state.py): this process is short-lived, so without
    them it would tokenise and stem the whole store on every prompt. The index is built the
    way ``Service.index`` builds it (one ``replace_kind`` per kind, in ``KINDS`` order), so
    rankings are identical to the server's."""
    import threading

    from context_keeper.model import KINDS
    from context_keeper.search import Doc, SearchIndex
    from context_keeper.search.state import AnalysisCache
    from context_keeper.service import Service

    class _IndexState:  # what retrieval.get_context uses of Service.index()'s result
        def __init__(self, index: SearchIndex) -> None:
            self.index = index
            self.lock = threading.Lock()

    class PromptService(Service):
        _state: _IndexState | None = None
        _analyses: AnalysisCache | None = None
        _store = None

        def index(self, store):  # noqa: ANN001, ANN201 - same contract as Service.index
            if self._state is None:
                self._analyses = AnalysisCache.load(store)
                index = SearchIndex(analyses=self._analyses)
                for kind in KINDS.values():
                    index.replace_kind(kind.name, (Doc(kind.name, e) for e in store.state(kind).entries))
                self._state, self._store = _IndexState(index), store
            return self._state

        def save_search_state(self) -> None:
            if self._analyses is not None and self._store is not None:
                try:
                    self._analyses.save(self._store)
                except OSError:
                    pass  # read-only checkout, full disk: the next run analyses again

    return PromptService(env={"CONTEXT_KEEPER_PROJECT": root}, cwd=root)
