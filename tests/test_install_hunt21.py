"""install / uninstall / doctor defects from the round-21 bug hunt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper import install
from context_keeper.errors import StoreError
from tests.test_install import _cli

# ------------------------------------------------------------------ JSONC files

URL_COMMENTS = "".join(f"    //   https://mcp{i}.example.com/sse - too slow\n" for i in range(200))


def test_a_long_run_of_comments_holding_urls_is_refused_as_jsonc(project: Path, tmp_path: Path):
    # Whether the comma before them is a trailing one was asked by a lookahead that, finding
    # another server after them, backtracked through every way of splitting the comments at "//".
    text = '{\n  "servers": {\n    "a": {"command": "a"},\n' + URL_COMMENTS + '    "b": {"command": "b"}\n  }\n}\n'
    path = project / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    proc = _cli("install", "--client", "vscode", "--write", "--project", str(project), cwd=project,
                home=tmp_path / "home")
    assert proc.returncode == 5 and "comments or trailing commas" in proc.stderr
    assert path.read_text(encoding="utf-8") == text


def test_a_brace_in_a_comment_after_a_comma_keeps_the_comma(tmp_path: Path):
    text = ('{\n  "mcpServers": {\n    "github": {"type":"http","url":"https://x/"}, // see {docs}\n'
            '    "other": {"command": "o"}\n  }\n}\n')
    with pytest.raises(StoreError, match="comments or trailing commas"):
        install._load_json(tmp_path / "settings.json", text)


@pytest.mark.parametrize("text,expected", [
    ('{"a": "x // y", // c\n "b": [1, 2, /* } */ ],}', {"a": "x // y", "b": [1, 2]}),
    ('{"a": "\\" // still a string", "b": "/* too */"}', {"a": '" // still a string', "b": "/* too */"}),
    ('[1/**/2]', None),  # a comment parts what it stands between
    ('[1, /* open', None),  # an unclosed comment runs to the end, so the rest is not JSON
    ('{"a": "open, }', None),
])
def test_jsonc_comments_and_trailing_commas_are_taken_out(text: str, expected):
    try:
        got = json.loads(install.without_jsonc(text))
    except json.JSONDecodeError:
        got = None
    assert got == expected


@pytest.mark.parametrize("text", ['"' + '\\"' * 50_000, "/*" * 50_000, "//" * 50_000, "," * 50_000 + "]",
                                  '"a",' * 50_000])
def test_the_jsonc_scan_takes_every_character_once(text: str):
    # Each token is matched where the previous one ended, so the pieces are the text itself.
    pieces = [piece for piece, _ in install.jsonc_tokens(text)]
    assert "".join(pieces) == text


def test_uninstall_names_the_entry_to_remove_by_hand_in_a_jsonc_file(project: Path, tmp_path: Path):
    path = project / ".vscode" / "mcp.json"
    path.parent.mkdir()
    text = '{\n  // ours\n  "servers": {"context-keeper": {"command": "context-keeper", "args": ["serve"]}}\n}\n'
    path.write_text(text, encoding="utf-8")
    proc = _cli("uninstall", "--client", "vscode", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 5 and "--print" not in proc.stderr
    assert 'Remove servers.context-keeper from it by hand.' in proc.stderr
    assert path.read_text(encoding="utf-8") == text
