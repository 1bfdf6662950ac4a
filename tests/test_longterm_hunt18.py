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


# ------------------------------------------------------------------ long chains of replacements

def _chain(project: Path, length: int, loop_back: bool = False) -> None:
    """dec-001 replaced by dec-002, ... by dec-<length>, today's answer (or, ``loop_back``, a
    hand edit that points the last one back at dec-001)."""
    entries = [_decision(i, f"Session tokens live {i + 4} minutes", ["auth"], "2026-01-01T00:00:00+00:00",
                         status="superseded" if i < length or loop_back else "active",
                         superseded_by=f"dec-{i + 1:03d}" if i < length else ("dec-001" if loop_back else None))
               for i in range(1, length + 1)]
    _write(project, "decisions.json", entries)


def test_replaced_by_names_the_end_of_a_chain_longer_than_fifty(empty_project):
    # The walk stopped after 50 hops: dec-052, itself superseded, was named as the replacement.
    _chain(empty_project, 55)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)})
    replaced = svc.get_context(id="dec-001")["replaced_by"]
    assert replaced["id"] == "dec-055" and "status" not in replaced
    assert replaced["via"] == [f"dec-{i:03d}" for i in range(2, 12)] and replaced["via_more"] == 43
    near_end = svc.get_context(id="dec-050")["replaced_by"]
    assert near_end["via"] == ["dec-051", "dec-052", "dec-053", "dec-054"] and "via_more" not in near_end


def test_decisions_md_and_the_cli_cap_the_ids_a_long_chain_passed(empty_project, capsys, monkeypatch):
    from context_keeper import cli

    _chain(empty_project, 55)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)})
    svc.export_markdown()
    markdown = (empty_project / "DECISIONS.md").read_text(encoding="utf-8")
    ids = ", ".join(f"dec-{i:03d}" for i in range(2, 12))
    assert f" superseded by dec-055 (via {ids} and 43 more)_" in markdown
    assert "itself superseded" not in markdown
    monkeypatch.chdir(empty_project)
    assert cli.main(["get", "dec-001"]) == 0
    assert f"replaced by dec-055 (via {ids} and 43 more): Session tokens live 59 minutes" in capsys.readouterr().out


def test_a_chain_that_loops_back_still_names_the_first_successor_in_decisions_md(empty_project):
    # The export shares what it learnt of a chain between its entries; a loop is never shared.
    _chain(empty_project, 5, loop_back=True)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)})
    svc.export_markdown()
    markdown = (empty_project / "DECISIONS.md").read_text(encoding="utf-8")
    for i in range(1, 6):
        assert f"superseded by dec-{i % 5 + 1:03d} (itself superseded)_" in markdown
    assert svc.get_context(id="dec-003")["replaced_by"]["id"] == "dec-004"


# ------------------------------------------------------------------ doctor: one cause, one finding

def _doctor(project: Path, capsys, *extra: str) -> str:
    from context_keeper import cli

    cli.main(["doctor", "--project", str(project), *extra])
    return capsys.readouterr().out


def test_doctor_reports_links_to_one_deleted_entry_once(empty_project, capsys):
    # 400 entries linking a hand-deleted dec-001 printed 402 near-identical lines.
    _write(empty_project, "decisions.json",
           [_decision(i, f"Detail decision {i}", ["arch"], "2026-01-01T00:00:00+00:00", related_to=["dec-001"])
            for i in range(2, 42)])
    text = _doctor(empty_project, capsys)
    assert text.count("WARNING") == 1
    listed = ", ".join(f"dec-{i:03d}" for i in range(2, 12))
    assert f"dec-001, which no entry has, is named by 40 entries' related_to: {listed} and 30 more;" in text
    (finding,) = json.loads(_doctor(empty_project, capsys, "--json"))["findings"]
    assert finding["code"] == "dangling_link" and finding["count"] == 40
    assert finding["entries"] == [f"dec-{i:03d}" for i in range(2, 42)]


def test_a_single_dangling_link_keeps_its_own_line_and_json_shape(empty_project, capsys):
    _write(empty_project, "decisions.json",
           [_decision(2, "Detail decision", ["arch"], "2026-01-01T00:00:00+00:00", related_to=["dec-001"])])
    assert "dec-002.related_to names dec-001, which no entry has;" in _doctor(empty_project, capsys)
    (finding,) = json.loads(_doctor(empty_project, capsys, "--json"))["findings"]
    assert "count" not in finding and "entries" not in finding


def test_doctor_groups_entries_missing_a_title_or_a_readable_timestamp_by_cause(empty_project, capsys):
    imported = [{**_decision(i, "", ["import"], "31/01/2026"), "sumary": f"Imported decision {i}"} for i in range(1, 31)]
    for entry in imported:
        del entry["summary"]
    _write(empty_project, "decisions.json", imported)
    text = _doctor(empty_project, capsys)
    assert text.count("missing_title") == 0 and text.count("\n  WARNING") == 3, text
    assert "30 entries (dec-001, dec-002," in text and 'they have "sumary": rename that key to "summary"' in text
    assert "created_at of 30 entries (dec-001" in text and "updated_at of 30 entries (dec-001" in text
    findings = json.loads(_doctor(empty_project, capsys, "--json"))["findings"]
    assert sorted((f["code"], f["count"]) for f in findings) == [
        ("bad_timestamp", 30), ("bad_timestamp", 30), ("missing_title", 30)]
