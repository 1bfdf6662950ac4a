"""Defects found in round 18's review, each test failing before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper import doctor
from context_keeper.service import Service
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
