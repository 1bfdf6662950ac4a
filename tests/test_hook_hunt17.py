"""Hook defects found in round 17's bug hunt, each test failing before its fix."""

from __future__ import annotations

import io
import json
from pathlib import Path

from context_keeper import compaction, hookio, retrieval
from context_keeper.service import Service

CARD_RULE = "Never log card numbers from payment requests, not even masked ones."
CARD_RULE_WIDENED = "Never log card numbers or CVV codes from payment requests, not even masked ones."
CARD_REASON = "A debug log once held full card numbers and the PCI audit failed on it; logs are not in scope for PCI."


def _service(project: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project))


def _hook(project: Path, event: str, session: str, **fields) -> str | None:
    """One in-process hook run (so a test can interpose on the core); its injected text."""
    data = {"session_id": session, "cwd": str(project), **fields}
    out = io.BytesIO()
    hookio.run(event, io.BytesIO(json.dumps(data).encode("utf-8")), out, env={"CLAUDE_PROJECT_DIR": str(project)})
    if not out.getvalue():
        return None
    return json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"]


# The prompt hook marks as seen what it showed, not what the store holds a moment later.

def _prompt(project: Path, session: str) -> str | None:
    return _hook(project, "user-prompt-submit", session, hook_event_name="UserPromptSubmit",
                 prompt="may we log card numbers in payment requests?")


def test_a_rule_updated_while_the_prompt_hook_searches_still_reaches_the_session(empty_project: Path, monkeypatch):
    _service(empty_project).record("constraint", {"rule": CARD_RULE, "reason": CARD_REASON, "scope": "src/payments/"})
    real_get_context = retrieval.get_context

    def answer_then_their_update(*args, **kwargs):
        answer = real_get_context(*args, **kwargs)
        monkeypatch.setattr(retrieval, "get_context", real_get_context)
        _service(empty_project).update_entry("con-001", {"rule": CARD_RULE_WIDENED})
        return answer

    monkeypatch.setattr(retrieval, "get_context", answer_then_their_update)
    first = _prompt(empty_project, "S1")
    assert first is not None and "not even masked" in first and "CVV" not in first

    second = _prompt(empty_project, "S1")
    edit = _hook(empty_project, "scope-guard", "S1", hook_event_name="PreToolUse", tool_name="Edit",
                 tool_input={"file_path": str(empty_project / "src" / "payments" / "charge.py")})
    assert "CVV" in (second or "") + (edit or "")


def _edit(project: Path, session: str) -> str | None:
    return _hook(project, "scope-guard", session, hook_event_name="PreToolUse", tool_name="Edit",
                 tool_input={"file_path": str(project / "src" / "payments" / "charge.py")})


def test_the_edit_guard_marks_the_rule_text_it_showed_when_the_rule_changed_under_it(empty_project: Path, monkeypatch):
    from context_keeper.hooks import scope_index

    _service(empty_project).record("constraint", {"rule": CARD_RULE, "reason": CARD_REASON, "scope": "src/payments/"})
    scope_index.build(str(empty_project))
    real_load = scope_index.load

    def index_then_their_update(*args, **kwargs):
        index = real_load(*args, **kwargs)
        monkeypatch.setattr(scope_index, "load", real_load)
        _service(empty_project).update_entry("con-001", {"rule": CARD_RULE_WIDENED})
        return index

    monkeypatch.setattr(scope_index, "load", index_then_their_update)
    first = _edit(empty_project, "S1")
    assert first is not None and "CVV" in first
    assert _edit(empty_project, "S1") is None  # the text shown is the text marked: not shown twice


# A compaction's loss check belongs to the session that compacted.

def _remove_entry(project: Path, filename: str, entry_id: str) -> None:
    path = project / ".context" / filename
    items = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps([e for e in items if e.get("id") != entry_id], indent=2), encoding="utf-8")


def _compacted(project: Path, session: str) -> str:
    from tests.hook_helpers import hook_env, injected, payload, run_hook

    return injected(run_hook("session_start", payload("session_start_compact", project, session_id=session),
                             env=hook_env(project))) or ""


def _run(project: Path, event_file: str, fixture: str, session: str) -> None:
    from tests.hook_helpers import hook_env, payload, run_hook

    assert run_hook(event_file, payload(fixture, project, session_id=session), env=hook_env(project)).stdout == b""


def test_another_sessions_stop_does_not_use_up_the_compacted_sessions_check(project: Path):
    _run(project, "pre_compact", "pre_compact", "A")
    _run(project, "post_compact", "stop", "B")
    _remove_entry(project, "constraints.json", "con-012")
    text = _compacted(project, "A")
    assert "1 entry missing" in text and "con-012" in text
    report = _service(project).get_compaction_report()
    assert report["session_id"] == "A" and [m["id"] for m in report["missing_entries"]] == ["con-012"]


def test_another_sessions_precompact_does_not_replace_the_compacted_sessions_snapshot(project: Path):
    _run(project, "pre_compact", "pre_compact", "A")
    _remove_entry(project, "constraints.json", "con-012")
    _run(project, "pre_compact", "pre_compact", "B")  # its snapshot has no con-012 to miss
    assert "con-012" in _compacted(project, "A")
    assert "are unchanged in the store" in _compacted(project, "B")


def test_the_check_of_another_sessions_compaction_is_not_told_as_this_ones(project: Path):
    _run(project, "pre_compact", "pre_compact", "B")
    _remove_entry(project, "constraints.json", "con-012")
    _run(project, "post_compact", "stop", "B")
    assert "con-012" in json.dumps(_service(project).get_compaction_report())
    assert "Compaction check" not in _compacted(project, "A")  # A took no snapshot: nothing known
    assert "con-012" in _compacted(project, "B")  # B's own check, done by its Stop, is B's to see


def test_a_compacted_sessions_snapshot_left_unchecked_is_pruned_with_its_session(project: Path):
    import os

    from context_keeper.hooks.state import prune

    _run(project, "pre_compact", "pre_compact", "gone")  # the session ended before any Stop
    assert compaction.pending(str(project), "gone")
    sessions = project / ".context" / "sessions"
    for path in sessions.iterdir():
        os.utime(path, (1_000_000, 1_000_000))
    assert prune(str(project / ".context")) >= 1
    assert not compaction.pending(str(project), "gone")
