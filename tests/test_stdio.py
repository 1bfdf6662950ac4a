"""The real server as a subprocess over stdio: launchers, handshake, a write and a read."""

from __future__ import annotations

import json
import os
import sys

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import REPO

pytestmark = pytest.mark.anyio


def _params(project, *args: str) -> StdioServerParameters:
    env = {**os.environ, "CONTEXT_KEEPER_PROJECT": str(project), "PYTHONIOENCODING": "utf-8"}
    return StdioServerParameters(command=sys.executable, args=list(args), env=env, cwd=str(REPO))


@pytest.mark.parametrize("launcher", [("-m", "context_keeper"), ("server.py",)], ids=["module", "server.py"])
async def test_stdio_server_records_and_retrieves(project, launcher):
    async with Client(_params(project, *launcher)) as client:
        tools = await client.list_tools()
        assert len(tools.tools) == 14
        recorded = await client.call_tool("record_constraint", {
            "rule": "Label PDFs are rendered at 203 dpi only",
            "reason": "The Zebra printers at every site are 203 dpi; 300 dpi labels were scaled and unreadable.",
            "scope": "src/packwise/labels/",
        })
        assert not recorded.is_error, recorded.content[0].text
        new_id = json.loads(recorded.content[0].text)["id"]
        # The question names the entry's topic: this tests the round trip through the process,
        # not ranking (a question sharing only "label" with it is a weak match, which the links
        # of confident matches may crowd out of a full answer).
        found = await client.call_tool("get_context", {"query": "what dpi do we render label PDFs at?"})
        answer = json.loads(found.content[0].text)
        assert new_id in [r["entry"]["id"] for r in answer["results"]]
        failed = await client.call_tool("get_context", {"id": "con-999"})
        assert failed.is_error
    stored = json.loads((project / ".context" / "constraints.json").read_text(encoding="utf-8"))
    assert any(c["id"] == new_id for c in stored)


async def test_stdio_server_speaks_the_handshake_era_too(project):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    async with stdio_client(_params(project, "-m", "context_keeper")) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "context-keeper"
            assert "get_project_summary" in (init.instructions or "")
            result = await session.call_tool("get_project_summary", {"token_budget": 500})
            assert "Project memory for packwise" in json.loads(result.content[0].text)["summary"]
