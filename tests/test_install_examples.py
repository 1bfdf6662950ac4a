"""examples/clients/ holds exactly what `context-keeper install --command-style portable` writes (what
the default writes into a project's committed files when the console scripts are on PATH)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper import install
from tests.conftest import REPO

EXAMPLES = REPO / "examples" / "clients"


def render_examples() -> dict[str, str]:
    """File name -> content, with the console scripts named by PATH (as pip/pipx/uv install them)."""
    desired = [(e, m, install.hook_command(o, "portable"), t) for e, m, o, t in install.CLAUDE_HOOKS]
    project = Path("/path/to/project")

    def servers(client: str, key: str = "mcpServers", user: bool = False) -> str:
        spec = install.client_server_spec(client, "portable", project, user)
        return json.dumps({key: {install.SERVER_NAME: spec}}, indent=2) + "\n"

    return {
        "claude-code.settings.json": json.dumps(install.merge_claude_hooks({}, desired), indent=2) + "\n",
        "claude-code.mcp.json": servers("claude"),
        "cursor.mcp.json": servers("cursor"),
        "vscode.mcp.json": servers("vscode", "servers"),
        "windsurf.mcp_config.json": servers("windsurf", user=True),
        "gemini.settings.json": servers("gemini", user=True),
        "codex.config.toml": install.codex_block(install.client_server_spec("codex", "portable", project, True)),
    }


@pytest.mark.parametrize("name", sorted(render_examples()))
def test_example_matches_what_install_writes(name: str):
    assert (EXAMPLES / name).read_text(encoding="utf-8") == render_examples()[name]


if __name__ == "__main__":  # regenerate: python -m tests.test_install_examples
    for file_name, text in render_examples().items():
        (EXAMPLES / file_name).write_text(text, encoding="utf-8")
