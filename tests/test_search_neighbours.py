"""Spelling neighbours (search/neighbours.py): word families the stemmer leaves apart."""

from __future__ import annotations

import json
from dataclasses import replace

from context_keeper.search import Doc, SearchIndex, SearchOptions
from context_keeper.search.neighbours import TrigramVocabulary
from context_keeper.search.tokenize import terms
from context_keeper.search.tuning import DEFAULT_TUNING

OFF = replace(DEFAULT_TUNING, ngram_most=0)


def _index(tuning=DEFAULT_TUNING) -> SearchIndex:
    ix = SearchIndex(tuning)
    for i, summary in enumerate([
        "Reanalysis of archived genomes restores the CRAM files from the archive tier first",
        "Pluralise comment counts with ICU message format in every locale",
        "Nightly backups of the results database go to a second region",
        "Sample sheets are generated from the plate layout, never typed",
        "German VAT is charged at the customer's address",
    ]):
        ix.upsert(Doc("decision", {"id": f"dec-{i + 1:03d}", "summary": summary}))
    return ix


def _first(ix: SearchIndex, query: str) -> str | None:
    hits = ix.search(query, SearchOptions(limit=3)).hits
    return hits[0].entry["id"] if hits else None


def test_a_word_the_stemmer_leaves_apart_meets_its_family():
    query = "a clinician wants last year's case reanalysed"
    assert terms("reanalysed") != terms("reanalysis")  # the gap this closes
    assert _first(_index(), query) == "dec-001"
    assert _first(_index(OFF), query) != "dec-001"


def test_a_country_meets_its_adjective():
    query = "orders shipped to Germany show the wrong tax"
    assert terms("Germany") != terms("German")
    assert _first(_index(), query) == "dec-005"
    assert _first(_index(OFF), query) != "dec-005"


def test_short_and_everyday_words_get_no_neighbours():
    vocabulary = TrigramVocabulary(["database", "databases", "data", "plate", "plates"], min_length=5)
    assert vocabulary.closest("data", 3, 0.5) == []          # under min_length
    assert vocabulary.closest("plate", 3, 0.5) == ["plates"]
    ix = _index()
    assert ix._spelling_neighbours("state", ()) == []       # no store term that close
    assert "backup" not in ix._spelling_neighbours("backups", ("backup",))  # already a stand-in


def test_the_vocabulary_follows_writes_and_removals():
    ix = _index()
    query = "the lab diagnosed it wrongly"
    assert _first(ix, query) is None  # and the vocabulary is built now
    ix.upsert(Doc("decision", {"id": "dec-009", "summary": "Diagnosis codes are mapped to ICD-10 at intake"}))
    assert terms("diagnosed") != terms("diagnosis")
    assert _first(ix, query) == "dec-009"
    ix.remove("decision", "dec-009")
    ix.remove("decision", "dec-001")
    assert ix._spelling_neighbours("diagnos", ()) == []
    assert ix._spelling_neighbours("reanalys", ()) == []
    assert _first(ix, query) is None


def test_a_restored_snapshot_finds_the_same_neighbours_without_building_them():
    from context_keeper.search import snapshot
    from context_keeper.search.neighbours import SavedTrigramVocabulary

    ix = _index()
    docs = {"decision": [Doc("decision", info.doc.entry) for info in ix._entries if info is not None]}
    built = SearchIndex()
    built.replace_kind("decision", docs["decision"])
    stamps = [None, None, None]
    data = json.loads(json.dumps(snapshot.dump(built, stamps)))
    restored = snapshot.restore(data, docs, stamps, DEFAULT_TUNING)
    assert isinstance(restored._trigrams, SavedTrigramVocabulary)
    for query in ["a clinician wants last year's case reanalysed", "orders shipped to Germany show the wrong tax"]:
        got = restored.search(query, SearchOptions(limit=3))
        want = built.search(query, SearchOptions(limit=3))
        assert [(h.entry["id"], h.score, h.relevance) for h in got.hits] == [
            (h.entry["id"], h.score, h.relevance) for h in want.hits
        ]
        assert got.hits and got.hits[0].entry["id"] in {"dec-001", "dec-005"}
    data["trigrams"]["^re"] = 7  # damaged: refused, so the hook rebuilds instead of failing
    assert snapshot.restore(data, docs, stamps, DEFAULT_TUNING) is None
