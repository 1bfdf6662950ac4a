"""Calling tools through the SDK's in-process client and decoding the answers."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import Any

from mcp import Client

from context_keeper.server import build_server
from context_keeper.service import Service


@asynccontextmanager
async def connect(service: Service, mode: str):
    async with Client(build_server(service), mode=mode) as client:
        yield client


async def call(client: Client, tool: str, args: dict[str, Any] | None = None) -> tuple[bool, Any]:
    """(is_error, decoded answer) — the answer is the JSON object, or the error text."""
    result = await client.call_tool(tool, args or {})
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return True, text
    return False, json.loads(text)


async def ok(client: Client, tool: str, args: dict[str, Any] | None = None) -> Any:
    is_error, answer = await call(client, tool, args)
    assert not is_error, answer
    return answer


async def err(client: Client, tool: str, args: dict[str, Any] | None = None) -> str:
    is_error, answer = await call(client, tool, args)
    assert is_error, f"expected an error from {tool}, got {answer}"
    return answer
