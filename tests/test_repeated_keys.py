"""An entry with a key written twice — both sides of a merge conflict kept in one object ("accept
both") — is not read as whichever side came last: it is skipped, reported with its keys and
lines, kept byte for byte by every write, and doctor calls it an error with the remedy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper import doctor
from context_keeper.errors import NotFound
from context_keeper.model import DECISION
from context_keeper.service import Service

CLEAN = {
    "id": "dec-001",
    "summary": "Use PostgreSQL for the main store",
    "problem": "We need a relational store with transactional guarantees for orders and stock.",
    "why_chosen": "Postgres has mature tooling, the team knows it well, and managed offerings exist on every cloud.",
    "tags": ["db"],
}

# What "Accept Both Changes" leaves of two teammates' dec-002 (from line 11 of the file).
MERGED = """  {
    "id": "dec-002",
    "summary": "Adopt structured JSON logging",
    "problem": "Plain text logs cannot be queried in the log aggregator and incident triage takes too long.",
    "why_chosen": "JSON logs are indexed by the aggregator out of the box and let us filter by request id quickly.",
    "summary": "Use Redis for session caching",
    "problem": "Session lookups hit the database on every request and add 30 ms at the p99 latency mark.",
    "why_chosen": "Redis is already deployed for the job queue, so no new infrastructure is needed at all.",
    "tags": ["logging", "cache"],
    "steps_note": [{"order": 1}, {"order": 2}]
  }"""


def _clean_chunk(entry: dict) -> str:
    return "  " + json.dumps(entry, indent=2).replace("\n", "\n  ")


@pytest.fixture
def merged(tmp_path: Path) -> Path:
    Service(env={}).init_project(str(tmp_path))
    path = tmp_path / ".context" / "decisions.json"
    path.write_text("[\n" + _clean_chunk(CLEAN) + ",\n" + MERGED + "\n]\n", encoding="utf-8")
    return tmp_path


@pytest.fixture
def svc(merged: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(merged)})


def test_an_entry_with_repeated_keys_is_skipped_and_reported_with_keys_and_lines(svc):
    state = svc.store().state(DECISION)
    assert list(state.entries_by_id) == ["dec-001"]
    problem = "\n".join(state.problems)
    assert "decisions.json item 2: dec-002 has keys written twice" in problem
    for key, first, again in (("summary", 13, 16), ("problem", 14, 17), ("why_chosen", 15, 18)):
        assert f"'{key}' (lines {first} and {again})" in problem
    assert "order" not in problem  # the same key in two sibling objects is no repeat


def test_a_record_keeps_the_merged_entry_byte_for_byte(svc, merged):
    path = merged / ".context" / "decisions.json"
    svc.record("decision", {
        "summary": "Use one queue for label jobs",
        "problem": "Label jobs were spread over three queues and their order across stations was lost.",
        "why_chosen": "One queue keeps the print order per station and halves the number of workers to run.",
    })
    text = path.read_text(encoding="utf-8")
    assert MERGED in text  # both summaries, problems and reasons still on disk
    assert [item["id"] for item in json.loads(text)] == ["dec-001", "dec-002", "dec-003"]


def test_changing_the_merged_entry_is_refused_with_what_is_wrong(svc, merged):
    path = merged / ".context" / "decisions.json"
    before = path.read_bytes()
    with pytest.raises(NotFound, match="dec-002 is in .context/decisions.json but cannot be used: .*'summary'"):
        svc.update_entry("dec-002", {"tags": ["logging"]})
    with pytest.raises(NotFound, match="keys written twice"):
        svc.get_context(id="dec-002")
    assert path.read_bytes() == before


def test_doctor_calls_it_an_error_with_the_remedy_and_fix_leaves_it_alone(merged):
    path = merged / ".context" / "decisions.json"
    # A duplicate id beside it, so --fix does rewrite the file.
    other = {**CLEAN, "id": "dec-003", "summary": "Use Kafka for events"}
    text = path.read_text(encoding="utf-8").removesuffix("\n]\n")
    text += ",\n" + _clean_chunk(other) + ",\n" + _clean_chunk({**other, "summary": "Use NATS for events"}) + "\n]\n"
    path.write_text(text, encoding="utf-8")

    report = doctor.diagnose(merged)
    [finding] = [f for f in report.findings if f.code == "repeated_keys"]
    assert finding.severity == doctor.ERROR and finding.file == "decisions.json" and finding.fix is None
    # dec-004 goes to the renumbered duplicate below: the split is offered the id after it.
    for part in ("dec-002", "'summary'", "'problem'", "'why_chosen'", "split it",
                 "give the second its own id (dec-005 is free)"):
        assert part in finding.message, part
    assert report.exit_code == doctor.EXIT_ERRORS

    fixed = doctor.repair(report)
    assert any("dec-003" in f.message and "Use NATS for events" in f.message and "is now dec-004" in f.message
               for f in fixed.findings)
    after = path.read_text(encoding="utf-8")
    assert MERGED in after
    assert doctor.diagnose(merged).exit_code == doctor.EXIT_ERRORS  # still there: a person splits it
