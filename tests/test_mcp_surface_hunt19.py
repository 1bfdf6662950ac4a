"""Defects found in round 19's hunt of the MCP surface, each test failing before its fix."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from context_keeper.cli import main as cli_main
from context_keeper.project import resolve_project
from context_keeper.retrieval import GUIDANCE_NO_WORDS
from context_keeper.service import Service
from context_keeper.stdin_lines import replace_lone_surrogate_escapes
from tests.conftest import MODES, REPO
from tests.mcp_helpers import call, connect, err, ok

pytestmark = pytest.mark.anyio

DECISION = {
    "summary": "Zone batches for stock take",
    "problem": "A full stop for stock take cost a day of shipping every year at every site.",
    "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs.",
}


def _initialised(tmp_path: Path) -> Path:
    """A project outside any repository, with .context/ at its root and a src/pkg below it."""
    root = tmp_path / "shop"
    (root / "src" / "pkg").mkdir(parents=True)
    Service(env={}).init_project(str(root))
    return root


def _ids(path: Path) -> list[str]:
    return [entry["id"] for entry in json.loads(path.read_text(encoding="utf-8"))]


# ------------------------------------------------------------------ 1. project_dir naming a subdirectory

async def test_a_project_dir_below_the_store_writes_to_the_store_not_a_second_one(tmp_path: Path):
    root = _initialised(tmp_path)
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root), hook_cache_delay=None)
    async with connect(service, "legacy") as client:
        recorded = await ok(client, "record_decision", {**DECISION, "project_dir": str(root / "src" / "pkg")})
        answer = await ok(client, "get_context", {"query": "zone batches stock take"})
    # Before: src/pkg/.context/decisions.json held a second dec-001 that the project never saw.
    assert not (root / "src" / "pkg" / ".context").exists()
    assert _ids(root / ".context" / "decisions.json") == [recorded["id"]]
    assert [item["entry"]["id"] for item in answer["results"]] == [recorded["id"]]


def test_an_explicit_directory_resolves_as_the_working_directory_does(tmp_path: Path):
    root = _initialised(tmp_path)
    sub = root / "src" / "pkg"
    from_cwd = resolve_project(env={}, cwd=str(sub))
    assert resolve_project(str(sub), env={}) == from_cwd == root.resolve()
    assert resolve_project(None, env={"CONTEXT_KEEPER_PROJECT": str(sub)}, cwd=str(tmp_path)) == root.resolve()


def test_cli_project_flag_naming_a_subdirectory_reads_the_project(tmp_path: Path, capsys):
    root = _initialised(tmp_path)
    recorded = Service(env={}, hook_cache_delay=None).record("decision", DECISION, project_dir=str(root))
    assert cli_main(["get", "zone batches stock take", "--project", str(root / "src" / "pkg"), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [item["entry"]["id"] for item in answer["results"]] == [recorded["id"]]


def test_a_directory_without_any_store_above_is_still_a_new_project(tmp_path: Path):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    Service(env={}, hook_cache_delay=None).record("decision", DECISION, project_dir=str(fresh))
    assert _ids(fresh / ".context" / "decisions.json") == ["dec-001"]


def test_a_subdirectory_initialised_on_purpose_is_a_project_of_its_own(tmp_path: Path):
    root = _initialised(tmp_path)
    nested = root / "src" / "pkg"
    service = Service(env={}, hook_cache_delay=None)
    answer = service.init_project(str(nested))
    assert answer["created"] and "second, separate project memory" in answer["warnings"][0]
    service.record("decision", DECISION, project_dir=str(nested))
    assert _ids(nested / ".context" / "decisions.json") == ["dec-001"]
    assert _ids(root / ".context" / "decisions.json") == []


# ------------------------------------------------------------------ 2. a lone surrogate escape on stdin

@pytest.mark.parametrize("line,repaired", [
    ('"zone \\ud83d"', '"zone \\ufffd"'),                     # a high half at the end
    ('"\\uDC00 x"', '"\\ufffd x"'),                           # a low half alone, upper-case hex
    ('"\\ud83d\\ude00"', '"\\ud83d\\ude00"'),                 # a valid pair stays
    ('"\\ud83d\\ud83d\\ude00"', '"\\ufffd\\ud83d\\ude00"'),   # a high half before a pair
    ('"\\\\ud83d"', '"\\\\ud83d"'),                           # an escaped backslash, then text "ud83d"
    ('"\\\\\\ud83d"', '"\\\\\\ufffd"'),                       # an escaped backslash, then an escape
    ('"caf\\u00e9"', '"caf\\u00e9"'),                         # any other escape stays
])
def test_only_unpaired_surrogate_escapes_are_rewritten(line, repaired):
    assert replace_lone_surrogate_escapes(line) == repaired
    json.loads(repaired).encode("utf-8")  # what reaches the SDK is text UTF-8 can carry


def _reply(server: subprocess.Popen, timeout: float = 60) -> dict:
    # A dropped request is never answered, so a limit (far above any real reply) turns the hang into a failure.
    ready, _, _ = select.select([server.stdout], [], [], timeout)
    assert ready, "no reply from the server"
    return json.loads(server.stdout.readline())


def _send(server: subprocess.Popen, line: str) -> None:
    server.stdin.write(line.encode("utf-8") + b"\n")
    server.stdin.flush()


@pytest.mark.skipif(sys.platform == "win32", reason="select() on a pipe")
def test_a_request_with_a_lone_surrogate_escape_is_answered(tmp_path: Path):
    root = _initialised(tmp_path)
    env = {**os.environ, "CONTEXT_KEEPER_PROJECT": str(root)}
    server = subprocess.Popen([sys.executable, "-m", "context_keeper"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env, cwd=str(REPO))
    try:
        _send(server, '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
                      '"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}')
        assert _reply(server)["id"] == 1
        _send(server, '{"jsonrpc":"2.0","method":"notifications/initialized"}')
        # What Node's JSON.stringify writes for a summary cut in the middle of an emoji.
        arguments = json.dumps({**DECISION, "summary": "Zone batches \ud83d"})
        _send(server, '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"record_decision",'
                      f'"arguments":{arguments}}}}}')
        answer = _reply(server)
        assert answer["id"] == 2 and not answer["result"]["isError"]
        assert json.loads(answer["result"]["content"][0]["text"])["entry"]["summary"] == "Zone batches \ufffd"
        _send(server, '{"jsonrpc":"2.0","id":3,"method":"ping"}')
        assert _reply(server) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    finally:
        server.stdin.close()
        server.wait(60)


def test_children_of_the_server_do_not_read_its_stdin():
    # fd 0 points at the null device while serving (as the SDK's own claim does); the requests
    # are read through a private duplicate.
    code = ("import os\nfrom context_keeper.stdin_lines import claimed_stdin\n"
            "with claimed_stdin() as lines:\n    print(repr(os.read(0, 10)), repr(lines.readline()))\n")
    out = subprocess.run([sys.executable, "-c", code], input=b'"\\ud83d"\n', capture_output=True, cwd=str(REPO),
                         timeout=60, check=True).stdout.decode()
    assert out.strip() == "b'' '\"\\\\ufffd\"\\n'"


# ------------------------------------------------------------------ 3. a query with no searchable word

@pytest.mark.parametrize("asked", [{"query": "the"}, {"query": "?", "token_budget": 200000}])
async def test_a_wordless_query_does_not_claim_entries_did_not_fit(tmp_path: Path, asked):
    root = _initialised(tmp_path)
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root), hook_cache_delay=None)
    for n in range(3):
        service.record("decision", {**DECISION, "summary": f"Zone batches for stock take {n}"})
    async with connect(service, "legacy") as client:
        answer = await ok(client, "get_context", asked)
    assert answer["results"] == [] and answer["guidance"] == GUIDANCE_NO_WORDS
    # Before: "omitted": 3 and "3 more matching entries did not fit in token_budget 200000".
    assert "omitted" not in answer and "budget_note" not in answer


# ------------------------------------------------------------------ 4. an export path through a file

@pytest.mark.parametrize("path,file", [("afile/DECISIONS.md", "afile"), ("DECISIONS.md/inner.md", "DECISIONS.md"),
                                       ("afile/deeper/notes.md", "afile")])
async def test_an_export_through_a_file_names_the_file(tmp_path: Path, path, file):
    root = _initialised(tmp_path)
    (root / "afile").write_text("x", encoding="utf-8")
    (root / "DECISIONS.md").write_text("# Decisions\n", encoding="utf-8")
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root), hook_cache_delay=None)
    async with connect(service, "legacy") as client:
        message = await err(client, "export_markdown", {"path": path})
    assert f"{file!r} is a file, not a directory; choose another path" in message
    # Before: "the file system refused an operation ... The change may or may not have been saved".
    assert "file system refused" not in message and "may or may not" not in message


async def test_a_configured_export_path_through_a_file_warns_after_a_saved_write(tmp_path: Path):
    root = _initialised(tmp_path)
    (root / "afile").write_text("x", encoding="utf-8")
    config = root / ".context" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text(encoding="utf-8")),
                                  "markdown_export": {"enabled": True, "path": "afile/DECISIONS.md"}}), encoding="utf-8")
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root), hook_cache_delay=None)
    async with connect(service, "legacy") as client:
        recorded = await ok(client, "record_decision", DECISION)
    assert recorded["success"] and _ids(root / ".context" / "decisions.json") == [recorded["id"]]
    (warning,) = recorded["warnings"]
    assert warning.startswith("the change is saved, but the Markdown export afile/DECISIONS.md was not updated")
    assert "'afile' is a file, not a directory" in warning and "FileExistsError" not in warning


# ------------------------------------------------------------------ 5. JSON booleans for integer parameters

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tool,args,field", [
    ("query_entries", {"limit": True}, "limit"),
    ("query_entries", {"token_budget": True}, "token_budget"),
    ("get_context", {"query": "zone", "token_budget": True}, "token_budget"),
    ("get_project_summary", {"token_budget": True}, "token_budget"),
    ("prune_stale", {"days": True}, "days"),
    ("prune_stale", {"days": False}, "days"),
    ("verify_quality", {"min_reason_chars": False}, "min_reason_chars"),
])
async def test_a_boolean_is_refused_where_an_integer_is_asked(tmp_path: Path, mode, tool, args, field):
    root = _initialised(tmp_path)
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root), hook_cache_delay=None)
    service.record("decision", DECISION)
    async with connect(service, mode) as client:
        message = await err(client, tool, args)
    # Before: limit true listed 1 entry; token_budget true was "at least 50 tokens (got 1)".
    shown = json.dumps(args[field])
    assert f"{field}: got {shown}; allowed: an integer from " in message


async def test_integer_parameters_keep_their_bounds_and_accept_numeric_strings(tmp_path: Path):
    root = _initialised(tmp_path)
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root), hook_cache_delay=None)
    service.record("decision", DECISION)
    async with connect(service, "legacy") as client:
        schemas = {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}
        assert schemas["query_entries"]["limit"]["minimum"] == 1 and schemas["query_entries"]["limit"]["maximum"] == 1000
        assert "an integer from 1 to 1000" in await err(client, "query_entries", {"limit": 0})
        assert (await ok(client, "query_entries", {"limit": "20"}))["results"]
        is_error, _ = await call(client, "prune_stale", {"days": "3"})
        assert not is_error


def test_the_server_still_serves_when_the_sdk_hides_its_low_level_server(monkeypatch):
    """``serve_stdio`` reaches into a private SDK attribute for the stdin repair; without it
    the server must fall back to the SDK's own stdio loop, not fail to start."""
    import anyio

    from context_keeper import server as server_module

    served = []

    class Bare:
        async def run_stdio_async(self):
            served.append("sdk loop")

    anyio.run(server_module.serve_stdio, Bare())
    assert served == ["sdk loop"]
