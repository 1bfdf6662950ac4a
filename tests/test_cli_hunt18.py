"""CLI, install and launcher defects found in round 18's hunt, each test failing before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.hook_helpers import hook_env
from tests.test_install import _cli


def _ck(*args: str, cwd: Path, env: dict[str, str] | None = None, redirect: str = "",
        stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """``python -m context_keeper ARGS`` as a process, its streams redirected by ``redirect``
    (shell syntax: ``>&-`` closes stdout, ``<&-`` stdin, ``>/dev/full`` fills the disk)."""
    command = [sys.executable, "-m", "context_keeper", *args]
    if redirect:
        command = ["sh", "-c", f'exec "$@" {redirect}', "sh", *command]
    env = {**hook_env(), "PYTHONPATH": str(REPO)} if env is None else env
    return subprocess.run(command, cwd=cwd, env=env, input=b"" if stdin is None else stdin, capture_output=True,
                          timeout=60)


def _text(proc: subprocess.CompletedProcess) -> tuple[str, str]:
    return (proc.stdout or b"").decode(), (proc.stderr or b"").decode()


# ------------------------------------------------------------------ 1. an id the filters leave out


def test_get_says_an_id_it_was_asked_for_is_recorded_when_the_filters_leave_it_out(project: Path):
    out, _ = _text(_ck("get", "dec-007", "--type", "pipelines", cwd=project))
    assert "Nothing recorded matches" not in out
    assert "dec-007 is recorded" in out and "--type" in out and "context-keeper get dec-007" in out
    out, _ = _text(_ck("get", "dec-007", "--type", "decisions", "--since", "2025-10-01", cwd=project))
    assert out.startswith("dec-007 is recorded, but the filters given (--type, --since) leave it out")
    assert "No confident match" not in out


def test_get_says_a_deprecated_id_it_was_asked_for_is_recorded(project: Path):
    from context_keeper.service import Service

    Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, hook_cache_delay=None).deprecate_entry(
        "dec-007", "no longer used after the rewrite of the scanner app")
    out, _ = _text(_ck("get", "dec-007", cwd=project))
    assert out.startswith("dec-007 is recorded, but it is deprecated") and "--include-deprecated" in out


# ------------------------------------------------------------------ 2. a relative --scope


@pytest.mark.parametrize("scope", ["worker.py", "./worker.py", "../labels/worker.py"])
def test_a_relative_scope_is_read_from_the_current_directory(project: Path, scope: str):
    here = project / "src" / "packwise" / "labels"
    proc = _ck("get", "change the label printing retry", "--scope", scope, "--json", cwd=here)
    ids = [r["entry"]["id"] for r in json.loads(proc.stdout)["results"]]
    assert "con-003" in ids  # scope src/packwise/labels/


def test_a_relative_scope_from_outside_the_project_stays_relative_to_its_root(project: Path, tmp_path: Path):
    proc = _ck("get", "change the label printing retry", "--scope", "src/packwise/labels/worker.py",
               "--project", str(project), "--json", cwd=tmp_path)
    assert "con-003" in [r["entry"]["id"] for r in json.loads(proc.stdout)["results"]]


def test_a_scope_leading_out_of_the_project_from_here_is_refused(project: Path):
    proc = _ck("get", "label retry", "--scope", "../../../../elsewhere.py", cwd=project / "src" / "packwise")
    _, err = _text(proc)
    assert proc.returncode == 2 and "--scope" in err and "leads outside the project" in err
    assert "Traceback" not in err


# ------------------------------------------------------------------ 3. a closed stdout


@pytest.mark.parametrize("args", [["summary"], ["get", "label retry"], ["doctor"], ["init"], ["install"],
                                  ["--version"]], ids=lambda a: a[0])
def test_a_closed_stdout_stops_every_subcommand_before_it_acts(project: Path, tmp_path: Path, args):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    where = fresh if args[0] in ("init", "install") else project
    _, err = _text(_ck(*args, cwd=where, redirect=">&-"))
    assert "Traceback" not in err and "standard output is closed" in err
    assert not (fresh / ".context").exists() and not (fresh / ".claude").exists()


@pytest.mark.parametrize("redirect", [">&-", "<&-", "<&- >&-"])
@pytest.mark.parametrize("launcher", [["hook", "session-start"], ["hook", "bogus"]], ids=["known", "unknown"])
def test_a_hook_with_a_closed_stream_fails_open(project: Path, redirect: str, launcher):
    proc = _ck(*launcher, cwd=project, env=hook_env(project, PYTHONPATH=str(REPO)), redirect=redirect,
               stdin=None if "<&-" in redirect else json.dumps({"hook_event_name": "SessionStart"}).encode())
    assert proc.returncode == 0 and "Traceback" not in _text(proc)[1]


@pytest.mark.parametrize("redirect", [">&-", "<&-"])
def test_the_hook_console_script_fails_open_with_a_closed_stream(project: Path, redirect: str):
    command = ["sh", "-c", f'exec "$@" {redirect}', "sh", sys.executable, "-m", "context_keeper.hookio",
               "session-start"]
    proc = subprocess.run(command, cwd=project, env=hook_env(project, PYTHONPATH=str(REPO)), input=b"{}",
                          stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr


# ------------------------------------------------------------------ 4. output to a full disk


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["summary"], ["get", "label retry"], ["doctor"]], ids=lambda a: a[0])
def test_output_to_a_full_disk_is_an_output_failure_not_a_store_one(project: Path, args):
    proc = _ck(*args, cwd=project, redirect=">/dev/full")
    _, err = _text(proc)
    assert proc.returncode == 6, err
    assert "writing the output failed" in err and ".context" not in err and "Traceback" not in err
    assert "Exception ignored" not in err  # the interpreter's final flush did not fail again


def test_the_exit_codes_the_readme_lists_include_an_output_failure():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "6 output could not be written" in readme


# ------------------------------------------------------------------ 5. errors name --project DIR


def test_doctor_errors_name_the_project_flag(tmp_path: Path):
    _, err = _text(_ck("doctor", "--project", str(tmp_path / "nonexist"), cwd=tmp_path))
    assert "--project" in err and "project_dir" not in err
    _, err = _text(_ck("doctor", cwd=tmp_path))
    assert "--project DIR" in err and "project_dir" not in err and "absolute" not in err


def test_the_no_project_error_below_a_home_store_names_the_project_flag(tmp_path: Path):
    home = tmp_path / "home"
    (home / ".context").mkdir(parents=True)
    (home / "w").mkdir()
    env = {**hook_env(), "PYTHONPATH": str(REPO), "HOME": str(home)}
    for args in (["summary"], ["doctor"]):
        proc = _ck(*args, cwd=home / "w", env=env)
        _, err = _text(proc)
        assert proc.returncode == 4 and "serves only the home directory" in err
        assert "project_dir" not in err and "pass --project DIR or set CONTEXT_KEEPER_PROJECT" in err


# ------------------------------------------------------------------ 6. an empty --project


@pytest.mark.parametrize("value", ["", "   "])
@pytest.mark.parametrize("args", [["summary"], ["doctor"], ["install", "--dry-run"]], ids=lambda a: a[0])
def test_an_empty_project_flag_is_refused_not_ignored(project: Path, value: str, args):
    proc = _ck(*args, "--project", value, cwd=project / "src")
    out, err = _text(proc)
    assert proc.returncode == 2 and "--project is empty" in err and "absolute" not in err
    assert out == "" and not (project / ".claude").exists()


# ------------------------------------------------------------------ 7. install in / or home


def test_install_refuses_the_file_system_root(tmp_path: Path):
    proc = _cli("install", "--dry-run", cwd=Path("/"), home=tmp_path / "home")
    assert proc.returncode == 2 and "root of the file system" in proc.stderr
    assert "context-keeper init /" not in proc.stderr + proc.stdout


def test_install_refuses_the_home_directory_and_points_to_user(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    for args in (("install", "--dry-run"), ("install",), ("install", "--client", "cursor", "--write")):
        proc = _cli(*args, cwd=home, home=home)
        assert proc.returncode == 2 and "home directory" in proc.stderr and "--user" in proc.stderr, args
    assert not (home / ".claude").exists() and not (home / ".cursor").exists()
    proc = _cli("install", "--user", "--dry-run", cwd=home, home=home)
    assert proc.returncode == 0 and str(home / ".claude" / "settings.json") in proc.stdout


# ------------------------------------------------------------------ 8. python server.py ARGS


def test_server_py_with_arguments_is_the_command_line(tmp_path: Path):
    env = hook_env()
    version = subprocess.run([sys.executable, str(REPO / "server.py"), "--version"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert version.returncode == 0 and version.stdout.startswith("context-keeper ")
    bogus = subprocess.run([sys.executable, str(REPO / "server.py"), "--bogus"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert bogus.returncode == 2 and "unrecognized arguments" in bogus.stderr


# ------------------------------------------------------------------ 9. --client all


def test_install_client_all_writes_claude_codes_files_and_prints_the_others(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    proc = _cli("install", "--client", "all", "--project", str(project), cwd=project, home=home)
    assert proc.returncode == 0, proc.stderr
    assert (project / ".claude" / "settings.json").exists() and (project / ".mcp.json").exists()
    assert not (project / ".cursor").exists() and not (project / ".vscode").exists() and not home.exists()
    assert "pass --write to merge this" in proc.stdout
