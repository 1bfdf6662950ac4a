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
    from context_keeper.service import Service

    service = Service(env={"CONTEXT_KEEPER_PROJECT": ctx.root}, cwd=ctx.root)
    result = service.get_context(query=prompt[:MAX_QUERY_CHARS], token_budget=TOKEN_BUDGET, include_related=False)
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
