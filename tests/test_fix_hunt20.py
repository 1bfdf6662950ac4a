"""Round-20 hunt: settings read without their rule, ids looked up in one case only, successor
hints lost, future verification dates, filter-only listings, extensionless new files."""

from __future__ import annotations

import json

import pytest

from context_keeper.service import Service

FIELDS = {"problem": "Background jobs in billing need a queue that survives restarts of the workers.",
          "why_chosen": "It is simple to operate and the team has run it in production before, so on-call knows it."}
DECISION = {"summary": "Jobs go through the alpha queue", **FIELDS}


@pytest.fixture
def svc(empty_project):
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}, hook_cache_delay=None)


def _configure(project, settings) -> None:
    (project / ".context" / "config.json").write_text(json.dumps(settings), encoding="utf-8")


# ------------------------------------------------------------ 1. settings read by their rule

def test_a_markdown_export_enabled_that_is_not_true_leaves_the_export_off_and_says_so(svc, empty_project):
    _configure(empty_project, {"markdown_export": {"enabled": "false"}})
    answer = svc.record("decision", DECISION)
    assert not (empty_project / "DECISIONS.md").exists()
    assert any('"markdown_export.enabled"' in w and "Fix or remove" in w for w in answer["warnings"]), answer


def test_a_markdown_export_that_is_not_an_object_is_warned_about(svc, empty_project):
    _configure(empty_project, {"markdown_export": "DECISIONS.md"})
    answer = svc.record("decision", DECISION)
    assert not (empty_project / "DECISIONS.md").exists()
    assert any('"markdown_export" is "DECISIONS.md"' in w for w in answer["warnings"]), answer


def test_a_markdown_export_turned_on_properly_warns_of_nothing(svc, empty_project):
    _configure(empty_project, {"markdown_export": {"enabled": True}})
    answer = svc.record("decision", DECISION)
    assert (empty_project / "DECISIONS.md").exists() and "warnings" not in answer


@pytest.mark.parametrize("tool", ["summary", "export"])
def test_a_project_name_that_is_not_text_is_warned_about_where_it_is_used(svc, empty_project, tool):
    _configure(empty_project, {"project_name": 123})
    svc.record("decision", DECISION)
    answer = svc.get_project_summary() if tool == "summary" else svc.export_markdown()
    assert any('"project_name" is 123' in w and empty_project.name in w for w in answer["warnings"]), answer


def test_doctor_names_a_project_name_that_is_not_text_once(svc, empty_project):
    from context_keeper import doctor

    _configure(empty_project, {"project_name": 123})
    findings = [f for f in doctor.diagnose(empty_project).findings if "project_name" in f.message]
    assert len(findings) == 1, findings


# ------------------------------------------------------------ 2. ids looked up in any case

@pytest.fixture
def suffixed(svc, empty_project):
    """dec-001, and a decision whose suffix was written by hand in upper case: dec-010-A7F3."""
    svc.record("decision", DECISION)
    svc.record("decision", {**DECISION, "summary": "Jobs go through the beta queue"})
    path = empty_project / ".context" / "decisions.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"dec-002"', '"dec-010-A7F3"'), encoding="utf-8")
    return svc


@pytest.mark.parametrize("asked", ["dec-010-a7f3", "DEC-010-a7f3", "dec-010-A7F3", "DEC-10-A7F3"])
def test_get_context_by_id_takes_a_suffix_in_any_case(suffixed, asked):
    assert suffixed.get_context(id=asked)["entry"]["id"] == "dec-010-A7F3"


def test_a_query_that_is_a_suffixed_id_in_another_case_answers_with_it(suffixed):
    answer = suffixed.get_context(query="dec-010-a7f3")
    assert answer["results"][0]["entry"]["id"] == "dec-010-A7F3" and not answer.get("no_confident_match"), answer


def test_update_entry_takes_a_suffix_in_another_case(suffixed):
    answer = suffixed.update_entry("dec-010-a7f3", {"summary": "Jobs go through the gamma queue"})
    assert answer["id"] == "dec-010-A7F3" and answer["entry"]["summary"] == "Jobs go through the gamma queue"


def test_deprecate_entry_takes_a_suffix_in_another_case(suffixed):
    assert suffixed.deprecate_entry("dec-010-a7f3", "the queue is gone now")["id"] == "dec-010-A7F3"


@pytest.mark.parametrize("how", ["superseded_by", "merge_into"])
def test_a_successor_with_a_suffix_in_another_case_is_linked_as_stored(suffixed, how):
    answer = suffixed.deprecate_entry("dec-001", "beta replaced it", **{how: "dec-010-a7f3"})
    assert answer["entry"]["superseded_by"] == "dec-010-A7F3", answer


def test_related_to_with_a_suffix_in_another_case_is_linked_as_stored(suffixed):
    answer = suffixed.record("decision", {**DECISION, "summary": "Jobs go through the delta queue",
                                          "related_to": ["dec-010-a7f3"]})
    assert answer["entry"]["related_to"] == ["dec-010-A7F3"] and "warnings" not in answer, answer


# ------------------------------------------------------------ 3. a successor spelled otherwise

def test_a_superseded_by_spelled_otherwise_is_answered_with_the_id_meant(svc, empty_project):
    from context_keeper.errors import NotFound
    from tests.conftest import snapshot_files

    for n in range(5):
        svc.record("decision", {**DECISION, "summary": f"Jobs go through queue number {n}"})
    before = snapshot_files(empty_project)
    with pytest.raises(NotFound) as refused:
        svc.deprecate_entry("dec-003", "queue four replaced it", superseded_by="DEC-5")
    assert "did you mean dec-005?" in str(refused.value) and "record the replacement" not in str(refused.value)
    assert snapshot_files(empty_project) == before


def test_a_superseded_by_naming_nothing_still_says_to_record_the_replacement(svc):
    from context_keeper.errors import NotFound

    svc.record("decision", DECISION)
    with pytest.raises(NotFound, match="superseded_by: no decision with id 'dec-9'; record the replacement first"):
        svc.deprecate_entry("dec-001", "queue nine replaced it", superseded_by="dec-9")


# ------------------------------------------------------------ 4. verification dates in the future

def _verified(project, entry_id, when) -> None:
    path = project / ".context" / "decisions.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    for item in items:
        if item["id"] == entry_id:
            item["verified_at"] = when
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")


def test_prune_stale_reports_an_entry_verified_in_the_future(svc, empty_project):
    svc.record("decision", DECISION)
    svc.record("decision", {**DECISION, "summary": "Jobs go through the beta queue"})
    _verified(empty_project, "dec-002", "9999-01-01T00:00:00Z")
    answer = svc.prune_stale(30)
    assert [s["id"] for s in answer["stale"]] == ["dec-002"] and answer["stale_count"] == 1, answer
    reason = answer["stale"][0]["reason"]
    assert "9999-01-01T00:00:00Z" in reason and "in the future" in reason and "update_entry" in reason


def test_prune_stale_does_not_report_a_clock_a_few_hours_ahead(svc, empty_project):
    from datetime import datetime, timedelta, timezone

    svc.record("decision", DECISION)
    _verified(empty_project, "dec-001", (datetime.now(timezone.utc) + timedelta(hours=3)).isoformat())
    assert svc.prune_stale(30)["stale"] == []


# ------------------------------------------------------------ 5. a listing by filters alone

def test_a_listing_by_filters_alone_reports_a_top_relevance_of_zero_and_no_abstention(service):
    answer = service.get_context(types=["decisions"])
    assert answer["results"] and all(r["type"] == "decision" for r in answer["results"])
    # A number, as in every get_context answer, and one no threshold reads as confident.
    assert answer["top_relevance"] == 0.0 and isinstance(answer["top_relevance"], float)
    # It asked no question, so there is none it failed to answer.
    assert "no_confident_match" not in answer and "guidance" not in answer


def test_the_cli_shows_a_listing_by_filters_alone_without_relevance(project):
    from tests.test_cli import run

    got = run("get", "", "--type", "decisions", cwd=project)
    assert got.returncode == 0, got.stderr
    assert "dec-" in got.stdout and "relevance" not in got.stdout, got.stdout


# ------------------------------------------------------------ 6. paths that do not exist yet

SQL_RULE = {"rule": "SQL files use lower-case keywords", "scope": "*.sql", "hardness": "advisory",
            "reason": "The linter in CI rejects upper-case keywords in every SQL file of the repository."}


def _listed(service, scope) -> list[str]:
    return [r["entry"]["id"] for r in service.get_context(types=["constraints"], scope=scope)["results"]]


@pytest.mark.parametrize("new_file", ["Dockerfile", "docs/README"])
def test_a_new_file_without_an_extension_is_not_read_as_a_directory(service, project, new_file):
    rule = service.record("constraint", SQL_RULE)["id"]
    assert not (project / new_file).exists()
    assert rule not in _listed(service, new_file)
    assert rule not in [e["entry"]["id"] for e in service.query_entries(types=["constraints"], scope=new_file)["results"]]


@pytest.mark.parametrize("directory", ["newdir/", "docs/drafts/", "migrations"])
def test_a_directory_written_with_a_slash_or_on_disk_holds_files(service, project, directory):
    rule = service.record("constraint", SQL_RULE)["id"]
    assert rule in _listed(service, directory)


def test_the_edit_guard_reads_a_new_file_without_an_extension_as_a_file(project):
    # A control: the guard already read Write's file_path as a file; it holds that against the
    # scope change made for get_context.
    from tests.hook_helpers import hook_env, injected, payload, run_hook

    rule = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, hook_cache_delay=None).record(
        "constraint", {**SQL_RULE, "hardness": "absolute"})["id"]
    data = payload("pre_tool_use_write_migration", project)
    data["tool_input"]["file_path"] = str(project / "Dockerfile")
    assert rule not in (injected(run_hook("scope_guard", data, env=hook_env(project))) or "")
    data["tool_input"]["file_path"] = str(project / "migrations" / "0099_new.sql")
    assert rule in injected(run_hook("scope_guard", data, env=hook_env(project)))
