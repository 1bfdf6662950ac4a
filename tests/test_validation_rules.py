"""Status changes, links, scopes and argument errors are held to one set of rules, whichever
tool makes the change, and a refused change leaves every store file byte-identical."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_keeper.errors import InvalidInput, NotFound
from context_keeper.model import CONSTRAINT, DECISION
from context_keeper.service import Service
from context_keeper.similarity import classify_relation
from tests.conftest import MODES, read_json, snapshot_files
from tests.mcp_helpers import call, connect, ok

REASON = "Adapters that bypass the shared client skip its retries, timeouts and request logging."


def stored(project: Path, entry_id: str) -> dict:
    name = {"dec": "decisions", "con": "constraints", "pip": "pipelines"}[entry_id[:3]]
    return {e["id"]: e for e in read_json(project / ".context" / f"{name}.json")}[entry_id]


# ------------------------------------------------------------------ 1. status changes and links

REFUSED_STATUS_CHANGES = [
    # (tool, arguments, field the message must name)
    ("deprecate_entry", {"id": "dec-001", "reason": "replaced by itself", "superseded_by": "dec-001"}, "superseded_by"),
    ("deprecate_entry", {"id": "dec-001", "reason": "now a constraint", "superseded_by": "con-001"}, "superseded_by"),
    ("deprecate_entry", {"id": "dec-001", "reason": "two successors", "superseded_by": "dec-003",
                         "merge_into": "dec-004"}, "superseded_by"),
    ("update_entry", {"id": "dec-001", "updates": {"status": "superseded"}}, "superseded_by"),
    ("update_entry", {"id": "dec-001", "updates": {"status": "superseded", "superseded_by": "dec-001"}}, "superseded_by"),
    ("update_entry", {"id": "dec-001", "updates": {"status": "superseded", "superseded_by": "con-001"}}, "superseded_by"),
    ("update_entry", {"id": "dec-001", "updates": {"status": "superseded", "superseded_by": "dec-404"}}, "superseded_by"),
    ("update_entry", {"id": "dec-001", "updates": {"superseded_by": "dec-003"}}, "superseded_by"),
    ("update_entry", {"id": "dec-001", "updates": {"status": "deprecated"}}, "deprecated_reason"),
    ("update_entry", {"id": "dec-001", "updates": {"status": "deprecated", "deprecated_reason": "old"}}, "deprecated_reason"),
    ("update_entry", {"id": "dec-001", "updates": {"deprecated_reason": "no longer true"}}, "deprecated_reason"),
    ("update_entry", {"id": "dec-001", "updates": {"related_to": ["dec-999"]}}, "related_to"),
    ("update_entry", {"id": "dec-001", "updates": {"related_to": ["dec-001"]}}, "related_to"),
    ("update_entry", {"id": "dec-002", "updates": {"superseded_by": None}}, "superseded_by"),
]


@pytest.mark.anyio
@pytest.mark.parametrize("tool,args,field", REFUSED_STATUS_CHANGES,
                         ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(REFUSED_STATUS_CHANGES)])
async def test_invalid_status_change_or_link_is_refused_naming_the_field(service, project, tool, args, field):
    before = snapshot_files(project)
    async with connect(service, "legacy") as client:
        is_error, text = await call(client, tool, args)
    assert is_error, text
    assert field in text
    assert snapshot_files(project) == before


def test_update_to_superseded_follows_deprecate_entry_rules(service, project):
    answer = service.update_entry("dec-001", {"status": "superseded", "superseded_by": "dec-003"})
    assert answer["entry"]["status"] == "superseded"
    assert stored(project, "dec-001")["superseded_by"] == "dec-003"


def test_update_to_deprecated_with_a_reason_is_stored(service, project):
    service.update_entry("dec-001", {"status": "deprecated", "deprecated_reason": "orders moved to the vendor"})
    entry = stored(project, "dec-001")
    assert (entry["status"], entry["deprecated_reason"]) == ("deprecated", "orders moved to the vendor")


def test_reactivating_clears_the_successor_and_the_reason(service, project):
    service.deprecate_entry("dec-001", "replaced by the vendor service", superseded_by="dec-003")
    answer = service.update_entry("dec-001", {"status": "active"})
    entry = stored(project, "dec-001")
    assert entry["status"] == "active"
    assert entry["superseded_by"] is None
    assert "deprecated_reason" not in entry
    assert {"status", "superseded_by", "deprecated_reason"} <= set(answer["updated_fields"])


def test_reactivating_takes_the_entry_off_its_successors_supersedes(service, project):
    # Otherwise both read as the current answer: the successor still claims to replace it.
    decision = {"summary": "Orders live in the vendor service now",
                "problem": "Keeping our own orders table in step with the vendor kept failing at month end.",
                "why_chosen": "The vendor's API is the source of truth for orders, so reading it directly removes the sync."}
    new_id = service.record("decision", decision, supersedes=["dec-001"])["id"]
    assert stored(project, new_id)["supersedes"] == ["dec-001"]
    answer = service.update_entry("dec-001", {"status": "active"})
    assert stored(project, new_id)["supersedes"] == []
    assert answer["also_updated"] == [f"{new_id}: no longer lists dec-001 in supersedes"]
    assert service.query_entries(supersedes="dec-001")["results"] == []


def test_successor_that_points_back_is_refused(service, project):
    service.update_entry("dec-003", {"status": "superseded", "superseded_by": "dec-001"})
    with pytest.raises(InvalidInput, match="superseded_by"):
        service.deprecate_entry("dec-001", "replaced by dec-003", superseded_by="dec-003")


def test_redeprecating_is_refused_and_the_first_reason_is_kept(service, project):
    """Chosen behaviour: a second deprecate_entry is refused (the entry's history is not
    overwritten); the message quotes the first reason and says how to reword or restore it."""
    service.deprecate_entry("dec-014", "printers now use the vendor SDK")
    before = snapshot_files(project)
    with pytest.raises(InvalidInput) as refused:
        service.deprecate_entry("dec-014", "a different story")
    message = str(refused.value)
    assert "already deprecated" in message and "printers now use the vendor SDK" in message
    assert "update_entry" in message
    assert snapshot_files(project) == before
    assert stored(project, "dec-014")["deprecated_reason"] == "printers now use the vendor SDK"


def test_new_links_must_exist_but_old_dangling_links_do_not_block_an_edit(service, project):
    service.update_entry("dec-001", {"related_to": ["dec-003", "con-001", "pipe-001"]})
    assert stored(project, "dec-001")["related_to"] == ["dec-003", "con-001", "pipe-001"]
    # dec-007 already links dec-031-0c9e; editing its links keeps working.
    current = stored(project, "dec-007")["related_to"]
    service.update_entry("dec-007", {"related_to": [*current, "dec-001"]})
    with pytest.raises(NotFound, match="related_to"):
        service.update_entry("dec-007", {"related_to": [*current, "con-404"]})


# ------------------------------------------------------------------ 2. restatement vs contradiction

def _title(kind, text):
    return {kind.title_field: text, "id": "x-1"}


@pytest.mark.parametrize("mine,theirs,relation", [
    ("Do not import requests in adapters",
     "Carrier adapters must never import requests or httpx directly.", "likely_restatement"),
    ("Don't import requests in adapters", "Do not import requests in adapters", "likely_restatement"),
    ("Don\u2019t call carriers directly", "Never call carriers directly", "likely_restatement"),
    ("Import requests in adapters", "Never import requests in adapters", "likely_contradiction"),
    ("Use Postgres for orders", "Do not use Postgres for orders", "likely_contradiction"),
    ("Switch orders from MySQL to Postgres", "Use MySQL for orders", "likely_contradiction"),
    ("Use Postgres for orders", "Postgres is the system of record for orders", "likely_restatement"),
    # What follows "instead of" is the option turned down, not a negation (round 17's hunt).
    ("Use Postgres instead of MySQL as the primary database", "Use Postgres as the primary database", "likely_restatement"),
    ("Use Postgres instead of MySQL as the primary database", "Use MySQL as the primary database", "likely_contradiction"),
    ("Use MySQL for orders", "Store orders in Postgres rather than MySQL", "likely_contradiction"),
    ("Keep secrets out of the repository", "Do not commit secrets to the repository", "likely_restatement"),
    ("Keep secrets out of the repository", "Commit the secrets to the repository", "likely_contradiction"),
])
def test_every_negation_form_is_one_polarity(mine, theirs, relation):
    assert classify_relation(CONSTRAINT, _title(CONSTRAINT, mine), DECISION, _title(DECISION, theirs)) == relation


def test_recording_a_restated_rule_is_not_called_a_contradiction(service):
    answer = service.record("constraint", {"rule": "Do not import requests in adapters", "reason": REASON,
                                           "scope": "carriers/"})
    similar = {s["id"]: s for s in answer.get("similar_entries", [])}
    assert "con-004" in similar
    assert similar["con-004"]["relation"] == "likely_restatement"


# ------------------------------------------------------------------ 3. constraint scopes

@pytest.mark.parametrize("scope", ["../outside/**", "/etc/passwd", "src/../../x.py", "~/notes/", "C:/Windows/"])
def test_scope_outside_the_project_is_refused(service, project, scope):
    before = snapshot_files(project)
    with pytest.raises(InvalidInput) as refused:
        service.record("constraint", {"rule": "Keep adapters thin", "reason": REASON, "scope": scope})
    assert refused.value.field == "scope"
    assert "relative to the project root" in str(refused.value) and repr(scope) in str(refused.value)
    with pytest.raises(InvalidInput, match="scope"):
        service.update_entry("con-004", {"scope": scope})
    assert snapshot_files(project) == before


@pytest.mark.parametrize("given,kept", [
    ("{root}/carriers/", "carriers/"),
    ("{root}/src/**/*.py", "src/**/*.py"),
    ("{root}", "global"),
    ("carriers/", "carriers/"),
    ("global", "global"),
    ("src/**/*.py", "src/**/*.py"),
])
def test_scope_inside_the_project_is_stored_relative(service, project, given, kept):
    scope = given.format(root=project)
    answer = service.record("constraint", {"rule": "Keep adapters thin", "reason": REASON, "scope": scope})
    assert stored(project, answer["id"])["scope"] == kept
    service.update_entry(answer["id"], {"scope": scope})
    assert stored(project, answer["id"])["scope"] == kept


# ------------------------------------------------------------------ 4. argument errors over MCP

ARGUMENT_ERRORS = [
    ("get_context", {"query": "carriers", "token_budget": 10}, ["token_budget", "at least 50", "got 10"]),
    ("get_context", {"token_budget": 300000}, ["token_budget", "got 300000", "from 0 to 200000"]),
    ("get_context", {"token_budget": "lots"}, ["token_budget", "'lots'", "an integer"]),
    ("get_context", {"min_relevance": 3}, ["min_relevance", "got 3", "from 0 to 1"]),
    ("get_project_summary", {"token_budget": 5}, ["token_budget", "got 5", "from 100 to 50000"]),
    ("query_entries", {"limit": 0}, ["limit", "got 0", "from 1 to 1000"]),
    ("record_decision", {"summary": "Use zones", "origin": "robot"}, ["origin", "'robot'", "'user', 'agent', 'import'"]),
    ("record_decision", {}, ["summary is required"]),
    ("update_entry", {"id": "dec-001", "updates": "tags"}, ["updates", "an object"]),
]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tool,args,expected", ARGUMENT_ERRORS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(ARGUMENT_ERRORS)])
async def test_argument_errors_read_as_one_sentence_per_field(service, mode, tool, args, expected):
    async with connect(service, mode) as client:
        is_error, text = await call(client, tool, args)
    assert is_error
    for part in expected:
        assert part in text, text
    for dump in ("validation error for", "errors.pydantic.dev", "Arguments", "[type="):
        assert dump not in text, text


@pytest.mark.anyio
async def test_leaving_out_token_budget_or_zero_means_the_config_default(service):
    async with connect(service, "legacy") as client:
        answer = await ok(client, "get_context", {"query": "carrier API retries"})
        zero = await ok(client, "get_context", {"query": "carrier API retries", "token_budget": 0})
        unlimited = await ok(client, "query_entries", {"token_budget": 0, "limit": 5})
    assert answer["token_budget"] == zero["token_budget"] == 4000  # 0 has always meant the default
    assert unlimited["entries_returned"] == 5  # 0 stays "no limit" for query_entries


def test_stored_values_sent_back_unchanged_are_accepted(project):
    """A client that reads an entry and writes it back must be able to edit a legacy entry."""
    import json as _json

    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    path = project / ".context" / "decisions.json"
    items = _json.loads(path.read_text(encoding="utf-8"))
    items[1] = dict(items[1], status="superseded", superseded_by="dec-077")  # a successor long gone
    path.write_text(_json.dumps(items, indent=2), encoding="utf-8")
    entry_id = items[1]["id"]
    service.update_entry(entry_id, {"status": "superseded", "superseded_by": "dec-077", "tags": ["legacy"]})
    cpath = project / ".context" / "constraints.json"
    cons = _json.loads(cpath.read_text(encoding="utf-8"))
    cons[0] = dict(cons[0], scope="../shared/app/")
    cpath.write_text(_json.dumps(cons, indent=2), encoding="utf-8")
    service.update_entry(cons[0]["id"], {"scope": "../shared/app/", "tags": ["legacy"]})
    with pytest.raises(InvalidInput):  # a new bad value is still refused
        service.update_entry(cons[0]["id"], {"scope": "../elsewhere/"})


@pytest.mark.anyio
async def test_nested_argument_errors_name_the_item_once_without_type_names(service):
    async with connect(service, "legacy") as client:
        is_error, text = await call(client, "record_decision", {
            "summary": "Use zones for picking", "problem": "x" * 50, "why_chosen": "y" * 70, "alternatives": [{"option": 1}]})
    # The schema takes an alternative of any values (as update_entry does), so the service names
    # the item: once, in its own words, with no type names.
    assert is_error and text.count("alternatives: item 1 needs an 'option' string") == 1
    assert "dict[" not in text and ".str" not in text


def test_superseding_an_entry_that_is_no_longer_active_is_refused_and_writes_nothing(tmp_path):
    # Re-superseding rewrote the first successor; superseding a deprecated entry revived it.
    from context_keeper.service import Service

    Service(env={}).init_project(str(tmp_path))
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(tmp_path)})
    store_file = tmp_path / ".context" / "decisions.json"
    fields = {"problem": "Label jobs need a queue the printers can drain at their own pace without loss.",
              "why_chosen": "Redis streams give consumer groups and acknowledgements, which the printers need to resume."}
    first = svc.record("decision", {"summary": "Label jobs go through Redis streams", **fields})["id"]
    second = svc.record("decision", {"summary": "Label jobs go through Postgres SKIP LOCKED", **fields}, supersedes=[first])["id"]
    before = store_file.read_bytes()
    with pytest.raises(InvalidInput, match=f"{first} is already superseded.*{second}"):
        svc.record("decision", {"summary": "Label jobs go through SQS", **fields}, supersedes=[first])
    assert store_file.read_bytes() == before
    svc.deprecate_entry(second, "We stopped printing labels in-house altogether.")
    retired = store_file.read_bytes()
    with pytest.raises(InvalidInput, match=f"{second} is already deprecated"):
        svc.record("decision", {"summary": "Label jobs go through a vendor API", **fields}, supersedes=[second])
    assert store_file.read_bytes() == retired
    assert svc.get_context(id=first)["entry"]["superseded_by"] == second


def test_update_with_the_legacy_rationale_changes_what_answers_show(project):
    from context_keeper.service import Service

    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    text = "Quotes for the same parcel shape repeat within minutes, so caching them saves carrier calls."
    svc.update_entry("dec-024", {"rationale": text})
    assert svc.get_context(id="dec-024")["entry"]["why_chosen"] == text


MALFORMED_SUPERSEDES = [
    (5, "must be a list"),
    ("dec-024", "not a single string"),
    ([["dec-024"]], "items must be strings"),
    (["latest cache decision"], "not an entry id"),
    (["con-004"], "not another decision"),
]


@pytest.mark.parametrize("value,message", MALFORMED_SUPERSEDES, ids=[m for _, m in MALFORMED_SUPERSEDES])
def test_update_refuses_a_malformed_supersedes_and_writes_nothing(service, project, value, message):
    # Stored as given, a non-list made every later get_context / query_entries that reached the
    # entry fail with a bare TypeError.
    fields = {"problem": "Carrier quotes drift within the hour when carriers change surcharges mid-day.",
              "why_chosen": "Five minutes keeps label prices right while still sparing most quote calls to carriers."}
    new = service.record("decision", {"summary": "Cache carrier quotes for 5 minutes", **fields}, supersedes=["dec-024"])["id"]
    before = snapshot_files(project)
    with pytest.raises(InvalidInput, match=message) as refused:
        service.update_entry(new, {"supersedes": value})
    assert refused.value.field == "supersedes"
    assert snapshot_files(project) == before
    service.deprecate_entry("dec-003", superseded_by=new)  # the other end of the link, first
    assert service.update_entry(new, {"supersedes": ["dec-024", "dec-003"]})["entry"]["supersedes"] == ["dec-024", "dec-003"]


@pytest.mark.parametrize("value", [0, -1, 10, 49.5, "abc", True])
def test_an_unusable_token_budget_in_config_falls_back_to_the_default_with_a_warning(project, value):
    # It used to refuse every get_context that left token_budget out, blaming the caller.
    import json as _json

    path = project / ".context" / "config.json"
    config = _json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    path.write_text(_json.dumps({**config, "token_budget": value}), encoding="utf-8")
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    answer = service.get_context(query="carrier API retries")
    assert answer["results"] and answer["token_budget"] == 4000
    assert any("config.json" in w and '"token_budget"' in w for w in answer.get("warnings", []))
    given = service.get_context(query="carrier API retries", token_budget=500)
    assert given["token_budget"] == 500 and not any("token_budget" in w for w in given.get("warnings", []))
    with pytest.raises(InvalidInput, match="at least 50"):  # the caller's own bad value is still the caller's
        service.get_context(query="carrier API retries", token_budget=10)


def test_a_usable_token_budget_in_config_is_used_without_a_warning(project):
    import json as _json

    path = project / ".context" / "config.json"
    config = _json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    path.write_text(_json.dumps({**config, "token_budget": 1200}), encoding="utf-8")
    answer = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}).get_context(query="carrier API retries")
    assert answer["token_budget"] == 1200 and "warnings" not in answer
