"""A question that names an entry id among other words answers with that entry first, as a
query that is only the id does; the id's pieces ("dec", "007") are not searched as words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper import cli
from context_keeper.service import Service
from tests.hook_helpers import hook_env, injected, payload, run_hook


def _ranked(answer: dict) -> list[str]:
    return [r["entry"]["id"] for r in answer["results"] if not r.get("related")]


@pytest.mark.parametrize("query", ["why dec-007?", "Why DEC-7 and not something simpler?",
                                   "what does dec-7 say about the journal"])
def test_a_question_naming_an_id_answers_with_that_entry_first(service, query):
    # Before: dec-019 (which cites other ids, so shares "dec") came first at 0.57; dec-007 was absent.
    answer = service.get_context(query=query)
    first = answer["results"][0]
    assert first["entry"]["id"] == "dec-007" and first["relevance"] == 1.0
    assert answer["top_relevance"] == 1.0 and "no_confident_match" not in answer


@pytest.mark.parametrize(("query", "types"), [("why dec-007?", None), ("dec-007", None),
                                              ("why dec-007?", ["decisions"])])
def test_the_ids_pieces_are_not_searched_as_words(service, query, types):
    # "why" is a common word: nothing is left to search, so no other entry is ranked for "dec"
    # (before: every entry citing an id, dec-019 first), nor listed for passing the filter.
    answer = service.get_context(query=query, types=types)
    assert _ranked(answer) == ["dec-007"] and "guidance" not in answer


def test_the_rest_of_the_question_ranks_the_other_results(service):
    answer = service.get_context(query="please re-read con-002 before changing the scanner")
    alone = service.get_context(query="please re-read before changing the scanner")
    assert _ranked(answer)[0] == "con-002"
    others = [i for i in _ranked(alone) if i != "con-002"]
    assert _ranked(answer)[1:4] == others[:3]


def test_a_suffixed_id_in_another_case_is_found(service):
    answer = service.get_context(query="is DEC-13-A7F3 still how handhelds log in?")
    assert answer["results"][0]["entry"]["id"] == "dec-013-a7f3" and answer["top_relevance"] == 1.0


def test_an_id_inside_a_path_or_a_longer_word_names_nothing(service):
    answer = service.get_context(query="the scanner crashes in src/dec-7.py and codec-7")
    assert answer["results"] and answer["results"][0]["entry"]["id"] != "dec-007"


def test_a_question_naming_only_an_unknown_id_is_answered_as_the_bare_id_is(service):
    answer = service.get_context(query="why dec-999?")
    assert answer["no_confident_match"] is True and answer["top_relevance"] == 0.0
    assert answer["guidance"].startswith("No entry has the id dec-999")


def test_an_unknown_id_beside_other_words_is_warned_about_and_the_words_searched(service):
    answer = service.get_context(query="carrier retries with backoff, see dec-999")
    assert "dec-008" in _ranked(answer)[:3]
    assert any(w.startswith("No entry has the id dec-999") for w in answer.get("warnings", []))


def test_a_named_entry_the_filters_leave_out_is_warned_about(service):
    answer = service.get_context(query="is dec-007 about the scan journal", types=["constraints"])
    assert "dec-007" not in _ranked(answer)
    assert any(w.startswith("dec-007 is recorded, but") for w in answer.get("warnings", []))


# ------------------------------------------------------------------ a small store, through the CLI

def _small(root: Path) -> None:
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)
    svc.record("decision", {
        "summary": "Use Postgres for the orders service",
        "problem": "We needed a relational database for the orders service storage layer.",
        "why_chosen": "Postgres is what the team already runs in production, with backups and replicas set up."})
    svc.record("decision", {
        "summary": "Ship labels through a print queue",
        "problem": "Label printers drop jobs when two stations print at once.",
        "why_chosen": "A queue serialises the jobs per printer (dec-001 holds them), so two stations never collide."})
    svc.record("constraint", {"rule": "Never log a customer's address in full.",
                              "reason": "Addresses are personal data under the retention policy."})


@pytest.mark.parametrize(("query", "shown"), [("why dec-001?", ["dec-001"]),
                                              ("dec-001 con-001", ["dec-001", "con-001"])])
def test_the_cli_answers_a_question_naming_ids_with_those_entries(empty_project, capsys, monkeypatch, query, shown):
    # Before: dec-002 (which cites dec-001) came first, dec-001 and con-001 not at all.
    _small(empty_project)
    monkeypatch.chdir(empty_project)
    assert cli.main(["get", query]) == 0
    out = capsys.readouterr().out
    firsts = [line.split()[0] for line in out.splitlines() if line and not line.startswith(" ")]
    assert firsts == shown, out


# ------------------------------------------------------------------ the prompt hook

def test_the_prompt_hook_injects_the_entry_a_prompt_names(project):
    data = payload("user_prompt_submit", project, session_id="s1",
                   prompt="please re-read con-002 before changing the scanner")
    text = injected(run_hook("user_prompt_submit", data, env=hook_env(project)))
    assert text is not None and text.splitlines()[2].startswith("- con-002 "), text


def test_a_word_joined_to_an_id_is_no_suffix_when_the_plain_id_is_recorded(service):
    # "dec-007-style" read as the suffixed id dec-007-style, which no entry has: dec-007 was
    # left out and warned about as unknown.
    answer = service.get_context(query="is dec-007-style journaling used by the label worker?")
    assert answer["results"][0]["entry"]["id"] == "dec-007" and answer["top_relevance"] == 1.0
    assert not any("dec-007" in w for w in answer.get("warnings", []))


def test_four_hex_digits_after_an_id_stay_a_suffix(service):
    # Another clone's dec-007-beef is not this store's dec-007.
    answer = service.get_context(query="why dec-007-beef?")
    assert answer["no_confident_match"] is True
    assert answer["guidance"].startswith("No entry has the id dec-007-beef")


# ------------------------------------------------------------------ what only looks like an id

def _outage(root: Path) -> Service:
    _small(root)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)
    svc.record("decision", {
        "summary": "Freeze label printer releases in December",
        "problem": "The December 2024 outage took every station down when a label printer release shipped mid-peak.",
        "why_chosen": "A release freeze from 20 December keeps the peak weeks on the build they started with."})
    return svc


@pytest.mark.parametrize(("query", "words"), [
    ("what happened in the Dec-2024 outage", "what happened in the Dec 2024 outage"),
    ("the freeze starts dec-20 for label printers", "the freeze starts dec 20 for label printers")])
def test_a_date_written_like_an_id_is_searched_as_words(empty_project, query, words):
    # Before: "No entry has the id dec-2024" (dec-020), and "2024" ("20") left out of the search.
    svc = _outage(empty_project)
    answer = svc.get_context(query=query)
    assert not any("No entry has the id" in w for w in answer.get("warnings", []))
    assert _ranked(answer)[0] == "dec-003"
    assert answer["top_relevance"] >= svc.get_context(query=words)["top_relevance"]


@pytest.mark.parametrize(("query", "unknown"), [("the freeze starts dec-020 for label printers", "dec-020"),
                                                ("is dec-2 the printer freeze?", "dec-002")])
def test_an_unknown_id_written_as_the_store_writes_ids_is_warned_about(empty_project, query, unknown):
    # Three digits, as the tools pad them, or a number below the store's highest: an id (dec-002
    # removed by hand), whose words are searched with the rest.
    svc = _outage(empty_project)
    path = empty_project / ".context" / "decisions.json"
    path.write_text(json.dumps([e for e in json.loads(path.read_text()) if e["id"] != "dec-002"]))
    answer = svc.get_context(query=query)
    assert any(w.startswith(f"No entry has the id {unknown}") for w in answer.get("warnings", [])), answer
    assert _ranked(answer)[0] == "dec-003"


def test_ids_joined_by_a_hyphenated_word_are_each_found(service):
    # Before: "dec-001-and" read as one suffixed id followed by more id, so neither was found.
    answer = service.get_context(query="compare dec-001-and-dec-003")
    assert _ranked(answer)[:2] == ["dec-001", "dec-003"] and answer["top_relevance"] == 1.0


def test_a_named_entry_the_filters_leave_out_with_nothing_else_found_says_so(service):
    # Before: "the results below only share its words", over no results.
    answer = service.get_context(query="dec-001", types=["constraints"])
    assert answer["results"] == []
    assert answer["guidance"].startswith("dec-001 is recorded, but the filters given (types) leave it out")
    assert "results below" not in answer["guidance"]


def test_a_date_in_december_does_not_name_the_entry_with_that_number(service):
    # dec-020 is recorded in the demo store: "Dec-20" answered with it first, fully relevant.
    answer = service.get_context(query="the release freeze starts Dec-20, what must be done before it?")
    assert not answer["results"] or answer["results"][0]["entry"]["id"] != "dec-020" \
        or answer["results"][0]["relevance"] < 1.0
    named = service.get_context(query="why dec-20?")
    assert named["results"][0]["entry"]["id"] == "dec-020" and named["top_relevance"] == 1.0
