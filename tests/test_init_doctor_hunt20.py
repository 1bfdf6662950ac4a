"""init, doctor and get defects found in round 20's hunt: each test failed before its fix, but for the
controls that say they hold what was already right."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from context_keeper import doctor
from context_keeper.cli import main
from context_keeper.errors import InvalidInput
from context_keeper.service import Service


@pytest.fixture
def here(monkeypatch):
    """Run the CLI in-process from a directory, with no project named by the environment."""
    for name in ("CONTEXT_KEEPER_PROJECT", "CLAUDE_PROJECT_DIR"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch.chdir


def _git_init(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True, capture_output=True, timeout=60)
    return path


# ------------------------------------------------------------------ 1. init inside .context/


@pytest.mark.parametrize("inside", [".context", ".context/sessions"])
def test_init_inside_the_store_is_refused_naming_the_project_that_holds_it(tmp_path, inside):
    root = tmp_path / "proj"
    Service(env={}).init_project(str(root.mkdir() or root))
    (root / inside).mkdir(exist_ok=True)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    with pytest.raises(InvalidInput) as refused:
        Service(env={}).init_project(str(root / inside))
    message = str(refused.value)
    assert f"inside the store of the project {root.resolve()}" in message
    assert f"context-keeper init {root.resolve()}" in message
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_init_with_no_directory_inside_the_store_is_refused(tmp_path, here, capsys):
    root = tmp_path / "proj"
    root.mkdir()
    Service(env={}).init_project(str(root))
    here(root / ".context")
    assert main(["init"]) != 0
    assert not (root / ".context" / ".context").exists()
    assert "inside the store of the project" in capsys.readouterr().err


# ------------------------------------------------------------------ 2. init from a repository's subdirectory


def test_init_with_no_directory_in_a_repository_subdirectory_uses_the_repository_root(tmp_path, here, capsys):
    repo = _git_init(tmp_path / "r")
    (repo / "src" / "pkg").mkdir(parents=True)
    here(repo / "src" / "pkg")
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert (repo / ".context" / "config.json").is_file() and not (repo / "src" / "pkg" / ".context").exists()
    assert f"Created {repo.resolve() / '.context'}" in out
    assert "root of the git repository" in out and f"context-keeper init {(repo / 'src' / 'pkg').resolve()}" in out
    # Again from there: the store the server started there would use, not a second one.
    assert main(["init"]) == 0
    assert f"Already initialised: {repo.resolve() / '.context'}" in capsys.readouterr().out


def test_init_with_no_directory_follows_context_keeper_project_and_says_so(tmp_path, here, capsys, monkeypatch):
    # The note said "the current directory belongs to the project …", which it did not.
    other = tmp_path / "other"
    other.mkdir()
    assert main(["init", str(other)]) == 0
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    here(fresh)
    monkeypatch.setenv("CONTEXT_KEEPER_PROJECT", str(other))
    capsys.readouterr()
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert f"CONTEXT_KEEPER_PROJECT names the project {other.resolve()}" in out
    assert "belongs to" not in out and not (fresh / ".context").exists()


def test_init_with_no_directory_at_a_repository_root_or_outside_one_says_nothing_more(tmp_path, here, capsys):
    # A control: nothing was wrong here before; it holds that the new notes stay away.
    repo = _git_init(tmp_path / "r")
    here(repo)
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert (repo / ".context").is_dir() and "Warning" not in out and "repository" not in out


def test_an_explicit_directory_inside_a_repository_is_honoured_with_a_warning(tmp_path, here, capsys):
    repo = _git_init(tmp_path / "r")
    (repo / "src" / "pkg").mkdir(parents=True)
    here(repo)
    assert main(["init", str(repo / "src" / "pkg")]) == 0
    out = capsys.readouterr().out
    assert (repo / "src" / "pkg" / ".context").is_dir() and not (repo / ".context").exists()
    assert "Warning:" in out and f"inside the git repository {repo.resolve()}" in out


# ------------------------------------------------------------------ 3. a copy used as a template


def _constraints(project: Path) -> Path:
    return project / ".context" / "constraints.json"


def _add_a_copy(project: Path, rule: str, **changes) -> list[dict]:
    path = _constraints(project)
    items = json.loads(path.read_text(encoding="utf-8"))
    original = next(item for item in items if item["id"] == "con-001")
    items.append({**original, "rule": rule, **changes})
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    return items


def test_a_copy_of_an_entry_is_reported_as_a_copy_and_fix_gives_it_a_new_id(project):
    # As the hunt found it: con-001 copied with only its rule changed (so with its related_to).
    items = _add_a_copy(project, "Every migration file must have a matching down migration checked in next to it.")
    report = doctor.diagnose(project)
    assert "conflicting_edit" not in [f.code for f in report.findings]
    copied = [f for f in report.findings if f.code == "duplicate_id" and "copy" in f.message]
    assert len(copied) == 1 and copied[0].fix
    assert f"item {len(items)}" in copied[0].message and "a different rule" in copied[0].message
    doctor.repair(report)
    after = json.loads(_constraints(project).read_text(encoding="utf-8"))
    assert after[0] == items[0]  # the original keeps its id and every field
    new = after[-1]
    assert new["id"] != "con-001" and new["rule"] == items[-1]["rule"] and "previous_id" not in new
    assert sum(item["id"] == "con-001" for item in after) == 1
    assert "duplicate_id" not in [f.code for f in doctor.diagnose(project).findings]


def test_a_copy_an_entry_may_link_to_is_reported_but_left_for_a_person(project):
    # The copy keeps con-001's related_to [dec-017]; were dec-017 to name con-001, that link could
    # be meant for the copy, and a new id would silently take it from whichever one it meant.
    decisions = project / ".context" / "decisions.json"
    entries = json.loads(decisions.read_text(encoding="utf-8"))
    dec = next(e for e in entries if e["id"] == "dec-017")
    dec["related_to"] = [*dec.get("related_to", []), "con-001"]
    decisions.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    _add_a_copy(project, "Every migration file must have a matching down migration checked in next to it.")
    report = doctor.diagnose(project)
    copied = [f for f in report.findings if f.code == "duplicate_id" and "copy" in f.message]
    assert len(copied) == 1 and copied[0].fix is None and "dec-017" in copied[0].message
    before = _constraints(project).read_bytes()
    doctor.repair(report)
    assert _constraints(project).read_bytes() == before



def test_diagnose_and_fix_look_at_the_same_links_of_a_copy(project):
    # An item tools skip (its id is not an id) names con-001, and the copy links back to it:
    # diagnose counted it and said --fix leaves the copy, while --fix, looking at entries only,
    # renumbered it. Both now look at what tools see, so what diagnose says is what --fix does.
    decisions = project / ".context" / "decisions.json"
    entries = json.loads(decisions.read_text(encoding="utf-8"))
    entries.append({**next(e for e in entries if e["id"] == "dec-017"), "id": "dec 17", "related_to": ["con-001"]})
    decisions.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    items = _add_a_copy(project, "Every migration file must have a matching down migration checked in next to it.",
                        related_to=["dec 17"])
    # A hand-added constraint with no id, so that --fix goes through the file's ids at all.
    _constraints(project).write_text(json.dumps([*items, {"rule": "Never log a card number", "reason": "r" * 45}]),
                                     encoding="utf-8")
    report = doctor.diagnose(project)
    [copied] = [f for f in report.findings if f.code == "duplicate_id" and "copy" in f.message]
    doctor.repair(report)
    copy = json.loads(_constraints(project).read_text(encoding="utf-8"))[len(items) - 1]
    assert copy["rule"] == items[-1]["rule"]
    assert (copy["id"] != "con-001") is bool(copied.fix), copied.message

# ------------------------------------------------------------------ 4. --fix dates the entry it gives an id


@pytest.mark.parametrize("dates", [{}, {"created_at": None, "updated_at": ""}], ids=["none", "blank"])
def test_fix_stamps_the_entry_it_gives_an_id(empty_project, dates):
    path = _constraints(empty_project)
    path.write_text(json.dumps([{"rule": "Never call the carrier API without a timeout", "reason": "r" * 45,
                                 **dates}]), encoding="utf-8")
    from datetime import datetime, timezone

    now = datetime(2026, 12, 4, 2, 0, tzinfo=timezone.utc)
    doctor.repair(doctor.diagnose(empty_project), now=now)
    [entry] = json.loads(path.read_text(encoding="utf-8"))
    assert entry["id"] == "con-001"
    assert entry["created_at"] == entry["updated_at"] == "2026-12-04T02:00:00+00:00"


def test_fix_keeps_the_dates_a_hand_added_entry_already_has(empty_project):
    path = _constraints(empty_project)
    path.write_text(json.dumps([{"rule": "Never call the carrier API without a timeout",
                                 "created_at": "2026-01-02T03:04:05+00:00"}]), encoding="utf-8")
    doctor.repair(doctor.diagnose(empty_project))
    [entry] = json.loads(path.read_text(encoding="utf-8"))
    assert entry["created_at"] == entry["updated_at"] == "2026-01-02T03:04:05+00:00"


# ------------------------------------------------------------------ 5. get by an id no entry has


def test_get_by_an_id_no_entry_has_says_so_when_nothing_shares_its_words(empty_project, here, capsys):
    Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}, hook_cache_delay=None).record(
        "constraint", {"rule": "Never call the carrier API without a timeout", "reason": "r" * 45})
    here(empty_project)
    assert main(["get", "dec-999"]) == 0
    out = capsys.readouterr().out
    assert "Nothing recorded matches" not in out and out.startswith("No entry has the id dec-999")


def test_the_tool_answer_for_an_unknown_id_speaks_of_no_results_when_there_are_none(empty_project):
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}, hook_cache_delay=None)
    service.record("constraint", {"rule": "Never call the carrier API without a timeout", "reason": "r" * 45})
    answer = service.get_context(query="dec-999")
    assert answer["results"] == [] and answer["no_confident_match"] is True
    assert answer["guidance"].startswith("No entry has the id dec-999")
    assert "results below" not in answer["guidance"] and "nothing recorded shares its words" in answer["guidance"]
