"""``scope_guard.confirm_absolute``: an edit under an absolute constraint asks the user first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hook_helpers import hook_env, payload, run_hook


def _set(project: Path, value) -> None:
    path = project / ".context" / "config.json"
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    config["scope_guard"] = {"confirm_absolute": value}
    path.write_text(json.dumps(config), encoding="utf-8")


def _output(project: Path, session: str, event: str = "PreToolUse") -> dict:
    proc = run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id=session, hook_event_name=event),
                    env=hook_env(project))
    assert proc.returncode == 0 and proc.stdout.strip()
    return json.loads(proc.stdout)["hookSpecificOutput"]


def test_asks_before_an_edit_under_an_absolute_constraint(project: Path):
    _set(project, True)
    out = _output(project, "s1")
    assert out["permissionDecision"] == "ask"
    assert "con-003" in out["permissionDecisionReason"] and "src/packwise/labels/printer.py" in out["permissionDecisionReason"]
    assert "con-003" in out["additionalContext"]


@pytest.mark.parametrize("value", [False, "true", None])
def test_off_unless_set_to_true(project: Path, value):
    if value is not None:
        _set(project, value)
    assert "permissionDecision" not in _output(project, "s2")


def test_never_after_the_edit(project: Path):
    _set(project, True)
    assert "permissionDecision" not in _output(project, "s3", event="PostToolUse")


def test_advisory_constraints_do_not_ask(project: Path):
    _set(project, True)
    path = project / ".context" / "constraints.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps([dict(i, hardness="advisory") for i in items], indent=2), encoding="utf-8")
    out = _output(project, "s4")
    assert "permissionDecision" not in out and "con-003" in out["additionalContext"]


def test_every_edit_asks_again_even_after_the_rule_was_shown(project: Path):
    # A denied edit retried, or a rule another hook already showed, must not slip through.
    _set(project, True)
    first = _output(project, "s5")
    again = _output(project, "s5")
    assert first["permissionDecision"] == again["permissionDecision"] == "ask"
    assert "con-003" in again["permissionDecisionReason"]
    assert "shown earlier in this session: con-003" in again["additionalContext"]


def test_the_question_carries_the_rule_text(project: Path):
    _set(project, True)
    rules = {c["id"]: c["rule"] for c in json.loads((project / ".context" / "constraints.json").read_text(encoding="utf-8"))}
    reason = _output(project, "s6")["permissionDecisionReason"]
    assert rules["con-003"][:40] in reason


def test_asks_when_the_command_line_names_the_event_the_payload_leaves_out(project: Path):
    import subprocess
    import sys

    _set(project, True)
    data = payload("pre_tool_use_edit", project, session_id="s7")
    del data["hook_event_name"]
    proc = subprocess.run([sys.executable, "-m", "context_keeper", "hook", "PreToolUse"], input=json.dumps(data).encode(),
                          capture_output=True, env=hook_env(project), timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
