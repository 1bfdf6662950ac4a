"""SubagentStart: a compact briefing (absolute constraints first) so subagents don't start blank."""

from __future__ import annotations

from context_keeper.hookio import frame

TYPE_CHECKING = False
if TYPE_CHECKING:
    from context_keeper.hookio import HookContext


def handle(ctx: HookContext) -> str | None:
    if not ctx.locate():
        return None
    data = ctx.cache or {}
    if not any((data.get("counts") or {}).values()):
        return None
    return frame(data.get("briefing") or "")
