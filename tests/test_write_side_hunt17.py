"""Write-side defects found in round 17, each test failing before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper.errors import InvalidInput
from context_keeper.service import Service

PURPOSE = "Ship a signed build to the store without skipping the smoke tests first."


@pytest.fixture
def svc(tmp_path: Path) -> Service:
    Service(env={}).init_project(str(tmp_path))
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(tmp_path)}, hook_cache_delay=None)


def _stored_steps(svc: Service, entry_id: str) -> list[dict]:
    return svc.get_context(id=entry_id)["entry"]["steps"]


def test_steps_given_out_of_order_are_refused_not_silently_renumbered(svc):
    steps = [{"order": 2, "action": "Upload the signed build"}, {"order": 1, "action": "Run the smoke tests"}]
    with pytest.raises(InvalidInput) as caught:
        svc.record("pipeline", {"name": "Release", "purpose": PURPOSE, "steps": steps})
    assert caught.value.field == "steps"
    assert "step 2 has order 1" in str(caught.value) and "order they run" in str(caught.value)
    assert json.loads((Path(svc.project_root()) / ".context" / "pipelines.json").read_text()) == []


def test_steps_in_order_keep_that_order_numbered_by_position(svc):
    steps = [{"order": 10, "action": "Run the smoke tests"}, "Sign the build", {"order": 30, "action": "Upload it"}]
    out = svc.record("pipeline", {"name": "Release", "purpose": PURPOSE, "steps": steps})
    assert [(s["order"], s["action"]) for s in _stored_steps(svc, out["id"])] == [
        (1, "Run the smoke tests"), (2, "Sign the build"), (3, "Upload it")]


def test_an_update_reordering_steps_by_their_numbers_is_refused(svc):
    out = svc.record("pipeline", {"name": "Release", "purpose": PURPOSE, "steps": ["Run the smoke tests", "Upload it"]})
    swapped = [{"order": 2, "action": "Run the smoke tests"}, {"order": 1, "action": "Upload it"}]
    with pytest.raises(InvalidInput, match="step 2 has order 1"):
        svc.update_entry(out["id"], {"steps": swapped})
    assert [s["action"] for s in _stored_steps(svc, out["id"])] == ["Run the smoke tests", "Upload it"]


# ------------------------------------------------------------------ a hand edit right after a write

def test_a_file_renamed_over_the_store_right_after_a_write_is_seen_and_kept(svc, monkeypatch):
    from context_keeper import fsio

    svc.record("decision", {"summary": "First decision here", "problem": "P" * 45, "why_chosen": "W" * 65})
    path = Path(svc.project_root()) / ".context" / "decisions.json"
    real_fsync_dir = fsio.fsync_dir
    edited = []

    def fsync_dir_then_edit(directory):
        real_fsync_dir(directory)
        if not edited and path.exists() and "Second decision" in path.read_text(encoding="utf-8"):
            # An editor or git saving its version (by rename) just after the tool's rename.
            entries = json.loads(path.read_text(encoding="utf-8"))
            entries[0].update(summary="First decision, reworded by hand", owner="alice")
            side = path.with_name("edited.json")
            side.write_text(json.dumps(entries, indent=2), encoding="utf-8")
            side.replace(path)
            edited.append(True)

    monkeypatch.setattr(fsio, "fsync_dir", fsync_dir_then_edit)
    svc.record("decision", {"summary": "Second decision here", "problem": "P" * 45, "why_chosen": "W" * 65})
    monkeypatch.setattr(fsio, "fsync_dir", real_fsync_dir)
    assert edited
    listed = svc.query_entries(types=["decisions"])["results"]
    assert listed[0]["entry"]["summary"] == "First decision, reworded by hand"
    svc.record("decision", {"summary": "Third decision here", "problem": "P" * 45, "why_chosen": "W" * 65})
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert (on_disk[0]["summary"], on_disk[0].get("owner")) == ("First decision, reworded by hand", "alice")
    assert [e["summary"] for e in on_disk][1:] == ["Second decision here", "Third decision here"]


# ------------------------------------------------------------------ the store lock and readers

def test_a_write_waiting_for_another_process_lock_does_not_stall_reads(svc, monkeypatch):
    import threading

    from filelock import FileLock

    svc.record("decision", {"summary": "First decision here", "problem": "P" * 45, "why_chosen": "W" * 65})
    store = svc.store()
    held = FileLock(str(store.dir / ".lock"))  # another holder of the store lock (its own descriptor)
    held.acquire()
    waiting = threading.Event()
    real_acquire = FileLock.acquire

    def acquire(self, *args, **kwargs):
        if self is not held:
            waiting.set()
        return real_acquire(self, *args, **kwargs)

    monkeypatch.setattr(FileLock, "acquire", acquire)
    writer = threading.Thread(target=svc.record, args=("decision", {
        "summary": "Second decision here", "problem": "P" * 45, "why_chosen": "W" * 65}))
    writer.start()
    try:
        assert waiting.wait(20)
        answers = []
        reader = threading.Thread(target=lambda: answers.append(svc.query_entries(types=["decisions"])))
        reader.start()
        reader.join(20)  # a deadlock guard, not a speed check: the read needs no lock at all
        assert answers and answers[0]["total_matches"] == 1
    finally:
        held.release()
        writer.join(30)
    assert svc.query_entries(types=["decisions"])["total_matches"] == 2


def test_a_lock_file_that_is_a_directory_is_named_as_such(svc):
    from context_keeper.errors import StoreError

    lock = Path(svc.project_root()) / ".context" / ".lock"
    if lock.exists():
        lock.unlink()
    lock.mkdir()
    with pytest.raises(StoreError, match=r"\.lock is a directory where context-keeper keeps a file: remove it \(rmdir "):
        svc.record("decision", {"summary": "First decision here", "problem": "P" * 45, "why_chosen": "W" * 65})


# ------------------------------------------------------------------ merge_into, rationale, config, export paths

def _write(svc: Service, name: str, entries: list[dict]) -> None:
    (Path(svc.project_root()) / ".context" / name).write_text(json.dumps(entries, indent=2), encoding="utf-8")


REASON = "Raw SQL in handlers led to an injection incident in the admin panel last year."


def test_merge_into_a_global_constraint_keeps_it_global(svc):
    _write(svc, "constraints.json", [
        {"id": "con-001", "rule": "No raw SQL in request handlers", "reason": REASON, "scope": ""},
        {"id": "con-002", "rule": "Never drop a column in the release that stops using it", "reason": REASON,
         "scope": "migrations/"}])
    svc.deprecate_entry("con-002", merge_into="con-001")
    survivor = svc.get_context(id="con-001")["entry"]
    assert survivor["scope"] in ("", "global")
    assert "con-001" in [i["entry"]["id"] for i in svc.query_entries(scope="src/handlers/orders.py")["results"]]


def test_merge_into_a_pipeline_without_steps_takes_the_merged_steps(svc):
    _write(svc, "pipelines.json", [
        {"id": "pipe-001", "name": "Deploy", "purpose": PURPOSE, "tags": ["deploy"]},
        {"id": "pipe-002", "name": "Deploy v2", "purpose": PURPOSE, "tags": ["deploy", "prod"],
         "steps": [{"order": 1, "action": "run migrations"}, {"order": 2, "action": "deploy"}]}])
    svc.deprecate_entry("pipe-002", merge_into="pipe-001")
    survivor = svc.get_context(id="pipe-001")["entry"]
    assert [s["action"] for s in survivor["steps"]] == ["run migrations", "deploy"]
    assert survivor["tags"] == ["deploy", "prod"]


def test_rationale_updates_the_reason_answers_show_and_leaves_no_hidden_copy(svc):
    _write(svc, "decisions.json", [{
        "id": "dec-001", "summary": "Use SQLite for the cache",
        "problem": "The CLI needs a local cache that survives restarts and handles concurrent readers.",
        "rationale": "SQLite is in the standard library and needs no server process to run at all, ever."}])
    svc.update_entry("dec-001", {"why_chosen": "SQLite is in the standard library, handles concurrent readers and needs no server."})
    raw = json.loads((Path(svc.project_root()) / ".context" / "decisions.json").read_text(encoding="utf-8"))[0]
    assert "rationale" not in raw
    new = "We switched the reasoning: LMDB benchmarks lost to SQLite by 3x on our read-heavy workload."
    svc.update_entry("dec-001", {"rationale": new})
    assert svc.get_context(id="dec-001")["entry"]["why_chosen"] == new
    with pytest.raises(InvalidInput, match="not both"):
        svc.update_entry("dec-001", {"rationale": new, "why_chosen": new})


def test_an_unknown_update_field_lists_every_field_update_entry_takes(svc):
    out = svc.record("decision", {"summary": "First decision here", "problem": "P" * 45, "why_chosen": "W" * 65})
    with pytest.raises(InvalidInput) as caught:
        svc.update_entry(out["id"], {"sumary": "typo"})
    listed = str(caught.value).split("Valid fields: ")[1]
    assert {"summary", "verified_sha", "rationale", "deprecated_reason"} <= set(listed.split(", "))
    assert "created_at" not in listed


def _config(svc: Service, values: dict) -> None:
    (Path(svc.project_root()) / ".context" / "config.json").write_text(json.dumps(values), encoding="utf-8")


def test_a_negative_stale_threshold_in_config_falls_back_with_a_warning(svc):
    _config(svc, {"stale_threshold_days": -5})
    answer = svc.prune_stale()
    assert answer["threshold_days"] == 30
    assert "stale_threshold_days" in answer["warnings"][0] and "config.json" in answer["warnings"][0]
    with pytest.raises(InvalidInput, match="days must be zero or more"):
        svc.prune_stale(days=-1)


@pytest.mark.parametrize("setting", [{"similar_threshold": 5}, {"id_suffix": "true"}])
def test_a_record_under_an_unusable_setting_says_so(svc, setting):
    _config(svc, setting)
    out = svc.record("decision", {"summary": "First decision here", "problem": "P" * 45, "why_chosen": "W" * 65})
    (key,) = setting
    assert any(f'"{key}"' in w for w in out["warnings"])


def test_similar_entries_still_found_with_an_out_of_range_threshold(svc):
    first = {"summary": "Scanner app saves its offline scan journal atomically",
             "problem": "Handhelds queue scans locally while out of Wi-Fi range and a dead battery truncated the file.",
             "why_chosen": "Write to a temp file, fsync it, then rename over the real file, so the journal is always complete on disk."}
    svc.record("decision", first)
    _config(svc, {"similar_threshold": 5})
    again = svc.record("decision", {**first, "summary": "Offline scan journal is saved atomically by the scanner app"})
    assert again.get("similar_entries")


@pytest.mark.parametrize("path, said", [
    ("~/decisions.md", "starts with '~'"),
    ("d" * 300 + ".md", "file systems allow at most 255"),
    ("/".join(["d" * 200] * 30) + "/x.md", "cannot be used"),
])
def test_export_paths_that_cannot_work_are_refused_by_name(svc, path, said):
    from context_keeper.errors import UnsafePath

    with pytest.raises(UnsafePath, match=said) as caught:
        svc.export_markdown(path)
    assert caught.value.field == "path" and len(str(caught.value)) < 400
    assert not (Path(svc.project_root()) / "~").exists()


# ------------------------------------------------------------------ ids typed in another case

def test_an_id_typed_in_capitals_still_counts_for_the_next_id(svc):
    for n in range(3):
        svc.record("decision", {"summary": f"Decision number {n}", "problem": "P" * 45, "why_chosen": "W" * 65})
    path = Path(svc.project_root()) / ".context" / "decisions.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    entries.append({"id": "DEC-004", "summary": "Send SMS through Twilio", "problem": "P" * 45, "why_chosen": "W" * 65})
    path.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    from context_keeper.errors import NotFound

    with pytest.raises(NotFound, match="DEC-004 is in .context/decisions.json but cannot be used"):
        svc.update_entry("DEC-004", {"tags": ["sms"]})
    with pytest.raises(NotFound, match="is in .context/decisions.json but cannot be used"):
        svc.get_context(id="DEC-004")
    # doctor's advice (write it "dec-004") must stay good: the next record does not take that id.
    assert svc.record("decision", {"summary": "Queue jobs with RabbitMQ", "problem": "P" * 45,
                                   "why_chosen": "W" * 65})["id"] == "dec-005"


# ------------------------------------------------------------------ init names, CLI wording

def test_init_refuses_a_blank_project_name(tmp_path):
    with pytest.raises(InvalidInput, match="name: give the project a name"):
        Service(env={}).init_project(str(tmp_path), project_name="   ")
    assert not (tmp_path / ".context").exists()
    Service(env={}).init_project(str(tmp_path), project_name="  Packwise ")
    assert json.loads((tmp_path / ".context" / "config.json").read_text())["project_name"] == "Packwise"


def test_the_cli_names_its_own_flag_when_no_project_is_found(tmp_path, monkeypatch, capsys):
    from context_keeper import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONTEXT_KEEPER_PROJECT", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    assert cli.main(["get", "anything"]) == 4
    said = capsys.readouterr().err
    assert "pass --project DIR" in said and "project_dir" not in said


def test_an_unreadable_compaction_report_is_not_reported_as_none_yet(svc):
    from context_keeper.errors import StoreError

    assert svc.get_compaction_report()["status"] == "no_report"
    path = Path(svc.project_root()) / ".context" / "compaction_report.json"
    path.write_text('{"timestamp": "2026-01-01T00:00:00+00:00", "status": "discrepancies_found", "missing_entries": [{"ty',
                    encoding="utf-8")
    with pytest.raises(StoreError, match="compaction_report.json exists but cannot be read"):
        svc.get_compaction_report()


def test_uninstall_help_describes_removing_not_installing(capsys):
    from context_keeper import cli

    with pytest.raises(SystemExit):
        cli.main(["uninstall", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the hooks are removed from .claude/settings.local.json" in text
    assert "the hooks go to" not in text and "--command-style" not in text
