"""Comparatives, superlatives and noun-made "-y" adjectives read as their word (search/adjectives.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_keeper.search import Doc, SearchIndex, SearchOptions, state
from context_keeper.search.spelling import american
from context_keeper.search.tokenize import _english_stemmer, stem, terms


@pytest.mark.parametrize("form, base", [
    ("heavier", "heavy"), ("heaviest", "heavy"), ("bigger", "big"), ("biggest", "big"), ("longest", "long"), ("hotter", "hot"), ("hottest", "hot"), ("faster", "fast"), ("slowest", "slow"),
    ("larger", "large"), ("largest", "large"), ("smallest", "small"), ("higher", "high"), ("lowest", "low"),
    ("cheapest", "cheap"), ("earliest", "early"), ("busiest", "busy"),
    ("widest", "wide"), ("thinner", "thin"), ("driest", "dry"), ("greyer", "grey"), ("lightest", "light"),
])
def test_a_comparative_or_superlative_meets_its_adjective(form, base):
    # "faster" is in the precomputed stem table (a related-term group): it must agree.
    assert stem(form) == stem(base)
    assert terms(f"the {form} parcel") == terms(f"the {base} parcel")


@pytest.mark.parametrize("adjective, noun", [
    ("windy", "wind"), ("rainy", "rain"), ("cloudy", "cloud"), ("stormy", "storm"), ("gusty", "gust"), ("icy", "ice"),
    ("snowy", "snow"), ("foggy", "fog"), ("leaky", "leak"), ("laggy", "lag"), ("buggy", "bug"), ("flaky", "flake"),
    ("noisy", "noise"), ("spiky", "spike"), ("glitchy", "glitch"), ("blurry", "blur"), ("lossy", "loss"),
    ("risky", "risk"), ("pricey", "price"), ("costlier", "cost"), ("mouldy", "mold"),
    ("windier", "wind"), ("windiest", "wind"), ("buggiest", "bug"), ("riskier", "risk"), ("pricier", "price"),
])
def test_an_adjective_made_of_a_noun_meets_the_noun(adjective, noun):
    assert stem(adjective) == stem(noun)


@pytest.mark.parametrize("word", [
    # -er nouns and words
    "server", "worker", "order", "user", "water", "layer", "buffer", "timer", "tower", "power", "paper", "number",
    "filter", "never", "after", "under", "other", "lighter", "cleaner", "stranger", "cooler", "dimmer", "closer",
    "later", "finer", "kinder", "dryer", "longer", "newer", "older",
    # -est words
    "test", "request", "latest", "interest", "manifest", "forest", "honest", "digest", "harvest", "suggest",
    "protest", "contest", "invest", "rest", "guest", "nest", "chest", "west", "closest", "newest", "oldest",
    # -y words made of no noun, or of one that is another word in a project's records
    "every", "city", "body", "party", "copy", "entry", "query", "policy", "reply", "retry", "ready", "early",
    "only", "any", "many", "busy", "easy", "happy", "heavy", "empty", "rusty", "salty", "patchy", "bumpy",
    "sunny", "smoky", "chatty", "bulky", "hacky", "lumpy",
    # comparison words left as they are
    "better", "best", "worse", "worst",
])
def test_a_look_alike_keeps_its_own_stem(word):
    assert stem(word) == _english_stemmer().stemWord(american(word))


def _index(*summaries: str) -> SearchIndex:
    ix = SearchIndex()
    for n, summary in enumerate(summaries, 1):
        ix.upsert(Doc("constraint", {"id": f"con-{n:03d}", "rule": summary, "status": "active"}))
    return ix


def test_a_question_in_one_form_finds_the_entry_in_the_other():
    ix = _index("Aircraft stay grounded in sustained wind above 12 m/s",
                "Aircraft are inspected after every flight", "Pilots log each flight in the tablet app")
    hits = ix.search("how windy is too windy to send an aircraft out?", SearchOptions(limit=3)).hits
    assert hits[0].entry["id"] == "con-001"
    # ... and the other way round: the entry says "windiest", the question "wind"
    ix = _index("On the windiest days the drones stay in the hangar", "Drones are charged in the hangar overnight")
    assert ix.search("what wind keeps the drones in?", SearchOptions(limit=2)).hits[0].entry["id"] == "con-001"


def test_a_superlative_question_finds_the_entry_with_the_plain_adjective():
    ix = _index("Heavy parcels are shipped by freight, never by courier", "Every parcel is shipped with a printed label")
    hits = ix.search("how do we ship the heaviest parcel?", SearchOptions(limit=2)).hits
    assert hits[0].entry["id"] == "con-001"


def test_the_index_fingerprint_covers_the_adjective_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A cached analysis made with another table would give an entry stale terms.
    from context_keeper.search import adjectives

    monkeypatch.setattr(state, "_fingerprint", None)
    before = state.fingerprint()
    edited = tmp_path / "adjectives.py"
    edited.write_text(Path(adjectives.__file__).read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    monkeypatch.setattr(adjectives, "__file__", str(edited))
    monkeypatch.setattr(state, "_fingerprint", None)
    assert state.fingerprint() != before
