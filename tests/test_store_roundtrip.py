"""An existing-format store loads, answers, and a write changes only what it should."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from context_keeper import model
from context_keeper.service import Service
from tests.conftest import REPO, read_json

LEGACY = REPO / "tests" / "fixtures" / "legacy_store"


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    target = tmp_path / "legacy"
    shutil.copytree(LEGACY, target)
    return target


@pytest.fixture
def svc(legacy: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(legacy)})


def test_old_entries_load_with_defaults_and_rationale_as_why(svc):
    answer = svc.get_context(id="dec-001")
    entry = answer["entry"]
    assert entry["why_chosen"].startswith("SQLite is in the standard library")
    assert entry["status"] == "active" and entry["origin"] == "agent"
    assert entry["alternatives"] == [] and entry["related_to"] == []


def test_suffixed_ids_are_found_and_counted_for_the_next_id(svc):
    assert svc.get_context(id="dec-013-a7f3")["entry"]["jira"] == "TM-88"
    recorded = svc.record("decision", {
        "summary": "Export jobs write to a temp dir and rename",
        "problem": "A killed export left half-written MBTiles files that looked complete to users.",
        "why_chosen": "Renaming a finished file into place is atomic on one filesystem, so users never see a partial export.",
    })
    assert recorded["id"] == "dec-014"


def test_a_write_changes_only_the_touched_entry(svc, legacy):
    path = legacy / ".context" / "decisions.json"
    before = read_json(path)
    svc.update_entry("dec-002", {"tags": ["workers"]})
    after = read_json(path)
    assert after[0] == before[0]  # the old entry keeps its shape: no defaults written into it
    assert after[1] == before[1]  # unknown fields survive untouched
    # The updated entry was written by an older version: the update marks it reviewed by this one.
    assert after[2] == {**before[2], "tags": ["workers"], "updated_at": after[2]["updated_at"],
                        "verified_at": after[2]["verified_at"], "schema_version": model.SCHEMA_VERSION}


def test_unknown_fields_and_config_keys_survive_rewrites(svc, legacy):
    svc.update_entry("con-001", {"hardness": "advisory"})
    stored = read_json(legacy / ".context" / "constraints.json")[0]
    assert stored["x-owner"] == "platform-team" and stored["hardness"] == "advisory"
    assert json.loads((legacy / ".context" / "config.json").read_text())["custom_key"] == {"keep": True}
    assert svc.get_project_summary()["summary"].startswith("Project memory for tilemill-legacy")


def test_ids_sort_by_number_with_suffixes_in_place():
    ids = ["dec-013-a7f3", "dec-2", "dec-1000", "dec-010", "dec-013"]
    assert sorted(ids, key=model.id_sort_key) == ["dec-2", "dec-010", "dec-013", "dec-013-a7f3", "dec-1000"]
    assert model.format_id(model.DECISION, 1000) == "dec-1000"
    assert model.format_id(model.DECISION, 7) == "dec-007"


def test_files_are_utf8_and_pretty_printed(svc, legacy):
    svc.record("constraint", {"rule": "Tile labels keep diacritics: São Paulo, Zürich, Kraków",
                              "reason": "Stripping accents produced wrong place names that users reported as bugs."})
    raw = (legacy / ".context" / "constraints.json").read_bytes().decode("utf-8")
    assert "São Paulo, Zürich, Kraków" in raw
    assert raw.startswith("[\n  {\n    \"id\"")
    assert json.loads(raw) == read_json(legacy / ".context" / "constraints.json")


def _items(path: Path) -> list[str]:
    from context_keeper.store import _split_array

    return _split_array(path.read_text(encoding="utf-8"))[1]


def test_an_update_lays_out_only_the_changed_entry(svc, legacy):
    path = legacy / ".context" / "decisions.json"
    before = _items(path)
    svc.update_entry("dec-002", {"tags": ["workers"]})
    after = _items(path)
    assert after[:2] == before[:2]  # hand-formatted ("tags": ["storage"] on one line), untouched
    changed = read_json(path)[2]
    assert after[2] == "  " + json.dumps(changed, indent=2, ensure_ascii=False).replace("\n", "\n  ")
    assert after[3:] == before[3:]


def _record(svc: Service, n: int) -> str:
    return svc.record("decision", {
        "summary": f"Decision number {n} about the tile renderer",
        "problem": "A problem statement that is long enough to pass the minimum length check.",
        "why_chosen": "A reason that is long enough to pass the minimum length check for why_chosen, surely.",
    })["id"]


def test_a_record_after_a_pulled_hand_edit_keeps_the_other_entries_bytes(tmp_path):
    # A teammate puts an entry's tags on one line by hand and the change arrives with a pull:
    # the file is no longer the one this process wrote. The next record must not reflow it.
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(tmp_path)})
    svc.init_project(str(tmp_path))
    first = _record(svc, 1)
    svc.update_entry(first, {"tags": ["logging", "observability"]})
    _record(svc, 2)
    path = tmp_path / ".context" / "decisions.json"
    text = path.read_text(encoding="utf-8")
    edited = text.replace('"tags": [\n      "logging",\n      "observability"\n    ]', '"tags": ["logging", "observability"]')
    assert edited != text
    path.write_text(edited, encoding="utf-8")
    before = _items(path)
    _record(svc, 3)
    after = _items(path)
    assert after[:len(before)] == before
    assert len(after) == len(before) + 1


def test_a_crlf_file_keeps_its_line_end_through_a_write(svc, legacy):
    path = legacy / ".context" / "decisions.json"
    source = path.read_text(encoding="utf-8")
    path.write_bytes(source.replace("\n", "\r\n").encode("utf-8"))
    _record(svc, 3)
    written = path.read_bytes().decode("utf-8")
    assert written.count("\n") == written.count("\r\n")  # the new entry's lines too
    # every old entry as it was, the CRLF included: git shows one entry added, not every line changed
    assert written.startswith(source.removesuffix("\n]\n").replace("\n", "\r\n"))


def test_a_file_of_mixed_line_ends_is_written_in_its_majority_style(svc, legacy):
    path = legacy / ".context" / "decisions.json"
    lines = path.read_text(encoding="utf-8").split("\n")
    few = len(lines) // 3  # the first third stays LF (an entry pasted from elsewhere), the rest CRLF
    path.write_bytes(("\n".join(lines[:few]) + "\n" + "\r\n".join(lines[few:])).encode("utf-8"))
    _record(svc, 3)
    written = path.read_bytes().decode("utf-8")
    assert written.count("\n") == written.count("\r\n")
    path.write_bytes(written.replace("\r\n", "\n").replace("\n", "\r\n", few).encode("utf-8"))  # now mostly LF
    _record(svc, 4)
    assert "\r" not in path.read_bytes().decode("utf-8")


def test_appends_keep_the_file_byte_identical_to_a_plain_json_dump(svc, legacy):
    for i in range(3):  # the first write lays the file out, later ones extend those bytes
        svc.record("constraint", {"rule": f"Rule number {i} about tiles", "reason": "A reason long enough to pass the minimum length check."})
    path = legacy / ".context" / "constraints.json"
    data = read_json(path)
    assert [c["id"] for c in data] == ["con-001", "con-002", "con-003", "con-004"]
    assert path.read_text(encoding="utf-8") == json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def test_a_store_created_by_its_first_write_ignores_its_bookkeeping(tmp_path):
    # No `init`: the first record creates .context/, with .lock and .last-good/ beside the entries.
    project = tmp_path / "fresh"
    project.mkdir()
    Service(env={}).record("decision", {
        "summary": "Use one Postgres database for orders",
        "problem": "Orders were split over two databases and reports disagreed about totals.",
        "why_chosen": "One database keeps order totals consistent and the reports simple to write and check.",
    }, project_dir=str(project))
    ignored = (project / ".context" / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".lock" in ignored and ".last-good/" in ignored
    assert (project / ".context" / "decisions.json").exists()
