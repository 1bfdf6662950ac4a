"""Irregular verb forms read as the verb they are of."""

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

