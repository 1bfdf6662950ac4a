"""PreCompact: snapshot the active and superseded entries and refresh the quality scan. Prints
nothing (PreCompact output never reaches the model)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from context_keeper.hookio import HookContext


def handle(ctx: HookContext) -> None:
    if not ctx.locate():
        return None
    from context_keeper.hooks import cache

    cache.heavy()
    from context_keeper import compaction

    compaction.take_snapshot(ctx.root, session_id=ctx.payload.get("session_id"), trigger=ctx.text("trigger") or None)
    cache.summary(ctx.root)  # rebuilds the quality note the post-compaction SessionStart shows
    return None
