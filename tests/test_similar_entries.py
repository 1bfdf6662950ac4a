"""similar_entries in record answers: restatements and contradictions of what the store holds
are named at capture time, with the other entry's status; unrelated entries are not."""

from __future__ import annotations

import json

import pytest

from context_keeper.config import DEFAULTS
from context_keeper.search import Doc, SearchIndex
from tests.conftest import EXAMPLE

NO_CACHE = {
    "summary": "Do not cache carrier quotes at all",
    "problem": "Stale carrier quotes produced wrong label prices when carriers changed their rates mid-day, and refunds followed.",
    "why_chosen": "Always fetching live quotes costs a little latency but the prices printed on labels always match what the carrier bills us.",
    "tags": ["carriers"],
}


def similar(answer: dict) -> dict[str, dict]:
    return {s["id"]: s for s in answer.get("similar_entries", [])}


def test_negating_an_active_decision_in_other_words_is_a_contradiction(service):
    # Its own problem and reasons keep the whole-entry similarity with dec-024 near 0.25.
    found = similar(service.record("decision", NO_CACHE))
    assert found["dec-024"]["relation"] == "likely_contradiction"
    assert found["dec-024"]["status"] == "active"
    assert "superseded_by" not in found["dec-024"]


def test_affirming_a_negated_decision_in_other_words_is_a_contradiction(service):
    negated = service.record("decision", NO_CACHE)["id"]
    found = similar(service.record("decision", {
        "summary": "Use a two-minute cache for carrier quotes",
        "problem": "Rate shopping at peak sends thousands of identical requests to the carriers, who throttle us and slow every pack station.",
        "why_chosen": "Two minutes is shorter than any carrier's price change notice, so a quote is never wrong, and peak traffic to carriers drops by most of it.",
    }))
    assert found[negated]["relation"] == "likely_contradiction"


def test_restating_a_superseded_decision_says_what_superseded_it(service):
    found = similar(service.record("decision", {
        "summary": "Label worker polls a print_jobs table every 5 seconds",
        "problem": "Packing stations need a label seconds after the packer closes a carton, but buying postage takes seconds.",
        "why_chosen": "A print_jobs table with a status column, plus a worker that polls it every 5 s with SKIP LOCKED. No new infrastructure.",
    }))
    assert found["dec-002"]["relation"] == "likely_restatement"
    assert found["dec-002"]["status"] == "superseded"
    assert found["dec-002"]["superseded_by"] == "dec-019"


def _demo_index() -> tuple[SearchIndex, dict[str, Doc]]:
    ix = SearchIndex()
    docs = {}
    for kind, name in (("decision", "decisions"), ("constraint", "constraints"), ("pipeline", "pipelines")):
        entries = json.loads((EXAMPLE / ".context" / f"{name}.json").read_text(encoding="utf-8"))
        ix.replace_kind(kind, (Doc(kind, e) for e in entries))
        docs.update({e["id"]: Doc(kind, e) for e in entries})
    return ix, docs


# The demo's unrelated pairs whose titles share the most words (title cosine 0.24-0.34).
@pytest.mark.parametrize("probe,other", [
    ("dec-019", "con-011"),   # Redis Streams consumer groups / a Redis stream is never the only copy
    ("dec-027", "con-015"),   # printer heartbeat / printer addresses come from site_settings
    ("dec-005", "pipe-009"),  # newest timestamp wins / investigate a sync conflict
    ("dec-009", "dec-015"),   # idempotent label purchase / weigh the parcel before buying a label
    ("dec-014", "dec-027"),   # raw ZPL to printers / printer heartbeat
    ("pipe-002", "pipe-005"), # ship a schema migration / reprint or void a label
])
def test_unrelated_entries_that_share_title_words_are_not_similar(probe, other):
    ix, docs = _demo_index()
    # The probe keeps its id, so it is looked up as if new: only the others are candidates.
    scores = {h.entry["id"]: h.relevance for h in ix.similar(docs[probe], limit=10)}
    assert scores.get(other, 0.0) < DEFAULTS["similar_threshold"]


def test_a_pipeline_named_after_what_a_decision_settles_is_not_its_restatement():
    # carebook: title cosine 0.71 (both name the practice-management system), entries 0.20.
    root = EXAMPLE.parent.parent / "evals" / "stores" / "carebook" / ".context"
    ix = SearchIndex()
    docs = {}
    for kind, name in (("decision", "decisions"), ("pipeline", "pipelines")):
        entries = json.loads((root / f"{name}.json").read_text(encoding="utf-8"))
        ix.replace_kind(kind, (Doc(kind, e) for e in entries))
        docs.update({e["id"]: Doc(kind, e) for e in entries})
    scores = {h.entry["id"]: h.relevance for h in ix.similar(docs["dec-016"], limit=10)}
    assert scores.get("pipe-002", 0.0) < DEFAULTS["similar_threshold"]
