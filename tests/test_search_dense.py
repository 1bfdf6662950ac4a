"""The array path of scoring (search/dense.py) answers exactly as the dictionary path."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from datetime import datetime, timezone

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import context_keeper.search.engine as engine
from benchmarks.bench_retrieval import synthetic_queries, synthetic_store
from benchmarks.synthetic import make_sized_store
from context_keeper.search import Doc, SearchIndex, SearchOptions, dense
from tests.conftest import REPO as ROOT
from tests.hook_helpers import hook_env, payload

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


def _docs(n: int, seed: int, vocab: int = 300) -> list[Doc]:
    """A synthetic store with exact duplicates (equal scores at every rank) besides the rest."""
    store = synthetic_store(n, seed=seed, vocab=vocab)
    docs = [Doc(kind, entry) for kind, entries in store.items() for entry in entries]
    rng = random.Random(seed)
    for i, doc in enumerate(rng.sample(docs, 40)):
        twin = copy.deepcopy(doc.entry)
        twin["id"] = f"{twin['id']}-{i:03d}a"  # dec-013-a7f3 style: a valid id of the same kind
        docs.append(Doc(doc.kind, twin))
    return docs


def _index(docs: list[Doc]) -> SearchIndex:
    ix = SearchIndex()
    for doc in docs:
        ix.upsert(doc)
    # Rewriting entries in place reuses their slots at the end of each posting dict: the order
    # the dictionary path sums in is then not the slot order.
    for doc in docs[::7]:
        ix.upsert(Doc(doc.kind, dict(doc.entry)))
    return ix


def _answer(ix: SearchIndex, query: str, options: SearchOptions, monkeypatch, dense_min: int):
    monkeypatch.setattr(engine, "DENSE_MIN", dense_min)
    result = ix.search(query, options)
    return result.top_relevance, [(h.kind, h.entry["id"], h.score, h.relevance, h.history) for h in result.hits]


OPTIONS = [
    SearchOptions(limit=5, now=NOW),
    SearchOptions(limit=1, now=NOW),
    SearchOptions(limit=50, now=NOW),
    SearchOptions(limit=8, now=NOW, kinds=("constraint",)),
    SearchOptions(limit=8, now=NOW, scope="hooks/a.py"),
    SearchOptions(limit=8, now=NOW, include_deprecated=True),
]


def test_search_answers_are_identical_on_both_paths(monkeypatch):
    ix = _index(_docs(900, seed=5))
    queries = synthetic_queries(60, seed=3) + ["what did we do before the cache", "cache", "retry retry timeout"]
    for query in queries:
        for options in OPTIONS:
            by_dict = _answer(ix, query, options, monkeypatch, 10**9)
            by_array = _answer(ix, query, options, monkeypatch, 0)
            assert by_array == by_dict, (query, options)
    assert ix._term_arrays is not None  # the array path did run


def test_scores_are_the_dictionary_sums_bit_for_bit():
    ix = _index(_docs(400, seed=9))
    rng = random.Random(2)
    terms = sorted(ix._postings)
    for _ in range(300):
        # A weight of 0.0 (a tuning with generic_weight or a group weight at 0) scores an entry
        # 0.0, which the dictionary path still holds as touched.
        groups = [
            [(rng.choice(terms), rng.choice([0.0, rng.uniform(0.01, 4.0)])) for _ in range(rng.randint(1, 4))]
            for _ in range(rng.randint(1, 6))
        ]
        expected = ix._score_groups(groups)
        got = dense.score_groups(groups, ix._postings, dense.TermArrays(), len(ix._entries))
        assert len(got) == len(expected)
        assert all(got.get(slot, -1.0) == value for slot, value in expected.items())
        assert got.largest(len(expected) + 1) == engine._largest(expected, len(expected) + 1)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.integers(0, 300), st.sampled_from([0.5, 1.0, 1.25, 2.0]) | st.floats(0.01, 9.0)),
    st.integers(0, 40),
)
def test_the_array_shortlist_is_the_dictionary_shortlist(scores, k):
    # Values from a few levels: ties at the k-th place are common.
    array, touched = np.zeros(301), np.zeros(301, dtype=bool)
    for slot, value in scores.items():
        array[slot], touched[slot] = value, True
    assert dense.DenseScores(array, touched).largest(k) == engine._largest(scores, k)


@pytest.mark.parametrize("change", ["upsert", "remove", "replace_kind"])
def test_arrays_follow_every_change_to_the_postings(monkeypatch, change):
    ix = _index(_docs(300, seed=4))
    ix.upsert(Doc("decision", {"id": "dec-900", "summary": "Zebra quorum fencing for the leader"}))
    query, options = "zebra quorum fencing retry cache", SearchOptions(limit=5, now=NOW)
    assert [hit[1] for hit in _answer(ix, query, options, monkeypatch, 0)[1]][:1] == ["dec-900"]  # arrays made
    if change == "upsert":
        ix.upsert(Doc("constraint", {"id": "con-900", "rule": "Zebra quorum fencing tokens are never reused",
                                     "reason": "", "scope": "global"}))
    elif change == "remove":
        ix.remove("decision", "dec-900")
    else:
        ix.replace_kind("decision", [Doc("decision", {"id": "dec-001", "summary": "Zebra crossings"})])
    assert _answer(ix, query, options, monkeypatch, 0) == _answer(ix, query, options, monkeypatch, 10**9)
    # Every array still cached is its term's postings now (a removed entry's slot lingering in
    # one would be filtered out of answers, but not out of the shortlist's arithmetic).
    cached = ix._term_arrays._arrays
    assert cached
    for term, (slots, sats) in cached.items():
        assert dict(zip(slots.tolist(), sats.tolist())) == ix._postings[term], term


def test_a_zero_weight_tuning_gives_the_same_answers(monkeypatch):
    from dataclasses import replace

    from context_keeper.search.tuning import DEFAULT_TUNING

    ix = SearchIndex(replace(DEFAULT_TUNING, generic_weight=0.0))
    for doc in _docs(300, seed=6):
        ix.upsert(doc)
    for query in ["zebra usual", "the usual cache", *synthetic_queries(20, seed=8)]:
        options = SearchOptions(limit=5, now=NOW)
        assert _answer(ix, query, options, monkeypatch, 0) == _answer(ix, query, options, monkeypatch, 10**9), query


_PROBE = """
import sys
from benchmarks.bench_retrieval import synthetic_store
from context_keeper.search import Doc, SearchIndex, SearchOptions, snapshot
store = synthetic_store({n}, seed=1)
docs = {{kind: [Doc(kind, e) for e in entries] for kind, entries in store.items()}}
ix = SearchIndex()
for kind, kind_docs in docs.items():
    ix.replace_kind(kind, kind_docs)
stamps = [None, None, None]
if {restored}:
    ix = snapshot.restore(snapshot.dump(ix, stamps), docs, stamps, ix.tuning)
ix.search("why do we retry the queue when the cache fails", SearchOptions(limit=5))
print("numpy" in sys.modules)
"""


@pytest.mark.parametrize(("n", "restored", "imports_numpy"), [(2500, False, True), (300, False, False), (2500, True, False)])
def test_numpy_is_loaded_only_for_a_large_store_in_a_long_lived_index(n, restored, imports_numpy):
    # A hook searches a restored snapshot once per process: NumPy's import would cost it more
    # than the arrays save. The server's index of a large store uses them.
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(n=n, restored=restored)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    assert out.stdout.split()[-1] == str(imports_numpy)


@pytest.mark.parametrize("command", ["hook", "cli"])
def test_one_shot_processes_never_import_numpy(tmp_path, command):
    # The prompt hook without a usable snapshot builds a full index, and so does `context-keeper
    # get`: a large store, searched once, is still scored by dictionary.
    root = make_sized_store(tmp_path / "big", 2500)
    if command == "hook":
        args = [sys.executable, "-S", "-X", "importtime", str(ROOT / "hooks" / "user_prompt_submit.py")]
        stdin = json.dumps(payload("user_prompt_submit", root, prompt="why do we retry the label printer when the carrier times out?"))
        env = hook_env(root)
    else:
        args = [sys.executable, "-X", "importtime", "-m", "context_keeper", "get", "why do we retry the label printer",
                "--project", str(root)]
        stdin, env = "", None
    proc = subprocess.run(args, input=stdin, capture_output=True, text=True, env=env, cwd=root, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "context_keeper.search.engine" in imported  # it did search
    assert "numpy" not in imported
