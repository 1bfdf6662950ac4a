"""Adapter defects found in round 16's hunt, each test failing before its fix."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import REPO

pytestmark = pytest.mark.anyio


def _params(project: Path) -> StdioServerParameters:
    env = {**os.environ, "CONTEXT_KEEPER_PROJECT": str(project), "PYTHONIOENCODING": "utf-8"}
    return StdioServerParameters(command=sys.executable, args=["-m", "context_keeper"], env=env, cwd=str(REPO))


async def test_a_project_folder_whose_name_is_not_utf8_does_not_kill_the_server(tmp_path: Path, project: Path):
    # The path reaches Python as surrogate escapes; an answer naming it made the SDK's writer
    # raise, and the server died with no reply to this call or any later one.
    latin1 = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"caf\xe9")))
    shutil.copytree(project, latin1)
    (latin1 / ".context" / "pipelines.json").write_text("[ broken", encoding="utf-8")  # a warning names the path
    # A dead server never answers: the call would wait for ever, so a time limit makes it a failure.
    with anyio.fail_after(60):
        await _latin1_calls(latin1)


async def _latin1_calls(latin1: Path) -> None:
    async with Client(_params(latin1)) as client:
        exported = await client.call_tool("export_markdown", {})
        assert not exported.is_error
        assert json.loads(exported.content[0].text)["path"].endswith("caf\\xe9/DECISIONS.md")
        answer = await client.call_tool("get_context", {"query": "label printing"})
        assert not answer.is_error and json.loads(answer.content[0].text)["warnings"]
        refused = await client.call_tool("record_constraint", {
            "rule": "Never print labels outside the project", "scope": "/elsewhere/x.py",
            "reason": "A scope outside the project root names no file of it, and the message names the root."})
        assert refused.is_error
        summary = await client.call_tool("get_project_summary", {})
        assert "Project memory for" in json.loads(summary.content[0].text)["summary"]


async def test_a_lone_surrogate_in_config_does_not_kill_the_server(project: Path):
    path = project / ".context" / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**config, "project_name": "packwise \ud83d"}), encoding="utf-8")  # "\\ud83d" escape
    with anyio.fail_after(60):
        await _surrogate_calls(project)


async def _surrogate_calls(project: Path) -> None:
    async with Client(_params(project)) as client:
        summary = await client.call_tool("get_project_summary", {})
        assert json.loads(summary.content[0].text)["summary"].startswith("Project memory for packwise \ufffd")
        again = await client.call_tool("get_context", {"query": "label printing"})
        assert not again.is_error


def test_sendable_keeps_text_and_shows_what_utf8_cannot_carry():
    from context_keeper.server import sendable

    assert sendable("café") == "café"
    assert sendable(os.fsdecode(b"caf\xe9/x")) == "caf\\xe9/x"
    assert sendable("a\ud83db") == "a\ufffdb"


# ------------------------------------------------------------------ in-process: what the tools accept and say

LONG = "q" * 100_000


@pytest.mark.parametrize(("tool", "args"), [
    ("get_context", {"id": "d" * 100_000}),
    ("get_context", {"query": "labels", "since": "9" * 100_000}),
    ("get_context", {"query": "labels", "types": [LONG]}),
    ("query_entries", {"before": "9" * 100_000}),
    ("update_entry", {"id": "dec-001", "updates": {LONG: 1}}),
])
async def test_an_error_does_not_echo_a_huge_argument_back(service, tool, args):
    from tests.mcp_helpers import connect, err

    async with connect(service, "legacy") as client:
        message = await err(client, tool, args)
    assert len(message) < 600, len(message)


async def test_deprecating_with_a_successor_needs_no_reason_of_its_own(service):
    from tests.mcp_helpers import connect, ok

    async with connect(service, "legacy") as client:
        answer = await ok(client, "deprecate_entry", {"id": "dec-003", "superseded_by": "dec-004"})
    assert answer["success"] is True
    assert service.get_context(id="dec-003")["entry"]["deprecated_reason"] == "superseded by dec-004"


@pytest.mark.parametrize("tool", ["record_decision", "record_entry"])
async def test_why_chosen_and_rationale_with_different_texts_are_refused(service, tool):
    from tests.mcp_helpers import connect, err, ok

    args = {"summary": "Keep label templates in the repository",
            "problem": "Label templates edited on the printers drifted from what the code expected at pack time.",
            "why_chosen": "Versioned templates can be reviewed and rolled back with the code that fills them in.",
            "rationale": "Templates on the printers were overwritten by a firmware update and lost."}
    if tool == "record_entry":
        args["kind"] = "decision"
    async with connect(service, "legacy") as client:
        assert "only one would be kept" in await err(client, tool, args)
        # A blank why_chosen beside the old name is the old name's text, not "0 characters".
        answer = await ok(client, tool, {**args, "why_chosen": "   "})
    assert service.get_context(id=answer["id"])["entry"]["why_chosen"].startswith("Templates on the printers")


async def test_record_decision_takes_the_alternatives_update_entry_takes(service):
    from tests.mcp_helpers import connect, ok

    alternative = {"option": "templates stored on the printers", "reason_rejected": None, "adr": 12}
    async with connect(service, "legacy") as client:
        answer = await ok(client, "record_decision", {
            "summary": "Keep label templates in the repository",
            "problem": "Label templates edited on the printers drifted from what the code expected at pack time.",
            "why_chosen": "Versioned templates can be reviewed and rolled back with the code that fills them in.",
            "alternatives": [alternative]})
        await ok(client, "update_entry", {"id": answer["id"], "updates": {"alternatives": [alternative]}})
    stored = service.get_context(id=answer["id"])["entry"]["alternatives"]
    assert stored == [{"option": "templates stored on the printers", "reason_rejected": "", "adr": 12}]
