"""install / uninstall / doctor defects from the round-21 bug hunt."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from context_keeper import install
from context_keeper.errors import StoreError
from context_keeper.wiring_check import wiring_problems
from tests.test_install import _cli, needs_tomllib, tomllib

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


# ------------------------------------------------------------------ a script of the person's with our name


MENTIONS_US = "#!/usr/bin/env python3\n# my own start-up checks; runs before context-keeper's\nprint('hi')\n"


def test_a_script_of_ours_by_name_that_only_mentions_context_keeper_is_the_persons(project: Path, tmp_path: Path):
    script = project / ".claude" / "hooks" / "session_start.py"
    script.parent.mkdir(parents=True)
    script.write_text(MENTIONS_US, encoding="utf-8")
    mine = "python3 $CLAUDE_PROJECT_DIR/.claude/hooks/session_start.py"
    settings = project / ".claude" / "settings.json"
    settings.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": mine}]}]}}),
                        encoding="utf-8")
    assert not install.is_our_command(mine, project)
    proc = _cli("install", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    commands = [h["command"] for g in json.loads(settings.read_text(encoding="utf-8"))["hooks"]["SessionStart"]
                for h in g["hooks"]]
    assert commands[0] == mine and len(commands) == 2  # ours added beside it
    assert f"left `{mine}` (SessionStart)" in proc.stderr  # it mentions us: named, as one that may be ours
    proc = _cli("uninstall", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert [h["command"] for g in json.loads(settings.read_text(encoding="utf-8"))["hooks"]["SessionStart"]
            for h in g["hooks"]] == [mine]


def test_every_launcher_shipped_is_recognised_as_ours_where_it_is(tmp_path: Path):
    for launcher in sorted((install.PACKAGE_PARENT / "hooks").glob("*.py")):
        assert install.is_our_command(f'"/usr/bin/python3" "{launcher}"'), launcher
        copy = tmp_path / "elsewhere" / "hooks" / launcher.name  # a copy whose path does not name us
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(launcher.read_bytes().replace(b"\n", b"\r\n"))
        assert install.is_our_command(f"python3 {copy}"), copy


# ------------------------------------------------------------------ hostile client configs


DEEP = "[" * 100_000


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)  # reading one waits for a writer forever; /dev/zero never ends
    return path


def test_doctor_names_client_configs_it_cannot_read_as_json(project: Path):
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(DEEP, encoding="utf-8")
    _fifo(project / ".mcp.json")
    problems = dict(wiring_problems(project))
    assert "nested too deeply" in problems[".claude/settings.json"] and "fix it by hand" in problems[".claude/settings.json"]
    assert "is not a regular file (a FIFO)" in problems[".mcp.json"]


def test_install_refuses_a_config_nested_too_deeply_with_a_message(project: Path, tmp_path: Path):
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(DEEP, encoding="utf-8")
    proc = _cli("install", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 5 and "Traceback" not in proc.stderr
    assert f"{settings} does not parse" in proc.stderr and "nested too deeply" in proc.stderr
    assert settings.read_text(encoding="utf-8") == DEEP


def test_install_local_and_print_do_not_read_a_committed_config_that_is_no_file(project: Path, tmp_path: Path):
    _fifo(project / ".claude" / "settings.json")
    _fifo(project / ".mcp.json")
    proc = _cli("install", "--local", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert (project / ".claude" / "settings.local.json").is_file()
    proc = _cli("install", "--print", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    proc = _cli("install", "--force", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 5 and "is not a regular file (a FIFO)" in proc.stderr and "Traceback" not in proc.stderr


@needs_tomllib
def test_install_refuses_a_codex_config_nested_too_deeply_with_a_message(project: Path, tmp_path: Path):
    path = tmp_path / "home" / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("a = " + DEEP, encoding="utf-8")
    proc = _cli("install", "--client", "codex", "--write", "--project", str(project), cwd=project,
                home=tmp_path / "home")
    assert proc.returncode == 5 and "Traceback" not in proc.stderr
    assert "does not parse as TOML (nested too deeply)" in proc.stderr


# ------------------------------------------------------------------ --project naming a subdirectory


def test_install_and_uninstall_with_a_subdirectory_act_on_the_project_it_is_in(project: Path, tmp_path: Path):
    sub = project / "src" / "deep"
    sub.mkdir(parents=True)
    proc = _cli("install", "--project", str(sub), cwd=tmp_path, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert (project / ".claude" / "settings.json").is_file() and (project / ".mcp.json").is_file()
    assert not (sub / ".claude").exists() and not (sub / ".mcp.json").exists()
    assert f"{sub} is inside the project {project}" in proc.stderr
    proc = _cli("uninstall", "--project", str(sub), cwd=tmp_path, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert not (project / ".mcp.json").exists()


# ------------------------------------------------------------------ hooks wired twice


@pytest.mark.parametrize("first,other", [("--local", ".claude/settings.local.json"), ("--user", "settings.json")])
def test_a_project_install_beside_local_or_user_hooks_says_each_would_run_twice(project: Path, tmp_path: Path,
                                                                                 first: str, other: str):
    home = tmp_path / "home"
    assert _cli("install", first, "--project", str(project), cwd=project, home=home).returncode == 0
    proc = _cli("install", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    wired = project / other if first == "--local" else home / ".claude" / other
    note = next(line for line in proc.stderr.splitlines() if str(wired) in line)
    assert "each would run twice" in note and f"uninstall {first}" in note


def test_doctor_reports_hooks_wired_in_both_project_files(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    assert _cli("install", "--project", str(project), cwd=project, home=home).returncode == 0
    assert not wiring_problems(project)
    assert _cli("install", "--local", "--project", str(project), cwd=project, home=home).returncode == 0
    problems = wiring_problems(project)
    assert [name for name, _ in problems] == [".claude/settings.local.json"]
    message = problems[0][1]
    assert "runs twice" in message and "SessionStart" in message and "uninstall --local" in message


# ------------------------------------------------------------------ uninstall leaves what was there before install


@pytest.mark.parametrize("client,name,text", [
    ("claude", ".claude/settings.json", '{"hooks": {}, "model": "x"}\n'),
    ("claude", ".claude/settings.json", '{"hooks": {"PreToolUse": []}, "model": "x"}\n'),
    ("claude", ".claude/settings.json", "{}\n"),
    ("vscode", ".vscode/mcp.json", '{\n\t"servers": {},\n\t"inputs": []\n}\n'),
    ("cursor", ".cursor/mcp.json", '{"mcpServers": {}}\n'),
])
def test_install_then_uninstall_gives_back_the_file_as_it_was(project: Path, tmp_path: Path, client, name, text):
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    home = tmp_path / "home"
    args = ("--client", client, "--project", str(project))
    assert _cli("install", *args, "--write", cwd=project, home=home).returncode == 0
    assert path.read_text(encoding="utf-8") != text
    proc = _cli("uninstall", *args, cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    assert path.is_file() and json.loads(path.read_text(encoding="utf-8")) == json.loads(text)


def test_a_file_install_created_is_still_deleted_by_uninstall(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    assert _cli("install", "--project", str(project), cwd=project, home=home).returncode == 0
    assert _cli("install", "--command-style", "module", "--project", str(project), cwd=project,
                home=home).returncode == 0  # a backup of install's own file
    assert _cli("uninstall", "--project", str(project), cwd=project, home=home).returncode == 0
    assert not (project / ".claude" / "settings.json").exists() and not (project / ".mcp.json").exists()


def test_uninstall_leaves_an_empty_section_it_never_wrote_to(project: Path, tmp_path: Path):
    path = project / ".mcp.json"
    path.write_text('{"mcpServers": {}}\n', encoding="utf-8")
    proc = _cli("uninstall", "--project", str(project), cwd=project, home=tmp_path / "home")
    assert proc.returncode == 0 and "nothing of ours to remove" in proc.stdout
    assert path.read_text(encoding="utf-8") == '{"mcpServers": {}}\n'


# ------------------------------------------------------------------ messages


@needs_tomllib
def test_codex_servers_in_an_inline_table_are_named_so_with_the_entry_to_add(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    text = 'mcp_servers = { other = { command = "o" } }\n'
    path.write_text(text, encoding="utf-8")
    proc = _cli("install", "--client", "codex", "--write", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 5 and "Traceback" not in proc.stderr
    assert "inline table" in proc.stderr and "defines mcp_servers.context-keeper" not in proc.stderr
    entry = next(line.strip() for line in proc.stderr.splitlines() if line.strip().startswith("context-keeper = {"))
    assert tomllib.loads(entry)["context-keeper"]["args"][-1] == "serve"
    assert path.read_text(encoding="utf-8") == text


def test_an_event_that_is_null_is_named_in_json_words():
    with pytest.raises(StoreError, match=r'"hooks.Stop" is null; Claude Code expects a list'):
        install.merge_claude_hooks({"hooks": {"Stop": None}}, [("Stop", None, "context-keeper-hook post-compact", 30)])


def test_the_init_hint_quotes_a_path_with_spaces(tmp_path: Path):
    bare = tmp_path / "my project"
    bare.mkdir()
    proc = _cli("install", "--project", str(bare), cwd=bare, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert f"run `context-keeper init {shlex.quote(str(bare))}`" in proc.stderr.replace('"', "'")


def test_the_portability_note_on_mcp_json_does_not_offer_local_hooks(project: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(install.shutil, "which", lambda *a, **k: None)  # neither program on PATH
    notes = install.portability_notes("claude", project, tmp_path / "home", user=False, style="auto")
    mcp = next(note for note in notes if ".mcp.json" in note)
    hooks = next(note for note in notes if "settings.json" in note)
    assert "--local" in hooks and "hooks" in hooks
    assert "hooks out of git" not in mcp and "claude mcp add -s local" in mcp


@pytest.mark.parametrize("first,then", [("--user", "--local"), ("--local", "--user")])
def test_local_and_user_hooks_wired_in_one_project_are_named_either_way(project: Path, tmp_path: Path, first, then):
    home = tmp_path / "home"
    assert _cli("install", first, "--project", str(project), cwd=project, home=home).returncode == 0
    proc = _cli("install", then, "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    other = home / ".claude" / "settings.json" if first == "--user" else project / ".claude" / "settings.local.json"
    note = next(line for line in proc.stderr.splitlines() if f"note: {other} wires" in line)
    assert "each would run twice" in note and "uninstall --local" in note
