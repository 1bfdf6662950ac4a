"""Irregular verb forms, phrasal verbs and version numbers read as the word or token they mean."""

from __future__ import annotations

import pytest

from context_keeper.search import Doc, SearchIndex, SearchOptions
from context_keeper.search.tokenize import iter_tagged, stem, terms


@pytest.mark.parametrize("form, base", [
    ("held", "hold"), ("paid", "pay"), ("sent", "send"), ("lost", "lose"), ("ran", "run"), ("kept", "keep"),
    ("built", "build"), ("broke", "break"), ("broken", "break"), ("froze", "freeze"), ("frozen", "freeze"),
    ("wrote", "write"), ("written", "write"), ("chose", "choose"), ("chosen", "choose"), ("fell", "fall"),
    ("took", "take"), ("taken", "take"), ("began", "begin"), ("begun", "begin"), ("hung", "hang"),
    ("sold", "sell"), ("caught", "catch"), ("gave", "give"), ("bled", "bleed"), ("thrown", "throw"), ("overwritten", "overwrite"),
])
def test_an_irregular_verb_form_meets_its_verb(form, base):
    # "lost", "hung", "frozen" and "broken" are in the precomputed stem table: it must agree.
    assert stem(form) == stem(base)
    assert terms(f"the job {form} it") == terms(f"the job {base} it")


@pytest.mark.parametrize("word", ["left", "found", "saw", "felt", "led", "bound", "shot", "bit", "ground", "rose"])
def test_a_past_form_that_is_also_a_noun_keeps_its_own_term(word):
    # "left" the side, "LED" lights, "saw" the tool, "felt" the cloth, a vaccine "shot", "a bit".
    assert terms(word) == [stem(word)] and stem(word) == word


def test_an_irregular_form_finds_the_entry_written_with_another_form():
    ix = SearchIndex()
    ix.upsert(Doc("decision", {"id": "dec-001", "summary": "Later installments are held for a report", "status": "active"}))
    ix.upsert(Doc("decision", {"id": "dec-002", "summary": "Installments go out by bank transfer", "status": "active"}))
    hits = ix.search("what is holding the installment", SearchOptions(limit=2)).hits
    assert [h.entry["id"] for h in hits] == ["dec-001", "dec-002"]


@pytest.mark.parametrize("phrase, word", [
    ("the shipper called off the load", "the shipper cancel the load"), ("they call it off", "cancel"),
    ("the teacher never turned up", "the teacher never show up"), ("who is turning up tonight", "who is showing up tonight"),
    ("the day rolls over at midnight", "day rollover at midnight"), ("set up the printer", "setup the printer"),
    ("we are shutting down the gateway", "shutdown the gateway"),
    ("users logged in twice", "users login twice"), ("she could not log in.", "login"), ("when a user logs out", "user logout"),
    ("sign up with an email", "signup with an email"), ("signed in on the web", "signin on the web"),
    ("the money is paid out on Friday", "money payout on Friday"), ("the request timed out", "request timeout"),
    ("we rolled back the release", "rollback the release"), ("what has to be cleaned up", "cleanup"),
    ("look up the order", "lookup the order"), ("it falls back to cash", "fallback to cash"),
    ("the logged-in user", "the login user"), ("a sign-up form", "a signup form"),
])
def test_a_phrasal_verb_reads_as_the_word_it_means(phrase, word):
    assert terms(phrase) == terms(word)


@pytest.mark.parametrize("phrase, kept", [
    ("turn up the log level", "turn"),  # to raise, not to arrive
    ("the error log in production", "log"),  # a log, in production
    ("keep the logs in S3", "log"),
    ("the lead signs off on the change", "sign"),  # to approve, not to sign out
    ("orders backed up in the queue", "back"),  # a backlog, not a backup
])
def test_a_verb_and_particle_that_mean_something_else_stay_words(phrase, kept):
    assert kept in terms(phrase)


def test_a_phrasal_verb_finds_the_entry_that_names_the_act():
    ix = SearchIndex()
    ix.upsert(Doc("pipeline", {"id": "pipe-001", "name": "Cancel a load after dispatch",
                                "purpose": "Stop tracking and settle the truck-ordered-not-used fee", "status": "active"}))
    ix.upsert(Doc("decision", {"id": "dec-001", "summary": "One load per truck", "status": "active"}))
    hits = ix.search("the shipper called off the load", SearchOptions(limit=2)).hits
    assert [h.entry["id"] for h in hits] == ["pipe-001", "dec-001"]


@pytest.mark.parametrize("text, expected", [
    ("release 1.5.0", ["releas", "1.5.0"]), ("the 1.14.1 image", ["1.14.1", "imag"]), ("v2.3", ["2.3"]),
    ("V2.3", ["2.3"]), ("Python 3.11", ["python", "3.11"]), ("host 10.0.0.1", ["host", "10.0.0.1"]),
])
def test_a_dotted_version_is_one_term(text, expected):
    assert terms(text) == expected
    assert all(not compound for term, compound in iter_tagged(text) if "." in term)  # an asked word, not a bonus


def test_a_decimal_glued_to_letters_splits_as_before():
    assert terms("an M4.3 near the coast") == ["m4.3", "m4", "3", "near", "coast"]


def test_a_version_inside_a_name_is_one_term_too():
    got = terms("the v2.4.0-rc1 tag of python:3.12-slim")
    assert {"2.4.0", "rc1", "3.12", "python", "slim"} <= set(got) and not {"2", "4", "0", "3", "12"} & set(got)


def test_a_decimal_is_a_value_and_a_version_a_name():
    from context_keeper.search.numbers import is_value

    assert is_value("0.5") and is_value("3.11") and is_value("200")
    assert not is_value("1.5.0") and not is_value("10.0.0.1")


def test_a_version_finds_the_entry_that_states_it_not_entries_sharing_its_digits():
    ix = SearchIndex()
    ix.upsert(Doc("decision", {"id": "dec-001", "summary": "Release 1.5.0 drops the legacy importer", "status": "active"}))
    ix.upsert(Doc("decision", {"id": "dec-002", "summary": "A release is retried 5 times, 1 minute apart, from attempt 0",
                               "status": "active"}))
    ix.upsert(Doc("decision", {"id": "dec-003", "summary": "Release 7.7.7 moved the importer", "status": "active"}))

    def relevance(query: str) -> dict[str, float]:
        return {h.entry["id"]: h.relevance for h in ix.search(query, SearchOptions(limit=3)).hits}

    assert next(iter(relevance("release 1.5.0"))) == "dec-001"
    # dec-002 has "release" and the digits 1, 5 and 0, which are no match: as for another entry's version
    assert relevance("release 1.5.0")["dec-002"] == pytest.approx(relevance("release 7.7.7")["dec-002"])
