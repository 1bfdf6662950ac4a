"""Any arguments, any tool: the server answers (no crash, no hang), and a rejected call leaves
every file byte-identical. Hypothesis drives the SDK's in-process client; the harness lives in
benchmarks/bench_reliability.py (the same code produces the README figures)."""

from __future__ import annotations

import pytest

from benchmarks.bench_reliability import fuzz_tools, new_project
from tests.conftest import snapshot_files
from tests.mcp_helpers import call, connect

pytestmark = pytest.mark.anyio

RECORD = {
    "summary": "Zone batches for stock take",
    "problem": "A full stop for stock take cost a day of shipping every year at every site.",
    "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs.",
}


def test_fuzzed_tool_calls_are_answered_and_rejections_change_nothing(tmp_path):
    result = fuzz_tools(new_project(tmp_path), examples=400, seed=2)
    assert result["calls"] == 400
    assert result["crashes"] == 0
    assert result["rejected_with_changes"] == 0
    assert result["rejections"] > 0 and result["accepted_writes"] > 0


REJECTED = [
    ("record_decision", {**RECORD, "summary": "x"}),
    ("record_decision", {**RECORD, "supersedes": ["dec-999"]}),
    ("record_decision", {**RECORD, "supersedes": ["con-001"]}),
    ("record_decision", {**RECORD, "related_to": ["not an id"]}),
    ("record_decision", {**RECORD, "tags": "storage"}),
    ("record_decision", {**RECORD, "alternatives": "zone picking"}),
    ("record_decision", {**RECORD, "origin": "robot"}),
    ("record_decision", {**RECORD, "why_chosen": "AKIA" + "IOSFODNN7EXAMPLE is the key we use here, for now."}),
    ("record_decision", {**RECORD, "problem": "x" * 20_001}),
    ("record_decision", {**RECORD, "tags": ["t"] * 101}),
    ("record_pipeline", {"name": "Stock take", "purpose": RECORD["problem"], "steps": []}),
    ("record_pipeline", {"name": "Stock take", "purpose": RECORD["problem"], "steps": "count, reconcile"}),
    ("record_pipeline", {"name": "Stock take", "purpose": RECORD["problem"], "steps": [{"output": "x"}]}),
    ("record_constraint", {"rule": "Count first", "reason": RECORD["problem"], "hardness": "very"}),
    ("record_entry", {"kind": "constraint", "rule": "Count first", "reason": RECORD["problem"], "summary": "x"}),
    ("update_entry", {"id": "dec-001", "updates": {}}),
    ("update_entry", {"id": "dec-001", "updates": {"id": "dec-002"}}),
    ("update_entry", {"id": "dec-001", "updates": {"created_at": "2020-01-01"}}),
    ("update_entry", {"id": "dec-001", "updates": {"summary": 5}}),
    ("update_entry", {"id": "dec-001", "updates": {"superseded_by": "dec-999"}}),
    ("update_entry", {"id": "dec-001", "updates": {"problem": "too short"}}),
    ("update_entry", {"id": "dec-999", "updates": {"tags": ["x"]}}),
    ("update_entry", {"id": "dec-001", "updates": {"nonsense_field": "x"}}),
    ("deprecate_entry", {"id": "dec-001", "reason": ""}),
    ("deprecate_entry", {"id": "dec-001", "reason": "merged", "merge_into": "con-001"}),
    ("deprecate_entry", {"id": "dec-001", "reason": "merged", "merge_into": "dec-001"}),
    ("deprecate_entry", {"id": "dec-001", "reason": "replaced", "superseded_by": "dec-999"}),
    ("get_context", {"since": "yesterday"}),
    ("get_context", {"token_budget": -1}),
    ("get_context", {"types": ["secrets"]}),
    ("query_entries", {"limit": 0}),
    ("get_project_summary", {"token_budget": 5}),
    ("prune_stale", {"days": -1}),
    ("export_markdown", {"path": "../outside.md"}),
    ("no_such_tool", {}),
]


@pytest.mark.parametrize("tool,args", REJECTED, ids=[f"{t}-{i}" for i, (t, _) in enumerate(REJECTED)])
async def test_a_rejected_call_says_what_to_fix_and_changes_nothing(service, project, tool, args):
    before = snapshot_files(project)
    async with connect(service, "legacy") as client:
        is_error, text = await call(client, tool, args)
    assert is_error
    assert text.strip() != f"Error executing tool {tool}"  # a reason, not a withheld crash
    assert len(text) > 25
    assert snapshot_files(project) == before
