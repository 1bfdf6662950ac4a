"""SessionStart: the project summary, the compaction check after a compaction, one quality note.

``source`` is startup | resume | clear | compact | fork. On ``resume`` a summary this session
was already shown, unchanged, is replaced by a line saying so. After ``compact`` and ``clear``
the agent has lost what earlier hooks showed it, so this session's de-duplication memory is
reset; after ``compact`` the store is compared with this session's pre-compaction snapshot (if
its Stop hook has not done so yet) and any discrepancy is reported.
"""

from __future__ import annotations

from context_keeper.hookio import frame

TYPE_CHECKING = False
if TYPE_CHECKING:
    from context_keeper.hookio import HookContext


def handle(ctx: HookContext) -> str | None:
    if not ctx.locate():
        return None
    source = ctx.text("source")
    state = ctx.state()
    if source in ("compact", "clear"):
        state.reset()
    if source in ("startup", ""):
        from context_keeper.hooks.state import prune

        prune(ctx.context_dir)
    data = ctx.cache or {}
    has_entries = any((data.get("counts") or {}).values())
    summary = data.get("summary") or ""
    parts = [summary] if has_entries else []
    if summary and has_entries:
        import zlib

        key = f"summary:{zlib.crc32(summary.encode('utf-8')):08x}"
        if not state.unseen([key]):
            if source == "resume":
                # The resumed conversation already holds this very summary: a line, not 2k tokens again.
                parts = ["The project memory summary shown earlier in this session is unchanged "
                         "(get_project_summary shows it again; get_context for details)."]
        else:
            state.mark([key])
    if source == "compact":
        from context_keeper import compaction

        session_id = ctx.payload.get("session_id")
        checked_now = compaction.pending(ctx.root, session_id)
        failed = None
        if checked_now:
            from context_keeper.hooks.cache import heavy

            heavy()
            failed = compaction.check_pending_in_hook(ctx.root, ctx.log, session_id=session_id)
        # No snapshot for this compaction: only a report from just now (this session's Stop hook's) is its.
        note = failed or compaction.session_note(ctx.root, session_id=session_id,
                                                 max_age_s=None if checked_now else compaction.RECENT_REPORT_S)
        if note:
            # After a compaction the loss check is the point: it goes first, so the size limit
            # cuts the summary's tail rather than the check.
            parts.insert(0, note)
    for warning in data.get("warnings", []):
        parts.append(f"Store health: {warning}")
    if data.get("quality_hint"):
        parts.append(data["quality_hint"])
    body = "\n\n".join(p for p in parts if p)
    return frame(body) if body else None  # an empty store with nothing to report: silence
