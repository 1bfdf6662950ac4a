"""A question for a value its best entry does not state is answered with less confidence."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from context_keeper.search import DEFAULT_MIN_RELEVANCE, Doc, SearchIndex, SearchOptions
from context_keeper.search.answer_type import asked_action, asked_kind, focus_terms, mentions, states_value, value_overlap
from context_keeper.search.tokenize import terms
from context_keeper.search.tuning import DEFAULT_TUNING

NOW = datetime(2026, 11, 29, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How long do we keep delivery photos before they are deleted?", "duration"),
        ("how often is the replica backed up", "duration"),
        ("what's the retention on the access logs?", "duration"),
        ("After how many minutes does the pager escalate?", "duration"),
        ("What does the card terminal provider charge us per payment?", "amount of money"),
        ("how much do we pay per SMS?", "amount of money"),
        ("what's the max upload size?", "number"),
        ("How many retries before a webhook endpoint is disabled?", "number"),
        ("Which Postgres major version are we on?", "version"),
        ("What's the timeout on the calls to the geocoder?", "duration"),
        ("access token lifetime?", "duration"),
        ("how long is the grace period on overstays", "duration"),
        ("how much are we paying the CDN per GB?", "amount of money"),
        # paying named in a symptom is not a question for an amount ("paid the courier twice")
        ("what stops us from paying the courier twice for one label?", None),
        ("what did we do after we paid the carrier twice for the same label?", None),
        ("what did we spend on GPUs last month?", "amount of money"),
        ("what uptime do we promise partners?", "number"),
        ("What's our request budget for the partner API?", "number"),
        ("what's the false positive rate of the fraud rules?", "number"),
        ("how big can one batch be?", "number"),
        ("what's the largest upload we accept?", "number"),
        # "largest" describing what a symptom is about asks for no number
        ("the largest tenant's nightly export keeps running out of memory", None),
        ("our biggest tenant export runs out of memory every night", None),
        ("the rate limiter drops real users", None),  # a symptom, not a question for the rate
        # "rate" or "target" as part of a name, or after a clause, is not a value asked for
        ("what rate limiter do we use for partner traffic?", None),
        ("what happens when the rate limiter trips?", None),
        ("what rate limit do partners get?", "number"),  # the limit is a value
        ("What’s our request budget for the partner API?", "number"),  # a typographic apostrophe
        # "what … fee" on one line, as the one regex with ".*" read it; not across a pasted task
        ("what broke in checkout last night?\nthe nightly fee export job failed", None),
        ("what do we\ncharge for a parcel?", None),
        ("which geocoder do we use?", None),  # a name: no written form to check
        ("why did we move off Redis?", None),
        ("the importer keeps timing out on big files", None),
        # a timeout or a lifetime named in a symptom or a how-to is not a question for its length
        ("the importer hits a timeout on big files", None),
        ("why do big imports get a timeout?", None),
        ("how do we revoke an access token before its lifetime ends?", None),
        ("", None),
    ],
)
def test_the_kind_of_value_a_question_asks_for(question, kind):
    assert asked_kind(question) == kind


def test_a_value_counts_only_in_a_sentence_that_shares_a_word_with_the_question():
    entry = {
        "summary": "Delivery photos are stored in S3 under the parcel id.",
        "why_chosen": "Drivers retry uploads for 3 days when offline.",
    }
    words = terms("how long do we keep delivery photos")
    assert not states_value("duration", words, entry)  # the only duration is about uploads
    entry["tradeoffs"] = "Photos are kept for 90 days, then deleted by a lifecycle rule."
    assert states_value("duration", words, entry)


def test_timestamps_and_ids_are_not_values():
    entry = {"summary": "Delivery photos are stored in S3.", "created_at": "2026-01-05T10:00:00+00:00",
             "id": "dec-012", "verified_at": "2026-03-01T00:00:00+00:00"}
    assert not states_value("number", terms("what's the max size of delivery photos"), entry)


@pytest.mark.parametrize(
    ("sentence", "kind", "stated"),
    [
        ("Quotes are cached for 60 minutes.", "duration", True),
        ("Quotes are cached for an hour.", "duration", True),
        ("Quotes are refreshed nightly.", "duration", True),
        ("Quotes are cached.", "duration", False),
        ("Quotes cost EUR 0.02 each.", "amount of money", True),
        ("Quotes cost 1.5% of the order.", "amount of money", True),
        ("Quotes cost money.", "amount of money", False),
        ("Quotes are capped at 500 per minute.", "number", True),
        ("Quotes come from Postgres 15.4.", "version", True),
    ],
)
def test_how_values_are_written(sentence, kind, stated):
    assert states_value(kind, terms("quotes"), {"summary": sentence}) is stated


def _index(tuning=DEFAULT_TUNING):
    ix = SearchIndex(tuning)
    ix.upsert(Doc("decision", {"id": "dec-001", "summary": "Delivery photos are stored in S3 under the parcel id",
                               "problem": "Drivers take a photo of every delivered parcel as proof of delivery."}))
    ix.upsert(Doc("decision", {"id": "dec-002", "summary": "Parcel labels are printed as ZPL on the depot printers",
                               "problem": "Labels were printed as PDFs and took too long."}))
    return ix


def test_a_question_for_a_value_the_best_entry_does_not_state_is_flagged():
    question = "How long do we keep delivery photos before they are deleted?"
    on = _index().search(question, SearchOptions(now=NOW))
    off = _index(replace(DEFAULT_TUNING, answer_type_factor=1.0)).search(question, SearchOptions(now=NOW))
    assert off.top_relevance >= DEFAULT_MIN_RELEVANCE  # every word but the asked one matches
    assert on.top_relevance == pytest.approx(off.top_relevance * DEFAULT_TUNING.answer_type_factor)
    assert on.top_relevance < DEFAULT_MIN_RELEVANCE
    assert [h.entry["id"] for h in on.hits] == [h.entry["id"] for h in off.hits]  # the order stays
    assert [h.relevance for h in on.hits] == pytest.approx([h.relevance * 0.5 for h in off.hits])


def test_the_same_question_is_not_penalised_when_the_entry_states_the_value():
    ix = _index()
    ix.upsert(Doc("decision", {"id": "dec-001", "summary": "Delivery photos are stored in S3 under the parcel id",
                               "problem": "Drivers take a photo of every delivered parcel as proof of delivery.",
                               "why_chosen": "Delivery photos are kept for 90 days, then deleted by a lifecycle rule."}))
    question = "How long do we keep delivery photos before they are deleted?"
    on = ix.search(question, SearchOptions(now=NOW))
    assert on.hits[0].entry["id"] == "dec-001"
    assert on.top_relevance >= DEFAULT_MIN_RELEVANCE


def _photos_index(tuning, why_chosen):
    ix = _index(tuning)
    ix.upsert(Doc("decision", {"id": "dec-001", "summary": "Delivery photos are stored in S3 under the parcel id",
                               "problem": "Drivers take a photo of every delivered parcel as proof of delivery.",
                               "why_chosen": why_chosen}))
    return ix


def test_a_value_that_shares_one_word_of_several_lowers_relevance_less_when_asked_to():
    graded = replace(DEFAULT_TUNING, answer_type_partial_factor=0.8)  # off by default (tuning.py says why)
    question = "How long do we keep delivery photos before they are deleted?"
    one_word = "Delivery uploads are retried for 3 days."  # a duration, but of the uploads
    partial = _photos_index(graded, one_word).search(question, SearchOptions(now=NOW))
    unchecked = _photos_index(DEFAULT_TUNING, one_word).search(question, SearchOptions(now=NOW))
    assert partial.hits[0].entry["id"] == "dec-001"
    assert partial.unstated is None  # a duration is there: the guidance must not say none is
    assert partial.top_relevance == pytest.approx(unchecked.top_relevance * 0.8)
    assert unchecked.relevance_scale == 1.0
    stated = _photos_index(graded, "Delivery photos are deleted after 90 days.").search(question, SearchOptions(now=NOW))
    assert stated.relevance_scale == 1.0 and stated.top_relevance > partial.top_relevance


def test_value_overlap_counts_the_question_words_one_sentence_shares():
    entry = {"summary": "Delivery photos are stored in S3.",
             "why_chosen": "Uploads are retried for 3 days. Delivery photos are deleted after 90 days."}
    words = terms("how long do we keep delivery photos")
    assert value_overlap("duration", words, entry) == 2  # the second sentence: delivery, photos
    assert value_overlap("duration", words, entry, enough=5) == 2
    assert value_overlap("duration", words, {"why_chosen": "Photos of vans are retried for 3 days."}) == 1
    assert value_overlap("duration", words, {"why_chosen": "Uploads are retried for 3 days."}) == 0


def test_a_question_that_asks_for_no_value_is_left_alone():
    question = "where do delivery photos get stored?"
    on = _index().search(question, SearchOptions(now=NOW))
    off = _index(replace(DEFAULT_TUNING, answer_type_factor=1.0)).search(question, SearchOptions(now=NOW))
    assert on.top_relevance == off.top_relevance


def test_the_semantic_blend_orders_a_checked_answer_as_it_would_an_unchecked_one(monkeypatch):
    """The blend recovers each hit's priors from score / relevance; the check's scaling must not
    leak into that, or a question asking for a value would lean on the embeddings twice as much."""
    from context_keeper import embeddings, retrieval
    from context_keeper.search.contract import Hit, SearchResult

    vectors = {"dec-001": [1.0, 0.0], "dec-002": [0.6, 0.8], "dec-003": [0.0, 1.0]}
    monkeypatch.setattr(embeddings, "embed", lambda texts, settings, **kw: [[0.0, 1.0]])
    monkeypatch.setattr(embeddings, "entry_vectors", lambda store, entries, settings, **kw: vectors)
    hits = [Hit("decision", {"id": i}, score, rel) for i, score, rel in
            (("dec-001", 0.9, 0.9), ("dec-002", 0.7, 0.8), ("dec-003", 0.5, 0.6))]
    settings = {"enabled": True, "weight": 60}
    plain = retrieval._semantic_blend(None, "q", SearchResult(hits, 0.9), settings)
    checked = SearchResult([replace(h, relevance=h.relevance * 0.5) for h in hits], 0.45,
                           unstated="duration", relevance_scale=0.5)
    blended = retrieval._semantic_blend(None, "q", checked, settings)
    assert [h.entry["id"] for h in blended.hits] == [h.entry["id"] for h in plain.hits]
    assert [h.score for h in blended.hits] == pytest.approx([h.score for h in plain.hits])
    assert [h.relevance for h in blended.hits] == pytest.approx([h.relevance * 0.5 for h in plain.hits])


PHOTOS = {"id": "dec-001", "summary": "Delivery photos are stored in S3 under the parcel id",
          "problem": "Drivers take a photo of every delivered parcel as proof of delivery.", "status": "active"}
LABELS = {"id": "dec-002", "summary": "Parcel labels are printed as ZPL on the depot printers",
          "problem": "Labels were printed as PDFs and took too long.", "status": "active"}


def _service_over(tmp_path, *decisions):
    from context_keeper.service import Service

    context = tmp_path / ".context"
    context.mkdir()
    (context / "decisions.json").write_text(json.dumps(list(decisions)), encoding="utf-8")
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(tmp_path)}, hook_cache_delay=None)


def test_get_context_says_which_value_is_not_recorded(tmp_path):
    service = _service_over(tmp_path, PHOTOS, LABELS)
    answer = service.get_context(query="How long do we keep delivery photos before they are deleted?")
    assert answer["no_confident_match"] is True
    assert answer["guidance"].startswith("The question asks for a duration, and the entry that matches it best states none")
    assert answer["results"][0]["entry"]["id"] == "dec-001" and answer["results"][0]["weak_match"]  # still shown
    stated = service.get_context(query="where do delivery photos get stored?")
    assert not stated.get("no_confident_match")


def test_a_long_run_of_digits_is_no_version():
    """A pasted key or a long number in the best entry (20,000 digits, the per-field limit) is
    not a version. How long the scan takes is benchmarks/bench_answer_type.py's business: the
    dotted-version pattern once backtracked over such a run at each of its digits (12 s)."""
    entry = {"summary": "Quotes come from Postgres.", "why_chosen": "Key " + "7" * 20_000 + "x for the quotes."}
    assert not states_value("version", terms("which postgres version do quotes use"), entry)
    entry["why_chosen"] += " Postgres 15.4 serves the quotes."
    assert states_value("version", terms("which postgres version do quotes use"), entry)


def test_the_guidance_names_an_amount_of_money_with_its_article(tmp_path):
    service = _service_over(tmp_path, dict(LABELS, id="dec-001"))
    answer = service.get_context(query="how much do the depot label printers cost?")
    assert answer["guidance"].startswith("The question asks for an amount of money, and the entry")


_OTHER = Doc("decision", {"id": "dec-002", "summary": "Claim numbers are per state", "problem": "one sequence per state"})


@pytest.mark.parametrize(
    ("entry", "question"),
    [
        # a name that begins with a value word
        (Doc("decision", {"id": "dec-001", "summary": "Partner traffic goes through the Envoy rate limiter",
                          "problem": "Bursts from one partner starved the others."}),
         "what rate limiter do we use for partner traffic?"),
        # a symptom that names a timeout
        (Doc("decision", {"id": "dec-001", "summary": "Big CSV imports are streamed in chunks",
                          "problem": "Loading the whole file into memory made the importer hit timeouts on big files."}),
         "the importer hits a timeout on big files"),
        # a question about paying twice, not about an amount
        (Doc("constraint", {"id": "dec-001", "scope": "global",
                            "rule": "Never retry a create-shipment call unless the label key is sent as the carrier's idempotency reference.",
                            "reason": "A retried purchase without a reference is a second purchase as far as the carrier is concerned; we pay for both."}),
         "what stops us from paying the carrier twice for one label?"),
    ],
)
def test_a_question_that_only_names_a_value_word_keeps_its_confident_answer(entry, question):
    ix = SearchIndex()
    for doc in (entry, _OTHER):
        ix.upsert(doc)
    result = ix.search(question, SearchOptions(now=NOW))
    assert result.hits[0].entry["id"] == "dec-001"
    assert result.unstated is None and result.top_relevance >= DEFAULT_MIN_RELEVANCE


@pytest.mark.parametrize(
    ("question", "focus"),
    [
        ("how many mid-roll slots can a single episode have at most?", "mid-roll slots"),
        ("At what wind speed do the quay cranes have to stop working?", "wind speed"),
        ("what's the retry cap on label calls?", "retry"),  # "cap" names the value
        ("What's the maximum number of employees one account can enrol?", ""),  # only the value's words
        ("How long do we keep delivery photos before they are deleted?", ""),  # only everyday words
        ("where do delivery photos get stored?", ""),  # no value asked for
        ("the cache size I configured is ignored by the index blocks", ""),  # a value named, not asked
    ],
)
def test_what_a_value_asked_for_is_of(question, focus):
    topical = set(terms(question))
    assert focus_terms(question, topical, DEFAULT_TUNING.answer_type_focus) == set(terms(focus)) & topical


def _decisions(tuning, first, second):
    """An index of two decisions: the one a question is about (``first``) and a bystander."""
    ix = SearchIndex(tuning)
    for n, entry in enumerate((first, second), 1):
        ix.upsert(Doc("decision", {"id": f"dec-{n:03d}", **entry}))
    return ix


def _episodes_index(tuning, why_chosen):
    return _decisions(tuning, {"summary": "Ads are stitched into each episode at request time",
                               "problem": "Baked-in mid-roll ads in an episode went stale and could not be sold again.",
                               "why_chosen": why_chosen},
                      {"summary": "Feeds are rendered when an episode changes", "problem": "Rendering every feed on request was slow."})


def test_a_number_of_something_else_does_not_answer_how_many_of_the_thing_asked_about():
    question = "how many mid-roll slots can a single episode have?"
    # A number in a sentence sharing "episode" only: it counts episodes, not slots.
    other = "The stitcher caches the ad set of an episode for 24 hours, and a show keeps up to 500 episodes."
    unfocused = replace(DEFAULT_TUNING, answer_type_focus=0)
    on = _episodes_index(DEFAULT_TUNING, other).search(question, SearchOptions(now=NOW))
    off = _episodes_index(unfocused, other).search(question, SearchOptions(now=NOW))
    assert [h.entry["id"] for h in on.hits] == [h.entry["id"] for h in off.hits]  # the order stays
    assert off.relevance_scale == 1.0
    assert on.relevance_scale == DEFAULT_TUNING.answer_type_factor and on.unstated == "number"
    stated = "An episode may carry at most 3 mid-roll slots, placed at silences."
    answered = _episodes_index(DEFAULT_TUNING, stated).search(question, SearchOptions(now=NOW))
    assert answered.relevance_scale == 1.0 and answered.top_relevance > on.top_relevance


@pytest.mark.parametrize(
    ("question", "action"),
    [
        ("How do I rotate the EasyPost API key without breaking checkout?", "rotate"),
        ("how can we purge a seller's rows from the feature store?", "purge"),
        ("How should they withdraw an application already submitted?", "withdraw"),
        ("the scanner keeps returning NO READ. How do we fix it?", ""),  # "solve it", no operation
        ("how do we handle GST for customers in Australia?", ""),
        ("how do we get the logs?", ""),  # an everyday verb
        ("where is the EasyPost API key kept?", ""),  # not a how-to question
    ],
)
def test_the_operation_a_how_to_question_asks_about(question, action):
    assert asked_action(question) == set(terms(action))


def _keys_index(tuning, why_chosen):
    return _decisions(tuning, {"summary": "The EasyPost API key lives in Vault and checkout reads it at start",
                               "problem": "The EasyPost API key was in the repository and every laptop had it.",
                               "why_chosen": why_chosen},
                      {"summary": "Checkout retries label purchases twice", "problem": "Label purchases failed now and then."})


def test_a_how_to_question_for_an_operation_the_best_entry_never_mentions_is_answered_with_less_confidence():
    question = "How do I rotate the EasyPost API key without breaking checkout?"
    silent = "Vault is already where every other secret lives."
    on = _keys_index(DEFAULT_TUNING, silent).search(question, SearchOptions(now=NOW))
    off = _keys_index(replace(DEFAULT_TUNING, answer_type_action=False), silent).search(question, SearchOptions(now=NOW))
    assert [h.entry["id"] for h in on.hits] == [h.entry["id"] for h in off.hits]  # the order stays
    assert off.relevance_scale == 1.0 and on.relevance_scale == DEFAULT_TUNING.answer_type_factor
    assert on.unstated is None  # no value was asked for: the guidance must not name one
    said = "To rotate it, write the new key to Vault and restart checkout; the old key stays valid for a day."
    answered = _keys_index(DEFAULT_TUNING, said).search(question, SearchOptions(now=NOW))
    assert answered.relevance_scale == 1.0 and answered.top_relevance > on.top_relevance


def test_an_entry_mentions_an_operation_in_any_field_in_any_inflection():
    entry = {"summary": "Signing keys live in KMS", "steps": [{"order": 1, "action": "Rotating: create the new key version"}]}
    assert mentions(entry, asked_action("how do we rotate the signing key?"))
    assert not mentions({"summary": "Signing keys live in KMS"}, asked_action("how do we rotate the signing key?"))
