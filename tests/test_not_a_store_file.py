"""A directory, or a symbolic link to nothing, where a store file belongs: reads and writes say so
and what to do, nothing is written over it, and doctor reports it as its own error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from context_keeper import doctor
from context_keeper.errors import NotAStoreFile
from context_keeper.service import Service

DECISION = {
    "summary": "Zone batches for stock take",
    "problem": "A full stop for stock take cost a day of shipping every year at every site.",
    "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs.",
}


def _service(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root))


def _as_directory(path: Path) -> str:
    path.unlink()
    path.mkdir()
    (path / "keep.txt").write_text("mine", encoding="utf-8")
    return "is a directory, not a JSON file"


def _as_dangling_link(path: Path) -> str:
    path.unlink()
    os.symlink(path.parent.parent / "moved-away.json", path)
    return "which leads to no file"


def _as_link_to_a_directory(path: Path) -> str:
    target = path.parent.parent / "somewhere"
    target.mkdir()
    path.unlink()
    os.symlink(target, path)
    return "is a symbolic link to the directory"


def _as_link_to_itself(path: Path) -> str:
    path.unlink()
    os.symlink(path.name, path)
    return "which leads to no file"


@pytest.mark.parametrize("breakage", [_as_directory, _as_dangling_link, _as_link_to_a_directory, _as_link_to_itself])
def test_reads_and_writes_name_the_problem_and_leave_it_alone(project, breakage):
    path = project / ".context" / "decisions.json"
    said = breakage(path)
    svc = _service(project)
    answer = svc.get_context(query="how do we keep the scanner journal safe when the battery dies?")
    assert any(said in w and "cannot be read" in w for w in answer["warnings"]), answer.get("warnings")
    assert all(not h["entry"]["id"].startswith("dec-") for h in answer.get("results", []))
    with pytest.raises(NotAStoreFile) as info:
        svc.record("decision", DECISION)
    message = str(info.value)
    assert said in message and "Nothing was written to it" in message and "disk" not in message
    assert path.is_symlink() or path.is_dir()  # not replaced by a file
    assert not (project / "moved-away.json").exists()
    others = svc.get_context(query="can I edit a migration that already ran?")["results"]
    assert others and all(h["type"] != "decision" for h in others)  # the other files still answer


@pytest.mark.parametrize("breakage", [_as_directory, _as_dangling_link, _as_link_to_itself])
def test_doctor_reports_it_once_and_fix_leaves_it(project, breakage):
    path = project / ".context" / "decisions.json"
    said = breakage(path)
    report = doctor.diagnose(project)
    problems = [f for f in report.findings if f.file == "decisions.json"]
    assert [f.code for f in problems] == ["not_a_file"]
    assert said in problems[0].message and problems[0].fix is None
    doctor.repair(report)
    assert path.is_symlink() or (path / "keep.txt").read_text(encoding="utf-8") == "mine"
    assert [f.code for f in doctor.diagnose(project).findings if f.file == "decisions.json"] == ["not_a_file"]


def test_once_mended_the_same_server_reads_the_file_again(project):
    path = project / ".context" / "decisions.json"
    saved = path.read_bytes()
    _as_dangling_link(path)
    svc = _service(project)
    assert svc.get_context(query="scanner journal").get("warnings")
    path.unlink()  # the link removed: no decisions file, which is an empty store, not an error
    answer = svc.get_context(query="scanner journal")
    assert not any("decisions.json" in w for w in answer.get("warnings", []))
    path.write_bytes(saved)
    found = svc.get_context(query="scanner journal battery died mid-save")["results"]
    assert any(h["entry"]["id"] == "dec-007" for h in found)


def test_the_hooks_see_a_broken_link_mended(project):
    from tests.hook_helpers import hook_env, injected, payload, run_hook

    path = project / ".context" / "decisions.json"
    saved = path.read_bytes()
    _as_dangling_link(path)
    start = payload("session_start_startup", project)
    assert "which leads to no file" in injected(run_hook("session_start", start, env=hook_env(project)))
    path.unlink()  # no decisions file now: an empty kind, not a broken one (the stamp was None both times)
    assert "which leads to no file" not in (injected(run_hook("session_start", start, env=hook_env(project))) or "")
    path.write_bytes(saved)
    assert "dec-" in injected(run_hook("session_start", start, env=hook_env(project)))


def _as_latin1(path: Path) -> str:
    path.write_bytes(path.read_bytes().replace(b"Label", "Lâbel".encode("latin-1"), 1))
    return ("is saved in a legacy 8-bit encoding such as Windows-1252, not UTF-8 (the first byte that is not UTF-8 "
            "is at line")


def _as_an_object(path: Path) -> str:
    path.write_text('{"id": "con-001"}', encoding="utf-8")
    return "does not parse (a single entry, not a JSON array of entries"


@pytest.mark.parametrize("breakage", [_as_directory, _as_dangling_link, _as_link_to_itself, _as_latin1, _as_an_object])
def test_the_edit_guard_says_what_is_wrong_in_the_words_session_start_uses(project, breakage):
    # A link to nothing read as no file at all (no rule, no note), and every other case as
    # "does not parse (a hand edit?)", whatever session start and doctor said about it.
    from tests.hook_helpers import hook_env, injected, payload, run_hook

    _service(project).record("constraint", {  # leaves a last good copy of constraints.json
        "rule": "Label jobs carry the station id in the ZPL header.",
        "reason": "Reprints from the wrong station were impossible to trace back without it.",
        "scope": "src/packwise/labels/"})
    said = breakage(project / ".context" / "constraints.json")
    env = hook_env(project)
    text = injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="g"), env=env))
    assert "con-003" in text and "con-017" in text  # from the last good copy
    note = [line for line in text.splitlines() if line.startswith("Store health:")]
    assert len(note) == 1 and said in note[0] and "a hand edit?" not in note[0] and "last good copy" in note[0]
    start = injected(run_hook("session_start", payload("session_start_startup", project), env=env))
    words = note[0].split(" The entries above")[0]
    assert words in start
