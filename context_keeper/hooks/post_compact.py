"""Stop: the first time a turn of the session that compacted ends after its compaction snapshot,
compare and write the report (another session's Stop leaves that check to it).

Every other Stop is a single ``os.path.exists`` and silence. The report is shown by the next
SessionStart with source ``compact`` (which also runs the comparison itself when it comes
first) and by the ``get_compaction_report`` tool. Nothing is injected here.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from context_keeper.hookio import HookContext


def handle(ctx: HookContext) -> None:
    if ctx.payload.get("stop_hook_active") is True:
        return None
    from context_keeper.hooks.cache import guess_root

    guess, none = guess_root(ctx.env, ctx.cwd)
    if none:
        return None
    from context_keeper import compaction

    session_id = ctx.payload.get("session_id")
    if guess is not None and not compaction.pending(guess, session_id):
        return None
    if not ctx.locate() or not compaction.pending(ctx.root, session_id):
        return None
    from context_keeper.hooks.cache import heavy

    heavy()
    compaction.check_pending_in_hook(ctx.root, ctx.log, session_id=session_id)
    return None
