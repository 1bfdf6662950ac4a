"""Hand-edit defects found in round 19's hunt, each test failing before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper import doctor
from context_keeper.errors import CorruptStoreFile
from context_keeper.model import DECISION
from context_keeper.service import Service
from context_keeper.store import Store

PROBLEM = "Messages are lost when a pod restarts, so checkout needs a durable queue."
WHY = "Postgres is already operated by the team and SKIP LOCKED gives a safe work queue without a new dependency."
SUMMARY_LINE = '"summary": "Use Postgres as the job queue",\n'


def _service(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)


def _one_decision(root: Path) -> Path:
    """decisions.json as a record left it (and its last good copy): one decision."""
    _service(root).record("decision", dict(summary="Use Postgres as the job queue", problem=PROBLEM, why_chosen=WHY))
    return root / ".context" / "decisions.json"


def _edit(path: Path, old: str, new: str) -> str:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path.read_text(encoding="utf-8")


# ---------------------------------------------------------------- 1. doctor --fix keeps the edit


def test_doctor_fix_adds_the_comma_a_new_field_forgot_and_keeps_the_field(empty_project):
    live = _one_decision(empty_project)
    _edit(live, SUMMARY_LINE, SUMMARY_LINE + '    "owner": "alice (payments team), ask before changing"\n')
    report = doctor.diagnose(empty_project)
    [corrupt] = [f for f in report.findings if f.code == "corrupt_file"]
    assert "add the missing comma at line 5" in corrupt.fix and "restore" not in corrupt.fix
    fixed = doctor.repair(report)
    assert any("mended it in place" in f.message for f in fixed.findings if f.code == "fixed")
    [entry] = json.loads(live.read_text(encoding="utf-8"))
    assert entry["owner"] == "alice (payments team), ask before changing"
    assert list((empty_project / ".context").glob("decisions.json.broken-*"))  # the broken file is kept too
    assert doctor.diagnose(empty_project).exit_code == doctor.EXIT_OK


@pytest.mark.parametrize("old,new", [
    # a new field whose colon slipped: the error is on the new line itself
    (SUMMARY_LINE, SUMMARY_LINE + '    "owner" "alice (payments team), ask before changing",\n'),
    # a summary rewritten by hand, its colon lost on the way
    (SUMMARY_LINE, '"summary" "Use Postgres with SKIP LOCKED as the durable job queue for checkout",\n'),
    # a note a person added: JSON has no comments, but the note is theirs
    (SUMMARY_LINE, "// see ADR-12 before changing this\n    " + SUMMARY_LINE),
], ids=["new-field", "reworded-value", "comment-line"])
def test_doctor_fix_does_not_restore_over_an_edit_on_the_broken_line(empty_project, old, new):
    live = _one_decision(empty_project)
    broken = _edit(live, old, new)
    report = doctor.diagnose(empty_project)
    assert "restore_would_lose" in [f.code for f in report.findings], [f.message for f in report.findings]
    assert all(f.fix is None for f in report.findings if f.code == "corrupt_file")
    doctor.repair(report)
    assert live.read_text(encoding="utf-8") == broken


def test_doctor_fix_does_not_restore_over_a_short_edit_next_to_a_typo_on_a_long_line(empty_project):
    live = empty_project / ".context" / "decisions.json"
    # An entry written on one line (jq -c, json.dumps without indent) keeps its line through a record.
    one_line = dict(id="dec-001", summary="Use Postgres as the job queue", problem=PROBLEM, why_chosen=WHY * 4)
    live.write_text(json.dumps([one_line]), encoding="utf-8")
    _service(empty_project).record("decision", dict(summary="Use S3 for invoices", problem=PROBLEM, why_chosen=WHY))
    text = live.read_text(encoding="utf-8")
    assert len(max(text.split("\n"), key=len)) > 400
    # One word changed by hand, the colon beside it lost: a short edit, still an edit.
    broken = text.replace('"summary": "Use Postgres as the job queue"', '"summary" "Use Postgres as our job queue"', 1)
    live.write_text(broken, encoding="utf-8")
    doctor.repair(doctor.diagnose(empty_project))
    assert live.read_text(encoding="utf-8") == broken


# ---------------------------------------------------------------- 5. the slip named, and how to fix it


def _error(root: Path) -> CorruptStoreFile:
    error = Store(root).state(DECISION).error
    assert error is not None
    return error


def test_a_comment_line_is_named_as_a_comment_with_its_line(empty_project):
    live = _one_decision(empty_project)
    _edit(live, "    " + SUMMARY_LINE, "    // see ADR-12\n    " + SUMMARY_LINE)
    message = str(_error(empty_project))
    assert "a comment, which JSON does not allow" in message and "line 4, column 5" in message
    assert "remove line 4 (// see ADR-12), or move the note into a field" in message
    assert "Expecting" not in message


@pytest.mark.parametrize("old,new,line", [
    ('"verified_sha": null\n', '"verified_sha": null,\n', 21),  # after an entry's last field
    ("\n  }\n]", "\n  },\n]", 22),  # after the array's last entry
], ids=["last-field", "last-entry"])
def test_a_trailing_comma_is_named_at_the_comma_not_at_the_bracket_after_it(empty_project, old, new, line):
    live = _one_decision(empty_project)
    text = _edit(live, old, new)
    error = _error(empty_project)
    column = text.split("\n")[line - 1].rindex(",") + 1
    assert (error.line, error.column) == (line, column)
    assert "a trailing comma" in str(error) and f"remove the comma at line {line}, column {column}" in str(error)
    assert "doctor --fix`, which does that" in str(error)


def test_a_file_holding_one_entry_object_is_told_to_put_it_inside_brackets(empty_project):
    live = _one_decision(empty_project)
    live.write_text(json.dumps(json.loads(live.read_text(encoding="utf-8"))[0], indent=2), encoding="utf-8")
    message = str(_error(empty_project))
    assert "a single entry, not a JSON array of entries" in message and "put it inside [ ]" in message
    doctor.repair(doctor.diagnose(empty_project))
    assert [e["id"] for e in json.loads(live.read_text(encoding="utf-8"))] == ["dec-001"]


def test_a_stray_quote_inside_a_value_is_not_called_a_missing_comma(empty_project):
    live = _one_decision(empty_project)
    _edit(live, '"Use Postgres as the job queue"', '"Use "Postgres" as the job queue"')
    error = _error(empty_project)
    assert "missing comma" not in str(error) and error.detail == "Expecting ',' delimiter"


# ---------------------------------------------------------------- 4. a CRLF file stays CRLF


def _crlf_store(root: Path) -> tuple[Path, bytes]:
    """Three decisions in a tab-indented CRLF file (saved on Windows), as committed."""
    items = [dict(id=f"dec-00{i}", summary=f"Decision {i} about queues", problem=PROBLEM, why_chosen=WHY) for i in (1, 2, 3)]
    path = root / ".context" / "decisions.json"
    data = (json.dumps(items, indent="\t").replace("\n", "\r\n") + "\r\n").encode("utf-8")
    path.write_bytes(data)
    return path, data


def test_a_record_into_a_crlf_file_only_adds_lines_and_keeps_the_crlf(empty_project):
    path, before = _crlf_store(empty_project)
    _service(empty_project).record("decision", dict(summary="Use S3 for invoices", problem=PROBLEM, why_chosen=WHY))
    after = path.read_bytes()
    old_lines, new_lines = before.split(b"\r\n"), after.split(b"\r\n")
    assert b"\n" not in b"".join(new_lines)  # every line ends in CRLF, the new entry's too
    # what git shows: the old entries' lines unchanged, the last "}" gaining its comma, lines added
    assert new_lines[:len(old_lines) - 3] == old_lines[:-3] and new_lines[len(old_lines) - 3] == b"\t},"
    assert new_lines[-2:] == [b"]", b""] and len(new_lines) > len(old_lines)
    # read back, by a fresh reader and from the last good copy, and healthy for doctor
    assert [e["id"] for e in Store(empty_project).entries(DECISION)] == ["dec-001", "dec-002", "dec-003", "dec-004"]
    assert (empty_project / ".context" / ".last-good" / "decisions.json").read_bytes() == after
    assert doctor.diagnose(empty_project).exit_code == doctor.EXIT_OK


def test_doctor_names_a_slip_in_a_crlf_file_by_its_line_and_mends_it_keeping_the_crlf(empty_project):
    path, before = _crlf_store(empty_project)
    broken = before.replace(b'"summary": "Decision 2 about queues",', b'"summary": "Decision 2 about queues"', 1)
    path.write_bytes(broken)
    error = Store(empty_project).state(DECISION).error
    assert error is not None and "missing comma" in error.detail
    assert broken.split(b"\n")[error.line - 1].strip().startswith(b'"summary": "Decision 2')
    doctor.repair(doctor.diagnose(empty_project))
    assert path.read_bytes() == before


# ---------------------------------------------------------------- 2. an entry in the wrong file


def _misfiled_decision(root: Path) -> Service:
    """A decision and a constraint recorded, then a decision dec-002 pasted into constraints.json."""
    svc = _service(root)
    _one_decision(root)
    svc.record("constraint", dict(rule="Never call the payment API from tests",
                                  reason="A test once charged a real card because the sandbox key was missing in CI."))
    path = root / ".context" / "constraints.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    items.append(dict(id="dec-002", summary="Use Kafka for order events", problem=PROBLEM, why_chosen=WHY))
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    return svc


def test_an_id_in_the_wrong_file_is_not_given_out_again(empty_project):
    svc = _misfiled_decision(empty_project)
    assert svc.record("decision", dict(summary="Use S3 for invoices", problem=PROBLEM, why_chosen=WHY))["id"] == "dec-003"


def test_looking_up_an_id_in_the_wrong_file_says_where_it_is_and_where_it_belongs(empty_project):
    from context_keeper.errors import NotFound

    svc = _misfiled_decision(empty_project)
    with pytest.raises(NotFound) as caught:
        svc.get_context(id="dec-002")
    assert "dec-002 is in .context/constraints.json" in str(caught.value)
    assert "move that item into decisions.json" in str(caught.value)
    answer = svc.get_context(query="Kafka order events")
    assert any("constraints.json holds dec-002, which belongs in decisions.json" in w for w in answer["warnings"])


def test_doctor_says_which_file_an_entry_in_the_wrong_file_belongs_in(empty_project):
    _misfiled_decision(empty_project)
    messages = [f.message for f in doctor.diagnose(empty_project).findings if f.code == "malformed_entry"]
    assert any("dec-002" in m and "it is a decision id, so move the item to decisions.json" in m for m in messages)


# ---------------------------------------------------------------- 3. a status outside the list


def _constraint_with_status(root: Path, status: str, **extra) -> Service:
    svc = _service(root)
    svc.record("constraint", dict(rule="Never call the payment API from tests",
                                  reason="A test once charged a real card because the sandbox key was missing in CI."))
    path = root / ".context" / "constraints.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    items[0].update(status=status, **extra)
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    return svc


@pytest.mark.parametrize("written,read_as,extra", [
    ("retired", "deprecated", {"deprecated_reason": "the payment API has a safe test mode since 2026"}),
    ("Obsolete", "deprecated", {}),
    ("replaced", "superseded", {"superseded_by": "con-002"}),
])
def test_a_status_word_that_means_retired_is_read_as_retired(empty_project, written, read_as, extra):
    svc = _constraint_with_status(empty_project, written, **extra)
    answer = svc.get_context(id="con-001")
    assert answer["entry"]["status"] == read_as
    assert any(f"status {written!r}" in w and f"read as {read_as}" in w for w in answer["warnings"])
    assert svc.reload_constraints()["count"] == 0  # no longer enforced
    assert "Never call the payment API" not in svc.get_project_summary()["summary"]
    stored = json.loads((empty_project / ".context" / "constraints.json").read_text(encoding="utf-8"))
    assert stored[0]["status"] == written  # the person's word stays on disk
    messages = [f.message for f in doctor.diagnose(empty_project).findings]
    assert any(f"read as {read_as}" in m and f'write "{read_as}"' in m for m in messages)


def test_another_unknown_status_stays_active_and_every_answer_showing_it_says_so(empty_project):
    svc = _constraint_with_status(empty_project, "paused")
    said = 'status \'paused\' is not one of active, superseded, deprecated; it is read as active'
    answer = svc.get_context(query="may tests call the payment API")
    assert [r["entry"]["id"] for r in answer["results"]] == ["con-001"]
    assert any(said in w and "constraints.json" in w for w in answer["warnings"])
    assert any(said in w for w in svc.get_project_summary()["warnings"])
    assert any(said in w for w in svc.reload_constraints()["warnings"])
    messages = [f.message for f in doctor.diagnose(empty_project).findings]
    assert any(said in m and 'or "deprecated" if the entry is retired' in m for m in messages)
