"""What the hooks put in front of a person or an agent says what it means: no silent briefing, no
rule cut mid-sentence, no shortened entry passed off as whole, no area decision dropped unsaid,
no count that calls superseded entries active."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from context_keeper import compaction
from context_keeper.hooks import cache, scope_guard
from context_keeper.service import Service
from tests.conftest import REPO
from tests.hook_helpers import hook_env, injected, payload, run_hook

HARBOR = REPO / "evals" / "stores" / "harbor"


def test_a_pipeline_with_a_two_letter_step_leaves_session_start_and_subagent_briefings_working(tmp_path: Path):
    project = tmp_path / "harbor"
    shutil.copytree(HARBOR, project)
    Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, hook_cache_delay=None).record("pipeline", {
        "name": "Release the charts",
        "purpose": "Ship a release of the Helm charts to the public registry after the release PR merges and CI is green",
        "when_to_invoke": "A release PR is approved and the charts must go out.",
        "steps": ["Merge the release PR", "QA", "Tag the release and publish the charts"],
        "tags": ["release"]})
    env = hook_env(project)
    started = injected(run_hook("session_start", payload("session_start_startup", project), env=env))
    assert started and "Project memory for" in started
    note = next(p for p in started.split("\n\n") if p.startswith("Store quality note"))
    assert "pipe-007" in note and "'QA'" in note
    briefed = injected(run_hook("subagent_start", payload("subagent_start", project), env=env))
    assert briefed and "Project memory for" in briefed
    assert not (project / ".context" / "hook.log").exists()


def _issue_kinds() -> set[str]:
    source = (REPO / "context_keeper" / "quality.py").read_text(encoding="utf-8")
    return set(re.findall(r'"issue": "(\w+)"', source))


def test_the_quality_note_words_every_issue_kind_verify_quality_can_report_and_any_new_one():
    kinds = _issue_kinds()
    assert {"thin_reasoning", "thin_steps", "legacy_entry", "isolated", "corrupt_file"} <= kinds
    for kind in sorted(kinds | {"a_kind_added_later"}):
        issue = {"issue": kind, "id": "dec-001", "summary": "Postgres is the system of record", "file": "decisions.json",
                 "detail": "what is wrong, and what to do about it", "suggested_links": ["dec-002"]}
        hint = cache.quality_hint({"issues": [issue]})
        if kind == "corrupt_file":
            assert hint is None  # session start's store warnings say it already
            continue
        assert hint and hint.endswith(".") and "{" not in hint, (kind, hint)
        assert "dec-001" in hint or "what is wrong" in hint, (kind, hint)


def test_the_legacy_entry_note_says_what_to_do():
    hint = cache.quality_hint({"issues": [{"issue": "legacy_entry", "id": "dec-001", "summary": "Postgres",
                                           "detail": "written by an older version"}]})
    assert "update_entry" in hint and "review" in hint and "schema" not in hint


def _confirm_on(project: Path) -> None:
    path = project / ".context" / "config.json"
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    config["scope_guard"] = {"confirm_absolute": True}
    path.write_text(json.dumps(config), encoding="utf-8")


def test_the_confirmation_question_quotes_whole_rules_one_a_line_and_keeps_its_question(project: Path):
    _confirm_on(project)
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    for n in range(8):
        service.record("constraint", {
            "rule": f"Label printing rule number {n}: " + "the printer is addressed through site settings only " * 4,
            "reason": "A hardcoded address sent a whole shift of labels to the wrong dock. " * 2,
            "scope": "src/packwise/labels/"})
    proc = run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="ask-long"), env=hook_env(project))
    reason = json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert len(reason) <= scope_guard.MAX_REASON_CHARS
    assert reason.endswith("Confirm the edit respects them.")
    lines = reason.split("\n")
    rules = [line for line in lines if line.startswith("- con-")]
    assert len(rules) >= 2
    for line in rules:  # each quoted in full, as the guard renders it
        assert line.endswith(".") and "…" not in line.split(" — because ")[0]
    more = next(line for line in lines if line.startswith("and "))
    quoted = {line.split()[1] for line in rules}
    named = set(re.findall(r"con-\d+", more))
    assert len(quoted) + len(named) == 9 and not quoted & named  # con-003 and the eight above


def test_the_prompt_hook_marks_a_budget_shortened_entry_and_says_how_to_read_it(project: Path):
    prompt = "the handheld lost half its queued scans after the battery died mid-save"
    from context_keeper.hooks import user_prompt

    answer = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}).get_context(
        query=prompt, token_budget=user_prompt.TOKEN_BUDGET, include_related=False)
    shortened = [r["entry"]["id"] for r in answer["results"][:user_prompt.MAX_ENTRIES] if r.get("shortened")]
    assert shortened  # the case in question: one of the hits the hook shows came back shortened
    text = injected(run_hook("user_prompt_submit", payload("user_prompt_submit", project, prompt=prompt,
                                                           session_id="short"), env=hook_env(project)))
    for entry_id in shortened:
        line = next(line for line in text.split("\n") if line.startswith((f"- {entry_id} ", f"- {entry_id}:")))
        assert "shortened" in line and f'get_context with id "{entry_id}"' in line, line


def _edit(project: Path, relative: str, session: str) -> str | None:
    data = payload("pre_tool_use_edit", project, session_id=session)
    data["tool_input"]["file_path"] = str(project / relative)
    return injected(run_hook("scope_guard", data, env=hook_env(project)))


def test_the_edit_guard_ranks_area_decisions_by_the_file_and_says_how_many_more(project: Path):
    text = _edit(project, "scanner-app/src/Journal.kt", "area")
    # six decisions are tagged scanner-app; the scan-journal one is the one about this file
    assert "- dec-007:" in text
    assert len(re.findall(r"^- dec-", text, re.MULTILINE)) == scope_guard.MAX_TAGGED_DECISIONS
    assert "1 more decision recorded for this area" in text and 'get_context with tags ["scanner-app"]' in text


def test_the_edit_guard_puts_the_deepest_directorys_decisions_first(project: Path):
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    recorded = service.record("decision", {
        "summary": "Device sync code lives in one module per transport",
        "problem": "Transport details leaked into the journal code and every change touched both of them.",
        "why_chosen": "One module per transport keeps each protocol's retries and framing in one place to review.",
        "tags": ["sync-transports"]})
    for n in range(6):
        service.record("decision", {
            "summary": f"Scanner app screen number {n} follows the shared layout grid",
            "problem": "Screens drifted apart in spacing and fonts, and pickers were slowed by the differences.",
            "why_chosen": "A shared layout grid keeps every screen predictable for a picker wearing gloves.",
            "tags": ["scanner-app"]})
    text = _edit(project, "scanner-app/sync-transports/Bluetooth.kt", "deep")
    assert f"- {recorded['id']}:" in text.split("Decisions recorded for this area:")[1].split("\n")[1]


def test_the_compaction_check_does_not_call_superseded_entries_active(project: Path):
    compaction.take_snapshot(str(project), session_id="s-count")
    report = compaction.check_pending(str(project), session_id="s-count")
    stored = {name: json.loads((project / ".context" / f"{name}.json").read_text(encoding="utf-8"))
              for name in ("decisions", "constraints", "pipelines")}
    statuses = [e.get("status", "active") for items in stored.values() for e in items]
    active, superseded = statuses.count("active"), statuses.count("superseded")
    assert superseded  # the demo has superseded decisions
    text = compaction.describe(report)
    assert f"all {active + superseded} entries ({active} active, {superseded} superseded)" in text
