"""Pasted-text defects found in round 18's hunt (line anchors, test ids, tracebacks, logs, linked
roots), each test failing before its fix."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from context_keeper import hookio
from context_keeper.hooks.user_prompt import _query_text
from context_keeper.search.tokenize import file_paths, terms
from context_keeper.service import Service

ROOT = Path(__file__).resolve().parents[1]


def _demo(tmp_path: Path) -> Path:
    target = tmp_path / "d"
    if not target.exists():
        shutil.copytree(ROOT / "examples" / "demo-project", target)
    return target


def _answer(tmp_path: Path, query: str, project: Path | None = None) -> dict:
    return Service(env={}, hook_cache_delay=None).get_context(
        query=query, project_dir=str(project or _demo(tmp_path)), include_related=False)


def _ids(answer: dict) -> list[str]:
    return [item["entry"]["id"] for item in answer["results"]]


def _prompt_hook(project: Path, prompt: str) -> str | None:
    data = {"session_id": "S1", "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    out = io.BytesIO()
    hookio.run("user-prompt-submit", io.BytesIO(json.dumps(data).encode("utf-8")), out,
               env={"CLAUDE_PROJECT_DIR": str(project)})
    return json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"] if out.getvalue() else None


# 1. A line anchor, a pytest node id or a code host link around a path is read as the path.

@pytest.mark.parametrize("pasted", [
    "src/packwise/api/healthcheck.py#L12",
    "src/packwise/api/healthcheck.py#L12-L20",
    "https://github.com/acme/packwise/blob/main/src/packwise/api/healthcheck.py#L12",
    "https://gitlab.com/acme/tools/packwise/-/blob/main/src/packwise/api/healthcheck.py",
])
def test_a_linked_line_of_an_unrecorded_file_abstains_as_the_bare_path_does(pasted, tmp_path):
    assert _answer(tmp_path, "src/packwise/api/healthcheck.py").get("no_confident_match")
    assert _answer(tmp_path, pasted).get("no_confident_match")


def test_a_line_anchor_adds_no_term():
    assert terms("src/packwise/api/healthcheck.py#L12") == terms("src/packwise/api/healthcheck.py")
    assert file_paths("see src/packwise/api/healthcheck.py#L12") == ("src/packwise/api/healthcheck.py",)


@pytest.mark.parametrize("pasted", [
    "src/packwise/api/test_healthcheck.py::test_ping",
    "FAILED src/packwise/api/test_healthcheck.py::test_ping",
])
def test_a_failed_test_id_in_an_unrecorded_file_is_no_confident_match(pasted, tmp_path):
    assert _answer(tmp_path, pasted).get("no_confident_match")


def test_a_test_id_keeps_the_file_and_adds_the_test_name():
    assert terms("tests/test_api.py::TestPing::test_timeout") == (
        terms("tests/test_api.py") + terms("TestPing::test_timeout"))
    assert file_paths("tests/test_api.py::test_timeout") == ("tests/test_api.py",)


@pytest.mark.parametrize("pasted", [
    "src/packwise/sync/test_merge.py::test_ping",
    "https://github.com/acme/packwise/blob/main/src/packwise/sync/healthcheck.py#L12",
    "https://github.com/acme/packwise/blob/main/src/packwise/sync/healthcheck.py",
    "https://gitlab.com/acme/tools/packwise/-/blob/main/src/packwise/sync/healthcheck.py",
])
def test_the_constraint_scoped_to_the_linked_file_leads(pasted, tmp_path):
    answer = _answer(tmp_path, pasted)
    assert not answer.get("no_confident_match")
    assert _ids(answer)[0] == "con-014"


# 2. A Python traceback frame is read as path:line.

def test_a_traceback_frame_is_read_as_the_file_at_its_line():
    assert terms('File "src/packwise/api/healthcheck.py", line 12, in ping') == terms(
        "src/packwise/api/healthcheck.py:12 in ping")


def test_a_traceback_frame_in_an_unrecorded_file_is_no_confident_match(tmp_path):
    assert _answer(tmp_path, 'File "src/packwise/api/healthcheck.py", line 12, in ping').get("no_confident_match")


def test_a_traceback_frame_in_a_scoped_file_finds_its_constraint(tmp_path):
    assert _ids(_answer(tmp_path, 'File "src/packwise/sync/healthcheck.py", line 12, in ping'))[0] == "con-014"


TRACEBACK = ('Traceback (most recent call last):\n'
             '  File "src/packwise/api/healthcheck.py", line 12, in ping\n'
             '    return probe()\n'
             'RuntimeError')


def test_a_traceback_heading_adds_no_term():
    assert terms(TRACEBACK) == terms("src/packwise/api/healthcheck.py:12 in ping return probe() RuntimeError")


def test_the_prompt_hook_injects_nothing_for_a_traceback_through_an_unrecorded_file(tmp_path):
    assert _prompt_hook(_demo(tmp_path), TRACEBACK) is None


# 3. A question on the first (or last) line of a long paste is what the prompt hook searches.

QUESTION = "Why do the label printers keep missing heartbeats? Log:"


def _log(lines: int) -> str:
    return "\n".join(f"2026-11-0{i % 9 + 1}T12:{i % 60:02d}:00Z worker-{i} INFO batch {i} shipped ok to zone {i % 7} "
                     f"in 12ms, queue depth {i * 3} entries waiting" for i in range(lines))


@pytest.mark.parametrize("lines", [30, 5000])
def test_a_question_on_the_first_line_of_a_pasted_log_is_searched(lines):
    assert _query_text(f"{QUESTION}\n{_log(lines)}").startswith(QUESTION)


def test_a_question_on_the_last_line_after_a_pasted_log_is_searched():
    assert _query_text(f"{_log(30)}\nwhy do the label printers keep missing heartbeats?").startswith("2026-11-")
    assert _query_text(f"{_log(30)}\nwhy do the label printers keep missing heartbeats?").endswith(
        "why do the label printers keep missing heartbeats?")


def test_a_paste_without_a_short_edge_line_is_searched_at_its_end_as_before():
    long_line = "x" * 700
    pasted = "\n".join([long_line] * 4)
    assert _query_text(pasted) == " ".join(pasted.split())[-2000:]


@pytest.mark.parametrize("lines", [30, 5000])
def test_the_prompt_hook_answers_the_question_before_a_pasted_log(lines, tmp_path):
    injected = _prompt_hook(_demo(tmp_path), f"{QUESTION}\n{_log(lines)}")
    assert injected is not None and "dec-027" in injected and "con-013" not in injected


# 4. An absolute path through a symbolic link to the project is read inside the project.

def test_a_pasted_path_through_a_linked_root_finds_the_scoped_constraint(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(_demo(tmp_path), target_is_directory=True)
    answer = _answer(tmp_path, f"{link}/src/packwise/sync/healthcheck.py", project=link)
    assert not answer.get("no_confident_match")
    assert _ids(answer)[0] == "con-014"


def test_the_linked_root_named_by_the_environment_is_taken_off_too(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(_demo(tmp_path), target_is_directory=True)
    answer = Service(env={"CONTEXT_KEEPER_PROJECT": str(link)}, hook_cache_delay=None).get_context(
        query=f"{link}/src/packwise/sync/healthcheck.py", include_related=False)
    assert _ids(answer)[0] == "con-014" and not answer.get("no_confident_match")


# 5. A directory path with its trailing slash locates, as a file's directories do.

def test_an_unrecorded_directory_is_no_confident_match(tmp_path):
    assert _answer(tmp_path, "src/packwise/api/").get("no_confident_match")


@pytest.mark.parametrize("asked", ["src/packwise/sync/", "what rules apply in src/packwise/sync/?"])
def test_the_constraint_scoped_to_a_named_directory_leads(asked, tmp_path):
    answer = _answer(tmp_path, asked)
    assert not answer.get("no_confident_match")
    assert _ids(answer)[0] == "con-014"


def test_a_directory_path_is_named_with_its_slash_and_only_with_two_parts_or_more():
    assert file_paths("what about src/packwise/sync/?") == ("src/packwise/sync/",)
    assert file_paths("drop it into migrations/ or blue/green") == ()
