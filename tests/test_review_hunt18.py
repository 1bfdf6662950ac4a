"""Defects found in round 18's review, each test failing before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper import doctor
from context_keeper.service import Service
from context_keeper.store import _wide_encoding
from tests.conftest import REPO
from tests.hook_helpers import hook_env
from tests.test_cli_hunt18 import _ck, _text
from tests.test_portability_hunt18 import _case_insensitive_lexists

REASON = "A leaked token in the logs caused an account takeover last spring."

# ------------------------------------------------------------------ 1. a miscased glob, or a folder not created yet


def _auth_project(tmp_path: Path, *scopes: str) -> Path:
    root = tmp_path / "app"
    (root / "src" / "Auth").mkdir(parents=True)
    (root / "src" / "Auth" / "login.py").write_text("", encoding="utf-8")
    Service(env={}).init_project(str(root))
    service = Service(env={}, cwd=str(root))
    for scope in scopes:
        service.record("constraint", {"rule": f"Never log session tokens in {scope}", "scope": scope,
                                      "reason": REASON}, project_dir=str(root))
    return root


def _scope_findings(root: Path) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in doctor.diagnose(root).findings
            if f.code in ("miscased_scope", "unmatched_scope")]


@pytest.mark.parametrize("disk", ["case-sensitive", "case-insensitive"])
@pytest.mark.parametrize("scope,written,corrected", [
    ("src/auth/**/*.py", "src/auth", "src/Auth/**/*.py"),
    ("src/auth/oauth/", "src/auth", "src/Auth/oauth/"),
    ("src/auth/oauth/**", "src/auth", "src/Auth/oauth/**"),
    ("SRC/Auth/*.py", "SRC/Auth", "src/Auth/*.py"),
])
def test_doctor_names_the_real_spelling_of_a_miscased_folder_under_a_glob_or_a_path_not_created_yet(
        tmp_path: Path, monkeypatch, disk: str, scope: str, written: str, corrected: str):
    root = _auth_project(tmp_path, scope)
    if disk == "case-insensitive":
        monkeypatch.setattr(doctor.os.path, "lexists", _case_insensitive_lexists)
    [(code, message)] = _scope_findings(root)
    assert code == "miscased_scope"
    assert f"con-001 has scope {scope!r}, whose {written!r} differs in case from the folder " in message
    assert f"Write it as {corrected!r}" in message


def test_doctor_warns_of_each_scope_written_for_a_miscased_folder(tmp_path: Path):
    root = _auth_project(tmp_path, "src/auth/", "src/auth/**/*.py", "src/auth/oauth/")
    findings = _scope_findings(root)
    assert [code for code, _ in findings] == ["miscased_scope"] * 3
    assert "'src/auth/', which differs in case from the folder 'src/Auth/'" in findings[0][1]


@pytest.mark.parametrize("scope", ["src/Auth/oauth/", "src/Auth/**/*.sql", "lib/auth/**", "**/auth/*.py"])
def test_a_scope_whose_existing_folders_are_spelled_as_on_disk_is_only_noted_as_unmatched(tmp_path: Path,
                                                                                           scope: str):
    root = _auth_project(tmp_path, scope)
    assert [code for code, _ in _scope_findings(root)] == ["unmatched_scope"]


def test_a_glob_spelled_as_on_disk_that_matches_a_file_says_nothing(tmp_path: Path):
    assert _scope_findings(_auth_project(tmp_path, "src/Auth/**/*.py")) == []


# ------------------------------------------------------------------ 2. UTF-32 without a byte order mark

JAPANESE = [{"id": "dec-001", "summary": "認証にはセッションクッキーを使用する",
             "problem": "ログインの状態をどこに保存するかを決める必要がある。トークンは漏洩の危険がある。",
             "why_chosen": "セッションクッキーは既存の基盤で動作し、失効の管理が簡単で、チームが運用に慣れている。"}]


@pytest.mark.parametrize("encoding", ["utf-32-le", "utf-32-be"])
def test_a_utf32_store_file_without_a_bom_in_japanese_says_to_re_save_it_as_utf8(tmp_path: Path, encoding: str):
    Service(env={}).init_project(str(tmp_path))
    (tmp_path / ".context" / "decisions.json").write_bytes(
        json.dumps(JAPANESE, ensure_ascii=False, indent=2).encode(encoding))
    said = " ".join(f.message for f in doctor.diagnose(tmp_path).findings)
    assert "is saved as UTF-32, not UTF-8" in said and "Re-save it as UTF-8" in said
    assert "by hand" not in said


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_utf8_text_is_never_taken_for_a_wide_encoding(ensure_ascii: bool):
    assert _wide_encoding(json.dumps(JAPANESE, ensure_ascii=ensure_ascii, indent=2).encode("utf-8")) is None


@pytest.mark.parametrize("encoding,expected", [
    ("utf-16-le", "UTF-16"), ("utf-16-be", "UTF-16"), ("utf-32-le", "UTF-32"), ("utf-32-be", "UTF-32")])
def test_ascii_json_without_a_bom_is_told_utf16_from_utf32(encoding: str, expected: str):
    assert _wide_encoding(json.dumps(JAPANESE, indent=2).encode(encoding)) == expected


def test_a_file_of_zeros_is_no_wide_text():
    assert _wide_encoding(b"\x00" * 8192) is None


# ------------------------------------------------------------------ 3. a --scope that climbs out and back in


def test_a_relative_scope_that_climbs_out_of_the_project_and_back_in_is_accepted(project: Path):
    here = project / "src" / "packwise" / "labels"
    back_in = f"../../../../{project.name}/src/packwise/labels/worker.py"
    proc = _ck("get", "change the label printing retry", "--scope", back_in, "--json", cwd=here)
    assert proc.returncode == 0, _text(proc)[1]
    assert "con-003" in [r["entry"]["id"] for r in json.loads(proc.stdout)["results"]]


def test_a_relative_scope_from_a_project_reached_through_a_symlink_is_read_from_here(project: Path,
                                                                                     tmp_path: Path):
    link = tmp_path / "link"
    link.symlink_to(project, target_is_directory=True)
    env = {**hook_env(), "PYTHONPATH": str(REPO), "CONTEXT_KEEPER_PROJECT": str(link)}
    for scope in ("worker.py", "../labels/worker.py", f"../../../../{project.name}/src/packwise/labels/worker.py"):
        proc = _ck("get", "change the label printing retry", "--scope", scope, "--json",
                   cwd=link / "src" / "packwise" / "labels", env=env)
        assert proc.returncode == 0, _text(proc)[1]
        assert "con-003" in [r["entry"]["id"] for r in json.loads(proc.stdout)["results"]]
