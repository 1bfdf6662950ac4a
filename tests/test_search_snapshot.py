"""A snapshot-restored index ranks exactly as the index it was saved from."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

from context_keeper.model import KINDS
from context_keeper.search import Doc, SearchIndex, SearchOptions, snapshot
from context_keeper.search.tuning import DEFAULT_TUNING, Tuning
from context_keeper.store import Store
from tests.conftest import REPO
from tests.hook_helpers import hook_env, injected, payload, run_hook

STORES = [REPO / "examples" / "demo-project", *sorted(p for p in (REPO / "evals" / "stores").iterdir() if (p / ".context").is_dir())]
NOW = __import__("datetime").datetime(2026, 12, 1, tzinfo=__import__("datetime").timezone.utc)


def _docs(store: Store) -> dict[str, list[Doc]]:
    return {kind.name: [Doc(kind.name, e) for e in store.state(kind).entries] for kind in KINDS.values()}


def _stamps(store: Store) -> list:
    return [store.state(kind).stamp for kind in KINDS.values()]


def _built(store: Store) -> SearchIndex:
    index = SearchIndex(DEFAULT_TUNING)
    for kind, docs in _docs(store).items():
        index.replace_kind(kind, docs)
    index.settle()  # as the prompt hook builds it
    return index


@functools.lru_cache(maxsize=1)
def _golden() -> tuple[dict, ...]:
    """evals/golden.jsonl, parsed once for all the stores (it grows by ~48 cases a store)."""
    text = (REPO / "evals" / "golden.jsonl").read_text(encoding="utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def _questions(root: Path) -> list[str]:
    mine = [c["query"] for c in _golden() if c.get("store") == root.name and c.get("split") == "dev"]
    assert mine, root.name
    # A how-to question: the restored index has no term counts, so the check reads the entry's text.
    return mine[:25] + ["", "label printer", "how did we handle retries before", "how do we rotate the printer key",
                        "zzz nothing here"]


def _ranked(index: SearchIndex, query: str, options: SearchOptions) -> list:
    result = index.search(query, options)
    return [result.top_relevance, [(h.kind, h.entry.get("id"), h.score, h.relevance, h.history) for h in result.hits]]


@pytest.mark.parametrize("root", STORES, ids=lambda p: p.name)
def test_restored_index_ranks_exactly_as_the_built_one(root: Path):
    store = Store(root)
    built = _built(store)
    data = json.loads(json.dumps(snapshot.dump(built, _stamps(store))))  # through the file format
    restored = snapshot.restore(data, _docs(store), _stamps(store), DEFAULT_TUNING)
    assert isinstance(restored, snapshot.SnapshotIndex)
    option_sets = [SearchOptions(now=NOW), SearchOptions(now=NOW, kinds=frozenset({"constraint"})),
                   SearchOptions(now=NOW, include_deprecated=True, limit=40)]
    for query in _questions(root):
        for options in option_sets:
            if not query and options.kinds is None:
                continue
            assert _ranked(restored, query, options) == _ranked(built, query, options), query


def test_a_restored_index_analyses_only_the_entries_a_search_reads(monkeypatch):
    # Analysing every entry of a 50,000-entry store on restore was most of the prompt hook's time.
    store = Store(REPO / "examples" / "demo-project")
    built = _built(store)
    data = json.loads(json.dumps(snapshot.dump(built, _stamps(store))))
    analysed = []
    real = snapshot._analyse
    monkeypatch.setattr(snapshot, "_analyse", lambda doc, key, **kw: analysed.append(key) or real(doc, key, **kw))
    restored = snapshot.restore(data, _docs(store), _stamps(store), DEFAULT_TUNING)
    # Restoring analyses only what may succeed another entry; one search only its shortlist.
    assert len(analysed) == sum(1 for docs in _docs(store).values() for d in docs if d.entry.get("superseded_by") is not None)
    options = SearchOptions(now=NOW, limit=3)
    assert _ranked(restored, "label printer", options) == _ranked(built, "label printer", options)
    assert 0 < len(analysed) < len(built) / 2
    # Iterating, as a search without words does, reads every entry once.
    assert _ranked(restored, "", SearchOptions(now=NOW, kinds=frozenset({"constraint"}))) == _ranked(
        built, "", SearchOptions(now=NOW, kinds=frozenset({"constraint"})))
    assert sorted(analysed) == sorted(set(analysed)) and len(analysed) == len(built)


def test_a_snapshot_that_does_not_fit_is_refused(project: Path):
    store = Store(project)
    data = json.loads(json.dumps(snapshot.dump(_built(store), _stamps(store))))
    assert snapshot.restore(data, _docs(store), _stamps(store), DEFAULT_TUNING) is not None
    other_stamps = [None if s is None else (s[0] + 1, *s[1:]) for s in _stamps(store)]
    assert snapshot.restore(data, _docs(store), other_stamps, DEFAULT_TUNING) is None
    assert snapshot.restore(data, _docs(store), _stamps(store), Tuning(k1=1.6)) is None
    assert snapshot.restore(data, _docs(store), _stamps(store), Tuning(prf=True)) is None
    fewer = {k: v[:-1] if k == "decision" else v for k, v in _docs(store).items()}
    assert snapshot.restore(data, fewer, _stamps(store), DEFAULT_TUNING) is None
    for damage in ({"entries": "x"}, {"avg_used": ["a"]}, {"postings": []}, {"format": 99}):
        assert snapshot.restore({**data, **damage}, _docs(store), _stamps(store), DEFAULT_TUNING) is None
    assert snapshot.restore("garbage", _docs(store), _stamps(store), DEFAULT_TUNING) is None


def test_a_restored_index_is_read_only(project: Path):
    store = Store(project)
    data = snapshot.dump(_built(store), _stamps(store))
    restored = snapshot.restore(data, _docs(store), _stamps(store), DEFAULT_TUNING)
    doc = _docs(store)["decision"][0]
    for call in (lambda: restored.similar(doc), lambda: restored.upsert(doc), lambda: restored.remove("decision", "dec-001")):
        with pytest.raises(RuntimeError):
            call()


def test_the_prompt_hook_saves_reuses_and_survives_a_damaged_snapshot(project: Path):
    env = hook_env(project)
    prompt = payload("user_prompt_submit", project)
    path = project / ".context" / snapshot.FILE
    first = injected(run_hook("user_prompt_submit", dict(prompt, session_id="s1"), env=env))
    assert first and path.exists()
    written = path.stat().st_mtime_ns
    second = injected(run_hook("user_prompt_submit", dict(prompt, session_id="s2"), env=env))
    assert second == first and path.stat().st_mtime_ns == written  # restored, not rebuilt
    data = json.loads(path.read_text(encoding="utf-8"))
    for term in data["postings"]:
        data["postings"][term] = ["1,2,3", "0.5"]  # lengths disagree: damaged
    path.write_text(json.dumps(data), encoding="utf-8")
    os.utime(path, ns=(written, written))
    third = injected(run_hook("user_prompt_submit", dict(prompt, session_id="s3"), env=env))
    assert third == first
    assert not (project / ".context" / "hook.log").exists()


def test_a_server_write_refreshes_the_snapshot_in_the_background(project: Path):
    import time

    from context_keeper.hooks import cache
    from context_keeper.service import Service

    assert cache.SNAPSHOT_FILE == snapshot.FILE
    env = hook_env(project)
    prompt = payload("user_prompt_submit", project)
    injected(run_hook("user_prompt_submit", dict(prompt, session_id="s1"), env=env))  # writes the snapshot
    path = project / ".context" / snapshot.FILE
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, hook_cache_delay=0)
    svc.record("decision", {"summary": "Carrier API calls time out after 8 seconds and retry twice",
                            "problem": "Carrier label calls hung for a minute when the carrier was degraded, blocking packers.",
                            "why_chosen": "Eight seconds covers the slowest healthy response we measured; two retries ride out blips.",
                            "tags": ["carriers"]})
    store = Store(project)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the background process writes it for the store as it is now
        data = snapshot.load(str(path))
        if snapshot.restore(data, _docs(store), _stamps(store), DEFAULT_TUNING) is not None:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the snapshot was not refreshed after the write")
    written = path.stat().st_mtime_ns
    text = injected(run_hook("user_prompt_submit", dict(prompt, session_id="s2"), env=env))
    assert path.stat().st_mtime_ns == written  # the prompt restored it, built nothing
    assert "dec-032" in text
    assert not (project / ".context" / "hook.log").exists()
    deadline = time.monotonic() + 30
    while _zombie_children() and time.monotonic() < deadline:  # the server reaps what it started
        time.sleep(0.05)
    assert _zombie_children() == []


def _zombie_children() -> list[int]:
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    found = []
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            found.append(int(stat.parent.name))
    return found


def _damaged(data: dict, what: str) -> dict:
    data = json.loads(json.dumps(data))
    if what == "posting_not_a_list":
        data["postings"] = {term: 5 for term in data["postings"]}
    elif what == "size_beyond_the_slots":
        data["size"] += 3
    elif what == "huge_size":
        data["size"] = 10**12
    elif what == "entry_slot_out_of_range":
        data["entries"][0][0] = data["size"] + 7
    elif what == "entry_slot_negative":
        data["entries"][0][0] = -1
    elif what == "two_entries_one_slot":
        data["entries"][1][0] = data["entries"][0][0]
    elif what == "lens_short":
        data["entries"][0][3] = []
    elif what == "free_slot_taken":
        data["free"], data["size"] = [0], data["size"] + 1
    elif what == "avg_used_short":
        data["avg_used"] = []
    elif what == "avg_used_nan":
        data["avg_used"] = ["nan"] * len(data["avg_used"])
    elif what == "len_sums_text":
        data["len_sums"] = "abc"
    return data


DAMAGE = ["posting_not_a_list", "size_beyond_the_slots", "huge_size", "entry_slot_out_of_range", "entry_slot_negative",
          "two_entries_one_slot", "lens_short", "free_slot_taken", "avg_used_short", "avg_used_nan", "len_sums_text"]


@pytest.mark.parametrize("what", DAMAGE)
def test_a_snapshot_of_the_wrong_shape_is_refused(project: Path, what: str):
    # Valid JSON with matching stamps, but a posting or a slot that the engine would index out
    # of range with (IndexError / TypeError on every prompt, and never rebuilt).
    store = Store(project)
    data = snapshot.dump(_built(store), _stamps(store))
    assert snapshot.restore(_damaged(data, what), _docs(store), _stamps(store), DEFAULT_TUNING) is None


@pytest.mark.parametrize("slots", ["0,99999", "-1", "0,0"])
def test_a_posting_list_naming_no_slot_of_the_index_fails_as_damaged_when_read(project: Path, slots: str):
    store = Store(project)
    data = json.loads(json.dumps(snapshot.dump(_built(store), _stamps(store))))
    data["postings"] = {term: [slots, ",".join(["1.0"] * len(slots.split(",")))] for term in data["postings"]}
    restored = snapshot.restore(data, _docs(store), _stamps(store), DEFAULT_TUNING)
    with pytest.raises(ValueError, match="damaged posting list"):
        restored.search("label printer", SearchOptions(now=NOW))


@pytest.mark.parametrize("damage", ["slot_out_of_range", "posting_not_a_list"])
def test_the_prompt_hook_rebuilds_a_snapshot_whose_lists_are_damaged(project: Path, damage: str):
    env = hook_env(project)
    prompt = payload("user_prompt_submit", project)
    path = project / ".context" / snapshot.FILE
    first = injected(run_hook("user_prompt_submit", dict(prompt, session_id="s1"), env=env))
    written = path.stat().st_mtime_ns
    data = json.loads(path.read_text(encoding="utf-8"))
    for term, (slots, weights) in data["postings"].items():
        data["postings"][term] = ["99999", "1.0"] if damage == "slot_out_of_range" else 5
    path.write_text(json.dumps(data), encoding="utf-8")
    os.utime(path, ns=(written, written))
    for session in ("s2", "s3"):
        assert injected(run_hook("user_prompt_submit", dict(prompt, session_id=session), env=env)) == first
    assert not (project / ".context" / "hook.log").exists()
    assert snapshot.restore(json.loads(path.read_text(encoding="utf-8")), _docs(Store(project)),
                            _stamps(Store(project)), DEFAULT_TUNING) is not None  # rebuilt and saved again
