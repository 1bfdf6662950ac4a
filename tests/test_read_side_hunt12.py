"""Read-side defects found by a hunt over get_context, query_entries and the summary: each
test names what a demanding user saw."""

from __future__ import annotations

import json

import pytest

from context_keeper.scope import scope_overlaps
from context_keeper.service import Service


@pytest.fixture
def svc(project) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, hook_cache_delay=None)


def _add(project, filename: str, *items: dict) -> None:
    path = project / ".context" / filename
    data = json.loads(path.read_text(encoding="utf-8"))
    data.extend(items)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _ids(answer: dict) -> list[str]:
    return [r["entry"]["id"] for r in answer["results"]]


# ------------------------------------------------------------------ scope overlap


@pytest.mark.parametrize(("scope", "area"), [
    ("src/packwise/carriers/", "src/**/*.py"),   # a directory rule, for a glob of the files in it
    ("src/packwise/carriers/", "**/*.py"),
    ("*.sql", "migrations"),                     # "*.sql" covers SQL files at any depth (README)
    ("*.sql", "migrations/*.sql"),
    ("migrations/*.sql", "*.sql"),
    ("**/*.py", "src"),
    ("*.py", "src/**/*.py"),
])
def test_a_rule_covering_files_of_the_area_overlaps_it(scope, area):
    assert scope_overlaps(scope, area) is True


@pytest.mark.parametrize(("scope", "area"), [
    ("src/*.py", "src/*.sql"),                   # same directory, files that cannot be both
    ("docs/readme.md", "**/*.py"),               # a file, not a directory holding .py files
    ("*.sql", "docs/readme.md"),
    ("docs/*.md", "src/**/*.py"),
    ("src/a/*.py", "src/b/*.py"),
])
def test_a_rule_on_other_files_does_not_overlap_the_area(scope, area):
    assert scope_overlaps(scope, area) is False


def test_get_context_with_a_glob_scope_brings_the_directory_rules_it_covers(svc):
    # con-004 is scoped to src/packwise/carriers/; every .py file in it is in src/**/*.py.
    answer = svc.get_context(scope="src/**/*.py", types=["constraints"], token_budget=20000)
    assert {"con-004", "con-005", "con-003", "con-008"} <= set(_ids(answer))


def test_a_rule_on_every_sql_file_reaches_the_migrations_directory(svc, project):
    _add(project, "constraints.json", {
        "id": "con-050", "rule": "SQL files use lower-case keywords throughout.",
        "reason": "The linter and the review checklist assume it; mixed case hides typos in diffs.",
        "scope": "*.sql", "hardness": "advisory", "status": "active", "tags": ["sql"],
    })
    for area in ("migrations/", "migrations", "migrations/*.sql", "migrations/0031_tote_indexes.sql"):
        assert "con-050" in _ids(svc.get_context(scope=area, types=["constraints"], token_budget=20000)), area
        assert "con-050" in _ids(svc.query_entries(scope=area)), area
    assert "con-050" not in _ids(svc.get_context(scope="src/packwise/app.py", types=["constraints"], token_budget=20000))


# ------------------------------------------------------------------ superseded chains


_SESSION = dict(problem="Handheld scanner session tokens must survive a restart of the API pods.",
                why_chosen="It is the store the team already runs, with backups and monitoring in place.",
                tags=["sessions"], origin="user", created_at="2025-03-01T00:00:00+00:00")


def test_what_replaced_an_entry_is_the_end_of_its_chain_of_successors(svc, project):
    # dec-201 was replaced by dec-202, itself replaced by dec-203: naming dec-202 as the
    # replacement told the agent that an entry retired since was today's answer.
    _add(project, "decisions.json",
         dict(id="dec-201", summary="Store scanner session tokens in memcached", status="superseded",
              superseded_by="dec-202", **_SESSION),
         dict(id="dec-202", summary="Store scanner session tokens in Redis hashes", status="superseded",
              superseded_by="dec-203", **_SESSION),
         dict(id="dec-203", summary="Store scanner session tokens in a Postgres table", **_SESSION))
    fetched = svc.get_context(id="dec-201")
    assert fetched["replaced_by"]["id"] == "dec-203" and fetched["replaced_by"]["via"] == ["dec-202"]
    ranked = svc.get_context(query="memcached scanner session tokens", token_budget=20000)
    old = next(r for r in ranked["results"] if r["entry"]["id"] == "dec-201")
    assert old["replaced_by"]["id"] == "dec-203" and old["replaced_by"]["via"] == ["dec-202"]
    middle = next(r for r in ranked["results"] if r["entry"]["id"] == "dec-202")
    assert middle["replaced_by"]["id"] == "dec-203" and "via" not in middle["replaced_by"]


def test_a_replacement_that_was_retired_or_loops_back_says_so(svc, project):
    _add(project, "decisions.json",
         dict(id="dec-201", summary="Store scanner session tokens in memcached", status="superseded",
              superseded_by="dec-202", **_SESSION),
         dict(id="dec-202", summary="Store scanner session tokens in Redis hashes", status="deprecated",
              deprecated_reason="sessions moved to the identity service", **_SESSION),
         dict(id="dec-203", summary="Session tokens loop one", status="superseded", superseded_by="dec-204", **_SESSION),
         dict(id="dec-204", summary="Session tokens loop two", status="superseded", superseded_by="dec-203", **_SESSION),
         dict(id="dec-205", summary="Session tokens replaced by nothing", status="superseded", superseded_by="dec-999",
              **_SESSION))
    retired = svc.get_context(id="dec-201")["replaced_by"]
    assert retired["id"] == "dec-202" and retired["status"] == "deprecated"
    looped = svc.get_context(id="dec-203")["replaced_by"]
    assert looped["id"] == "dec-204" and looped["status"] == "superseded" and "via" not in looped
    assert "replaced_by" not in svc.get_context(id="dec-205")  # not a null to read as "nothing replaced it"


# ------------------------------------------------------------------ query_entries filters


def test_query_entries_tag_filters_read_hand_edited_tags_as_get_context_does(svc, project):
    import unicodedata

    path = project / ".context" / "decisions.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data[0]["tags"] = [" Database ", "postgres"]  # dec-001, spaced by hand
    data[1]["tags"] = [unicodedata.normalize("NFD", "café")]  # dec-002, decomposed as macOS types it
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    for given in ("database", "Database", " database"):
        assert "dec-001" in _ids(svc.get_context(tags=[given], types=["decisions"], token_budget=20000))
        assert "dec-001" in _ids(svc.query_entries(tags_any=[given]))
        assert "dec-001" in _ids(svc.query_entries(tags_all=[given, "postgres"]))
    assert "dec-002" in _ids(svc.query_entries(tags_any=["café"], status="superseded"))
    assert "dec-002" in _ids(svc.get_context(tags=["café"], include_deprecated=True, token_budget=20000))
    summary = svc.get_project_summary(50000)["summary"]
    assert " database" in summary.lower()


@pytest.mark.parametrize("word", ["active", "agent", "user", "absolute", "advisory"])
def test_query_entries_text_does_not_match_status_origin_or_hardness_values(svc, word):
    # Those have their own filters; as words, "active" matched all 52 active entries.
    everything = svc.query_entries(limit=1000)["total_matches"]
    found = svc.query_entries(text=word, limit=1000)
    assert found["total_matches"] < everything / 3, word
    for item in found["results"]:
        text = json.dumps({k: v for k, v in item["entry"].items() if k not in ("status", "origin", "hardness")})
        assert word in text.lower()


def test_query_entries_history_filters_ignore_spaces_around_the_id(svc):
    assert _ids(svc.query_entries(superseded_by=" dec-013-a7f3 ")) == ["dec-006"]
    assert _ids(svc.query_entries(supersedes="dec-006 ")) == ["dec-013-a7f3"]


# ------------------------------------------------------------------ listing by filters alone


def _many_decisions(project, n: int) -> None:
    _add(project, "decisions.json", *(
        {"id": f"dec-{100 + i:03d}", "summary": f"Bulk decision number {i} about the pallet labels",
         "problem": "Pallet labels need a decision recorded for each warehouse zone we run.",
         "why_chosen": "Each zone has its own printer model, so each one got its own decision here.",
         "tags": ["bulk"], "origin": "agent", "status": "active", "created_at": "2025-09-01T10:00:00+00:00"}
        for i in range(n)))


def test_a_listing_by_filters_alone_is_not_cut_at_fifty_entries(svc, project):
    _many_decisions(project, 120)
    total = svc.query_entries(types=["decisions"], limit=1000)["total_matches"]
    assert total > 120
    everything = svc.get_context(types=["decisions"], token_budget=200_000, include_related=False)
    assert everything["entries_returned"] == total and "omitted" not in everything
    tagged = svc.get_context(tags=["bulk"], token_budget=200_000)
    assert tagged["entries_returned"] == 120


@pytest.mark.parametrize("include_related", [True, False])
def test_a_listing_that_does_not_fit_counts_every_entry_left_out(svc, project, include_related):
    _many_decisions(project, 120)
    total = svc.query_entries(types=["decisions"], limit=1000)["total_matches"]
    small = svc.get_context(types=["decisions"], token_budget=1000, include_related=include_related)
    assert small["tokens_used"] <= 1000
    assert small["entries_returned"] + small["omitted"] == total
    assert f"{small['omitted']} more matching entries" in small["budget_note"]
    dated = svc.get_context(since="2025-08-31", token_budget=600, include_related=include_related)
    assert dated["entries_returned"] + dated["omitted"] == svc.query_entries(since="2025-08-31", limit=1000)["total_matches"]


# ------------------------------------------------------------------ ids in other spellings


@pytest.mark.parametrize(("given", "found"), [("DEC-7", "dec-007"), ("dec-7", "dec-007"), ("Pipe-1", "pipe-001"),
                                              ("DEC-013-A7F3", "dec-013-a7f3"), (" con-01 ", "con-001")])
def test_get_context_by_id_reads_the_spellings_a_query_reads(svc, given, found):
    # README: a query that is just an id, "dec-007" or "DEC-7", puts that entry first; the same
    # id given as id= was refused as "not an entry id".
    assert svc.get_context(id=given)["entry"]["id"] == found
    assert svc.get_context(query=given)["results"][0]["entry"]["id"] == found


@pytest.mark.parametrize("query", ["dec-007?", "`dec-007`", "(dec-007)", "dec-007."])
def test_a_query_that_is_an_id_with_punctuation_around_it_finds_the_entry(svc, query):
    answer = svc.get_context(query=query)
    assert answer["results"][0]["entry"]["id"] == "dec-007" and answer["top_relevance"] == 1.0


def test_an_unknown_id_in_another_spelling_is_answered_as_unknown(svc):
    from context_keeper.errors import NotFound

    with pytest.raises(NotFound, match="did you mean dec-013-a7f3"):
        svc.get_context(id="DEC-13")


# ------------------------------------------------------------------ config sections


@pytest.mark.parametrize(("section", "value"), [("mmr", True), ("semantic", "yes"), ("semantic", ["enabled"])])
def test_a_config_section_that_is_not_an_object_is_warned_about(svc, project, section, value):
    # "mmr": true reads as "turn it on", but the section's defaults applied (re-ranking off)
    # and get_context said nothing, while it names a wrong value inside the section.
    (project / ".context" / "config.json").write_text(json.dumps({section: value}), encoding="utf-8")
    warnings = svc.get_context(query="carrier retries").get("warnings", [])
    assert any(f'"{section}" is' in w and "must be an object" in w for w in warnings), warnings


# ------------------------------------------------------------------ the CLI's get


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from context_keeper.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_date_range_error_names_both_flags(project, capsys):
    code, _, err = _cli(capsys, "get", "carrier", "--since", "2026-01-01", "--before", "2025-01-01",
                        "--project", str(project))
    assert code == 2 and "--since (2026-01-01) must be earlier than --before (2025-01-01)" in err


def test_cli_get_without_a_question_names_the_flags_it_has(project, capsys):
    # The service's words, "an id, or at least one filter (tags, scope, types, ...)", name
    # parameters that `get` does not have.
    code, _, err = _cli(capsys, "get", "", "--project", str(project))
    assert code == 2 and "--type" in err and "an id" not in err and "types" not in err


def test_cli_listing_by_a_filter_shows_no_relevance(project, capsys):
    code, out, _ = _cli(capsys, "get", "", "--type", "decisions", "--budget", "300", "--project", str(project))
    assert code == 0 and "dec-" in out and "relevance" not in out


# ------------------------------------------------------------------ pathological globs


def test_a_glob_with_many_double_stars_is_matched_without_backtracking(svc, project):
    # The glob was a regular expression with "(?:.*/)?" per "**/": matching a path it does not
    # cover tried every way of splitting the path among them. Ten of them took seconds per
    # path, in the edit guard and in every get_context with a scope; twenty never finished.
    from context_keeper.scope import scope_covers

    stars = "/".join(["**"] * 20) + "/x.py"
    deep = "/".join("abcdefghijklmnopqrstuvw") + "/y.py"
    assert scope_covers(stars, deep) is False
    assert scope_covers(stars, deep[:-4] + "x.py") is True
    assert scope_covers("/".join(["**/a"] * 20) + "/b", "/".join(["a"] * 40) + "/c") is False
    assert scope_covers("a**" * 40 + "b", "a" * 120 + "c") is False
    _add(project, "constraints.json", {
        "id": "con-050", "rule": "Generated modules are never edited by hand.",
        "reason": "They are rewritten by the generator on every build, so a hand edit is lost silently.",
        "scope": stars, "hardness": "absolute", "status": "active"})
    answer = svc.get_context(query="editing generated modules", scope=deep, types=["constraints"])
    assert "con-050" not in _ids(answer)
    assert "con-050" in _ids(svc.get_context(query="editing generated modules", scope=deep[:-4] + "x.py"))


@pytest.mark.parametrize(("scope", "path", "covered"), [
    ("hooks/*", "hooks/a/b.py", True), ("src/**", "src", False), ("src/**", "src/a.py", True),
    ("**/x.py", "x.py", True), ("a/**/b", "a/b", True), ("a/**/b", "a/x/y/b/c.py", True),
    ("docs/[ab].md", "docs/b.md", True), ("docs/[!ab].md", "docs/b.md", False), ("a[", "a[", True),
    ("src/**.py", "src/a/b.py", True), ("*.py", "a.py/b", True), ("src/?.py", "src/ab.py", False),
])
def test_glob_matching_keeps_its_meaning(scope, path, covered):
    from context_keeper.scope import scope_covers

    assert scope_covers(scope, path) is covered


def test_query_entries_text_with_a_word_repeated_matches_as_the_word_once(svc):
    # Each word is looked for once (a repeated word cost one scan of every entry per repeat).
    once = svc.query_entries(text="carrier label", limit=1000)
    assert svc.query_entries(text="carrier " * 300 + "label label", limit=1000) == once


# ------------------------------------------------------------------ duplicate ids


def test_fetching_an_id_that_two_items_carry_says_the_other_one_is_not_shown(svc, project):
    # A merge that kept both sides: only the first item with the id is read, and get_context
    # by id answered with it as if it were the only one.
    first = {"id": "dec-106", "summary": "Label printers are paired per packing station", "tags": ["printers"],
             "created_at": "2025-10-01T10:00:00+00:00"}
    second = {"id": "dec-106", "summary": "Scanner batteries are swapped at every shift change", "tags": ["devices"],
              "created_at": "2025-10-02T10:00:00+00:00"}
    _add(project, "decisions.json", first, second)
    answer = svc.get_context(id="dec-106")
    assert answer["entry"]["summary"] == first["summary"]
    assert any("Scanner batteries are swapped" in w and "dec-106" in w for w in answer.get("warnings", []))
    assert "warnings" not in svc.get_context(id="dec-001")


def test_query_entries_refuses_an_empty_date_range_as_get_context_does(svc):
    from context_keeper.errors import InvalidInput

    for read in (svc.get_context, svc.query_entries):
        with pytest.raises(InvalidInput, match="must be earlier than before"):
            read(since="2026-01-01", before="2025-01-01")


def test_include_deprecated_brings_back_retired_entries_that_a_result_links_to(svc):
    # dec-015 links dec-026. The linked entries follow the question's filters, deprecated
    # included, but a retired link stayed out even when include_deprecated asked for it.
    svc.deprecate_entry("dec-026", "scan checks moved into the handheld app itself")
    query = "weigh each parcel against its expected weight before buying the label"
    asked = svc.get_context(query=query, include_deprecated=True, token_budget=20000)
    linked = [r for r in asked["results"] if r["entry"]["id"] == "dec-026"]
    assert linked and linked[0].get("related") and linked[0]["deprecated"] is True
    assert "dec-026" not in _ids(svc.get_context(query=query, token_budget=20000))


@pytest.mark.parametrize("root", [".", "./", "{root}", "{root}/"])
def test_a_scope_naming_the_whole_project_is_refused_for_what_it_is(svc, project, root):
    # The answer was "give ... at least one filter (tags, scope, types, since, before)" to a
    # caller who had given a scope.
    from context_keeper.errors import InvalidInput

    with pytest.raises(InvalidInput, match="is the project root") as refused:
        svc.get_context(scope=root.format(root=project))
    assert refused.value.field == "scope"
    assert svc.get_context(query="carrier retries", scope=root.format(root=project))["results"]


def test_a_directory_made_after_a_first_answer_changes_the_overlap(tmp_path):
    # "data.v2" reads as a file until the project has a directory of that name; the answer
    # given before the directory existed must not be kept once it does.
    root = str(tmp_path)
    assert scope_overlaps("data.v2", "**/*.json", root) is False
    (tmp_path / "data.v2").mkdir()
    assert scope_overlaps("data.v2", "**/*.json", root) is True
