"""The store's reading cache (reading_cache.py): a new process reads an unchanged store without
checking every entry again, reads exactly what a full reading reads, and trusts no record of a
file that changed."""

from __future__ import annotations

import copy
import fnmatch
import json
import os
import threading
from pathlib import Path

import pytest

from context_keeper import doctor, model, reading_cache
from context_keeper.gitignore import GITIGNORE
from context_keeper.model import CONSTRAINT, DECISION, KINDS
from context_keeper.store import FileState, Store

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(".context") / reading_cache.FILE


@pytest.fixture
def large_enough(monkeypatch):
    """The example project is far below the size a cache pays for; the tests keep one all the same."""
    monkeypatch.setattr(reading_cache, "MIN_ENTRIES", 1)


@pytest.fixture
def checks(monkeypatch):
    """The items whose fields are checked, as (file, id) in the order they were."""
    seen = []
    real = model.read_entry_checked

    def counted(kind, raw):
        seen.append((kind.filename, raw.get("id") if isinstance(raw, dict) else None))
        return real(kind, raw)

    monkeypatch.setattr(model, "read_entry_checked", counted)
    return seen


def _with_hand_edits(project: Path) -> None:
    """Items each of which a full reading reports or reads otherwise than as stored."""
    path = project / ".context" / "constraints.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    items[1]["status"] = "retird"                   # read as active, said so
    items[2]["tags"] = "migrations"                 # a list expected
    del items[3]["hardness"]                        # defaulted, no problem
    items.append({**items[4]})                      # a duplicate id
    items.append("a stray string")                  # not an object
    items.append({**items[5], "id": "dec-900"})     # another kind's id, counted for that kind
    items.append({**items[6], "id": "con-950", "superseded_by": " con-960 "})  # a link counted, spaces read away
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")


def _saved(project: Path) -> Store:
    store = Store(project)
    store.all_states()
    store.save_reading_cache()
    return store


def _reading(state: FileState) -> dict:
    """Everything a file state says, the source text included (not_plain is the cache's own)."""
    return {name: getattr(state, name) for name in FileState._FIELDS if name != "not_plain"}


def _as_read(project: Path) -> list[dict]:
    return [_reading(s) for s in Store(project).all_states()]


def _full_reading(project: Path, monkeypatch) -> list[dict]:
    with monkeypatch.context() as m:
        m.setattr(reading_cache, "FORMAT", -1)  # no record is one this code wrote
        m.setattr(reading_cache, "_fingerprint", None)
        return _as_read(project)


# ------------------------------------------------------------------ plain entries


def _variants(kind, item: dict):
    """``item`` and hand-edited versions of it: each field missing, null, of another type,
    padded with spaces, or in a list holding another type."""
    yield item
    for name in list(item):
        if name == "id":
            continue
        yield {k: v for k, v in item.items() if k != name}
        for value in (None, 7, 1.5, True, " padded ", "", [], ["x", 3], [{"order": 1.0, "action": "a"}], {"a": 1}):
            yield {**item, name: value}
    yield {**item, "id": f" {item['id']} "}
    yield {**item, "why_chosen": "", "rationale": "kept from an older version"}


def _stored_items():
    paths = [*REPO.glob("examples/*/.context/*s.json"), *REPO.glob("tests/fixtures/**/.context/*s.json"),
             *sorted(REPO.glob("evals/stores/*/.context/*s.json"))[:12]]
    for path in paths:
        kind = model.BY_PLURAL.get(path.stem)
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        for item in items[:12] if isinstance(items, list) else ():
            yield kind, item


def test_an_entry_read_plain_is_exactly_the_checked_reading():
    tried = plain = 0
    for kind, item in _stored_items():
        if kind is None or not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        for variant in _variants(kind, item):
            before = copy.deepcopy(variant)
            entry, problems, is_plain = model.read_entry_checked(kind, variant)
            tried += 1
            assert (entry, problems) == model.read_entry(kind, variant)
            if is_plain:
                plain += 1
                assert not problems
                again = model.plain_entry(kind, variant)
                # Key order and types as well (1.0 == 1 == True in Python).
                assert json.dumps(again) == json.dumps(entry), (kind, variant)
                assert list(map(type, again.values())) == list(map(type, entry.values()))
                # The same lists shared with the stored item (only fields no kind declares).
                assert [again[k] is variant.get(k) for k in again] == [entry[k] is variant.get(k) for k in entry]
            assert variant == before
    assert plain > 100 and tried - plain > 100  # both sides were tried


# ------------------------------------------------------------------ the cache in use


def test_a_warm_reading_checks_only_the_items_that_need_it(project, large_enough, checks, monkeypatch):
    _with_hand_edits(project)
    full = _full_reading(project, monkeypatch)
    _saved(project)
    checks.clear()
    assert _as_read(project) == full  # problems, counts, entries, source: all the same
    names = {name for name, _ in checks}
    assert names == {"constraints.json"}, checks  # decisions and pipelines: nothing to check again
    assert len(checks) == 6  # the status, the tags, the duplicate, the string, dec-900, the padded link


def test_the_hand_edits_are_still_reported(project, large_enough, monkeypatch):
    _with_hand_edits(project)
    before = doctor.diagnose(project).as_dict()
    _saved(project)
    assert doctor.diagnose(project).as_dict() == before
    state = Store(project).state(CONSTRAINT)
    assert any("retird" in p for p in state.problems)
    assert state.misfiled_max == {"dec": 900} and state.link_max == {"con": 960}
    assert Store(project).state(DECISION).not_plain == ()


def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """A hand edit of the same size, the modification time put back (``touch -r``)."""
    assert len(old) == len(new)
    st = path.stat()
    data = path.read_bytes()
    assert data.count(old) >= 1
    with open(path, "r+b") as handle:
        handle.write(data.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def _retired_by_hand(state: FileState) -> bool:
    return any("expird" in p for p in state.problems) and all(e["status"] != "expird" for e in state.entries)


def test_a_same_size_edit_keeping_the_mtime_is_read_in_full(project, large_enough):
    _saved(project)
    path = project / ".context" / "constraints.json"
    _edit_in_place(path, b'"status": "active"', b'"status": "expird"')
    assert _retired_by_hand(Store(project).state(CONSTRAINT))


def test_a_record_whose_stamp_still_fits_is_not_trusted_for_other_bytes(project, large_enough):
    """Where the file system keeps no finer time than the edit (and the inode is reused), only the
    content tells: the record's stamps are set to the edited file's, its digest is not."""
    _saved(project)
    path = project / ".context" / "constraints.json"
    _edit_in_place(path, b'"status": "active"', b'"status": "expird"')
    cache = project / CACHE
    data = json.loads(cache.read_text(encoding="utf-8"))
    st = path.stat()
    data["files"]["constraints.json"]["stamp"] = [st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino]
    cache.write_text(json.dumps(data), encoding="utf-8")
    assert _retired_by_hand(Store(project).state(CONSTRAINT))


def test_a_file_replaced_by_a_checkout_is_read_in_full(project, large_enough):
    _saved(project)
    path = project / ".context" / "constraints.json"
    replacement = path.with_name("incoming.tmp")
    replacement.write_bytes(path.read_bytes().replace(b'"status": "active"', b'"status": "expird"', 1))
    os.replace(replacement, path)
    assert _retired_by_hand(Store(project).state(CONSTRAINT))


def test_a_deleted_file_is_not_read_from_its_record(project, large_enough):
    _saved(project)
    (project / ".context" / "constraints.json").unlink()
    state = Store(project).state(CONSTRAINT)
    assert state.entries == () and state.stamp is None


def test_a_changed_config_drops_every_record(project, large_enough, checks):
    _saved(project)
    config = project / ".context" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text(encoding="utf-8")), "id_suffix": True}),
                      encoding="utf-8")
    checks.clear()
    Store(project).all_states()
    assert len(checks) == sum(len(json.loads((project / ".context" / k.filename).read_bytes())) for k in KINDS.values())


def test_a_file_broken_by_a_hand_edit_is_reported_as_without_a_cache(project, large_enough):
    _saved(project)
    path = project / ".context" / "constraints.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"rule":', '"rule"', 1), encoding="utf-8")
    state = Store(project).state(CONSTRAINT)
    assert state.error is not None and "line" in str(state.error)
    assert state.not_plain is None  # and no record is kept of it
    store = _saved(project)
    assert "constraints.json" not in json.loads((project / CACHE).read_text(encoding="utf-8"))["files"]
    assert store.state(CONSTRAINT).error is not None


def _damaged(data: dict, how: str):
    record = data["files"]["constraints.json"]
    if how == "format":
        return {**data, "format": reading_cache.FORMAT - 1}
    if how == "fingerprint":
        return {**data, "fingerprint": "0" * 8}
    if how == "a plain item said to need checking":
        return {**data, "files": {"constraints.json": {**record, "not_plain": [0]}}}
    if how == "an index out of range":
        return {**data, "files": {"constraints.json": {**record, "not_plain": [10**6]}}}
    if how == "an item count that does not fit":
        return {**data, "files": {"constraints.json": {**record, "items": record["items"] + 1}}}
    if how == "counts of the wrong type":
        return {**data, "files": {"constraints.json": {**record, "max_number": "17"}}}
    if how == "a list":
        return [data]
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["format", "fingerprint", "a plain item said to need checking", "an index out of range",
                                 "an item count that does not fit", "counts of the wrong type", "a list"])
def test_a_damaged_or_foreign_record_is_ignored_and_rebuilt(project, large_enough, monkeypatch, how):
    path = project / ".context" / "constraints.json"
    _with_hand_edits(project)
    full = _full_reading(project, monkeypatch)
    _saved(project)
    cache = project / CACHE
    cache.write_text(json.dumps(_damaged(json.loads(cache.read_text(encoding="utf-8")), how)), encoding="utf-8")
    assert _as_read(project) == full
    _saved(project)  # the next reader leaves a good one
    record = reading_cache.restore(json.loads(cache.read_text(encoding="utf-8")), Store(project)._config_stamp())
    assert record["constraints.json"].digest == Store(project).state(CONSTRAINT).digest
    assert path.exists()


@pytest.mark.parametrize("content", [b"", b"{", b'{"format": 1, "files": ', b"\xff\xfe{}", b"null", b"[1, 2]"])
def test_a_truncated_or_unreadable_cache_file_is_ignored(project, large_enough, monkeypatch, content):
    full = _full_reading(project, monkeypatch)
    _saved(project)
    (project / CACHE).write_bytes(content)
    assert _as_read(project) == full
    _saved(project)
    assert json.loads((project / CACHE).read_text(encoding="utf-8"))["format"] == reading_cache.FORMAT


def test_an_unchanged_store_does_not_rewrite_the_cache(project, large_enough):
    _saved(project)
    before = (project / CACHE).stat()
    _saved(project)
    assert (project / CACHE).stat().st_ino == before.st_ino


def test_a_small_store_keeps_no_cache(project):
    _saved(project)
    assert not (project / CACHE).exists()


def test_the_cache_is_kept_out_of_git_as_the_other_caches():
    patterns = [line for line in GITIGNORE.splitlines() if line and not line.startswith("#")]
    assert any(fnmatch.fnmatch(reading_cache.FILE, pattern) for pattern in patterns)


def test_racing_writers_leave_a_whole_cache(project, large_enough):
    """Two writers (one store each, as two processes) and a reader: the reader only ever finds a
    whole file, the records of one writer or the other."""
    _with_hand_edits(project)
    stores = [Store(project), Store(project)]
    for store in stores:
        store.all_states()
    cache, found, stop = project / CACHE, [], threading.Event()

    def write(store: Store) -> None:
        for _ in range(30):
            store._records = None  # as a fresh process: nothing known, so it writes
            store.save_reading_cache()

    def read() -> None:
        while not stop.is_set():
            if cache.exists():
                found.append(reading_cache.restore(json.loads(cache.read_bytes()), stores[0]._config_stamp()))

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(store,)) for store in stores]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    reader.join()
    assert found and all(set(records) == {k.filename for k in KINDS.values()} for records in found)
    assert not list((project / ".context").glob("*.tmp"))


# ------------------------------------------------------------------ the hooks, as Claude Code runs them


def test_the_hooks_say_the_same_with_the_cache_as_without(tmp_path):
    from benchmarks.synthetic import make_sized_store
    from context_keeper.store import write_gitignore
    from tests.hook_helpers import hook_env, injected, payload, run_hook

    root = make_sized_store(tmp_path / "big", reading_cache.MIN_ENTRIES + 50)
    write_gitignore(root / ".context")
    path = root / ".context" / "constraints.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    items[0]["tags"] = "retries"  # a problem session start and doctor report
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    context, env = root / ".context", hook_env(root)

    def prompt(session: str) -> str | None:
        proc = run_hook("user_prompt_submit", payload("user_prompt_submit", root, session_id=session,
                                                      prompt=f"why do we {items[0]['rule'][:60]}"), env=env)
        return injected(proc)

    def session_start() -> str | None:
        (context / "hook_state.json").unlink(missing_ok=True)  # rebuilt from the store, not served
        return injected(run_hook("session_start", payload("session_start_startup", root), env=env))

    first = prompt("a")  # builds the index, leaves it and the reading cache
    assert (context / reading_cache.FILE).exists()
    warm, started = prompt("b"), session_start()
    (context / reading_cache.FILE).unlink()
    assert prompt("c") == warm == first and first is not None
    assert session_start() == started and "should be a list" in started
