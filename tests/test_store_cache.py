"""Reads come from memory until the file changes on disk; hand edits are seen on the next call."""

from __future__ import annotations

import json
import os

from context_keeper import store as store_module
from context_keeper.model import DECISION
from context_keeper.store import Store


def test_unchanged_files_are_not_reparsed(project, monkeypatch):
    calls = []
    real = store_module._parse_file
    monkeypatch.setattr(store_module, "_parse_file", lambda *a: calls.append(a[1].name) or real(*a))
    store = Store(project)
    first = store.state(DECISION)
    second = store.state(DECISION)
    assert first is second
    assert calls == ["decisions.json"]


def test_a_hand_edit_is_seen_on_the_next_call(project):
    store = Store(project)
    path = project / ".context" / "decisions.json"
    assert store.state(DECISION).entries_by_id["dec-001"]["summary"].startswith("Postgres")
    data = json.loads(path.read_text(encoding="utf-8"))
    data[0]["summary"] = "Postgres remains the system of record (edited by hand)"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    assert store.state(DECISION).entries_by_id["dec-001"]["summary"].endswith("(edited by hand)")


def test_another_process_write_is_seen(project):
    ours, theirs = Store(project), Store(project)
    ours.state(DECISION)
    with theirs.transaction() as txn:
        f = txn.file(DECISION)
        raw = f.raw_item("dec-003")
        raw["tags"] = ["waves", "edited-elsewhere"]
        f.put("dec-003", raw)
    assert ours.state(DECISION).entries_by_id["dec-003"]["tags"] == ["waves", "edited-elsewhere"]


def test_own_write_updates_the_cache_without_reparsing(project, monkeypatch):
    store = Store(project)
    store.state(DECISION)
    calls = []
    real = store_module._parse_file
    monkeypatch.setattr(store_module, "_parse_file", lambda *a: calls.append(1) or real(*a))
    with store.transaction() as txn:
        f = txn.file(DECISION)
        raw = f.raw_item("dec-003")
        raw["tags"] = ["x"]
        f.put("dec-003", raw)
    assert store.state(DECISION).entries_by_id["dec-003"]["tags"] == ["x"]
    assert calls == []
    assert os.path.exists(project / ".context" / ".last-good" / "decisions.json")


def test_a_pinned_block_sees_the_store_as_it_began(project):
    store = Store(project)
    path = project / ".context" / "decisions.json"
    with store.pinned():
        before = store.state(DECISION)
        data = json.loads(path.read_text(encoding="utf-8"))
        data[0]["summary"] = "Postgres remains the system of record (edited by hand)"
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
        assert store.state(DECISION) is before
        with store.pinned():
            assert store.state(DECISION) is before
        assert store.state(DECISION) is before  # the inner block ending leaves the outer one's reads
    assert store.state(DECISION).entries_by_id["dec-001"]["summary"].endswith("(edited by hand)")


def test_one_answer_reads_each_store_file_once(project, monkeypatch):
    from context_keeper.service import Service

    stamped = []
    real = store_module._file_stamp
    monkeypatch.setattr(store_module, "_file_stamp", lambda path: stamped.append(path.name) or real(path))
    Service(env={}).get_context(project_dir=str(project), query="how do we retry carrier label purchases?")
    assert sorted(stamped) == ["constraints.json", "decisions.json", "pipelines.json"]
