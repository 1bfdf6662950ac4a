"""Portability defects found in round 18's hunt (Windows and case-insensitive file systems,
imitated on any OS), each test failing before its fix."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from context_keeper import doctor, fsio, hookio, install
from context_keeper.errors import CorruptStoreFile, StoreError
from context_keeper.model import KINDS
from context_keeper.service import Service
from context_keeper.store import Store
from context_keeper.wiring_check import wiring_problems
from tests.test_install import _cli, _commands

# ------------------------------------------------------------------ Windows `.EXE` console scripts


@pytest.fixture
def exe_scripts(tmp_path: Path, monkeypatch) -> Path:
    """Console scripts as ``shutil.which`` finds them on Windows: with PATHEXT's ``.EXE``, upper case."""
    scripts = tmp_path / "Scripts"
    scripts.mkdir()
    for name in ("context-keeper-hook", "context-keeper"):
        (scripts / f"{name}.EXE").write_text("x", encoding="utf-8")
    monkeypatch.setattr(install, "console_script", lambda name: str(scripts / f"{name}.EXE"))
    return scripts


def test_a_second_install_with_exe_scripts_changes_nothing_and_uninstall_removes_them(
        empty_project: Path, tmp_path: Path, exe_scripts: Path):
    home = tmp_path / "home"
    settings = empty_project / ".claude" / "settings.local.json"
    first = _cli("install", "--local", "--command-style", "console", cwd=empty_project, home=home)
    assert first.returncode == 0, first.stderr
    written = settings.read_text(encoding="utf-8")
    assert ".EXE" in written
    second = _cli("install", "--local", "--command-style", "console", cwd=empty_project, home=home)
    assert second.returncode == 0, second.stderr
    assert settings.read_text(encoding="utf-8") == written
    assert len(_commands(json.loads(written))) == 8
    removed = _cli("uninstall", "--local", cwd=empty_project, home=home)
    assert removed.returncode == 0, removed.stderr
    assert not settings.exists() or not _commands(json.loads(settings.read_text(encoding="utf-8")))


@pytest.mark.parametrize("client", ["cursor", "codex", "windsurf"])
def test_a_second_client_install_with_an_exe_server_is_not_refused(
        empty_project: Path, tmp_path: Path, exe_scripts: Path, client: str):
    home = tmp_path / "home"
    for _ in range(2):
        proc = _cli("install", "--client", client, "--write", cwd=empty_project, home=home)
        assert proc.returncode == 0, proc.stderr
        assert "not context-keeper's" not in proc.stderr


@pytest.mark.parametrize("program", ["Context-Keeper-Hook.EXE", "context-keeper-hook.Exe",
                                     "context-keeper.EXE hook", "Context-Keeper hook"])
def test_our_hook_is_recognised_whatever_the_case_of_its_exe(program: str):
    command = f'"C:\\venv\\Scripts\\{program.split()[0]}" {" ".join(program.split()[1:] + ["session-start"])}'
    assert install.is_our_command(command)
    assert install.hook_run_by(command) == "session-start"


@pytest.mark.parametrize("program", ["context-keeper.EXE", "Context-Keeper.exe"])
def test_our_server_is_recognised_whatever_the_case_of_its_exe(program: str):
    assert install.is_our_server({"command": f"C:\\venv\\Scripts\\{program}", "args": ["serve"]})


def test_doctor_checks_hooks_and_server_named_with_an_upper_case_exe(empty_project: Path, tmp_path: Path):
    gone = tmp_path / "gone" / "Scripts"
    hook = {"type": "command", "command": f'"{gone / "context-keeper-hook.EXE"}" session-start'}
    (empty_project / ".claude").mkdir()
    (empty_project / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}}), encoding="utf-8")
    (empty_project / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"context-keeper": {"command": str(gone / "context-keeper.EXE"), "args": ["serve"]}}}),
        encoding="utf-8")
    problems = dict(wiring_problems(empty_project, env={"PATH": ""}))
    assert "context-keeper-hook.EXE does not exist" in problems[".claude/settings.json"]
    assert "context-keeper.EXE does not exist" in problems[".mcp.json"]


# ------------------------------------------------------------------ scopes that differ in case from the folder


def _project_with_scope(tmp_path: Path, scope: str, *folders: str) -> Path:
    root = tmp_path / "app"
    for folder in folders:
        (root / folder).mkdir(parents=True)
        (root / folder / "Login.py").write_text("", encoding="utf-8")
    Service(env={}).init_project(str(root))
    Service(env={}, cwd=str(root)).record("constraint", {
        "rule": "Never log session tokens", "scope": scope,
        "reason": "A leaked token in the logs caused an account takeover last spring."}, project_dir=str(root))
    return root


def _case_insensitive_lexists(path) -> bool:
    """``os.path.lexists`` as a case-insensitive volume (macOS, Windows) answers it."""
    current = os.path.sep
    for part in Path(os.path.abspath(path)).parts[1:]:
        try:
            names = os.listdir(current)
        except OSError:
            return False
        match = next((name for name in names if name.casefold() == part.casefold()), None)
        if match is None:
            return False
        current = os.path.join(current, match)
    return True


@pytest.mark.parametrize("disk", ["case-sensitive", "case-insensitive"])
def test_doctor_names_the_real_spelling_of_a_scope_that_differs_in_case(tmp_path: Path, monkeypatch, disk: str):
    root = _project_with_scope(tmp_path, "src/auth/", "src/Auth")
    if disk == "case-insensitive":
        monkeypatch.setattr(doctor.os.path, "lexists", _case_insensitive_lexists)
        assert doctor.os.path.lexists(root / "src" / "auth")
    findings = [f for f in doctor.diagnose(root).findings if f.code in ("miscased_scope", "unmatched_scope")]
    assert [(f.code, f.severity) for f in findings] == [("miscased_scope", "warning")]
    assert "'src/auth/', which differs in case from the folder 'src/Auth/'" in findings[0].message
    assert "Write it as 'src/Auth/'" in findings[0].message


def test_doctor_says_nothing_of_a_scope_spelled_as_on_disk(tmp_path: Path):
    root = _project_with_scope(tmp_path, "src/Auth/Login.py", "src/Auth")
    assert not [f for f in doctor.diagnose(root).findings if f.code in ("miscased_scope", "unmatched_scope")]


def test_a_case_sensitive_checkout_may_hold_both_spellings(tmp_path: Path):
    probe = tmp_path / "Probe"
    probe.mkdir()
    if (tmp_path / "probe").exists():
        pytest.skip("this file system ignores case")
    root = _project_with_scope(tmp_path, "src/auth/", "src/Auth", "src/auth")
    assert not [f for f in doctor.diagnose(root).findings if f.code in ("miscased_scope", "unmatched_scope")]


# ------------------------------------------------------------------ Windows: a rename refused while a reader has the file open

DECISION = {"summary": "Use Postgres for orders",
            "problem": "We need a durable transactional store for orders and payments.",
            "why_chosen": "Postgres gives us transactions, mature tooling, and the team already runs it in production."}


@pytest.fixture
def readers_block_renames(monkeypatch):
    """Windows' rename as fsio sees it: a ``refusals`` count of attempts onto decisions.json fail
    with "Access is denied" (another process has it open); the sleeps between tries are recorded."""
    real_replace = os.replace
    seen = {"refusals": 0, "attempts": 0, "sleeps": [], "temp_present": []}

    def replace(src, dst):
        if Path(dst).name == "decisions.json" and Path(dst).parent.name == ".context":  # not the last good copy
            seen["attempts"] += 1
            seen["temp_present"].append(os.path.exists(src))
            if seen["attempts"] <= seen["refusals"]:
                raise PermissionError(13, "Access is denied", str(src), None, str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(fsio.os, "replace", replace)
    monkeypatch.setattr(fsio, "_sleep", seen["sleeps"].append, raising=False)
    return seen


def _decisions_state(root: Path) -> tuple[bytes, list[str]]:
    context = root / ".context"
    return (context / "decisions.json").read_bytes(), sorted(p.name for p in context.glob(f"*{fsio.TEMP_SUFFIX}"))


def test_on_windows_a_rename_refused_by_a_reader_is_retried(empty_project: Path, monkeypatch, readers_block_renames):
    monkeypatch.setattr(fsio, "RENAME_WAITS_FOR_READERS", True, raising=False)
    readers_block_renames["refusals"] = 3
    entry = Service(env={}).record("decision", DECISION, project_dir=str(empty_project))
    assert readers_block_renames["attempts"] == 4 and len(readers_block_renames["sleeps"]) == 3
    assert all(readers_block_renames["temp_present"])  # the new content waits in its temp file
    data, temps = _decisions_state(empty_project)
    assert entry["id"].encode() in data and temps == []


def test_on_windows_a_rename_refused_for_the_whole_retry_time_says_the_file_is_open(
        empty_project: Path, monkeypatch, readers_block_renames):
    monkeypatch.setattr(fsio, "RENAME_WAITS_FOR_READERS", True, raising=False)
    readers_block_renames["refusals"] = 10**6
    before = _decisions_state(empty_project)
    with pytest.raises(StoreError) as raised:
        Service(env={}).record("decision", DECISION, project_dir=str(empty_project))
    message = str(raised.value)
    assert "nothing was saved" in message and "Another program has decisions.json open" in message
    assert "not writable" not in message and "read-only mount" not in message
    assert 0.5 <= sum(readers_block_renames["sleeps"]) <= 1.5  # bounded: about a second of waiting
    assert _decisions_state(empty_project) == before  # unchanged, and the temp file removed


def test_on_posix_a_refused_rename_is_not_retried(empty_project: Path, monkeypatch, readers_block_renames):
    monkeypatch.setattr(fsio, "RENAME_WAITS_FOR_READERS", False, raising=False)
    readers_block_renames["refusals"] = 1
    with pytest.raises(StoreError, match="is not writable"):
        Service(env={}).record("decision", DECISION, project_dir=str(empty_project))
    assert readers_block_renames["attempts"] == 1 and readers_block_renames["sleeps"] == []


# ------------------------------------------------------------------ store files saved in another encoding than UTF-8

RULE = {"rule": "Never log session tokens", "scope": "src/",
        "reason": "A leaked token in the logs caused an account takeover last spring \u2014 in the auth logs."}


def _resaved(text: str, encoding: str) -> bytes:
    crlf = text.replace("\n", "\r\n")  # as Windows PowerShell 5.1's `>` writes it
    return {"utf-16-bom": b"\xff\xfe" + crlf.encode("utf-16-le"),
            "utf-16-be-bom": b"\xfe\xff" + crlf.encode("utf-16-be"),
            "utf-16-no-bom": crlf.encode("utf-16-le"),
            "utf-32-bom": crlf.encode("utf-32"),
            "cp1252": crlf.encode("cp1252")}[encoding]


@pytest.mark.parametrize("encoding,said", [
    ("utf-16-bom", "is saved as UTF-16, not UTF-8"), ("utf-16-be-bom", "is saved as UTF-16, not UTF-8"),
    ("utf-16-no-bom", "is saved as UTF-16, not UTF-8"), ("utf-32-bom", "is saved as UTF-32, not UTF-8"),
    ("cp1252", "is saved in a legacy 8-bit encoding such as Windows-1252, not UTF-8 (the first byte that is not "
               "UTF-8 is at line 5, column"),
])
def test_a_store_file_saved_in_another_encoding_says_to_re_save_it_as_utf8(empty_project: Path, encoding, said):
    service = Service(env={}, cwd=str(empty_project), hook_cache_delay=None)
    service.record("constraint", RULE, project_dir=str(empty_project))
    path = empty_project / ".context" / "constraints.json"
    path.write_bytes(_resaved(path.read_text(encoding="utf-8"), encoding))
    before = path.read_bytes()
    fresh = Service(env={}, cwd=str(empty_project), hook_cache_delay=None)
    answer = fresh.get_context(query="logging session tokens", project_dir=str(empty_project))
    assert [r["entry"]["id"] for r in answer["results"]] == ["con-001"]  # from the last good copy
    warning = answer["warnings"][0]
    assert said in warning and "re-save it as UTF-8" in warning and "fix that position" not in warning
    with pytest.raises(CorruptStoreFile) as refused:
        fresh.record("constraint", {**RULE, "rule": "Never log passwords"}, project_dir=str(empty_project))
    assert said in str(refused.value) and "Nothing was written to it" in str(refused.value)
    (finding,) = [f for f in doctor.diagnose(empty_project).findings if f.file == "constraints.json"]
    assert (finding.code, finding.fix) == ("misencoded_file", None) and "Re-save it as UTF-8" in finding.message
    assert said.removeprefix("is ") in finding.message and "by hand" not in finding.message
    assert path.read_bytes() == before  # never converted behind the person's back
    out = io.BytesIO()
    start = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(empty_project)}
    hookio.run("session-start", io.BytesIO(json.dumps(start).encode()), out, env={})
    assert said in json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"]


def test_one_bad_byte_in_a_utf8_store_file_keeps_its_position(empty_project: Path):
    service = Service(env={}, cwd=str(empty_project), hook_cache_delay=None)
    service.record("constraint", RULE, project_dir=str(empty_project))
    path = empty_project / ".context" / "constraints.json"
    path.write_bytes(path.read_bytes().replace(b"Never", b"Nev\xe9r", 1))  # beside a UTF-8 em dash
    error = Store(empty_project).state(KINDS["constraint"]).error
    assert type(error) is CorruptStoreFile and error.detail == "not valid UTF-8"
    assert "fix that position by hand" in str(error) and "re-save" not in str(error)
    assert (error.line, error.column) == (4, 17)
