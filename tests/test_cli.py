"""The human CLI: same service functions, readable output, meaningful exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO


def run(*args: str, cwd, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CONTEXT_KEEPER_PROJECT", "CLAUDE_PROJECT_DIR")}
    env.update(env_extra or {})
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", "context_keeper", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=60)


def test_init_creates_context_with_config(tmp_path):
    result = run("init", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    config = json.loads((tmp_path / ".context" / "config.json").read_text(encoding="utf-8"))
    assert config["project_name"] == tmp_path.name
    assert json.loads((tmp_path / ".context" / "decisions.json").read_text()) == []
    again = run("init", cwd=tmp_path)
    assert again.returncode == 0 and "Already initialised" in again.stdout


def test_summary_and_get_from_inside_the_project(project):
    summary = run("summary", "--budget", "800", cwd=project / "src")
    assert summary.returncode == 0, summary.stderr
    assert summary.stdout.startswith("Project memory for packwise")
    got = run("get", "carrier API calls keep timing out", cwd=project)
    assert got.returncode == 0, got.stderr
    assert "dec-008" in got.stdout
    as_json = json.loads(run("get", "carrier timeouts", "--json", cwd=project).stdout)
    assert "top_relevance" in as_json


def test_get_takes_the_threshold_deprecated_entries_and_links_as_get_context_does(project):
    asked = "carrier API calls keep timing out"
    strict = json.loads(run("get", asked, "--json", "--min-relevance", "0.99", cwd=project).stdout)
    assert strict["no_confident_match"] is True
    plain = json.loads(run("get", asked, "--json", cwd=project).stdout)
    assert not plain.get("no_confident_match")
    linked = json.loads(run("get", "schema migration on a big table", "--json", cwd=project).stdout)
    unlinked = json.loads(run("get", "schema migration on a big table", "--json", "--no-related", cwd=project).stdout)
    assert any(r.get("related") for r in linked["results"])
    assert not any(r.get("related") for r in unlinked["results"])
    decisions = project / ".context" / "decisions.json"
    entries = json.loads(decisions.read_text(encoding="utf-8"))
    next(e for e in entries if e["id"] == "dec-014")["status"] = "deprecated"  # retired, no successor
    decisions.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    retired = "raw ZPL straight to printers port 9100"
    hidden = json.loads(run("get", retired, "--json", cwd=project).stdout)
    assert "dec-014" not in [r["entry"]["id"] for r in hidden["results"]]
    shown = json.loads(run("get", retired, "--json", "--include-deprecated", cwd=project).stdout)
    assert any(r["entry"]["id"] == "dec-014" and r.get("deprecated") for r in shown["results"])
    wrong = run("get", asked, "--min-relevance", "5", cwd=project)
    assert wrong.returncode != 0
    assert "--min-relevance must be a number from 0 to 1 (got 5.0)" in wrong.stderr
    nan = run("get", asked, "--min-relevance", "nan", cwd=project)
    assert nan.returncode != 0 and "--min-relevance" in nan.stderr


def test_get_says_when_nothing_confidently_matches(project):
    got = run("get", "which GraphQL pagination style should the admin API use?", cwd=project)
    assert got.returncode == 0
    assert got.stdout.startswith("No confident match")


def test_no_project_exits_4_with_advice(tmp_path):
    result = run("summary", cwd=tmp_path)
    assert result.returncode == 4
    assert "context-keeper init" in result.stderr
    assert "Traceback" not in result.stderr


def test_corrupt_store_still_summarises_with_a_warning(project):
    (project / ".context" / "pipelines.json").write_text("[{oops", encoding="utf-8")
    result = run("summary", cwd=project)
    assert result.returncode == 0
    assert "pipelines.json does not parse" in result.stderr


def test_get_warns_when_a_store_file_does_not_parse(project):
    # Without the warning the decisions simply vanish from the answer.
    (project / ".context" / "decisions.json").write_text("[{oops", encoding="utf-8")
    result = run("get", "how long are carrier quotes cached", cwd=project)
    assert result.returncode == 0
    assert "decisions.json does not parse" in result.stderr


def test_get_with_no_results_says_so_plainly(project):
    got = run("get", "zzqx vwkj", cwd=project)
    assert got.returncode == 0, got.stderr
    assert got.stdout == "Nothing recorded matches.\n"


def test_get_with_no_results_and_an_unreadable_file_does_not_say_nothing_is_recorded(project):
    # Conflict markers, and no last good copy to answer from: the decisions are there, unread.
    path = project / ".context" / "decisions.json"
    path.write_text("[\n<<<<<<< HEAD\n]\n", encoding="utf-8")
    for copy in (project / ".context" / ".last-good").glob("decisions.json"):
        copy.unlink()
    got = run("get", "zzqx vwkj", "--type", "decisions", cwd=project)
    assert got.returncode == 0, got.stderr
    assert "conflict" in got.stderr
    assert got.stdout == "Nothing matches in what could be read (see the warnings above).\n"


def test_a_budget_error_names_the_cli_flag(project):
    for command in (("get", "carrier timeouts"), ("summary",)):
        result = run(*command, "--budget", "10", cwd=project)
        assert result.returncode == 2
        assert "--budget must be at least" in result.stderr and "token_budget" not in result.stderr
        assert "config's --budget" not in result.stderr  # the flag's name, not the config key's
        # What was given and how to get the default, as for every refused value.
        assert "(got 10)" in result.stderr and "default" in result.stderr


def _run_into_a_closed_pipe(*args: str, cwd) -> subprocess.CompletedProcess:
    """Like ``context-keeper ... | head`` after head has exited: every write to stdout fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        return subprocess.run([sys.executable, "-m", "context_keeper", *args], cwd=cwd, env=env,
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    finally:
        os.close(write_end)


def test_a_closed_stdout_pipe_exits_quietly(project, tmp_path):
    for args in (("get", "carrier API calls keep timing out"),
                 ("install", "--client", "all", "--print", "--project", str(project), "--home", str(tmp_path))):
        result = _run_into_a_closed_pipe(*args, cwd=project)
        assert result.stderr == "", result.stderr
        assert result.returncode == 1


def test_hook_help_lists_one_event_per_line(tmp_path):
    from context_keeper.hookio import EVENTS

    result = run("hook", "--help", cwd=tmp_path)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    for event in EVENTS.values():
        assert any(line.split()[:1] == [event.name] and event.doc in line for line in lines), event.name


def test_init_inside_a_project_warns_about_the_nested_store(tmp_path, capsys):
    from context_keeper.cli import main

    outer = tmp_path / "proj"
    (outer / "src").mkdir(parents=True)
    assert main(["init", str(outer)]) == 0
    capsys.readouterr()
    assert main(["init", str(outer / "src")]) == 0
    out = capsys.readouterr().out
    assert "Warning:" in out and str(outer) in out and "second, separate project memory" in out
    assert main(["init", str(outer / "src")]) == 0 and "Warning" not in capsys.readouterr().out  # only on creation


def test_project_may_be_given_relative_to_the_current_directory(project):
    got = run("get", "how long are carrier quotes cached", "--project", project.name, cwd=project.parent)
    assert got.returncode == 0 and "dec-024" in got.stdout


def test_get_takes_the_tag_and_date_filters(project):
    got = run("get", "carrier quotes", "--tag", "caching", "--since", "2025-10-01", "--json", cwd=project)
    assert got.returncode == 0
    results = json.loads(got.stdout)["results"]
    assert results and all("caching" in r["entry"]["tags"] and r["entry"]["created_at"] >= "2025-10-01" for r in results)


def test_reads_of_a_directory_with_no_store_say_so(tmp_path):
    # A mistyped --project must not read as "nothing is recorded".
    empty = tmp_path / "not-a-project"
    empty.mkdir()
    for command in (("summary",), ("get", "carrier retries")):
        result = run(*command, "--project", str(empty), cwd=tmp_path)
        assert result.returncode == 4, result.stdout
        assert "has no .context/ directory" in result.stderr and f"context-keeper init {empty}" in result.stderr
    assert not (empty / ".context").exists()


def test_a_date_error_names_the_cli_flag(project):
    result = run("get", "carrier retries", "--since", "yesterday", cwd=project)
    assert result.returncode == 2 and "--since: 'yesterday' is not an ISO date" in result.stderr


def test_a_project_that_does_not_exist_is_named_by_its_flag(tmp_path):
    # The message said "project_dir '...' is not an existing directory" to a person who typed --project.
    result = run("summary", "--project", str(tmp_path / "typo"), cwd=tmp_path)
    assert result.returncode == 4
    assert "--project '" in result.stderr and "project_dir" not in result.stderr


def _serve(tmp_path, stdin, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CONTEXT_KEEPER_PROJECT", "CLAUDE_PROJECT_DIR")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, stdin=stdin, capture_output=True,
                          timeout=60)


def test_serving_to_a_terminal_says_what_it_is_doing_on_stderr_only(tmp_path):
    import pty

    for args in (["-m", "context_keeper"], [str(REPO / "server.py")]):
        leader, follower = pty.openpty()
        try:
            os.write(leader, b"\x04")  # Ctrl-D, read as the end of input once the server reads
            proc = _serve(tmp_path, follower, *args)
        finally:
            os.close(follower)
            os.close(leader)
        assert proc.returncode == 0 and proc.stdout == b"", proc.stderr  # stdout is the protocol's
        hint = proc.stderr.decode()
        assert "serving MCP on stdio" in hint and "--help" in hint and "Ctrl-D" in hint, args


def test_serving_a_client_adds_nothing_to_stderr(tmp_path):
    proc = _serve(tmp_path, subprocess.DEVNULL, "-m", "context_keeper")
    assert proc.returncode == 0 and proc.stdout == b"" and b"serving MCP" not in proc.stderr


def test_doctor_and_install_help_list_their_exit_codes(tmp_path):
    doctor = " ".join(run("doctor", "--help", cwd=tmp_path).stdout.split())
    assert "exit codes: 0 healthy" in doctor and "1 warnings only" in doctor and "4 no project" in doctor
    assert "5 errors" in doctor
    install = " ".join(run("install", "--help", cwd=tmp_path).stdout.split())
    assert "exit codes: 0 done" in install and "2 bad input" in install and "--force" in install
    assert "5 a config file install must edit does not parse or has a shape it cannot edit" in install
