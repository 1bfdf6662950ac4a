"""doctor and doctor --fix: each repair does what its finding says, and nothing else."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from context_keeper import doctor
from tests.test_doctor import _codes, _new_project, _write_decisions

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
