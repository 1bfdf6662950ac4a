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
