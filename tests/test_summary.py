"""The session-start summary: ordering, budget, big stores, and freshness after writes."""

from __future__ import annotations

import pytest

from benchmarks.synthetic import make_store
from context_keeper.budget import estimate_tokens
from context_keeper.service import Service


@pytest.mark.parametrize("budget", [150, 400, 2000])
def test_a_big_store_still_gets_a_summary_within_budget(tmp_path, budget):
    root = make_store(tmp_path / "big", decisions=1500, constraints=300, pipelines=100)
    answer = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}).get_project_summary(budget)
    assert estimate_tokens(answer["summary"]) <= budget
    assert answer["summary"].startswith("Project memory for synthetic: 1500 active decisions")
    assert "not shown" in answer["summary"] and sum(answer["dropped"].values()) > 0
    assert "- con-" in answer["summary"]  # absolute constraints come first


def test_decisions_are_grouped_under_their_most_shared_tags(service):
    text = service.get_project_summary(4000)["summary"]
    decisions = text.split("Decisions:")[1].split("Pipelines:")[0]
    headings = [line for line in decisions.splitlines() if line.startswith("[")]
    assert len(headings) >= 3
    assert headings[-1] == "[other]" or "[other]" not in headings


def test_summary_reflects_a_write_immediately(service):
    before = service.get_project_summary(4000)
    assert before == service.get_project_summary(4000)
    added = service.record("decision", {
        "summary": "Packing stations print a packing slip only on request",
        "problem": "Most customers never read the paper slip and the printers ran out of stock twice a week.",
        "why_chosen": "Printing on request cut paper use sharply and the slip stays available in the customer portal.",
        "tags": ["packing"],
    })
    after = service.get_project_summary(4000)
    assert added["id"] in after["summary"] and added["id"] not in before["summary"]
    assert after["counts"]["decisions"] == before["counts"]["decisions"] + 1
