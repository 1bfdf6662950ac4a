"""Shared fixtures: a copy of the example project, a Service bound to it, MCP clients."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from context_keeper.service import Service

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "demo-project"
MODES = ("legacy", "auto")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A private copy of the bundled example project."""
    target = tmp_path / "packwise"
    shutil.copytree(EXAMPLE, target)
    return target


@pytest.fixture
def empty_project(tmp_path: Path) -> Path:
    root = tmp_path / "fresh"
    root.mkdir()
    Service(env={}).init_project(str(root))
    return root


@pytest.fixture
def service(project: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project))


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def snapshot_files(root: Path) -> dict[str, bytes]:
    """Bytes of every store file, for "nothing changed on disk" assertions."""
    context = root / ".context"
    return {p.name: p.read_bytes() for p in sorted(context.glob("*.json"))}


def break_constraints_after_a_write(project: Path, scope: str) -> None:
    """Record con-017 through the tools (which leaves a last good copy of constraints.json), then
    break the file as a hand edit would: a colon dropped."""
    Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}).record("constraint", {
        "rule": "Label jobs carry the station id in the ZPL header.",
        "reason": "Reprints from the wrong station were impossible to trace back without it.",
        "scope": scope})
    path = project / ".context" / "constraints.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"scope":', '"scope"', 1), encoding="utf-8")
