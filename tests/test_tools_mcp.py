"""Tool behaviour through the SDK's in-process client, in both protocol eras."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from context_keeper.service import Service
from tests.conftest import MODES, read_json, snapshot_files
from tests.mcp_helpers import call, connect, err, ok

pytestmark = pytest.mark.anyio

DECISION = {
    "summary": "Retry failed label prints once on the paired printer",
    "problem": "Packing-station printers jam a few times per shift and packers wait for a supervisor to reroute.",
    "why_chosen": "One automatic retry on the paired printer clears most jams; the idempotent label key means a retry never buys a second label.",
    "tags": ["labels", "printers"],
}


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


async def test_record_decision_assigns_next_id_and_persists(service, project, mode):
    async with connect(service, mode) as client:
        answer = await ok(client, "record_decision", DECISION)
    assert answer["success"] is True
    assert answer["id"] == "dec-032"  # dec-031-0c9e is the highest numeric part in the example
    stored = {e["id"]: e for e in read_json(project / ".context" / "decisions.json")}
    assert stored["dec-032"]["summary"] == DECISION["summary"]
    assert stored["dec-032"]["status"] == "active"
    assert stored["dec-032"]["origin"] == "agent"


async def test_too_short_field_is_an_error_naming_minimum_and_actual_length(service, project, mode):
    before = snapshot_files(project)
    async with connect(service, mode) as client:
        text = await err(client, "record_decision", {**DECISION, "why_chosen": "  because it is nicer   "})
    assert "why_chosen" in text
    assert "at least 60" in text and "got 19" in text
    assert snapshot_files(project) == before


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("record_pipeline", {"name": "Deploy", "purpose": "short", "steps": ["build"]}, "purpose"),
        ("record_pipeline", {"name": "Deploy the backend", "purpose": "x" * 50, "steps": []}, "steps"),
        ("record_constraint", {"rule": "No floats", "reason": "money"}, "reason"),
        ("record_constraint", {"rule": "No", "reason": "x" * 50}, "rule"),
        ("record_decision", {**DECISION, "summary": "ok"}, "summary"),
        ("record_decision", {**DECISION, "problem": "too short"}, "problem"),
    ],
)
async def test_minimums_are_enforced_per_kind(service, project, tool, args, field):
    async with connect(service, "legacy") as client:
        text = await err(client, tool, args)
    assert field in text


async def test_unknown_id_is_an_error_that_says_what_to_do(service, mode):
    async with connect(service, mode) as client:
        for tool, args in (
            ("get_context", {"id": "dec-999"}),
            ("update_entry", {"id": "dec-999", "updates": {"tags": ["x"]}}),
            ("deprecate_entry", {"id": "con-999", "reason": "no longer true"}),
        ):
            text = await err(client, tool, args)
            assert "999" in text


async def test_no_project_is_an_error(tmp_path, mode):
    lonely = tmp_path / "nowhere"
    lonely.mkdir()
    svc = Service(env={}, cwd=str(lonely))
    async with connect(svc, mode) as client:
        text = await err(client, "get_project_summary")
    assert "context-keeper init" in text
    assert not (lonely / ".context").exists()


async def test_relative_project_dir_is_rejected(service, mode):
    async with connect(service, mode) as client:
        text = await err(client, "get_project_summary", {"project_dir": "relative/path"})
    assert "absolute" in text


async def test_corrupt_file_fails_writes_but_other_files_still_answer(service, project, mode):
    decisions = project / ".context" / "decisions.json"
    decisions.write_text('[{"id": "dec-001", "summary": "x",}\n', encoding="utf-8")
    broken = decisions.read_bytes()
    async with connect(service, mode) as client:
        text = await err(client, "record_decision", DECISION)
        assert "decisions.json" in text and "line 1" in text and "column" in text
        constraints = await ok(client, "reload_constraints")
        assert constraints["count"] == 16
        ranked = await ok(client, "get_context", {"query": "migration files editing rules"})
        assert ranked["results"], "constraints and pipelines must still be searchable"
        assert any("decisions.json" in w for w in ranked.get("warnings", []))
        added = await ok(client, "record_constraint", {"rule": "Keep handheld firmware pinned per site",
                                                      "reason": "A silent firmware update changed the scan beep timing and confused pickers."})
        assert added["id"] == "con-017"
    assert decisions.read_bytes() == broken


async def test_supersedes_marks_old_decision_in_the_same_write(service, project, mode):
    async with connect(service, mode) as client:
        answer = await ok(client, "record_decision", {**DECISION, "supersedes": ["dec-027"]})
        assert answer["superseded"] == ["dec-027"]
        old = await ok(client, "get_context", {"id": "dec-027"})
    assert old["entry"]["status"] == "superseded"
    assert old["entry"]["superseded_by"] == answer["id"]
    assert old["replaced_by"]["id"] == answer["id"]
    stored = {e["id"]: e for e in read_json(project / ".context" / "decisions.json")}
    assert stored["dec-027"]["status"] == "superseded"
    assert stored[answer["id"]]["supersedes"] == ["dec-027"]


async def test_superseding_an_unknown_id_writes_nothing(service, project, mode):
    before = snapshot_files(project)
    async with connect(service, mode) as client:
        text = await err(client, "record_decision", {**DECISION, "supersedes": ["dec-404"]})
    assert "dec-404" in text
    assert snapshot_files(project) == before


async def test_restating_an_existing_decision_reports_it_as_similar(service, mode):
    async with connect(service, mode) as client:
        answer = await ok(client, "record_decision", {
            "summary": "Postgres is our system of record for orders, waves and shipments",
            "problem": "We need one durable source of truth for orders, pick waves and shipments across all sites.",
            "why_chosen": "Postgres gives transactions across orders, waves and shipments, and every other store is derived from it.",
        })
    similar = {s["id"]: s for s in answer.get("similar_entries", [])}
    assert "dec-001" in similar
    assert similar["dec-001"]["relation"] == "likely_restatement"
    assert 0 < similar["dec-001"]["similarity"] <= 1


async def test_get_context_ranks_packs_budget_and_reports_relevance(service, mode):
    async with connect(service, mode) as client:
        answer = await ok(client, "get_context", {"query": "carrier API keeps timing out, how do we retry?", "token_budget": 600})
    assert answer["results"]
    assert answer["tokens_used"] <= answer["token_budget"] == 600
    assert answer["entries_returned"] == len(answer["results"])
    assert 0 < answer["top_relevance"] <= 1
    assert "no_confident_match" not in answer
    ids = [r["entry"]["id"] for r in answer["results"]]
    assert "dec-008" in ids[:3]
    first = answer["results"][0]
    assert {"score", "type", "entry"} <= set(first)


async def test_get_context_flags_no_confident_match_for_unrecorded_topics(service, mode):
    async with connect(service, mode) as client:
        answer = await ok(client, "get_context", {"query": "which GraphQL pagination style should the admin API use?"})
    assert answer["no_confident_match"] is True
    assert "not present them as established" in answer["guidance"]


async def test_get_context_honours_a_users_min_relevance(service, mode):
    async with connect(service, mode) as client:
        strict = await ok(client, "get_context", {"query": "carrier retries with backoff", "min_relevance": 0.99})
        unrecorded = "which GraphQL pagination style should the admin API use?"
        default = await ok(client, "get_context", {"query": unrecorded})
        never = await ok(client, "get_context", {"query": unrecorded, "min_relevance": 0})
    assert strict["no_confident_match"] is True
    # 0 is a threshold like any other (never abstain), as on the CLI, not "use the configured one"
    assert default["no_confident_match"] is True and "no_confident_match" not in never


async def test_get_context_types_and_tags_are_real_filters(service, mode):
    async with connect(service, mode) as client:
        only_constraints = await ok(client, "get_context", {"query": "label printing", "types": ["constraints"], "include_related": False})
        bad_type = await err(client, "get_context", {"query": "label printing", "types": ["widgets"]})
    assert only_constraints["results"]
    assert {r["type"] for r in only_constraints["results"]} == {"constraint"}
    assert "widgets" in bad_type


async def test_get_context_with_scope_includes_constraints_covering_the_file(service, project, mode):
    async with connect(service, mode) as client:
        answer = await ok(client, "get_context", {
            "query": "add a new migration", "scope": str(project / "migrations" / "0042_add_index.sql"),
            "types": ["constraints"], "include_related": False,
        })
    ids = {r["entry"]["id"] for r in answer["results"]}
    assert {"con-001", "con-016"} <= ids
    assert "con-012" not in ids  # hooks/ scope does not cover migrations/


async def test_query_entries_filters_exactly(service, mode):
    async with connect(service, mode) as client:
        superseded = await ok(client, "query_entries", {"status": "superseded"})
        advisory = await ok(client, "query_entries", {"hardness": "advisory"})
        text = await ok(client, "query_entries", {"text": "ZPL 9100", "kind": "decision"})
        bad = await err(client, "query_entries", {"status": "retired"})
    assert {r["entry"]["id"] for r in superseded["results"]} == {"dec-002", "dec-005", "dec-006", "dec-011"}
    assert all(r["entry"]["hardness"] == "advisory" for r in advisory["results"])
    assert [r["entry"]["id"] for r in text["results"]] == ["dec-014"]
    assert "retired" in bad


async def test_query_entries_says_when_the_budget_holds_not_even_one_entry(service, mode):
    async with connect(service, mode) as client:
        # Too small for its own counts and note: refused, naming what it takes (it answered over
        # the budget). At that much, the answer is the note alone.
        refused = await err(client, "query_entries", {"token_budget": 20})
        floor = int(re.search(r"alone take about (\d+) tokens", refused).group(1))
        tiny = await ok(client, "query_entries", {"token_budget": floor})
        some = await ok(client, "query_entries", {"types": ["decisions"], "token_budget": 1500})
        whole = await ok(client, "query_entries", {"types": ["decisions"]})
    assert "token_budget 20 is too small" in refused
    assert tiny["results"] == [] and tiny["truncated"] is True and tiny["tokens_used"] <= floor
    assert f"token_budget {floor}" in tiny["budget_note"] and tiny["omitted"] == min(50, tiny["total_matches"])  # the default limit
    assert 0 < some["entries_returned"] < whole["entries_returned"]
    assert some["omitted"] == whole["entries_returned"] - some["entries_returned"]
    assert "budget_note" not in whole


@pytest.mark.parametrize("args", [{"types": ["decisions"], "kind": "pipeline"},
                                  {"types": ["decisions", "pipelines"], "kind": "pipeline"}])
async def test_query_entries_refuses_types_and_kind_that_disagree(service, mode, args):
    # The two used to be joined, so asking for decisions "of kind pipeline" returned both kinds.
    async with connect(service, mode) as client:
        refused = await err(client, "query_entries", args)
        same = await ok(client, "query_entries", {"types": ["pipelines"], "kind": "pipeline"})
    assert "kind" in refused and "types" in refused
    assert same["results"] and {r["type"] for r in same["results"]} == {"pipeline"}


async def test_update_entry_changes_only_given_fields_and_keeps_unknown_ones(service, project, mode):
    path = project / ".context" / "decisions.json"
    before = {e["id"]: e for e in read_json(path)}
    async with connect(service, mode) as client:
        answer = await ok(client, "update_entry", {"id": "dec-008", "updates": {"tags": ["carriers", "retries"]}})
        frozen = await err(client, "update_entry", {"id": "dec-008", "updates": {"id": "dec-100"}})
        typo = await err(client, "update_entry", {"id": "dec-008", "updates": {"why_chose": "x"}})
        short = await err(client, "update_entry", {"id": "dec-008", "updates": {"why_chosen": "short"}})
    assert answer["updated_fields"] == ["tags"]
    assert "cannot be changed" in frozen and "why_chose" in typo and "at least 60" in short
    after = {e["id"]: e for e in read_json(path)}
    assert after["dec-008"]["tags"] == ["carriers", "retries"]
    changed = {k for k in after["dec-008"] if after["dec-008"][k] != before["dec-008"].get(k)}
    assert changed == {"tags", "updated_at", "verified_at"}
    assert {k: v for k, v in after.items() if k != "dec-008"} == {k: v for k, v in before.items() if k != "dec-008"}


async def test_deprecate_hides_entry_from_retrieval(service, mode):
    async with connect(service, mode) as client:
        answer = await ok(client, "deprecate_entry", {"id": "dec-014", "reason": "printers now use the vendor SDK"})
        ranked = await ok(client, "get_context", {"query": "raw ZPL straight to printers port 9100", "include_related": False})
        with_deprecated = await ok(client, "get_context", {"query": "raw ZPL port 9100", "include_deprecated": True})
    assert answer["status"] == "deprecated"
    assert "dec-014" not in {r["entry"]["id"] for r in ranked["results"]}
    assert "dec-014" in {r["entry"]["id"] for r in with_deprecated["results"]}


async def test_deprecate_with_merge_into_unions_lists_and_fills_empty_text(service, project, mode):
    async with connect(service, mode) as client:
        a = await ok(client, "record_decision", {**DECISION, "tags": ["labels"], "related_to": ["dec-027"]})
        b = await ok(client, "record_decision", {**DECISION, "summary": "Paired printer retry for jams", "tags": ["printers", "jams"],
                                                 "tradeoffs": "A jammed label may print twice on paper (never bought twice)."})
        merged = await ok(client, "deprecate_entry", {"id": b["id"], "merge_into": a["id"]})
    assert merged["merged_into"] == a["id"]
    survivor = merged["survivor"]
    assert survivor["tags"] == ["labels", "printers", "jams"]
    assert survivor["tradeoffs"].startswith("A jammed label")
    assert survivor["related_to"] == ["dec-027"]
    stored = {e["id"]: e for e in read_json(project / ".context" / "decisions.json")}
    assert stored[b["id"]]["status"] == "deprecated"
    assert stored[b["id"]]["superseded_by"] == a["id"]


async def test_get_project_summary_puts_absolute_constraints_first_within_budget(service, mode):
    async with connect(service, mode) as client:
        answer = await ok(client, "get_project_summary", {"token_budget": 2000})
        tiny = await ok(client, "get_project_summary", {"token_budget": 300})
    text = answer["summary"]
    assert text.index("Constraints (absolute)") < text.index("Decisions:") < text.index("Pipelines:")
    assert answer["tokens_used"] <= 2000
    assert tiny["tokens_used"] <= 300
    assert "not shown" in tiny["summary"] and tiny["dropped"]
    assert "dec-005" not in text  # superseded decisions are history, not briefing


async def test_prune_stale_and_verify_quality_report_without_writing(service, project, mode):
    before = snapshot_files(project)
    async with connect(service, mode) as client:
        stale = await ok(client, "prune_stale", {"days": 30})
        quality = await ok(client, "verify_quality", {"min_reason_chars": 400})
    assert stale["stale_count"] > 0 and stale["threshold_days"] == 30
    assert quality["counts"].get("thin_reasoning", 0) > 0
    assert quality["counts"].get("legacy_entry", 0) >= 1
    assert snapshot_files(project) == before


async def test_compaction_report_absent_is_explained(service, mode):
    async with connect(service, mode) as client:
        report = await ok(client, "get_compaction_report")
    assert report["status"] == "no_report"


async def test_export_markdown_writes_inside_project_only(service, project, mode):
    async with connect(service, mode) as client:
        answer = await ok(client, "export_markdown", {"path": "docs/DECISIONS.md"})
        outside = await err(client, "export_markdown", {"path": "../escape.md"})
    assert Path(answer["path"]) == project / "docs" / "DECISIONS.md"
    text = (project / "docs" / "DECISIONS.md").read_text(encoding="utf-8")
    assert "dec-008" in text and "## Superseded" in text
    assert "outside the project root" in outside
    assert not (project.parent / "escape.md").exists()


async def test_decisions_markdown_regenerates_on_write_when_enabled(service, project, mode):
    config = project / ".context" / "config.json"
    config.write_text(json.dumps({"project_name": "packwise", "markdown_export": {"enabled": True}}), encoding="utf-8")
    async with connect(service, mode) as client:
        answer = await ok(client, "record_decision", DECISION)
    assert answer["id"] in (project / "DECISIONS.md").read_text(encoding="utf-8")


async def test_record_entry_dispatches_by_kind_and_rejects_foreign_fields(service, mode):
    async with connect(service, mode) as client:
        added = await ok(client, "record_entry", {"kind": "constraint", "rule": "Scanner builds are signed in CI only",
                                                  "reason": "A locally signed build once reached the fleet with debug logging on.",
                                                  "scope": "scanner-app/"})
        foreign = await err(client, "record_entry", {"kind": "constraint", "rule": "Something", "reason": "x" * 50,
                                                     "summary": "does not belong"})
    assert added["id"] == "con-017" and added["entry"]["scope"] == "scanner-app/"
    assert "summary" in foreign


async def test_reload_constraints_lists_active_rules(service, mode):
    async with connect(service, mode) as client:
        answer = await ok(client, "reload_constraints")
    assert answer["count"] == 16
    assert answer["text"].startswith("Active constraints:")
    assert "con-001" in answer["text"]


async def test_rationale_is_accepted_as_legacy_alias(service, mode):
    async with connect(service, mode) as client:
        answer = await ok(client, "record_decision", {**{k: v for k, v in DECISION.items() if k != "why_chosen"},
                                                      "rationale": DECISION["why_chosen"]})
    assert answer["entry"]["why_chosen"] == DECISION["why_chosen"]


async def test_errors_are_is_error_results_not_protocol_errors(service, mode):
    async with connect(service, mode) as client:
        is_error, text = await call(client, "record_decision", {"summary": 5})
    assert is_error and "summary" in text


async def test_read_tools_bound_their_arguments(service, mode):
    async with connect(service, mode) as client:
        long_query = await err(client, "get_context", {"query": "carrier " * 1000})
        many_tags = await err(client, "query_entries", {"tags_any": [f"t{i}" for i in range(500)]})
    assert "under 4000" in long_query
    assert "maximum is 100" in many_tags


@pytest.mark.parametrize("budget", [300, 1200, 4000])
async def test_the_text_an_agent_receives_stays_within_token_budget(service, mode, budget):
    # token_budget counts ~4 characters per token of compact JSON; the SDK's own rendering was
    # indented and came out about 30% longer.
    async with connect(service, mode) as client:
        result = await client.call_tool("get_context", {"query": "carrier retries and label printing", "token_budget": budget})
    text = result.content[0].text
    answer = json.loads(text)
    assert answer["tokens_used"] <= budget
    assert len(text) <= budget * 4 + 400  # plus the answer's own fields beside its results
