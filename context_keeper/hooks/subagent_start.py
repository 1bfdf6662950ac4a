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
    # A store file that does not parse is said here too: the briefing's counts are not the facts.
    health = [f"Store health: {w}" for w in data.get("warnings", [])]
    return frame("\n\n".join([data.get("briefing") or "", *health]))
