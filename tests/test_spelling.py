"""British and American spellings meet in the index; words that only look British stay."""

from __future__ import annotations

import pytest

from context_keeper.search import Doc, SearchIndex
from context_keeper.search.spelling import american
from context_keeper.search.tokenize import stem


@pytest.mark.parametrize(
    ("british", "us"),
    [
        ("normalise", "normalize"), ("authorisation", "authorization"), ("organisations", "organizations"),
        ("optimising", "optimizing"), ("recognisable", "recognizable"), ("colours", "colors"),
        ("behavioural", "behavioral"), ("favourite", "favorite"), ("centre", "center"),
        ("licence", "license"), ("catalogue", "catalog"), ("analysed", "analyzed"), ("grey", "gray"),
        ("criticise", "criticize"), ("millimetres", "millimeters"), ("kilometre", "kilometer"), ("millilitre", "milliliter"),
    ],
)
def test_a_british_spelling_stems_like_the_american_one(british, us):
    assert stem(british) == stem(us)


@pytest.mark.parametrize(
    "word",
    ["promise", "exercise", "otherwise", "likewise", "surprise", "enterprise", "advise", "supervised",
     "premises", "noise", "raise", "fundraiser", "imprecise", "hour", "four", "tour", "detour", "glamour"],
)
def test_words_that_only_look_british_are_left_alone(word):
    assert american(word) == word


def test_a_question_in_one_spelling_finds_an_entry_in_the_other():
    ix = SearchIndex()
    ix.upsert(Doc("decision", {"id": "dec-001", "summary": "Authorisation checks are centralised in one middleware",
                               "problem": "Each handler rolled its own permission logic."}))
    ix.upsert(Doc("decision", {"id": "dec-002", "summary": "Invoices are rendered to PDF", "problem": "Customers need invoices."}))
    hits = ix.search("where is authorization centralized?").hits
    assert hits and hits[0].entry["id"] == "dec-001"
