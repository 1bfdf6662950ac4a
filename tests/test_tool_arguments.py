"""The tool surface takes exactly the parameters its input schemas declare: a misspelled or
foreign argument is refused with a message naming it and the valid ones, and nothing is
written; every parameter an established client sends is still accepted."""

from __future__ import annotations

import json

import pytest

from context_keeper.server import build_server
from tests.conftest import MODES, read_json, snapshot_files
from tests.mcp_helpers import connect, err, ok
from tests.test_contract import COMMON, EXPECTED

pytestmark = pytest.mark.anyio

DECISION = {
    "summary": "Print a packing slip with every split shipment",
    "problem": "Customers who received half an order called support because nothing said the rest was coming.",
    "why_chosen": "A slip listing what is still to come answers the question in the box, before anyone has to call.",
}

UNKNOWN_ARGUMENTS = [
    # (tool, arguments, the unknown name, a suggestion the message should make or None)
    ("record_decision", {**DECISION, "supercedes": ["dec-003"]}, "supercedes", "'supersedes'"),
    ("record_decision", {**DECISION, "foo": "bar"}, "foo", None),
    ("deprecate_entry", {"id": "dec-010", "reason": "typo test entry", "supersede_by": "dec-009"}, "supersede_by",
     "'superseded_by'"),
    ("query_entries", {"tags": ["webhooks"]}, "tags", "'tags_any' or 'tags_all'"),
    ("query_entries", {"query": "webhook"}, "query", None),
    ("get_context", {"query": "webhook retries", "kind": "constraint"}, "kind", None),
    ("get_context", {"query": "webhook retries", "limit": 1}, "limit", None),
    ("update_entry", {"id": "dec-001", "update": {"tags": ["x"]}, "updates": {"tags": ["y"]}}, "update", "'updates'"),
    ("reload_constraints", {"scope": "src/"}, "scope", None),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("tool", "args", "unknown", "suggestion"), UNKNOWN_ARGUMENTS,
                         ids=[f"{t}-{u}" for t, _, u, _ in UNKNOWN_ARGUMENTS])
async def test_an_unknown_argument_is_refused_naming_it_and_the_valid_ones(service, project, mode, tool, args,
                                                                          unknown, suggestion):
    before = snapshot_files(project)
    async with connect(service, mode) as client:
        text = await err(client, tool, args)
    assert f"unknown parameter {unknown!r}" in text
    assert "Valid parameters: " in text and "project_dir" in text
    for valid in EXPECTED[tool]:
        assert valid in text.split("Valid parameters: ", 1)[1]
    if suggestion:
        assert f"did you mean {suggestion}?" in text
    assert snapshot_files(project) == before


async def test_several_unknown_arguments_are_all_named(service):
    async with connect(service, "legacy") as client:
        text = await err(client, "get_context", {"query": "carrier quotes", "kind": "constraint", "limit": 1})
    assert "unknown parameters 'kind', 'limit'" in text


async def test_record_entry_takes_the_legacy_rationale_for_a_decision_only(service, project):
    without_why = {k: v for k, v in DECISION.items() if k != "why_chosen"}
    async with connect(service, "legacy") as client:
        recorded = await ok(client, "record_entry", {"kind": "decision", **without_why, "rationale": DECISION["why_chosen"]})
        foreign = await err(client, "record_entry", {"kind": "constraint", "rule": "Slips list every missing item",
                                                     "reason": DECISION["problem"], "rationale": DECISION["why_chosen"]})
    assert recorded["entry"]["why_chosen"] == DECISION["why_chosen"]
    stored = {e["id"]: e for e in read_json(project / ".context" / "decisions.json")}[recorded["id"]]
    assert stored["why_chosen"] == DECISION["why_chosen"] and "rationale" not in stored
    assert "rationale" in foreign and "constraint" in foreign


def test_every_established_parameter_is_still_declared_so_it_is_accepted(service):
    """The refusal reads the schemas, so the pinned parameter lists are what stays accepted."""
    tools = {t.name: set(t.parameters.get("properties", {})) for t in build_server(service)._tool_manager.list_tools()}
    for name, params in EXPECTED.items():
        assert params | COMMON <= tools[name], name


@pytest.mark.parametrize("mode", MODES)
async def test_calls_with_only_known_arguments_still_work(service, project, mode):
    async with connect(service, mode) as client:
        await ok(client, "get_context", {"query": "carrier quotes", "tags": ["carriers"], "types": ["decisions"],
                                         "include_related": False, "project_dir": str(project)})
        await ok(client, "query_entries", {"tags_any": ["carriers"], "kind": "decision", "limit": 3})
        await ok(client, "record_decision", {**DECISION, "rationale": "", "allow_secrets": False})


@pytest.mark.parametrize("mode", MODES)
async def test_deprecate_entry_follows_its_own_secret_advice_with_allow_secrets(service, project, mode):
    """The credential refusal says "repeat the call with allow_secrets=true": on deprecate_entry
    too, doing so must work rather than be refused (or, before, silently dropped)."""
    reason = "rotated key sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    before = snapshot_files(project)
    async with connect(service, mode) as client:
        refused = await err(client, "deprecate_entry", {"id": "dec-001", "reason": reason})
        assert "allow_secrets=true" in refused and snapshot_files(project) == before
        answer = await ok(client, "deprecate_entry", {"id": "dec-001", "reason": reason, "allow_secrets": True})
    assert answer["status"] == "deprecated"
    stored = {e["id"]: e for e in read_json(project / ".context" / "decisions.json")}["dec-001"]
    assert stored["deprecated_reason"] == reason


CRASHES = [
    # (tool, arguments, service method, exception, words the answer must contain)
    ("update_entry", {"id": "dec-001", "updates": {"tags": ["x"]}}, "update_entry",
     ValueError("put() cannot change an entry's id"),
     ["update_entry failed", "ValueError: put() cannot change an entry's id", "bug in context-keeper",
      "may or may not have been saved"]),
    ("get_context", {"query": "carrier quotes"}, "get_context", TypeError("unhashable type: 'list'"),
     ["get_context failed", "TypeError: unhashable type: 'list'", "nothing in the store was changed"]),
    ("deprecate_entry", {"id": "dec-001", "reason": "no longer true"}, "deprecate_entry",
     PermissionError(13, "Permission denied", ".context/decisions.json"),
     ["deprecate_entry failed", "file system refused", "Permission denied", "writable"]),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("tool", "args", "method", "exc", "words"), CRASHES, ids=[c[0] for c in CRASHES])
async def test_an_unexpected_exception_is_answered_with_what_failed(service, monkeypatch, caplog, mode, tool, args,
                                                                    method, exc, words):
    def crash(*_args, **_kwargs):
        raise exc

    monkeypatch.setattr(service, method, crash)
    async with connect(service, mode) as client:
        text = await err(client, tool, args)
    assert text.strip() != f"Error executing tool {tool}"
    for word in words:
        assert word in text
    assert any(record.exc_info and record.exc_info[1] is exc for record in caplog.records)  # traceback logged


async def test_update_of_a_hand_written_spaced_id_works_through_the_tool(service, project):
    path = project / ".context" / "decisions.json"
    items = read_json(path)
    items.append({"id": "  dec-050 ", **DECISION})
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    async with connect(service, "legacy") as client:
        updated = await ok(client, "update_entry", {"id": "dec-050", "updates": {"tags": ["slips"]}})
        retired = await ok(client, "deprecate_entry", {"id": "dec-050", "reason": "slips are printed by the WMS now"})
    assert updated["entry"]["tags"] == ["slips"] and retired["status"] == "deprecated"
