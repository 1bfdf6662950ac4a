"""Pasted log lines and stack frames (round 19): a number, or the package of a frame, made an
unrelated entry a confident answer. Each test fails before its fix (search/numbers.py,
tokenize.path_context's packages and frame forms), except those marked as guards: they pass
before it too, and hold what the fix must keep (an honest question about a number, a class)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from context_keeper.search import DEFAULT_MIN_RELEVANCE, Doc, SearchIndex
from context_keeper.search.tokenize import path_context, terms
from context_keeper.service import Service

ROOT = Path(__file__).resolve().parents[1]

# Entries a warehouse team would record beside the demo's: a limit and a timeout, stated with
# their numbers.
_LIMIT_AND_TIMEOUT = [
    {"id": "dec-032", "summary": "Limit each packing station's print queue to 200 label jobs",
     "problem": "A station whose printer was offline for an afternoon queued thousands of label jobs, and when "
                "it came back the printer's buffer overflowed and dropped labels silently.",
     "why_chosen": "Above 200 queued jobs the station refuses new ones and the packer is told to switch printers; "
                   "200 is about two hours of packing at our busiest station.",
     "tags": ["labels", "printers"], "status": "active", "created_at": "2026-03-02T10:00:00+00:00"},
    {"id": "dec-033", "summary": "Bin lookups from the handheld use a 500ms timeout, then the local bin map",
     "problem": "Pickers on the mezzanine lose Wi-Fi for seconds at a time, and a bin lookup that waited for the "
                "server froze the scanner screen until it gave up.",
     "why_chosen": "After 500ms the handheld answers from its local copy of the bin map and refreshes it when the "
                   "server replies; a stale bin is rarer than a frozen screen.",
     "tags": ["scanner-app", "offline"], "status": "active", "created_at": "2026-03-09T10:00:00+00:00"},
]


def _store(tmp_path: Path, name: str = "demo-project", extra: list[dict] | None = None) -> Path:
    target = tmp_path / name
    if not target.exists():
        source = ROOT / "examples" / "demo-project" if name == "demo-project" else ROOT / "evals" / "stores" / name
        shutil.copytree(source, target)
        if extra:
            path = target / ".context" / "decisions.json"
            path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")) + extra, indent=2), encoding="utf-8")
    return target


def _answer(tmp_path: Path, query: str, name: str = "demo-project", extra: list[dict] | None = None) -> dict:
    return Service(env={}, hook_cache_delay=None).get_context(
        query=query, project_dir=str(_store(tmp_path, name, extra)), include_related=False)


def _relevance_of(answer: dict, entry_id: str) -> float:
    return next(item["relevance"] for item in answer["results"] if item["entry"]["id"] == entry_id)


# 1. A number in a log line counts only beside another asked word.

@pytest.mark.parametrize("store, pasted", [
    # The demo's "batches of 200 events" (dec-021) came back at 0.55 for a health check's log line.
    ("demo-project", "GET /healthz 200 2ms"),
    # queuebase: "200" and "503" are stated by entries about other things (0.50-0.59).
    ("queuebase", "GET /api/orders 200 in 35ms"),
    ("queuebase", "GET /healthz 200 2ms"),
    ("queuebase", "HTTP 503 after 30s"),
    # "2" and "10" of a restart counter; "1" of an exit status; a status and a duration.
    ("harbor", "worker 4 restarted (attempt 2 of 10)"),
    ("stackyard", "exit status 1"),
    ("wikiforge", "status=500 duration=1200ms"),
])
def test_a_log_line_sharing_only_its_numbers_is_not_a_confident_answer(store, pasted, tmp_path):
    answer = _answer(tmp_path, pasted, store)
    assert answer["no_confident_match"] is True and answer["top_relevance"] < DEFAULT_MIN_RELEVANCE


def test_the_entry_stating_the_number_of_a_log_line_is_a_weak_match(tmp_path):
    # "orders" is a word of the demo's order intake entries; the number is dec-021's batch size,
    # and its sentence says nothing about orders (0.68 before).
    answer = _answer(tmp_path, "GET /api/orders 200 in 35ms")
    assert _relevance_of(answer, "dec-021") < DEFAULT_MIN_RELEVANCE


@pytest.mark.parametrize("pasted, entry_id", [
    ("GET /api/orders 200 in 35ms", "dec-032"),
    ("took 500ms", "dec-033"),
])
def test_an_entry_whose_number_is_of_something_else_gets_no_relevance_from_it(pasted, entry_id, tmp_path):
    answer = _answer(tmp_path, pasted, extra=_LIMIT_AND_TIMEOUT)
    assert all(item["relevance"] < DEFAULT_MIN_RELEVANCE for item in answer["results"] if item["entry"]["id"] == entry_id)


# Guards: a question about a number names what the number is of.
@pytest.mark.parametrize("asked, entry_id", [
    ("why is the limit 200?", "dec-032"),
    ("what is the 500ms timeout for?", "dec-033"),
    ("why is the sync batch 200 events?", "dec-021"),
    ("what is the 90 second drain for?", "dec-029"),
    ("why are labels sent to port 9100?", "dec-014"),
    ("9100", "dec-014"),  # nothing but the number: it is the whole question
])
def test_a_question_about_a_number_stays_confident_and_finds_its_entry(asked, entry_id, tmp_path):
    answer = _answer(tmp_path, asked, extra=_LIMIT_AND_TIMEOUT)
    assert not answer.get("no_confident_match")
    assert answer["results"][0]["entry"]["id"] == entry_id


def test_a_number_counts_where_a_sentence_states_it_beside_an_asked_word():
    ix = SearchIndex()
    ix.upsert(Doc("decision", {"id": "dec-001", "summary": "Retry carrier calls up to 5 times",
                               "why_chosen": "Five attempts cover a carrier's usual blips."}))
    ix.upsert(Doc("decision", {"id": "dec-002", "summary": "Pack parcels in boxes of 3 to 5 items",
                               "why_chosen": "Retry nothing here; the boxes are what they are."}))
    relevance = {hit.entry["id"]: hit.relevance for hit in ix.search("retry 3 of 5").hits}
    # dec-002 has both numbers and "retry", but never in one sentence: it gets only the word's share.
    alone = {hit.entry["id"]: hit.relevance for hit in ix.search("retry").hits}
    assert relevance["dec-001"] > relevance["dec-002"]
    assert relevance["dec-002"] < alone["dec-002"]


def test_a_year_says_when_without_a_word_beside_it():
    # Imported here: the module is new in round 19, and the other tests run on the code before it.
    from context_keeper.search.numbers import is_value

    assert is_value("200") and is_value("500ms") and is_value("1")
    assert not is_value("2025") and not is_value("s3") and not is_value("5xx")


# 2. A stack frame's package or namespace locates it, as a path's directories do.

@pytest.mark.parametrize("frame, located, named", [
    ("at com.packwise.api.HealthCheck.run(HealthCheck.java:88)", {"com", "packwis", "api", "java"}, {"health", "check", "run"}),
    ("com.acme.sync.RetryQueue", {"com", "acm", "sync"}, {"retri", "queue"}),
    ("at com.acme.sync.RetryQueue$drain$1.invokeSuspend(RetryQueue.kt:42)", {"com", "acm", "sync", "kt"},
     {"retri", "queue", "drain", "suspend"}),
    ("at java.base/java.lang.Thread.run(Thread.java:833)", {"java", "lang", "base"}, {"thread", "run"}),
    ("   at Acme.Sync.RetryQueue.Drain() in /src/Acme.Sync/RetryQueue.cs:line 42", {"acm", "sync", "src", "cs"},
     {"retri", "queue", "drain"}),
    ("github.com/acme/packwise/sync.(*Queue).Drain(0xc000010000)", {"github", "com", "acm", "packwis", "sync"},
     {"queue", "drain"}),
    ("main.(*Queue).Drain(0xc000010000)", {"main"}, {"queue", "drain"}),
])
def test_a_frame_s_package_is_context_and_its_class_and_method_are_asked(frame, located, named):
    context = path_context(frame)
    assert located <= context
    assert not named & context and named <= set(terms(frame))


def test_a_dotted_name_without_a_class_or_a_frame_is_no_package():  # a guard
    assert path_context("e.g. the os.path.join call, api.example.com:443 and v1.2.3") == frozenset()


def test_a_dotnet_frame_names_its_file_at_the_line_as_a_colon_does():
    assert terms("at Acme.Sync.RetryQueue.Drain() in /src/Acme.Sync/RetryQueue.cs:line 42") == terms(
        "at Acme.Sync.RetryQueue.Drain() in /src/Acme.Sync/RetryQueue.cs:42")


def test_node_s_own_frames_add_no_term():
    assert terms("at processTicksAndRejections (node:internal/process/task_queues:95:5)") == terms(
        "at processTicksAndRejections")


@pytest.mark.parametrize("store, frame", [
    # The demo's packages: "packwise" and "sync" (con-014) or "carriers" (con-004), a class no entry names.
    ("demo-project", "com.packwise.sync.ColorPalette"),
    ("demo-project", "   at Packwise.Carriers.FontLoader.Load() in /src/Packwise.Carriers/FontLoader.cs:line 42"),
    ("demo-project", "github.com/acme/packwise/carriers.(*FontLoader).Load(0xc000010000)"),
    # ballotline's services/results/ingest, as a Java package (0.70).
    ("ballotline", "com.ballotline.services.results.ingest.ColorPalette"),
])
def test_a_frame_sharing_only_its_package_words_is_not_a_confident_answer(store, frame, tmp_path):
    answer = _answer(tmp_path, frame, store)
    assert answer["no_confident_match"] is True and answer["top_relevance"] < DEFAULT_MIN_RELEVANCE


@pytest.mark.parametrize("frame", [
    "at com.packwise.carriers.FontLoader.load(FontLoader.java:88)",
    "at com.packwise.carriers.FontLoader.load(FontLoader.kt:42)",
    "   at Packwise.Carriers.FontLoader.Load() in C:/src/Packwise.Carriers/FontLoader.cs:line 42",
    "github.com/acme/packwise/carriers.(*FontLoader).Load(0xc000010000)",
    # A guard: Node's frame names the file by its path, which round 18 reads already.
    "at FontLoader.load (/app/src/carriers/fontLoader.js:10:5)",
    "carriers.(*FontLoader).Load(0xc000010000)\n\t/home/x/go/src/packwise/carriers/font_loader.go:12 +0x1d",
])
def test_a_frame_in_any_language_is_as_relevant_as_its_class_and_method_typed_alone(frame, tmp_path):
    typed = _answer(tmp_path, "FontLoader.load")["top_relevance"]
    assert typed < DEFAULT_MIN_RELEVANCE
    assert _answer(tmp_path, frame)["top_relevance"] == pytest.approx(typed)


# Guard: a frame through the class an entry is about still finds it.
def test_a_frame_through_a_recorded_class_finds_its_entry(tmp_path):
    answer = _answer(tmp_path, "at com.packwise.scanner.ScanJournal.writeAtomic(ScanJournal.kt:57)")
    assert not answer.get("no_confident_match")
    assert answer["results"][0]["entry"]["id"] == "con-002"
