"""Pins the public tool surface: names, parameters, sizes. A change here is an API change."""

from __future__ import annotations

import json

import pytest

from context_keeper.server import INSTRUCTIONS
from tests.conftest import MODES
from tests.mcp_helpers import connect

pytestmark = pytest.mark.anyio

COMMON = {"project_dir"}
EXPECTED = {
    "record_decision": {"summary", "problem", "why_chosen", "what_we_tried", "tradeoffs", "alternatives",
                        "constraints_created", "supersedes", "related_to", "tags", "retrieval_hints", "origin",
                        "rationale", "allow_secrets"},
    "record_pipeline": {"name", "purpose", "steps", "when_to_invoke", "constraints", "related_to", "tags",
                        "retrieval_hints", "origin", "allow_secrets"},
    "record_constraint": {"rule", "reason", "triggering_incident", "enforced_by", "scope", "hardness", "related_to",
                          "tags", "retrieval_hints", "origin", "allow_secrets"},
    "record_entry": {"kind", "summary", "problem", "why_chosen", "what_we_tried", "tradeoffs", "alternatives",
                     "constraints_created", "supersedes", "name", "purpose", "steps", "when_to_invoke", "constraints",
                     "rule", "reason", "triggering_incident", "enforced_by", "scope", "hardness", "related_to", "tags",
                     "retrieval_hints", "origin", "rationale", "allow_secrets"},
    "get_context": {"id", "query", "tags", "scope", "types", "since", "before", "token_budget", "include_related",
                    "min_relevance", "include_deprecated"},
    "query_entries": {"types", "kind", "text", "status", "origin", "hardness", "tags_any", "tags_all", "scope",
                      "supersedes", "superseded_by", "since", "before", "limit", "token_budget"},
    "get_project_summary": {"token_budget"},
    "update_entry": {"id", "updates", "allow_secrets"},
    "deprecate_entry": {"id", "reason", "superseded_by", "merge_into", "allow_secrets"},
    "prune_stale": {"days"},
    "verify_quality": {"min_reason_chars"},
    "get_compaction_report": set(),
    "export_markdown": {"path"},
    "reload_constraints": set(),
}
REQUIRED = {"record_decision": ["summary"], "record_pipeline": ["name"], "record_constraint": ["rule"],
            "record_entry": ["kind"], "update_entry": ["id", "updates"], "deprecate_entry": ["id"]}
MAX_TOOLS_LIST_CHARS = 11_800  # the old server's tools/list size: a per-session token cost


@pytest.mark.parametrize("mode", MODES)
async def test_every_tool_keeps_its_name_and_parameters(service, mode):
    async with connect(service, mode) as client:
        tools = (await client.list_tools()).tools
    found = {t.name: set(t.input_schema.get("properties", {})) for t in tools}
    assert set(found) == set(EXPECTED)
    for name, params in EXPECTED.items():
        assert found[name] == params | COMMON, name
    for tool in tools:
        assert sorted(tool.input_schema.get("required", [])) == sorted(REQUIRED.get(tool.name, [])), tool.name
        assert tool.description and len(tool.description) < 200


@pytest.mark.parametrize("mode", MODES)
async def test_tools_list_stays_within_the_old_size(service, mode):
    async with connect(service, mode) as client:
        listed = await client.list_tools()
    wire = json.dumps(listed.model_dump(by_alias=True, exclude_none=True, mode="json"), separators=(",", ":"))
    assert len(wire) <= MAX_TOOLS_LIST_CHARS


def test_instructions_are_under_two_kilobytes_and_name_the_key_tools():
    assert len(INSTRUCTIONS.encode("utf-8")) < 2048
    for tool in ("get_project_summary", "get_context", "record_decision", "record_constraint", "no_confident_match"):
        assert tool in INSTRUCTIONS


@pytest.mark.parametrize("mode", MODES)
async def test_read_tools_are_annotated_read_only(service, mode):
    async with connect(service, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("get_context", "query_entries", "get_project_summary", "reload_constraints", "verify_quality"):
        assert tools[name].annotations.read_only_hint is True
    for name in ("record_decision", "update_entry", "deprecate_entry"):
        assert not tools[name].annotations.read_only_hint
    # A client may let additive calls through unasked; one that replaces stored text must say so.
    for name in ("record_decision", "record_pipeline", "record_constraint", "record_entry"):
        assert tools[name].annotations.destructive_hint is False
    for name in ("update_entry", "deprecate_entry", "export_markdown"):
        assert tools[name].annotations.destructive_hint is True


def test_only_the_server_adapter_imports_the_mcp_sdk():
    # DESIGN.md: the core never imports mcp; the protocol lives in context_keeper/server.py.
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "context_keeper"
    offenders = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "mcp" or n.startswith("mcp.") for n in names) and path.name != "server.py":
                offenders.append(str(path.relative_to(package)))
    assert offenders == []
