"""The edit guard's cut to MAX_CONSTRAINTS: absolute rules first, the rest counted, and the
confirmation's "shown earlier" only for what was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hook_helpers import hook_env, run_hook

REASON = "Every module follows the house conventions so reviews stay about behaviour, not form."


def _constraint(number: int, scope: str, hardness: str) -> dict:
    return {"id": f"con-{number:03d}", "rule": f"House rule number {number} for Python modules",
            "reason": REASON, "scope": scope, "hardness": hardness, "status": "active"}


@pytest.fixture
def crowded(tmp_path: Path) -> Path:
    """16 advisory constraints on every Python file, then one absolute one on src/billing/."""
    root = tmp_path / "shop"
    (root / ".context").mkdir(parents=True)
    (root / "src" / "billing").mkdir(parents=True)
    rules = [_constraint(n, "**/*.py", "advisory") for n in range(1, 17)]
    rules.append(dict(_constraint(17, "src/billing/", "absolute"), rule="Never charge a card twice for one order"))
    (root / ".context" / "constraints.json").write_text(json.dumps(rules, indent=2), encoding="utf-8")
    return root


def _edit(root: Path, session: str, event: str = "PreToolUse") -> dict:
    stdin = {"session_id": session, "cwd": str(root), "hook_event_name": event, "tool_name": "Edit",
             "tool_input": {"file_path": str(root / "src" / "billing" / "charge.py")}}
    proc = run_hook("scope_guard", stdin, env=hook_env(root))
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)["hookSpecificOutput"]


def _shown(text: str) -> list[str]:
    """The constraint ids in ``text``, in the order shown."""
    return sorted((i for i in (f"con-{n:03d}" for n in range(1, 19)) if i in text), key=text.index)


def test_the_absolute_rule_is_shown_before_the_edit_and_the_cut_is_counted(crowded: Path):
    text = _edit(crowded, "s1")["additionalContext"]
    assert "con-017" in text and "Never charge a card twice" in text
    assert _shown(text) == ["con-017", *(f"con-{n:03d}" for n in range(1, 15))]
    assert "2 more entries for this file did not fit here" in text
    assert "src/billing/charge.py" in text.split("did not fit here")[1]  # how to see them


def test_the_next_edit_shows_the_two_left_out(crowded: Path):
    _edit(crowded, "s2")
    text = _edit(crowded, "s2")["additionalContext"]
    assert _shown(text) == ["con-015", "con-016"] and "did not fit" not in text


def test_a_more_specific_scope_comes_before_a_broader_one(crowded: Path):
    path = crowded / ".context" / "constraints.json"
    rules = json.loads(path.read_text(encoding="utf-8"))
    rules.append(_constraint(18, "src/billing/charge.py", "advisory"))
    path.write_text(json.dumps(rules, indent=2), encoding="utf-8")
    text = _edit(crowded, "s3")["additionalContext"]
    assert _shown(text)[:3] == ["con-017", "con-018", "con-001"]
    assert "con-014" not in text and "3 more entries" in text


def test_confirm_absolute_does_not_call_a_first_showing_earlier(crowded: Path):
    (crowded / ".context" / "config.json").write_text(json.dumps({"scope_guard": {"confirm_absolute": True}}),
                                                      encoding="utf-8")
    first = _edit(crowded, "s4")
    assert first["permissionDecision"] == "ask" and "Never charge a card twice" in first["permissionDecisionReason"]
    assert "shown earlier" not in first["additionalContext"]
    again = _edit(crowded, "s4")
    assert "shown earlier in this session: con-017" in again["additionalContext"]
