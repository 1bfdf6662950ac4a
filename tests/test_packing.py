"""get_context packing: best-first within the budget, shortened before skipped, and honest about
what did not fit."""

from __future__ import annotations

import pytest

from context_keeper.budget import entry_tokens
from context_keeper.service import Service


@pytest.fixture
def svc(project) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})


@pytest.mark.parametrize("budget", [100, 200, 400])
def test_a_small_budget_keeps_the_best_match_first_and_says_what_was_left_out(svc, budget):
    full = svc.get_context(query="carrier retries", token_budget=20000)
    small = svc.get_context(query="carrier retries", token_budget=budget)
    assert small["results"][0]["entry"]["id"] == full["results"][0]["entry"]["id"]
    assert small["tokens_used"] <= budget
    assert small["omitted"] > 0 and f"token_budget {budget}" in small["budget_note"]
    assert "omitted" not in full


def test_an_entry_that_does_not_fit_is_shortened_to_the_room_left(svc):
    full = svc.get_context(query="carrier retries", token_budget=20000)
    top = full["results"][0]["entry"]
    small = svc.get_context(query="carrier retries", token_budget=100)
    first = small["results"][0]
    assert first["shortened"] and entry_tokens(first["entry"]) < entry_tokens(top)


def test_nothing_found_is_not_called_weak_matches(svc):
    answer = svc.get_context(query="carrier retries", tags=["no-such-tag"])
    assert answer["results"] == [] and answer["no_confident_match"]
    assert "weak matches" not in answer["guidance"] and "Nothing recorded matches" in answer["guidance"]


@pytest.mark.parametrize("budget", [60, 150, 400, 1500, 4000])
@pytest.mark.parametrize("query", ["carrier retries", "label printing stalls during a deploy", "handheld offline sync"])
def test_tokens_used_is_the_estimate_of_every_returned_item(svc, budget, query):
    # Packing adds costs up from JSON lengths instead of serialising each finished item; this
    # holds it to the estimate of what is actually returned (each item plus 2 for the list).
    answer = svc.get_context(query=query, token_budget=budget)
    assert answer["results"]
    assert answer["tokens_used"] == sum(entry_tokens(item) + 2 for item in answer["results"])
    assert answer["tokens_used"] <= budget
