"""CLI, doctor and install defects found in round 16's hunt, each test failing before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from context_keeper import doctor
from context_keeper.service import Service


def _decision(n: int) -> dict:
    return dict(summary=f"Use Postgres for thing {n}", tags=["db"],
                problem="We needed a relational database for the orders service storage layer.",
                why_chosen="Postgres is what the team already runs in production and it has the features we need.")


def test_doctor_fix_keeps_hand_edits_in_a_store_written_on_one_line(empty_project: Path):
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}, hook_cache_delay=None)
    for n in range(3):
        svc.record("decision", _decision(n))
    live = empty_project / ".context" / "decisions.json"
    entries = json.loads(live.read_text(encoding="utf-8"))
    entries[2]["summary"] = "Use MySQL for thing 2 (changed by hand)"
    # json.dumps without indent (or jq -c): the whole file is line 1, the typo's line.
    live.write_text(json.dumps(entries).replace('"tags": ["db"]', '"tags": ["db",]', 1), encoding="utf-8")
    report = doctor.diagnose(empty_project)
    [corrupt] = [f for f in report.findings if f.code == "corrupt_file"]
    assert "restore" not in corrupt.fix and "trailing comma" in corrupt.fix  # mended in place, not restored
    doctor.repair(report)
    assert "changed by hand" in live.read_text(encoding="utf-8")
    assert doctor.diagnose(empty_project).exit_code == doctor.EXIT_OK


def test_doctor_fix_still_restores_after_a_typo_in_a_long_line(empty_project: Path):
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}, hook_cache_delay=None)
    svc.record("decision", {**_decision(1), "why_chosen": "Postgres is what the team runs. " * 40})
    live = empty_project / ".context" / "decisions.json"
    good = live.read_text(encoding="utf-8")
    live.write_text(good.replace('"tags": [', '"tags": [,', 1), encoding="utf-8")
    doctor.repair(doctor.diagnose(empty_project))
    assert live.read_text(encoding="utf-8") == good


def _cli_ascii(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CONTEXT_KEEPER_PROJECT", "CLAUDE_PROJECT_DIR")}
    env["PYTHONIOENCODING"] = "ascii"
    return subprocess.run([sys.executable, "-m", "context_keeper", *args], cwd=cwd, capture_output=True,
                          env=env, timeout=60)


def test_json_output_stays_json_on_an_ascii_console(tmp_path: Path):
    project = tmp_path / "uni café ü"
    project.mkdir()
    Service(env={}).init_project(str(project))
    Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, hook_cache_delay=None).record("decision", {
        **_decision(1), "summary": "東京 orders use Postgres 🚀"})
    for args in (["get", "orders postgres", "--json"], ["summary", "--json"], ["doctor", "--json"]):
        proc = _cli_ascii(*args, cwd=project)
        data = json.loads(proc.stdout.decode("ascii"))
        assert data, args
    got = json.loads(_cli_ascii("get", "orders postgres", "--json", cwd=project).stdout)
    assert got["results"][0]["entry"]["summary"] == "東京 orders use Postgres 🚀"


def test_uninstall_keeps_a_config_file_the_person_had_before(tmp_path: Path):
    from tests.test_install import _cli

    project = tmp_path / "proj"
    project.mkdir()
    Service(env={}).init_project(str(project))
    home = tmp_path / "home"
    template = '{\n  "servers": {},\n  "inputs": []\n}\n'  # VS Code's own template
    (project / ".vscode").mkdir()
    (project / ".vscode" / "mcp.json").write_text(template, encoding="utf-8")
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "permissions": {\n    "allow": []\n  }\n}\n', encoding="utf-8")
    _cli("install", "--client", "vscode", "--client", "claude", "--write", cwd=project, home=home)
    _cli("uninstall", "--client", "vscode", "--client", "claude", cwd=project, home=home)
    vscode = json.loads((project / ".vscode" / "mcp.json").read_text(encoding="utf-8"))
    assert vscode["inputs"] == [] and "context-keeper" not in json.dumps(vscode)
    claude = json.loads(settings.read_text(encoding="utf-8"))
    assert claude["permissions"] == {"allow": []} and "context-keeper" not in json.dumps(claude)


def _write_decisions(project: Path, entries: list[dict]) -> None:
    (project / ".context" / "decisions.json").write_text(json.dumps(entries, indent=2), encoding="utf-8")


def test_doctor_reports_successors_that_lead_back(empty_project: Path):
    base = dict(problem="We needed to pick something durable for the job queue storage here.",
                why_chosen="Because it was the simplest choice that keeps the data readable by humans and diffs.",
                status="superseded")
    _write_decisions(empty_project, [
        dict(base, id="dec-001", summary="Use SQLite A", superseded_by="dec-002", supersedes=["dec-002"]),
        dict(base, id="dec-002", summary="Use SQLite B", superseded_by="dec-001", supersedes=["dec-001"]),
        dict(base, id="dec-003", summary="Use SQLite C", superseded_by="dec-003"),
    ])
    loops = [f.message for f in doctor.diagnose(empty_project).findings if f.code == "history_loop"]
    assert len(loops) == 2
    assert loops[0].startswith("dec-001 → dec-002 → dec-001") and loops[1].startswith("dec-003 names itself")


def test_the_id_spelling_warning_clears_once_the_advice_is_followed(empty_project: Path):
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}, hook_cache_delay=None)
    for n in range(1, 6):
        svc.record("decision", _decision(n))
    path = empty_project / ".context" / "decisions.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    entries.append({**entries[0], "id": "dec-5", "summary": "Use Postgres for the fifth thing again"})
    path.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    assert "id_spelling" in [f.code for f in doctor.diagnose(empty_project).findings]
    svc.deprecate_entry("dec-5", "the same decision as dec-005", merge_into="dec-005")
    assert "id_spelling" not in [f.code for f in doctor.diagnose(empty_project).findings]


def test_install_keeps_a_lone_surrogate_escape_in_the_persons_settings(tmp_path: Path):
    from tests.test_install import _cli

    project = tmp_path / "proj"
    project.mkdir()
    Service(env={}).init_project(str(project))
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"env": {"X": "\\ud800"}}', encoding="utf-8")  # valid JSON, no UTF-8 form
    _cli("install", "--client", "claude", "--write", cwd=project, home=tmp_path / "home")
    data = json.loads(settings.read_text(encoding="utf-8"))
    assert data["env"]["X"] == "\ud800" and data["hooks"]


def test_doctor_reports_a_lock_directory_in_the_way(project: Path):
    (project / ".context" / ".lock").unlink(missing_ok=True)
    (project / ".context" / ".lock").mkdir()
    report = doctor.diagnose(project)
    assert [f.code for f in report.findings if f.severity == doctor.ERROR] == ["bookkeeping_in_the_way"]
    assert report.exit_code == doctor.EXIT_ERRORS


def test_doctor_reports_a_last_good_file_in_the_way_and_offers_no_fix_that_fails(project: Path):
    import shutil

    copies = project / ".context" / ".last-good"
    if copies.exists():
        shutil.rmtree(copies)
    copies.write_text("x", encoding="utf-8")
    report = doctor.diagnose(project)
    assert "bookkeeping_in_the_way" in [f.code for f in report.findings]
    assert not any(f.code == "missing_backup" for f in report.findings)
    doctor.repair(report)  # it crashed copying into the file ("File exists")
    assert copies.read_text(encoding="utf-8") == "x"


def test_doctor_reports_a_setting_written_twice_in_config(project: Path):
    (project / ".context" / "config.json").write_text('{"token_budget": 100, "token_budget": 9000}', encoding="utf-8")
    found = [f.message for f in doctor.diagnose(project).findings if f.code == "config"]
    assert any("token_budget is written 2 times; only the last value (9000) is used" in m for m in found), found


def test_the_demo_into_a_pipe_closed_after_a_few_lines_exits_quietly(project: Path):
    # `context-keeper demo | head -3`: the reader goes once the demo's MCP client is running, in
    # an anyio task group, which wrapped the BrokenPipeError in an ExceptionGroup (a traceback).
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen([sys.executable, "-m", "context_keeper", "demo"], cwd=project, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(3):
        proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert err == b"" and proc.returncode == 1, err.decode(errors="replace")[-500:]
