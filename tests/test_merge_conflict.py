"""A store file left with git conflict markers: every message says so (file, line of the first
marker, resolve then run doctor, never `doctor --fix`), and get_context answers from the last
good copy instead of telling the agent that nothing is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_keeper import doctor
from context_keeper.errors import CorruptStoreFile
from context_keeper.service import Service

POSTGRES = {
    "summary": "Use PostgreSQL for the main store",
    "problem": "We need a relational store with transactional guarantees for orders and stock levels.",
    "why_chosen": "Postgres has mature tooling, the team knows it well, and managed offerings exist on every cloud.",
    "tags": ["db"],
}
CONFLICT = '''  {
    "id": "dec-002",
<<<<<<< HEAD
    "summary": "Adopt structured JSON logging",
=======
    "summary": "Use Redis for session caching",
>>>>>>> 5d1cacee2a82b16030403db6e7479a7df5489cec
    "problem": "Two teammates recorded this id at the same time on different branches."
  }'''


@pytest.fixture
def conflicted(tmp_path: Path) -> tuple[Service, Path, int]:
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(tmp_path)})
    svc.init_project(str(tmp_path))
    svc.record("decision", POSTGRES)  # leaves a last good copy holding dec-001
    path = tmp_path / ".context" / "decisions.json"
    text = path.read_text(encoding="utf-8").removesuffix("\n]\n") + ",\n" + CONFLICT + "\n]\n"
    path.write_text(text, encoding="utf-8")
    first_marker = text.splitlines().index("<<<<<<< HEAD") + 1
    return svc, tmp_path, first_marker


def _says_conflict(message: str, line: int) -> None:
    assert "decisions.json has unresolved git merge conflict markers" in message
    assert f"the first at line {line}" in message
    assert "resolve the merge conflict" in message and "`context-keeper doctor`" in message
    assert "--fix" not in message


def test_a_write_is_refused_naming_the_conflict(conflicted):
    svc, root, line = conflicted
    before = (root / ".context" / "decisions.json").read_bytes()
    with pytest.raises(CorruptStoreFile) as caught:
        svc.record("decision", {**POSTGRES, "summary": "Use SQLite in tests"})
    _says_conflict(str(caught.value), line)
    assert "Nothing was written" in str(caught.value)
    assert (root / ".context" / "decisions.json").read_bytes() == before


def test_get_context_answers_from_the_last_good_copy_and_says_so(conflicted):
    svc, _, line = conflicted
    answer = svc.get_context(query="which database do we use for the main store")
    assert [r["entry"]["id"] for r in answer["results"]][:1] == ["dec-001"]
    assert "no_confident_match" not in answer
    warnings = "\n".join(answer["warnings"])
    _says_conflict(warnings, line)
    assert "decisions.json: its entries here come from its last good copy" in warnings
    by_id = svc.get_context(id="dec-001")
    assert by_id["entry"]["summary"] == POSTGRES["summary"] and by_id["warnings"]


def test_no_match_while_a_file_is_unreadable_does_not_say_record_it(conflicted):
    svc, _, _ = conflicted
    answer = svc.get_context(query="how do we rotate the signing keys for mobile builds")
    assert answer["no_confident_match"] is True
    assert "decisions.json could not be read" in answer["guidance"]
    assert "record_decision" not in answer["guidance"] and "do not record it again" in answer["guidance"]


def test_doctor_names_the_conflict_and_fix_leaves_the_merge_alone(conflicted):
    _, root, line = conflicted
    path = root / ".context" / "decisions.json"
    before = path.read_bytes()
    report = doctor.diagnose(root)
    [finding] = [f for f in report.findings if f.file == "decisions.json" and f.severity == doctor.ERROR]
    assert "unresolved git merge conflict markers" in finding.message
    assert f"the first at line {line}" in finding.message and finding.fix is None
    fixed = doctor.repair(report)
    assert path.read_bytes() == before
    assert not any(f.code == "fixed" and f.file == "decisions.json" for f in fixed.findings)


def test_the_last_good_copy_is_parsed_once_while_the_file_stays_broken(conflicted, monkeypatch):
    svc, _project, _line = conflicted
    from context_keeper import store as store_module

    parsed = []
    real = store_module.parse_bytes
    monkeypatch.setattr(store_module, "parse_bytes", lambda *a: parsed.append(a[1]) or real(*a))
    for _ in range(3):
        answer = svc.get_context(query="which database holds orders and stock levels", scope="src/")
        assert answer["results"][0]["entry"]["id"] == "dec-001"
    assert len(parsed) == 1
    # A new copy on disk (another process's successful write) is read again.
    copy = svc.store().dir / ".last-good" / "decisions.json"
    copy.write_text(copy.read_text(encoding="utf-8").replace("Use PostgreSQL", "Use PostgreSQL 16"), encoding="utf-8")
    answer = svc.get_context(id="dec-001")
    assert answer["entry"]["summary"] == "Use PostgreSQL 16 for the main store" and len(parsed) == 2
