"""examples/clients/ holds exactly what `context-keeper install --command-style console` writes."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest

from context_keeper import install
from tests.conftest import REPO

EXAMPLES = REPO / "examples" / "clients"


def render_examples() -> dict[str, str]:
    """File name -> content, with the console-script commands (on PATH after pip/pipx/uv install)."""
    with mock.patch.object(install.shutil, "which", lambda name: f"/usr/local/bin/{name}"):
        desired = [(e, m, install.hook_command(o, "console"), t) for e, m, o, t in install.CLAUDE_HOOKS]
        project = Path("/path/to/project")

        def servers(client: str, key: str = "mcpServers", user: bool = False) -> str:
            spec = install.client_server_spec(client, "console", project, user)
            return json.dumps({key: {install.SERVER_NAME: spec}}, indent=2) + "\n"

        return {
            "claude-code.settings.json": json.dumps(install.merge_claude_hooks({}, desired), indent=2) + "\n",
            "claude-code.mcp.json": servers("claude"),
            "cursor.mcp.json": servers("cursor"),
            "vscode.mcp.json": servers("vscode", "servers"),
            "windsurf.mcp_config.json": servers("windsurf", user=True),
            "gemini.settings.json": servers("gemini", user=True),
            "codex.config.toml": install.codex_block(install.client_server_spec("codex", "console", project, True)),
        }


@pytest.mark.parametrize("name", sorted(render_examples()))
def test_example_matches_what_install_writes(name: str):
    assert (EXAMPLES / name).read_text(encoding="utf-8") == render_examples()[name]


if __name__ == "__main__":  # regenerate: python -m tests.test_install_examples
    for file_name, text in render_examples().items():
        (EXAMPLES / file_name).write_text(text, encoding="utf-8")
