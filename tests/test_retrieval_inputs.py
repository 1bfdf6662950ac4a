"""Unusual but plausible arguments to get_context / query_entries: each is answered sensibly or
refused naming what to give instead (cases from a bug hunt over the read tools)."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_keeper.cli import main as cli_main
from context_keeper.config import config_problems
from context_keeper.errors import InvalidInput, NotFound
from context_keeper.retrieval import GUIDANCE_NO_WORDS
from context_keeper.search import tokenize


def _ids(answer) -> list[str]:
    return [r["entry"]["id"] for r in answer["results"]]


@pytest.mark.parametrize(("query", "expected"), [("dec-007", "dec-007"), (" DEC-7 ", "dec-007"),
                                                 ("pipe-009", "pipe-009"), ("dec-013-a7f3", "dec-013-a7f3")])
def test_a_query_that_is_an_id_answers_with_that_entry_first(service, query, expected):
    # Searched as words, "dec-007" found the entries citing an id ("dec" a topic word) with
    # confidence, and dec-007 itself at rank 13.
    answer = service.get_context(query=query)
    assert _ids(answer)[0] == expected
    assert answer["results"][0]["relevance"] == 1.0 and "no_confident_match" not in answer


def test_an_id_query_respects_the_filters_and_an_unknown_id_is_searched_as_words(service):
    assert "dec-007" not in _ids(service.get_context(query="dec-007", types=["constraint"]))
    # "Dec-2024" is a month, not an id: searched as before, not refused.
    for query in ("dec-099", "Dec-2024", "DEC-2024-Q4"):
        answer = service.get_context(query=query)
        assert all(r.get("relevance", 0.0) < 1.0 for r in answer["results"]), query
    with pytest.raises(NotFound, match="dec-099"):
        service.get_context(id="dec-099")


def test_an_id_query_answers_while_its_file_is_broken(service, project):
    (project / ".context" / "decisions.json").write_text('[{"id": "dec-001", "summary": ', encoding="utf-8")
    answer = service.get_context(query="dec-007")  # no last-good copy: a warning, not a failure
    assert any("decisions.json" in w for w in answer["warnings"])
    assert all(r["type"] != "decision" for r in answer["results"])


def test_the_cli_prints_the_entry_an_id_names(project, capsys):
    assert cli_main(["get", "dec-007", "--project", str(project)]) == 0
    assert capsys.readouterr().out.startswith("dec-007 ")


def test_decomposed_unicode_finds_what_was_written_composed(service):
    service.record("decision", {
        "summary": "Zürich café orders are routed through the Basel hub",
        "problem": "The Zürich café chain's orders missed the morning van when packed in Zürich.",
        "why_chosen": "Basel packs before the van leaves, so the café orders arrive the same day.",
    })
    nfd = unicodedata.normalize("NFD", "Zürich café")
    assert nfd != "Zürich café"
    answer = service.get_context(query=nfd)
    assert answer["results"][0]["entry"]["summary"].startswith("Zürich café")
    assert service.query_entries(text=nfd)["results"]


@pytest.mark.parametrize(("scope", "said"), [
    ("/etc/passwd", "outside the project root"),
    ("../../etc/passwd", "leaves the project root"),
    ("..", "leaves the project root"),
    ("~/src/app.py", "home directory"),
    ("src/\x00x.py", "control character U+0000"),
    ("/\ud800", "lone UTF-16 surrogate"),
])
@pytest.mark.parametrize("tool", ["get_context", "query_entries"])
def test_a_scope_that_cannot_be_in_the_project_is_refused(service, tool, scope, said):
    # Before, "/etc/passwd" lost its slash and matched a constraint scoped "etc/", and a NUL
    # crashed the call with an internal error.
    call = getattr(service, tool)
    with pytest.raises(InvalidInput, match=re.escape(said)) as info:
        call(query="label", scope=scope) if tool == "get_context" else call(scope=scope)
    assert info.value.field == "scope"


def test_a_scope_inside_the_project_is_read_in_any_spelling(service, project):
    plain = _ids(service.get_context(query="migration", scope="migrations/0042_add_tote_zone.sql"))
    assert "con-001" in plain
    for spelling in (str(project / "migrations" / "0042_add_tote_zone.sql"), "src/../migrations/0042_add_tote_zone.sql",
                     "migrations\\0042_add_tote_zone.sql"):
        assert _ids(service.get_context(query="migration", scope=spelling)) == plain, spelling


def test_a_blank_tag_filters_nothing_out(service):
    plain = _ids(service.get_context(query="label printer"))
    assert _ids(service.get_context(query="label printer", tags=[""])) == plain
    assert _ids(service.get_context(query="label printer", tags=[" ", "labels"])) == _ids(
        service.get_context(query="label printer", tags=["labels"]))


@pytest.mark.parametrize(("key", "value"), [("max_entry_tokens", "NaN"), ("max_entry_tokens", "Infinity"),
                                            ("max_entry_tokens", "0"), ("min_relevance", "5"),
                                            ("min_relevance", "-1"), ("min_relevance", '"0.9"')])
def test_an_unusable_config_value_is_the_default_with_a_warning(service, project, key, value):
    # A budget the matches do not fill: the warning takes its room from the budget too.
    plain = service.get_context(query="label printer jams", token_budget=50_000)
    (project / ".context" / "config.json").write_text(f'{{"{key}": {value}}}', encoding="utf-8")
    answer = service.get_context(query="label printer jams", token_budget=50_000)
    assert _ids(answer) == _ids(plain)
    assert any(f'"{key}"' in w and "used" in w for w in answer["warnings"]), answer.get("warnings")


@pytest.mark.parametrize("query", ["?", "the and of", "🔥", "!!!"])
def test_a_query_without_a_searchable_word_searches_nothing(service, query):
    # It listed twelve entries at relevance 0, filling the whole budget.
    answer = service.get_context(query=query)
    assert answer["results"] == [] and answer["no_confident_match"] is True
    assert answer["guidance"] == GUIDANCE_NO_WORDS


def test_with_a_filter_such_a_query_still_lists_what_passes_it(service):
    assert service.get_context(query="?", tags=["labels"])["results"]
    assert service.get_context(query="?", tags=[""])["results"] == []  # a blank tag is no filter


_FORMER_CHUNK = re.compile(r"[^\W_]+(?:[_./\-:@+#]+[^\W_]+)*|_+[^\W_]+(?:[_./\-:@+#]+[^\W_]+)*", re.UNICODE)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="a_-./B9 é!:+#@", max_size=40))
def test_chunks_are_what_they_were_before_the_linear_pattern(text):
    # The pattern now starts a leading-underscore chunk only where its run of underscores starts
    # (a run with no word after it cost time quadratic in its length); the chunks are the same.
    assert tokenize._CHUNK.findall(text) == _FORMER_CHUNK.findall(text)


def test_query_entries_text_without_word_characters_is_still_a_filter(service):
    # "C++" has no word characters: the filter used to vanish and every entry matched.
    everything = service.query_entries(limit=200)["total_matches"]
    assert service.query_entries(text="C++", limit=200)["total_matches"] < everything
    assert service.query_entries(text="🔥", limit=200)["total_matches"] == 0


def test_query_entries_keeps_marks_only_at_the_end_of_a_word(service):
    service.record("decision", {
        "summary": "CI/CD runs read/write checks over TCP + TLS before PR #42 style merges",
        "problem": "Merges went in before the pipeline had checked the read/write path end to end.",
        "why_chosen": "The CI/CD pipeline blocks the merge until the TCP + TLS checks pass for the branch.",
    })
    for text in ("ci+cd", "read+write", "tcp+tls", "pr#42"):
        assert service.query_entries(text=text)["results"], text


def test_query_entries_names_its_own_parameter_when_text_is_too_long(service):
    with pytest.raises(InvalidInput, match=r"^text is \d+ characters") as info:
        service.query_entries(text="label " * 2000)
    assert info.value.field == "text"


def test_a_fetch_by_id_keeps_to_a_token_budget(service):
    from context_keeper.budget import entry_tokens

    whole = service.get_context(id="dec-007")
    assert entry_tokens(whole["entry"]) > 60 and "shortened" not in whole
    cut = service.get_context(id="dec-007", token_budget=60)
    assert cut["shortened"] is True and cut["entry"]["id"] == "dec-007"
    # The whole answer as sent, its keys included, as for a ranked answer.
    assert entry_tokens(cut) <= cut["tokens_used"] <= 60


def test_a_fetch_by_id_with_ignored_filters_keeps_its_warning_within_the_budget(service):
    from context_keeper.budget import entry_tokens

    cut = service.get_context(id="dec-007", token_budget=100, tags=["x"], scope="src/app.py")
    assert cut["warnings"] and cut["entry"]["id"] == "dec-007"
    assert entry_tokens(cut) <= cut["tokens_used"] <= 100


def test_a_fetch_by_id_says_which_arguments_it_did_not_use(service):
    answer = service.get_context(id="dec-007", query="label printer", types=["constraint"])
    assert answer["entry"]["id"] == "dec-007"
    assert any("query, types were not used" in w for w in answer["warnings"])
    assert "warnings" not in service.get_context(id="dec-007")


def test_non_finite_numbers_in_config_fall_back_everywhere(service, project):
    # json.loads reads NaN and Infinity; prune_stale did int(Infinity) and crashed.
    (project / ".context" / "config.json").write_text('{"stale_threshold_days": Infinity, "similar_threshold": NaN}',
                                                       encoding="utf-8")
    assert service.prune_stale()["threshold_days"] == 30  # the default


def test_an_integer_too_big_for_a_float_in_config_is_a_number_not_a_crash(service, project):
    # math.isfinite raised OverflowError on it, from get_context and from doctor's checks.
    plain = service.get_context(query="label printer jams", token_budget=50_000)
    (project / ".context" / "config.json").write_text('{"max_entry_tokens": 1' + "0" * 400 + "}", encoding="utf-8")
    assert _ids(service.get_context(query="label printer jams", token_budget=50_000)) == _ids(plain)
    assert config_problems({"max_entry_tokens": 10**400}) == []


@pytest.mark.parametrize("bad", [5, -0.1, float("nan"), float("inf"), True, "0.7"])
def test_a_min_relevance_outside_0_to_1_is_refused_outside_the_mcp_schema_too(service, bad):
    # The MCP schema bounds it; the service took 5, NaN or a string from any other caller.
    with pytest.raises(InvalidInput, match="min_relevance must be a number from 0 to 1"):
        service.get_context(query="carrier timeouts", min_relevance=bad)


def test_an_oversized_query_is_refused_before_the_project_is_looked_for(tmp_path):
    from context_keeper.retrieval import MAX_QUERY_CHARS
    from context_keeper.service import Service

    with pytest.raises(InvalidInput, match="query"):
        Service(env={}).get_context(project_dir=str(tmp_path / "missing"), query="x" * (MAX_QUERY_CHARS + 1))
