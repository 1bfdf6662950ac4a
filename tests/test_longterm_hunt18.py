"""Long-lived stores, defects found in round 18's hunt, each test failing before its fix."""

from __future__ import annotations

import json
from pathlib import Path

from context_keeper.budget import estimate_tokens
from context_keeper.service import Service


def _write(project: Path, filename: str, entries: list[dict]) -> None:
    (project / ".context" / filename).write_text(json.dumps(entries, indent=2), encoding="utf-8")


def _decision(number: int, summary: str, tags: list[str], when: str, **extra) -> dict:
    return {"id": f"dec-{number:03d}", "summary": summary, "tags": tags, "status": "active",
            "problem": "A problem the team had to settle so that the agents stop asking about it again.",
            "why_chosen": "The reasons were discussed in review and this option won on simplicity and cost.",
            "created_at": when, "updated_at": when, **extra}


# ------------------------------------------------------------------ a dominant tag in the summary

def _months_of_api_then_this_week(project: Path) -> None:
    old = [_decision(i, f"API endpoint naming rule number {i}", ["api"],
                     f"2026-{1 + i // 60:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00+00:00") for i in range(1, 301)]
    recent = [_decision(301 + 2 * k + j, f"This week: new {tag} decision {j}", [tag], f"2026-12-0{1 + k}T1{j}:00:00+00:00")
              for k, tag in enumerate(["auth", "billing", "deploy", "frontend", "queue"]) for j in range(2)]
    _write(project, "decisions.json", old + recent)


def test_this_weeks_decisions_show_beside_a_tag_with_months_of_old_ones(empty_project):
    # Groups were filled one after another, the most shared first: 300 old [api] decisions took
    # the whole share and none of the ten recent ones (five other tags) showed.
    _months_of_api_then_this_week(empty_project)
    answer = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}).get_project_summary(2000)
    text = answer["summary"]
    assert text.count("This week: new ") == 10
    for tag in ("api", "auth", "billing", "deploy", "frontend", "queue"):
        assert f"\n[{tag}]\n- dec-" in text
    assert estimate_tokens(text) <= 2000
    shown = text.count("\n- dec-")
    assert answer["dropped"] == {"decisions": 310 - shown}
    assert "- dec-300: API endpoint naming rule number 300" in text  # each group newest first


def test_the_session_start_briefing_shows_this_weeks_decisions_too(empty_project):
    from tests.hook_helpers import hook_env, injected, payload, run_hook

    _months_of_api_then_this_week(empty_project)
    text = injected(run_hook("session_start", payload("session_start_startup", empty_project), env=hook_env(empty_project)))
    assert text.count("This week: new ") == 10
