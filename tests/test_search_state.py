"""search/state.py: persisted per-entry analyses give identical results and are never trusted
blindly; the precomputed stem table matches the live stemmer."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from context_keeper.model import KINDS
from context_keeper.search import Doc, SearchIndex, SearchOptions
from context_keeper.search.index import _terms
from context_keeper.search.state import FILE, AnalysisCache, entry_key
from context_keeper.store import Store

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "demo-project"
QUERIES = [
    "how do we retry carrier API calls when they time out?",
    "why postgres and not mongo",
    "label printer crashes on save",
    "what did we use before for deploys?",
    "GDPR retention of customer emails",
    "",
]


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(EXAMPLE, root)
    (root / ".context" / FILE).unlink(missing_ok=True)
    return root


def build(store: Store, analyses: AnalysisCache | None) -> SearchIndex:
    index = SearchIndex(analyses=analyses)
    for kind in KINDS.values():
        index.replace_kind(kind.name, (Doc(kind.name, e) for e in store.state(kind).entries))
    return index


def results(index: SearchIndex) -> list:
    out = []
    for q in QUERIES:
        options = SearchOptions(tags=frozenset({"api"}) if not q else None, now=NOW)
        r = index.search(q, options)
        out.append([(h.kind, h.entry["id"], h.score, h.relevance, h.history) for h in r.hits] + [r.top_relevance])
    return out


def test_results_identical_with_and_without_cache(project: Path) -> None:
    store = Store(project)
    plain = results(build(store, None))
    first = AnalysisCache.load(store)
    assert results(build(store, first)) == plain
    assert first.misses > 0 and first.save(store)
    second = AnalysisCache.load(Store(project))
    assert results(build(Store(project), second)) == plain
    assert second.misses == 0 and second.hits > 0 and not second.changed
    assert not second.save(Store(project))  # nothing changed: no write


def test_cached_analysis_equals_fresh(project: Path) -> None:
    store = Store(project)
    cache = AnalysisCache.load(store)
    build(store, cache)
    cache.save(store)
    reloaded = AnalysisCache.from_json(json.loads((project / ".context" / FILE).read_text()))
    for kind in KINDS.values():
        for entry in store.state(kind).entries:
            fresh = _terms(entry)
            cached = reloaded.analyse(entry, lambda e: pytest.fail("should be cached"))
            counts = {term: list(c) for term, c in cached[0].items()}  # decoded as tuples
            assert (counts, cached[1]) == fresh and list(cached[0]) == list(fresh[0])  # term order too


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\xff garbage",
        b"[1, 2, 3]",
        b'{"format": 1, "fingerprint": "nope", "entries": {}}',
        b"NaN",
        b'{"format": 1, "fingerprint": "FP", "entries": "x"}',
        b'{"format": 1, "fingerprint": "FP", "entries": [1]}',
    ],
)
def test_garbage_file_is_ignored(project: Path, content: bytes) -> None:
    from context_keeper.search.state import fingerprint

    plain = results(build(Store(project), None))
    (project / ".context" / FILE).write_bytes(content.replace(b"FP", fingerprint().encode()))
    store = Store(project)
    cache = AnalysisCache.load(store)
    assert results(build(store, cache)) == plain
    assert cache.hits == 0
    assert cache.save(store)
    assert json.loads((project / ".context" / FILE).read_text())["entries"]


def test_tampered_records_are_ignored(project: Path) -> None:
    store = Store(project)
    cache = AnalysisCache.load(store)
    build(store, cache)
    cache.save(store)
    path = project / ".context" / FILE
    data = json.loads(path.read_text())
    keys = list(data["entries"])
    bad = [
        None, 5, "x", [], ["1,2,3,4", "a", "1,1,1,1"],          # wrong shapes / sums
        ["0,0,0,0", "a", "-1,1,0,0"],                             # negative count
        ["a,b,c,d", "x", "1,0,0,0"], ["1,0,0,0", "x\x1fx", "1,0,0,0,0,0,0,0"],  # non-int, dup term
        ["1,0,0,0", "x", "1,0,0"], [{"x": 1}, "x", "1,0,0,0"], ["1,0,0,0", ["x"], "1,0,0,0"],
    ]
    for key, record in zip(keys, bad):
        data["entries"][key] = record
    path.write_text(json.dumps(data))
    store = Store(project)
    plain = results(build(store, None))
    tampered = AnalysisCache.load(store)
    assert results(build(store, tampered)) == plain
    assert tampered.misses == len(bad) and tampered.changed


def test_changed_entry_is_reanalysed(project: Path) -> None:
    store = Store(project)
    cache = AnalysisCache.load(store)
    build(store, cache)
    cache.save(store)
    removed = store.state(KINDS["decision"]).entries[-1]  # as indexed (normalised)
    path = project / ".context" / "decisions.json"
    decisions = json.loads(path.read_text())
    decisions[0]["summary"] = "Zanzibar quokka telemetry pipeline"
    decisions.pop()
    path.write_text(json.dumps(decisions, indent=2))
    store = Store(project)
    again = AnalysisCache.load(store)
    index = build(store, again)
    assert again.misses == 1 and again.changed  # the edited one; the removed one is dropped
    assert results(index) == results(build(store, None))
    assert index.search("zanzibar quokka").hits[0].entry["id"] == decisions[0]["id"]
    again.save(store)
    saved = json.loads((project / ".context" / FILE).read_text())["entries"]
    edited = store.state(KINDS["decision"]).entries[0]
    assert entry_key(removed) not in saved and entry_key(edited) in saved and len(saved) == len(again._used)


def test_entry_key_ignores_key_order_and_tolerates_odd_values() -> None:
    assert entry_key({"a": 1, "b": [2]}) == entry_key({"b": [2], "a": 1})
    assert entry_key({"a": "\ud800"}) is not None
    assert entry_key({"a": object()}) is None


def test_stem_table_matches_live_stemmer() -> None:
    from context_keeper.search import stem_table

    assert stem_table.STEMS == stem_table.live_stems(), "run: python -m context_keeper.search.stem_table"


def test_hook_writes_and_reuses_search_state(project: Path) -> None:
    from context_keeper.hooks.user_prompt import _service

    query = "how do we retry carrier API calls when they time out?"
    svc = _service(str(project))
    first = svc.get_context(query=query, token_budget=1500, include_related=False)
    svc.save_search_state()
    assert (project / ".context" / FILE).exists()
    (project / ".context" / "search_index_state.json").unlink()  # so the index is built, from the analyses
    svc2 = _service(str(project))
    second = svc2.get_context(query=query, token_budget=1500, include_related=False)
    assert second == first
    assert svc2._analyses.misses == 0
    from context_keeper.service import Service

    assert Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project)).get_context(
        query=query, token_budget=1500, include_related=False) == first
