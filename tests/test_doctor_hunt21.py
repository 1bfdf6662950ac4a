"""doctor and doctor --fix: each repair does what its finding says, and nothing else."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from context_keeper import doctor
from context_keeper.cli import main as cli_main
from tests.test_doctor import _codes, _new_project, _write_decisions, _write_store_file

FIX_TIME = datetime(2026, 12, 4, 2, 0, tzinfo=timezone.utc)


def test_giving_an_id_keeps_a_date_the_entry_has_in_another_form(tmp_path):
    project = _new_project(tmp_path / "epoch")
    # A hand-added entry dated the way its author's script dates things: an epoch number is a
    # date it has (doctor's bad_timestamp says how to write it), not one it lacks.
    path = _write_decisions(project, [{"summary": "Nightly export to the warehouse", "created_at": 1767225600,
                                       "updated_at": ["2026-01-02"]}])
    doctor.repair(doctor.diagnose(project), now=FIX_TIME)
    assert json.loads(path.read_text(encoding="utf-8")) == [
        {"id": "dec-001", "summary": "Nightly export to the warehouse", "created_at": 1767225600,
         "updated_at": ["2026-01-02"]}]


def test_giving_an_id_dates_an_entry_whose_dates_are_null_or_blank(tmp_path):
    project = _new_project(tmp_path / "blank")
    path = _write_decisions(project, [{"summary": "Nightly export to the warehouse", "created_at": None,
                                       "updated_at": " "}])
    doctor.repair(doctor.diagnose(project), now=FIX_TIME)
    stamp = "2026-12-04T02:00:00+00:00"
    assert json.loads(path.read_text(encoding="utf-8")) == [
        {"id": "dec-001", "summary": "Nightly export to the warehouse", "created_at": stamp, "updated_at": stamp}]
    assert "missing_id" not in _codes(doctor.diagnose(project))


def test_a_mended_file_gets_the_repairs_its_parse_error_hid_in_the_same_run(tmp_path):
    project = _new_project(tmp_path / "mended")
    (project / ".context" / ".last-good" / "decisions.json").unlink()
    path = project / ".context" / "decisions.json"
    path.write_text('[\n  {"id": "dec-001", "summary": "Postgres is the system of record"},\n'
                    '  {"summary": "Wave picking replaces order picking"},\n]\n', encoding="utf-8")
    report = doctor.repair(doctor.diagnose(project), now=FIX_TIME)
    assert report.exit_code == doctor.EXIT_OK
    fixed = [f.message for f in report.findings if f.code == "fixed"]
    assert any("had no id and is now dec-002" in message for message in fixed)
    assert "saved a last-good copy of decisions.json" in fixed
    after = path.read_bytes()
    assert _codes(doctor.diagnose(project)) == ["broken_copy"]
    doctor.repair(doctor.diagnose(project), now=FIX_TIME)
    assert path.read_bytes() == after  # a second --fix finds nothing left to do


def test_a_repaired_file_is_not_called_healthy_when_what_it_holds_needs_a_person(tmp_path):
    project = _new_project(tmp_path / "dangling")
    path = project / ".context" / "decisions.json"
    path.write_text('[\n  {"id": "dec-001", "summary": "Postgres is the system of record", "related_to": ["dec-042"]},\n]\n',
                    encoding="utf-8")
    report = doctor.repair(doctor.diagnose(project), now=FIX_TIME)
    assert report.exit_code == doctor.EXIT_WARNINGS
    assert "dangling_link" in _codes(report)
    assert "Healthy" not in doctor._render(report, fix=True)


def test_the_id_doctor_suggests_is_the_one_fix_gives_past_entries_the_file_lost(tmp_path):
    project = _new_project(tmp_path / "lost")
    # The last good copy holds dec-002, gone from the file (a stale editor copy saved over it):
    # no new entry takes that id, so "add dec-002 by hand" would collide with the way back.
    (project / ".context" / ".last-good" / "decisions.json").write_text(json.dumps([
        {"id": "dec-001", "summary": "Postgres is the system of record"},
        {"id": "dec-002", "summary": "Wave picking replaces order picking"}]), encoding="utf-8")
    path = _write_decisions(project, [{"id": "dec-001", "summary": "Postgres is the system of record"},
                                      {"summary": "Totes are weighed at packing"}])
    report = doctor.diagnose(project)
    [missing] = [f for f in report.findings if f.code == "missing_id"]
    assert 'Add "id": "dec-003" to it' in missing.message and "(dec-003)" in missing.fix
    doctor.repair(report, now=FIX_TIME)
    assert [item["id"] for item in json.loads(path.read_text(encoding="utf-8"))] == ["dec-001", "dec-003"]


def test_the_id_doctor_suggests_is_past_an_id_of_its_kind_filed_in_another_file(tmp_path):
    project = _new_project(tmp_path / "misfiled")
    _write_store_file(project, "constraints.json", [{"id": "dec-007", "summary": "Filed in the wrong file"}])
    path = _write_decisions(project, [{"id": "dec-001", "summary": "Postgres is the system of record"},
                                      {"summary": "Totes are weighed at packing"}])
    report = doctor.diagnose(project)
    [missing] = [f for f in report.findings if f.code == "missing_id"]
    assert 'Add "id": "dec-008" to it' in missing.message
    doctor.repair(report, now=FIX_TIME)
    assert [item["id"] for item in json.loads(path.read_text(encoding="utf-8"))] == ["dec-001", "dec-008"]


def test_what_fix_did_names_items_by_the_numbers_the_findings_gave(tmp_path):
    project = _new_project(tmp_path / "numbers")
    postgres = {"id": "dec-001", "summary": "Postgres is the system of record", "created_at": "2026-01-01T00:00:00+00:00"}
    _write_decisions(project, [
        postgres, postgres,  # an exact repeat, dropped: the items after it must keep their numbers
        {"id": "dec-002", "summary": "Wave picking replaces order picking", "created_at": "2026-01-02T00:00:00+00:00"},
        {"id": "dec-002", "summary": "Totes are weighed at packing", "created_at": "2026-01-03T00:00:00+00:00"},
        {"summary": "Labels print at the packing bench"}])
    report = doctor.diagnose(project)
    said = [f.message for f in report.findings if f.code in ("duplicate_id", "missing_id")]
    assert [m.split(":")[0] for m in said] == ["decisions.json item 2", "decisions.json item 4", "decisions.json item 5"]
    done = [f.message for f in doctor.repair(report, now=FIX_TIME).findings if f.code == "fixed"]
    assert done[0] == "decisions.json: dropped item 2, an exact repeat of dec-001 (item 1)"
    assert done[1].startswith('decisions.json: dec-002 "Totes are weighed at packing" (item 4) is now dec-003, '
                              'previous_id keeps dec-002; dec-002 stays with "Wave picking replaces order picking" (item 3)')
    assert done[2] == ('decisions.json: item 5, the decision whose summary is "Labels print at the packing bench", had '
                       'no id and is now dec-004')


def test_with_id_suffix_on_the_suggested_ids_carry_a_suffix_as_the_fix_gives(tmp_path):
    project = _new_project(tmp_path / "suffixed")
    (project / ".context" / "config.json").write_text(json.dumps({"id_suffix": True}), encoding="utf-8")
    path = _write_decisions(project, [{"id": "dec-001-a1b2", "summary": "Postgres is the system of record"},
                                      {"summary": "Totes are weighed at packing"}])
    [missing] = [f for f in doctor.diagnose(project).findings if f.code == "missing_id"]
    # Typed by hand without one, the id is the very collision between clones the suffix avoids.
    assert re.search(r'Add "id": "dec-002-[0-9a-f]{4}" to it', missing.message), missing.message
    assert missing.fix.startswith("give it the next free id (dec-002 with a random suffix, as id_suffix is on)")
    doctor.repair(doctor.diagnose(project), now=FIX_TIME)
    assert re.fullmatch(r"dec-002-[0-9a-f]{4}", json.loads(path.read_text(encoding="utf-8"))[1]["id"])


def test_fix_says_it_repaired_nothing_through_a_context_link_out_of_the_project(tmp_path, capsys):
    outside = _new_project(tmp_path / "elsewhere")
    path = _write_decisions(outside, [{"summary": "Totes are weighed at packing"}])
    before = path.read_bytes()
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".context").symlink_to(outside / ".context", target_is_directory=True)
    assert cli_main(["doctor", "--fix", "--project", str(project)]) == doctor.EXIT_ERRORS
    out = capsys.readouterr().out
    assert "`doctor --fix` repaired nothing" in out and "replace the link with a directory" in out
    assert path.read_bytes() == before


def test_fix_stopped_by_a_held_store_lock_still_reports_what_it_did(tmp_path, monkeypatch):
    import threading

    from filelock import FileLock

    from context_keeper.store import Store

    project = _new_project(tmp_path / "busy")
    path = project / ".context" / "decisions.json"
    path.write_text('[\n  {"id": "dec-001", "summary": "Postgres is the system of record"},\n'
                    '  {"summary": "Wave picking replaces order picking"},\n]\n', encoding="utf-8")
    held, done_waiting = threading.Event(), threading.Event()

    def other_writer() -> None:  # another process's long write, begun once the file is mended
        with FileLock(str(project / ".context" / ".lock")):
            held.set()
            done_waiting.wait(10)

    real_fix_ids = doctor._fix_ids

    def lock_taken_between_repairs(*args):
        threading.Thread(target=other_writer).start()
        held.wait(10)
        return real_fix_ids(*args)

    real_locked = Store.locked
    monkeypatch.setattr(doctor, "_fix_ids", lock_taken_between_repairs)
    monkeypatch.setattr(Store, "locked", lambda self, timeout=0.2: real_locked(self, timeout))
    try:
        report = doctor.repair(doctor.diagnose(project), now=FIX_TIME)
    finally:
        done_waiting.set()
    assert report.exit_code == doctor.EXIT_ERRORS
    assert any(f.code == "fixed" and "mended it in place" in f.message for f in report.findings)
    [stopped] = [f for f in report.findings if f.code == "fix_stopped"]
    assert "held by another process" in stopped.message and "doctor --fix` again" in stopped.message
    assert "missing_id" in _codes(report)  # left for the next run, and said to be


def test_fix_stopped_by_a_full_disk_still_reports_what_it_did(tmp_path, monkeypatch):
    import errno

    project = _new_project(tmp_path / "full")
    (project / ".context" / ".last-good" / "constraints.json").unlink()
    path = _write_decisions(project, [{"summary": "Wave picking replaces order picking"}])

    def full(target, data, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    monkeypatch.setattr(doctor, "atomic_write_bytes", full)  # the last-good copy, after the id was given
    report = doctor.repair(doctor.diagnose(project), now=FIX_TIME)
    assert json.loads(path.read_text(encoding="utf-8"))[0]["id"] == "dec-001"
    assert any(f.code == "fixed" and "is now dec-001" in f.message for f in report.findings)
    [stopped] = [f for f in report.findings if f.code == "fix_stopped"]
    assert "No space left on device" in stopped.message and report.exit_code == doctor.EXIT_ERRORS


def test_the_broken_copy_a_repair_just_saved_is_named_with_how_to_delete_it(tmp_path):
    project = _new_project(tmp_path / "aside")
    (project / ".context" / "decisions.json").write_text(
        '[\n  {"id": "dec-001", "summary": "Postgres is the system of record"},\n]\n', encoding="utf-8")
    report = doctor.repair(doctor.diagnose(project), now=FIX_TIME)
    [note] = [f.message for f in report.findings if f.code == "broken_copy"]
    name = "decisions.json.broken-20261204T020000Z"
    assert note == (f".context/{name} is the broken file a repair saved aside: once nothing in it is needed, "
                    f"delete it (rm .context/{name})")


def test_each_id_doctor_suggests_is_suggested_once_and_fix_gives_the_same(tmp_path):
    project = _new_project(tmp_path / "suggested")
    path = project / ".context" / "decisions.json"
    # Both sides of a merge kept in one object without an id, a usable entry, one without an id.
    path.write_text('[\n  {"summary": "Ship from the nearest warehouse", "summary": "Ship from the cheapest warehouse"},\n'
                    '  {"id": "dec-001", "summary": "Postgres is the system of record"},\n'
                    '  {"summary": "Totes are weighed at packing"}\n]\n', encoding="utf-8")
    report = doctor.diagnose(project)
    [missing] = [f.message for f in report.findings if f.code == "missing_id"]
    [split] = [f.message for f in report.findings if f.code == "repeated_keys"]
    assert 'Add "id": "dec-002" to it' in missing
    assert "give the second its own id (dec-003 is free)" in split
    doctor.repair(report, now=FIX_TIME)
    assert json.loads(path.read_text(encoding="utf-8"))[2]["id"] == "dec-002"
