"""Per-session de-duplication: once per session, sessions independent, reset after compaction."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from context_keeper.hooks.state import SessionState, prune, session_key
from context_keeper.service import Service
from tests.hook_helpers import LAUNCHERS, hook_env, injected, payload, run_hook


def _edit(project: Path, session: str) -> dict:
    return payload("pre_tool_use_edit", project, session_id=session)


def test_an_entry_is_injected_once_per_session(project: Path):
    env = hook_env(project)
    assert "con-003" in injected(run_hook("scope_guard", _edit(project, "s-1"), env=env))
    assert injected(run_hook("scope_guard", _edit(project, "s-1"), env=env)) is None
    post = payload("post_tool_use_edit", project, session_id="s-1")
    assert injected(run_hook("scope_guard", post, env=env)) is None


def test_only_entries_not_yet_shown_are_injected(project: Path):
    env = hook_env(project)
    injected(run_hook("scope_guard", _edit(project, "s-1"), env=env))
    carriers = _edit(project, "s-1")
    carriers["tool_input"]["file_path"] = str(project / "src/packwise/carriers/client.py")
    text = injected(run_hook("scope_guard", carriers, env=env))
    assert "con-004" in text and "con-005" in text and "con-003" not in text


def test_two_concurrent_sessions_each_get_their_own_injection(project: Path):
    env = hook_env(project)
    body = {s: json.dumps(_edit(project, s)).encode() for s in ("sess-a", "sess-b")}

    def spawn(session: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-S", str(LAUNCHERS / "scope_guard.py")], input=body[session],
                              capture_output=True, env=env, timeout=60)

    with ThreadPoolExecutor(max_workers=4) as pool:
        first = list(pool.map(spawn, ["sess-a", "sess-b"]))
    assert all("con-003" in injected(p) for p in first)
    with ThreadPoolExecutor(max_workers=4) as pool:
        second = list(pool.map(spawn, ["sess-a", "sess-b", "sess-a", "sess-b"]))
    assert all(injected(p) is None for p in second)
    files = sorted(p.name for p in (project / ".context" / "sessions").iterdir())
    assert files == ["sess-a.seen", "sess-b.seen"]


def test_compaction_resets_the_session_so_rules_come_back(project: Path):
    env = hook_env(project)
    injected(run_hook("scope_guard", _edit(project, "s-1"), env=env))
    run_hook("session_start", payload("session_start_compact", project, session_id="s-1"), env=env)
    assert "con-003" in injected(run_hook("scope_guard", _edit(project, "s-1"), env=env))


def test_a_resumed_session_keeps_its_memory(project: Path):
    env = hook_env(project)
    injected(run_hook("scope_guard", _edit(project, "s-1"), env=env))
    run_hook("session_start", payload("session_start_startup", project, session_id="s-1", source="resume"), env=env)
    assert injected(run_hook("scope_guard", _edit(project, "s-1"), env=env)) is None


def test_user_prompt_recall_is_not_repeated_in_a_session(project: Path):
    env = hook_env(project)
    prompt = payload("user_prompt_submit", project, session_id="s-9")
    assert injected(run_hook("user_prompt_submit", prompt, env=env))
    assert injected(run_hook("user_prompt_submit", prompt, env=env)) is None


def test_an_entry_the_prompt_names_by_id_is_shown_again(project: Path):
    # The user asking "why did we pick dec-008?" asks for that entry: it was left out because
    # an earlier prompt of the session had shown it, and the agent got only a weaker match.
    env = hook_env(project)
    first = injected(run_hook("user_prompt_submit", payload("user_prompt_submit", project, session_id="s-9"), env=env))
    shown = _listed(first)
    assert "dec-008" in shown and len(shown) > 1
    asked = payload("user_prompt_submit", project, session_id="s-9",
                    prompt="why did we pick DEC-8 for carrier API retries and backoff?")
    again = injected(run_hook("user_prompt_submit", asked, env=env))
    assert "dec-008" in _listed(again)
    # The other matches shown before stay out (a new session would show them for this prompt).
    fresh = injected(run_hook("user_prompt_submit", {**asked, "session_id": "s-10"}, env=env))
    repeated = [i for i in shown if i != "dec-008" and i in _listed(fresh)]
    assert repeated and not set(repeated) & set(_listed(again))


def _listed(text: str) -> list[str]:
    """The ids of the entries a hook's text lists, one per "- <id>..." line."""
    return [line.split(" ", 2)[1].rstrip(":") for line in text.splitlines() if line.startswith("- ")]


def test_commit_reminder_once_per_commit(project: Path):
    env = hook_env(project)
    commit = payload("post_tool_use_bash_commit", project)
    assert injected(run_hook("commit_capture_reminder", commit, env=env))
    assert injected(run_hook("commit_capture_reminder", commit, env=env)) is None


def test_session_ids_become_safe_file_names():
    assert session_key("../../etc/passwd") == "_.._etc_passwd"
    assert session_key(None) == "unknown"
    assert session_key("9f1c2d3e-0000-4000-8000-000000000001") == "9f1c2d3e-0000-4000-8000-000000000001"


def test_stale_session_files_are_pruned(tmp_path: Path):
    context = tmp_path / ".context"
    old, new = SessionState(str(context), "old"), SessionState(str(context), "new")
    old.mark(["dec-001"])
    new.mark(["dec-002"])
    import os

    os.utime(old.path, (1_000_000, 1_000_000))
    assert prune(str(context), now=1_000_000 + 6 * 24 * 3600) == 0  # under a week old: kept
    assert prune(str(context), now=os.stat(new.path).st_mtime + 3600) == 1
    assert not Path(old.path).exists() and Path(new.path).exists()


def test_an_unwritable_sessions_dir_means_showing_again_not_failing(tmp_path):
    from context_keeper.hooks.state import SessionState

    (tmp_path / "sessions").write_text("not a directory", encoding="utf-8")  # makedirs fails
    state = SessionState(str(tmp_path), "s1")
    state.mark(["con-001"])
    assert state.unseen(["con-001", "con-002"]) == ["con-002"]
    assert SessionState(str(tmp_path), "s1").unseen(["con-001"]) == ["con-001"]


def test_editing_the_same_file_again_does_not_bring_the_next_batch_of_area_decisions(project: Path):
    # 30 more decisions tagged for the file's directory: the first edit shows the area's newest
    # five, later edits of the same file nothing new.
    import json as _json

    path = project / ".context" / "decisions.json"
    items = _json.loads(path.read_text(encoding="utf-8"))
    stamp = "2026-01-01T00:00:00+00:00"
    for n in range(30):
        items.append({"id": f"dec-{200 + n}", "summary": f"Label printer detail number {n}", "problem": "p" * 50,
                      "why_chosen": "w" * 70, "tags": ["labels"], "status": "active", "origin": "user",
                      "created_at": stamp, "updated_at": stamp})
    path.write_text(_json.dumps(items, indent=2), encoding="utf-8")
    env = hook_env(project)
    edit = payload("pre_tool_use_edit", project, session_id="s-area")
    assert injected(run_hook("scope_guard", edit, env=env))
    for _ in range(3):
        assert injected(run_hook("scope_guard", edit, env=env)) is None


def test_a_resumed_session_is_not_shown_the_same_summary_again(project: Path):
    env = hook_env(project)
    start = payload("session_start_startup", project, session_id="s-resume")
    full = injected(run_hook("session_start", start, env=env))
    assert "Project memory for" in full
    resumed = injected(run_hook("session_start", dict(start, source="resume"), env=env))
    assert "Project memory for" not in resumed and "summary shown earlier in this session is unchanged" in resumed
    # a changed store, or another session, gets the summary in full
    other = injected(run_hook("session_start", dict(start, source="resume", session_id="s-other"), env=env))
    assert "Project memory for" in other


def _rewrite_constraints(project: Path, change) -> None:
    path = project / ".context" / "constraints.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    change(items)
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")


def test_an_id_that_now_names_another_rule_is_shown_again(project: Path):
    # A pull renumbered the constraints: con-003 is now a different rule for the same file.
    env = hook_env(project)
    assert "Insert the label_prints row" in injected(run_hook("scope_guard", _edit(project, "s-pull"), env=env))

    def renumber(items):
        old = next(i for i in items if i["id"] == "con-003")
        items.append(dict(old, id="con-017"))
        old.update(rule="Label templates must be validated against the carrier's ZPL schema before printing.",
                   reason="A teammate's rule that took this id in the merge; it applies to the same folder.")

    _rewrite_constraints(project, renumber)
    text = injected(run_hook("scope_guard", _edit(project, "s-pull"), env=env))
    assert "con-003" in text and "validated against the carrier's ZPL schema" in text


def test_a_rule_whose_text_changed_is_shown_again_and_other_field_changes_are_not(project: Path):
    env = hook_env(project)
    injected(run_hook("scope_guard", _edit(project, "s-edit"), env=env))
    _rewrite_constraints(project, lambda items: [i.update(verified_at="2030-01-01T00:00:00+00:00", tags=["x"])
                                                 for i in items if i["id"] == "con-003"])
    assert injected(run_hook("scope_guard", _edit(project, "s-edit"), env=env)) is None
    _rewrite_constraints(project, lambda items: [i.update(rule=i["rule"] + " This also covers reprints.")
                                                 for i in items if i["id"] == "con-003"])
    text = injected(run_hook("scope_guard", _edit(project, "s-edit"), env=env))
    assert "con-003" in text and "also covers reprints" in text


def test_an_entry_the_prompt_hook_showed_is_not_shown_again_by_the_edit_guard(project: Path):
    env = hook_env(project)
    shown = injected(run_hook("user_prompt_submit", payload("user_prompt_submit", project, session_id="s-x"), env=env))
    assert "con-005" in shown
    carriers = _edit(project, "s-x")
    carriers["tool_input"]["file_path"] = str(project / "src/packwise/carriers/client.py")
    assert "con-005" not in (injected(run_hook("scope_guard", carriers, env=env)) or "")


def test_a_session_file_of_bare_ids_is_still_read(project: Path):
    # Written before keys carried a content version: its other keys still hold, and an entry it
    # names by id alone is shown once more, since which text was shown is not known.
    commit = payload("post_tool_use_bash_commit", project)
    sessions = project / ".context" / "sessions"
    sessions.mkdir()
    from context_keeper.hooks.commit_capture import commit_line

    key = "commit:" + commit_line(commit["tool_response"])[0]
    assert key != "commit:"
    (sessions / f"{session_key(commit['session_id'])}.seen").write_text(f"con-003\n{key}\n", encoding="utf-8")
    env = hook_env(project)
    assert injected(run_hook("commit_capture_reminder", commit, env=env)) is None
    assert "con-003" in injected(run_hook("scope_guard", _edit(project, commit["session_id"]), env=env))
    assert injected(run_hook("scope_guard", _edit(project, commit["session_id"]), env=env)) is None


def test_the_prompt_hook_shows_a_rule_again_once_its_text_changed(project: Path):
    env = hook_env(project)
    prompt = payload("user_prompt_submit", project, session_id="s-p")
    assert "con-005" in injected(run_hook("user_prompt_submit", prompt, env=env))
    _rewrite_constraints(project, lambda items: [i.update(rule=i["rule"] + " Nor a cancel-shipment call.")
                                                 for i in items if i["id"] == "con-005"])
    again = injected(run_hook("user_prompt_submit", prompt, env=env))
    assert "Nor a cancel-shipment call." in again and "dec-008" not in again


def test_the_prompt_hook_searches_a_broken_file_in_its_last_good_copy_keyed_as_the_edit_guard(project: Path):
    # The prompt hook indexed the broken file's (empty) entries, so one typo in constraints.json
    # hid every rule from it while get_context and the edit guard read the last good copy.
    from tests.conftest import break_constraints_after_a_write

    env = hook_env(project)
    break_constraints_after_a_write(project, "global")
    shown = injected(run_hook("user_prompt_submit", payload("user_prompt_submit", project, session_id="s-b"), env=env))
    assert "con-004" in shown and "con-005" in shown
    carriers = _edit(project, "s-b")
    carriers["tool_input"]["file_path"] = str(project / "src/packwise/carriers/client.py")
    text = injected(run_hook("scope_guard", carriers, env=env))
    assert "last good copy" in text and "con-004" not in text and "con-005" not in text


def test_entries_the_size_limit_leaves_out_are_shown_by_the_next_edit_and_health_notes_are_kept(project: Path):
    # Every entry was marked as shown and the frame then cut the tail: those never reached the
    # session, and the store-health note (last) was the first thing cut.
    from tests.conftest import break_constraints_after_a_write

    deep = "src/packwise/labels/" + "drivers/" * 14  # scopes of the longest kind a line shows
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    for n in range(15):
        svc.record("constraint", {"rule": f"Label rule {n}: " + "every printer job goes through the spool queue " * 6,
                                  "reason": "An incident where " + "a job bypassed the spool and printed twice " * 6,
                                  "scope": deep})
    for n in range(5):
        svc.record("decision", {"summary": f"Driver decision {n}: " + "one spool connection per printer driver " * 6,
                                "problem": "Two drivers opened the same printer socket and interleaved ZPL jobs.",
                                "why_chosen": "One connection per driver serialises jobs at the source. " * 4,
                                "tags": ["drivers"]})
    break_constraints_after_a_write(project, deep)
    env = hook_env(project)
    edit = _edit(project, "s-big")
    edit["tool_input"]["file_path"] = str(project / deep / "zebra.py")
    first = injected(run_hook("scope_guard", edit, env=env))
    assert "cut to stay within the hook size limit" not in first
    assert "Store health:" in first and "did not fit here; the next edit shows them" in first
    second = injected(run_hook("scope_guard", edit, env=env))

    def shown(text: str) -> set[str]:
        return {line.split()[1].rstrip(":") for line in text.splitlines() if line.startswith("- ")}

    assert shown(first) and shown(second) and not shown(first) & shown(second)
    assert "Store health:" not in second  # the note was shown, and marked, the first time
