"""``context-keeper get`` searches the index snapshot the hooks keep instead of building one per call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper import cli
from context_keeper.search import SearchIndex, snapshot
from context_keeper.service import Service

QUESTION = "carrier API calls keep timing out"


def _get(capsys, project: Path, *extra: str) -> str:
    assert cli.main(["get", QUESTION, "--project", str(project), *extra]) == 0
    return capsys.readouterr().out


def _no_building(monkeypatch) -> None:
    def refuse(*_args, **_kwargs):
        raise AssertionError("the index was built, not restored from the snapshot")

    monkeypatch.setattr(SearchIndex, "replace_kind", refuse)


def test_get_saves_the_snapshot_and_the_next_get_restores_it(project: Path, capsys, monkeypatch):
    first = _get(capsys, project)
    assert "dec-008" in first
    assert (project / ".context" / snapshot.FILE).is_file()
    _no_building(monkeypatch)
    assert _get(capsys, project) == first
    assert json.loads(_get(capsys, project, "--json"))["results"][0]["entry"]["id"] == "dec-008"


def test_get_after_a_write_searches_the_store_as_it_is_now(project: Path, capsys):
    _get(capsys, project)  # leaves a snapshot of the store before the write
    new_id = Service(env={}, hook_cache_delay=None).record("decision", {
        "summary": "Carrier API calls time out after 4 s and are retried through the outbox",
        "problem": "Carrier APIs keep timing out at peak and block the packing station",
        "why_chosen": "The outbox retries in the background, so a slow carrier never holds the packing station or its queue",
    }, project_dir=str(project))["id"]
    assert new_id in _get(capsys, project)


def test_get_survives_a_damaged_snapshot(project: Path, capsys, monkeypatch):
    first = _get(capsys, project)
    path = project / ".context" / snapshot.FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    data["postings"] = {term: ["not,slots", "x"] for term in data["postings"]}  # fails only when read
    path.write_text(json.dumps(data), encoding="utf-8")
    assert _get(capsys, project) == first


def test_get_in_a_read_only_store_still_answers(project: Path, capsys, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(snapshot, "save", refuse)
    assert "dec-008" in _get(capsys, project)
    assert not (project / ".context" / snapshot.FILE).exists()


@pytest.mark.parametrize("bad", ["--budget", "--min-relevance"])
def test_bad_input_is_reported_not_retried_into_a_traceback(project: Path, capsys, bad: str):
    assert cli.main(["get", QUESTION, "--project", str(project), bad, "-5"]) != 0
    assert "Traceback" not in capsys.readouterr().err


def test_a_snapshot_of_a_missing_files_last_good_copy_follows_the_copy(project: Path):
    from context_keeper.oneshot import OneShotService

    Service(env={}, hook_cache_delay=None).record("decision", {  # leaves .last-good/decisions.json
        "summary": "Label printers are polled every 30 s for their paper level",
        "problem": "Packers found out about an empty label printer only when a print failed",
        "why_chosen": "Polling is cheap and the printers have no push channel we could subscribe to at all",
    }, project_dir=str(project))
    copy = project / ".context" / ".last-good" / "decisions.json"
    assert copy.is_file()
    (project / ".context" / "decisions.json").unlink()  # a branch without the file

    def ask(query: str) -> list[str]:
        svc = OneShotService(env={}, hook_cache_delay=None)
        result = svc.get_context(query=query, project_dir=str(project))
        svc.save_search_state()
        return [r["entry"].get("summary", "") for r in result["results"] if not r.get("weak_match")]

    assert any("paper level" in s for s in ask("label printer paper level"))
    text = copy.read_text(encoding="utf-8").replace("paper level", "thermal ribbon stock")  # same ids, new words
    copy.write_text(text, encoding="utf-8")
    assert any("thermal ribbon stock" in s for s in ask("thermal ribbon stock"))


def test_get_writes_no_gitignore_into_a_store_without_one(project: Path, capsys):
    # One rule with the hooks and the tools' writes: in git, the patterns go to .git/info/exclude
    # (tests/test_docs_claims_hunt19.py runs git); a .gitignore here could block a checkout.
    (project / ".context" / ".gitignore").unlink()  # a store made by hand or by an older version
    before = {p.name for p in (project / ".context").iterdir()}
    assert "dec-008" in _get(capsys, project)
    added = {p.name for p in (project / ".context").iterdir()} - before
    assert "search_index_state.json" in added and added <= {"search_state.json", "search_index_state.json"}
