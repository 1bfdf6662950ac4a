"""A query that is a pasted file path (round 18): the path's directories and suffix locate the
file, they do not make an answer confident. Each test fails before the fix (tokenize.path_context,
SearchIndex._cover), except the two marked as guards: they pass before it too, and hold what the
fix must keep (an entry that names the file, a constraint whose scope covers it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from context_keeper.search import DEFAULT_MIN_RELEVANCE, Doc, SearchIndex
from context_keeper.search.tokenize import file_paths, path_context
from context_keeper.service import Service

ROOT = Path(__file__).resolve().parents[1]


def _answer(store: str, query: str, tmp_path: Path) -> dict:
    target = tmp_path / store
    if not target.exists():
        source = ROOT / "examples" / "demo-project" if store == "demo-project" else ROOT / "evals" / "stores" / store
        shutil.copytree(source, target)
    return Service(env={}, hook_cache_delay=None).get_context(query=query, project_dir=str(target), include_related=False)


def _ids(answer: dict) -> list[str]:
    return [item["entry"]["id"] for item in answer["results"]]


# ------------------------------------------------------------------ not confident

@pytest.mark.parametrize("store, query", [
    # The demo's layout (src/packwise/<part>/...), a file no entry is about: "src", "packwise"
    # and "py" are in half its entries, and came back at 0.81.
    ("demo-project", "src/packwise/api/healthcheck.py"),
    ("demo-project", "src/packwise/reports/daily_digest.py"),
    ("demo-project", r"src\packwise\api\healthcheck.py"),
    ("demo-project", "./src/packwise/api/healthcheck.py:42"),
    # tilemill-cli records src/cache/key.rs and src/output/mbtiles.rs: "src", "cache" and "rs" (0.71).
    ("tilemill-cli", "src/cache/lru_shard.rs"),
    # ballotline's services/<name>/ layout, a directory no scope covers (0.53).
    ("ballotline", "services/metrics/healthcheck.py"),
])
def test_a_pasted_path_sharing_only_directory_words_is_not_a_confident_answer(store, query, tmp_path):
    answer = _answer(store, query, tmp_path)
    assert answer["no_confident_match"] is True and answer["top_relevance"] < DEFAULT_MIN_RELEVANCE
    assert all(item.get("weak_match") for item in answer["results"])


def test_directory_words_alone_give_no_relevance_in_the_engine():
    ix = SearchIndex()
    for n, part in enumerate(("billing", "orders", "search", "auth"), start=1):
        ix.upsert(Doc("constraint", {"id": f"con-00{n}", "rule": f"Code in src/acme/{part}/ keeps to the {part} rules",
                                     "reason": f"The {part} module of acme has its own owners", "scope": f"src/acme/{part}/"}))
    result = ix.search("src/acme/reports/pdf_export.py")
    assert result.hits and result.top_relevance == 0.0


# ------------------------------------------------------------------ confident, with the right entry first

def test_a_pasted_path_finds_what_is_about_its_file_name_first(tmp_path):
    # "retry" of retry_queue.py: dec-008 (backoff and retries) first, not pipe-001 ("Add a new
    # carrier integration"), which only shares src/packwise/... and .py.
    answer = _answer("demo-project", "src/packwise/sync/retry_queue.py", tmp_path)
    assert "no_confident_match" not in answer
    assert _ids(answer)[0] in {"dec-008", "con-005"}


def test_a_sentence_around_a_pasted_path_still_finds_the_retry_entry_first(tmp_path):
    answer = _answer("demo-project", "why does src/packwise/sync/retry_queue.py retry forever", tmp_path)
    assert "no_confident_match" not in answer
    assert _ids(answer)[0] in {"dec-008", "con-005"}


def test_the_entries_that_name_a_pasted_file_stay_confident_and_first(tmp_path):
    # A guard (passes before the fix too).
    answer = _answer("demo-project", "src/packwise/carriers/client.py", tmp_path)
    assert "no_confident_match" not in answer and answer["top_relevance"] == 1.0
    assert set(_ids(answer)[:2]) == {"con-004", "con-005"}  # "carriers/client.py"; scoped to the file


@pytest.mark.parametrize("store, query, rule", [
    # con-014 is scoped to src/packwise/sync/, con-008 to src/packwise/waves/: neither names
    # the file, both cover it.
    ("demo-project", "src/packwise/sync/healthcheck.py", "con-014"),
    ("demo-project", "src/packwise/waves/daily_digest.py", "con-008"),
    ("tilemill-cli", "src/config/lru_shard.rs", "con-003"),  # scoped to src/config/
])
def test_the_constraint_whose_scope_covers_a_pasted_file_is_a_confident_answer(store, query, rule, tmp_path):
    # A guard (passes before the fix too): without SearchIndex._cover these rules came back as
    # weak matches below entries sharing the file's name.
    answer = _answer(store, query, tmp_path)
    assert "no_confident_match" not in answer
    assert _ids(answer)[0] == rule
    assert not answer["results"][0].get("weak_match")


def test_the_file_name_of_a_path_is_searched_as_its_words_are(tmp_path):
    # What the file is called counts as the words typed alone would: the top entry and whether
    # the answer is confident are the same for the path and for its file name's words.
    path = _answer("demo-project", "src/packwise/auth/device_tokens.py", tmp_path)
    words = _answer("demo-project", "device tokens", tmp_path)
    assert _ids(path)[0] == _ids(words)[0] == "dec-013-a7f3"
    assert "no_confident_match" not in path and "no_confident_match" not in words


# ------------------------------------------------------------------ what is a path's location

@pytest.mark.parametrize("text, located", [
    ("src/packwise/sync/retry_queue.py", {"src", "packwis", "packwise", "sync", "py"}),
    ("./app/models/user.rb:42", {"app", "model", "models", "rb"}),
    ("hooks/scope_guard.py", {"hook", "hooks", "py"}),
    (r"src\app\main.py", {"src", "app", "py"}),
])
def test_a_pasted_paths_directories_and_suffix_are_its_location(text, located):
    assert located <= path_context(text)
    assert not path_context(text) & {"retri", "queue", "retry_queue", "user", "scope", "guard", "scope_guard", "main"}


@pytest.mark.parametrize("text", ["blue/green or rolling?", "mg/kg", "bold/italic/underline", "services/speech",
                                  "merge_nightly.py", "what is in src/sync/sync.py", "the sync code in src/sync/merge.py"])
def test_words_that_are_no_file_paths_location_stay_asked_words(text):
    # A slash alone makes no path; a word the file's name or the sentence also has is asked.
    assert not path_context(text) & {"blue", "green", "mg", "bold", "italic", "servic", "speech", "merg", "sync"}


def test_the_files_a_query_names_are_read_without_position_or_prefix():
    assert file_paths("at ./app/models/user.rb:42 in save") == ("app/models/user.rb",)
    assert file_paths("blue/green deploys") == ()


# ------------------------------------------------------------------ both scoring paths

def test_a_pasted_path_is_answered_the_same_on_the_array_and_dictionary_paths(monkeypatch):
    from tests.test_search_dense import OPTIONS, _answer as answer_by, _docs, _index

    ix = _index(_docs(900, seed=5))
    queries = ["src/app/models/user.rb:42", "hooks/a.py", "src/cache/retry_queue.py",
               "why does src/app/retry.py time out", "migrations/0042_add_index.sql"]
    covered = 0
    for query in queries:
        for options in OPTIONS:
            by_dict = answer_by(ix, query, options, monkeypatch, 10**9)
            assert answer_by(ix, query, options, monkeypatch, 0) == by_dict, (query, options)
        q = ix._query(query)
        ix._cover(query, q, ix._score_groups(q.groups), None)
        covered += q.covering is not None
    assert covered  # some of these files are in a constraint's scope


# ------------------------------------------------------------------ found in this round's review

@pytest.fixture
def recorded_paths(tmp_path: Path) -> tuple[Service, str]:
    root = tmp_path / "shop"
    root.mkdir()
    svc = Service(env={}, hook_cache_delay=None)
    svc.init_project(str(root))
    svc.record("decision", {
        "summary": "Entry point reads config from env only",
        "problem": "src/packwise/main.py read a config file from the working directory, which broke in containers.",
        "why_chosen": "Reading env vars only in src/packwise/main.py works the same in every environment.",
    }, project_dir=str(root))
    svc.record("constraint", {
        "rule": "Never log request bodies in the payments service",
        "reason": "Request bodies carry card numbers, and logging them breaks PCI compliance for the company.",
        "scope": "src/payments/",
    }, project_dir=str(root))
    return svc, str(root)


def test_a_recorded_path_whose_file_name_is_an_everyday_word_is_found_confidently(recorded_paths):
    svc, root = recorded_paths
    answer = svc.get_context(query="src/packwise/main.py", project_dir=root)
    assert not answer.get("no_confident_match") and _ids(answer)[0] == "dec-001"
    # The same file name elsewhere is no answer.
    assert svc.get_context(query="src/other/main.py", project_dir=root)["no_confident_match"] is True


def test_an_absolute_path_inside_the_project_is_covered_by_its_scope(recorded_paths):
    svc, root = recorded_paths
    relative = svc.get_context(query="fix src/payments/charge.py", project_dir=root)
    absolute = svc.get_context(query=f"fix {root}/src/payments/charge.py", project_dir=root)
    assert _ids(absolute)[0] == "con-001" and not absolute.get("no_confident_match")
    assert absolute["top_relevance"] == relative["top_relevance"]
