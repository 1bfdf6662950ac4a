"""Write-side defects found in round 16's hunt, each test failing before its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from context_keeper.errors import InvalidInput, NotAStoreFile, StoreError
from context_keeper.service import Service


def _decision(n: int) -> dict:
    return dict(summary=f"Decision number {n}", problem="A problem statement long enough to pass the forty char minimum.",
                why_chosen="A reason long enough to pass the sixty character minimum for why_chosen, honestly.")


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    Service(env={}).init_project(str(tmp_path))
    return tmp_path


def _svc(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)


# ------------------------------------------------------------------ what a record after a hand edit keeps

def test_an_update_after_a_record_keeps_every_untouched_entry_as_written(fresh):
    first = _svc(fresh)
    first.record("decision", _decision(1))
    first.record("decision", _decision(2))
    path = fresh / ".context" / "decisions.json"
    # Both sides of a merge kept in one object (doctor: split it by hand), and dec-002 on one line.
    text = path.read_text(encoding="utf-8").replace(
        '"summary": "Decision number 1"', '"summary": "OURS: number one",\n    "summary": "Decision number 1"')
    entries = json.loads(text)
    start = text.index('  {\n    "id": "dec-002"')
    end = text.index("\n  }", start) + 4
    text = text[:start] + "  " + json.dumps(entries[1]) + text[end:]
    path.write_text(text, encoding="utf-8")
    first.record("decision", _decision(3))
    second = _svc(fresh)  # another server process, or a restart
    second.record("decision", _decision(4))  # an append: the parts on disk are reused
    second.update_entry("dec-003", {"tags": ["x"]})  # not an append: every item needs its text
    after = path.read_text(encoding="utf-8")
    assert "OURS: number one" in after and '"summary": "Decision number 1"' in after
    assert "  " + json.dumps(entries[1]) in after


# ------------------------------------------------------------------ a store file deleted by mistake

def test_a_deleted_store_file_with_entries_in_its_last_good_copy_is_not_started_again(fresh):
    svc = _svc(fresh)
    for n in range(1, 4):
        svc.record("decision", _decision(n))
    os.remove(fresh / ".context" / "decisions.json")
    with pytest.raises(NotAStoreFile, match="is missing, but its last good copy"):
        svc.record("decision", _decision(9))
    backup = json.loads((fresh / ".context" / ".last-good" / "decisions.json").read_text(encoding="utf-8"))
    assert [e["id"] for e in backup] == ["dec-001", "dec-002", "dec-003"]
    answer = svc.get_context(query="decision number")
    assert {r["entry"]["id"] for r in answer["results"]} >= {"dec-001", "dec-002", "dec-003"}
    assert any("is missing" in w for w in answer["warnings"])
    from context_keeper import doctor

    assert any(f.code == "not_a_file" and "is missing" in f.message for f in doctor.diagnose(fresh).findings)
    # Removed on purpose: once the copy goes too, the store starts again.
    os.remove(fresh / ".context" / ".last-good" / "decisions.json")
    assert svc.record("decision", _decision(9))["id"] == "dec-001"


def test_a_store_file_never_written_is_created_as_before(fresh):
    os.remove(fresh / ".context" / "pipelines.json")
    svc = _svc(fresh)
    assert svc.record("pipeline", dict(name="Ship it", purpose="Release the service to production safely with checks.",
                                       steps=["build", "deploy"]))["id"] == "pipe-001"


# ------------------------------------------------------------------ links kept consistent

def test_giving_a_superseded_entry_another_successor_releases_the_first(fresh):
    svc = _svc(fresh)
    old = svc.record("decision", _decision(1))["id"]
    first = svc.record("decision", _decision(2), supersedes=[old])["id"]
    other = svc.record("decision", _decision(3))["id"]
    answer = svc.update_entry(old, {"superseded_by": other})
    assert svc.get_context(id=first)["entry"]["supersedes"] == []
    assert answer["also_updated"] == [f"{first}: no longer lists {old} in supersedes"]


def test_retiring_a_superseded_entry_without_a_successor_releases_it(fresh):
    svc = _svc(fresh)
    old = svc.record("decision", _decision(1))["id"]
    first = svc.record("decision", _decision(2), supersedes=[old])["id"]
    svc.update_entry(old, {"status": "deprecated", "deprecated_reason": "no longer true", "superseded_by": None})
    assert svc.get_context(id=first)["entry"]["supersedes"] == []


def test_a_retired_entry_cannot_be_named_as_a_successor(fresh):
    svc = _svc(fresh)
    old = svc.record("decision", _decision(1))["id"]
    retired = svc.record("decision", _decision(2))["id"]
    svc.deprecate_entry(retired, "dropped entirely")
    with pytest.raises(InvalidInput, match="is deprecated, so nothing current would replace"):
        svc.deprecate_entry(old, "replaced", superseded_by=retired)
    assert svc.get_context(id=old)["entry"]["status"] == "active"


@pytest.mark.parametrize(("kind", "field"), [("decision", "status"), ("constraint", "hardness"), ("constraint", "origin")])
def test_null_for_a_choice_field_is_refused_not_read_as_the_default(fresh, kind, field):
    svc = _svc(fresh)
    if kind == "decision":
        entry_id = svc.record("decision", _decision(1))["id"]
        svc.deprecate_entry(entry_id, "no longer true")
    else:
        entry_id = svc.record("constraint", dict(rule="Prefer small pull requests", hardness="advisory", origin="user",
                                                 reason="Reviews of big pull requests took days and missed bugs."))["id"]
    before = svc.get_context(id=entry_id)["entry"]
    with pytest.raises(InvalidInput, match=f"{field}: null is not allowed; use one of"):
        svc.update_entry(entry_id, {field: None})
    assert svc.get_context(id=entry_id)["entry"][field] == before[field]


# ------------------------------------------------------------------ bounds

BIG = "x " * 15_000  # 30,000 characters, over the 20,000 of one text field


@pytest.mark.parametrize("steps", [[{"action": "build", "output": BIG}], [{"action": "build", "note": BIG}]])
def test_a_step_is_bounded_like_any_text_field(fresh, steps):
    with pytest.raises(InvalidInput, match="steps: step 1"):
        _svc(fresh).record("pipeline", dict(name="Ship it", purpose="Release the service to production safely.",
                                            steps=steps))


@pytest.mark.parametrize("alternative", [{"option": BIG}, {"option": "a queue", "reason_rejected": BIG},
                                         {"option": "a queue", "note": BIG}])
def test_an_alternative_is_bounded_like_any_text_field(fresh, alternative):
    with pytest.raises(InvalidInput, match="alternatives: item 1"):
        _svc(fresh).record("decision", dict(_decision(1), alternatives=[alternative]))


def test_a_number_json_cannot_carry_back_is_not_written_as_infinity(fresh):
    svc = _svc(fresh)
    svc.record("decision", _decision(1))
    path = fresh / ".context" / "decisions.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"summary"', '"weight": 1e400, "summary"', 1),
                    encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(StoreError, match="would be written back as Infinity"):
        svc.update_entry("dec-001", {"tags": ["x"]})
    assert path.read_bytes() == before
