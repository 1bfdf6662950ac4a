"""Calling tools through the SDK's in-process client and decoding the answers."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import Any

from mcp import Client

from context_keeper.server import build_server
from context_keeper.service import Service


class _ConnectedService:
    """Stands for the Service of the client connected now: the server's tools look every method
    up on it when they are called, and it hands the lookup to that Service."""

    def __init__(self) -> None:
        self.target: Service | None = None

    def __getattr__(self, name: str) -> Any:
        if self.target is None:
            raise RuntimeError("no client is connected")
        return getattr(self.target, name)


_CONNECTED = _ConnectedService()
_SERVER: list[Any] = []  # built once: build_server is ~0.1 s of pydantic schema work, ~200 connects


@asynccontextmanager
async def connect(service: Service, mode: str):
    """A client of build_server(service). The server is built once and answers for the service
    of whichever client is connected (each connect is a new session of its own, as a new
    server's would be); connections for two services at once are refused, not mixed up."""
    if not _SERVER:
        _SERVER.append(build_server(_CONNECTED))
    if _CONNECTED.target is not None and _CONNECTED.target is not service:
        raise RuntimeError("connect() for a second service while the first is still connected")
    previous, _CONNECTED.target = _CONNECTED.target, service
    try:
        async with Client(_SERVER[0], mode=mode) as client:
            yield client
    finally:
        _CONNECTED.target = previous


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
