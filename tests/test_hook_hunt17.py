"""Hook defects found in round 17's bug hunt, each test failing before its fix."""

from __future__ import annotations

import io
import json
from pathlib import Path

from context_keeper import hookio, retrieval
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
