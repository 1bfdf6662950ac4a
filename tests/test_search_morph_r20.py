"""Irregular verb forms and phrasal verbs read as the word they mean."""

from __future__ import annotations

import pytest

from context_keeper.search import Doc, SearchIndex, SearchOptions
from context_keeper.search.tokenize import stem, terms


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
