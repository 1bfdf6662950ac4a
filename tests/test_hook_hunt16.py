"""Hook defects found in round 16's bug hunt, each test failing before its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

from context_keeper.hookio import cut_to, frame, js_len
from context_keeper.hooks.commit_capture import reads_like_a_decision
from context_keeper.hooks.state import SessionState, prune
from tests.hook_helpers import hook_env, injected, payload, run_hook

WEEKS_AGO = 1_000_000  # an mtime long past the week session files are kept


def _units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# Session-file housekeeping must not silence the summary it runs before.

def test_startup_still_injects_the_summary_when_a_stale_session_file_cannot_be_deleted(project: Path):
    stale = project / ".context" / "sessions" / "stale.seen"
    stale.mkdir(parents=True)  # unlink raises IsADirectoryError, as a read-only mount raises EROFS
    os.utime(stale, (WEEKS_AGO, WEEKS_AGO))
    text = injected(run_hook("session_start", payload("session_start_startup", project), env=hook_env(project)))
    assert text and "constraint" in text.lower()
    assert stale.is_dir()


def test_startup_still_injects_the_summary_when_sessions_is_a_file(project: Path):
    (project / ".context" / "sessions").write_text("not a directory", encoding="utf-8")
    assert injected(run_hook("session_start", payload("session_start_startup", project), env=hook_env(project)))


def test_a_compaction_still_injects_the_summary_when_the_session_file_cannot_be_deleted(project: Path):
    data = payload("session_start_compact", project)
    Path(SessionState(str(project / ".context"), data["session_id"]).path).mkdir(parents=True)
    assert injected(run_hook("session_start", data, env=hook_env(project)))


def test_prune_and_reset_leave_what_they_cannot_delete(tmp_path: Path):
    sessions = tmp_path / "sessions"
    (sessions / "locked.seen").mkdir(parents=True)
    os.utime(sessions / "locked.seen", (WEEKS_AGO, WEEKS_AGO))
    assert prune(str(tmp_path)) == 0
    state = SessionState(str(tmp_path), "locked")
    state.reset()
    assert state.unseen(["con-001"]) == ["con-001"]


# The commit reminder's trivial-commit filter reads words, not parts of words.

def test_a_decision_with_a_trivial_word_inside_another_word_gets_the_reminder():
    for message in ("Encrypt card information at rest because PCI requires it",
                    "Round before currency conversion because totals drifted",
                    "Swipe to archive replaces the button because users asked",
                    "Typography tokens switch to rem because zoom broke layouts"):
        assert reads_like_a_decision(message), message


def test_trivial_commits_stay_silent_in_their_usual_forms():
    for message in ("Fix typos because of review", "Formatting: always use black", "Bump version because of a CVE",
                    "Linting must pass", "Renamed the module because", "Release v1.2 because", "WIP: switch to X",
                    'Revert "Switch to argon2" because it broke login', "docs: explain why we must pin"):
        assert not reads_like_a_decision(message), message


def test_the_reminder_hook_speaks_for_a_decision_containing_information(project: Path):
    message = "Encrypt card information at rest because PCI requires it"
    data = payload("post_tool_use_bash_commit", project,
                   tool_input={"command": f'git commit -m "{message}"'},
                   tool_response={"stdout": f"[main 1a1b2c3] {message}\n"})
    assert "1a1b2c3" in injected(run_hook("commit_capture_reminder", data, env=hook_env(project)))


# The client counts an injection's length in UTF-16 units: emoji count twice.

def test_cut_to_counts_utf16_units_and_never_splits_a_pair():
    text = "ab" + "🚀" * 10
    assert js_len(text) == 22
    for limit in range(0, 25):
        cut = cut_to(text, limit)
        assert text.startswith(cut) and js_len(cut) <= limit
        assert js_len(cut) >= limit - 1 or cut == text
    assert cut_to("plain", 3) == "pla"


def test_frame_keeps_an_emoji_heavy_body_within_the_limit():
    body = "🔥" * 6000  # 6,000 characters, 12,000 units
    framed = frame(body)
    assert _units(framed) <= 9_500 and framed.endswith("</project-memory>")


def _emoji_constraints(project: Path, scope: str, count: int) -> None:
    path = project / ".context" / "constraints.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    for i in range(count):
        entries.append({**entries[0], "id": f"con-9{i:02d}", "rule": "🚀🔥" * 150 + f" rule {i}",
                        "reason": "𝐁𝐞𝐜𝐚𝐮𝐬𝐞 " * 20, "scope": scope, "hardness": "advisory",
                        "status": "active", "superseded_by": None})
    path.write_text(json.dumps(entries, ensure_ascii=False, indent=2), encoding="utf-8")


def test_session_start_stays_within_the_client_limit_with_emoji_rules(empty_project: Path):
    rules = [{"id": f"con-{i:03d}", "rule": "🚀🔥 " * 30 + f"rule {i}", "reason": "𝐁𝐞𝐜𝐚𝐮𝐬𝐞 " * 20,
              "scope": "global", "status": "active", "tags": ["t"]} for i in range(1, 60)]
    (empty_project / ".context" / "constraints.json").write_text(json.dumps(rules, ensure_ascii=False), encoding="utf-8")
    text = injected(run_hook("session_start", payload("session_start_startup", empty_project),
                             env=hook_env(empty_project)))
    assert text and _units(text) <= 9_500 and text.endswith("</project-memory>")


def test_the_edit_guard_shows_whole_emoji_rules_within_the_client_limit(project: Path):
    _emoji_constraints(project, "src/packwise/labels/", 40)
    text = injected(run_hook("scope_guard", payload("pre_tool_use_edit", project), env=hook_env(project)))
    assert _units(text) <= 9_500
    assert "cut to stay within" not in text  # what is shown (and marked shown) is shown whole
    assert "did not fit here" in text
