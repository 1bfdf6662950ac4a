"""A scope listing several paths ("services/trip/, services/billing/") covers what any of them covers:
in the matcher, the edit guard, get_context / query_entries, doctor and on record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper import doctor
from context_keeper.cli import _scope_from_here
from context_keeper.errors import InvalidInput
from context_keeper.hooks import scope_index
from context_keeper.scope import is_global, scope_covers, scope_overlaps, scope_parts
from context_keeper.service import Service
from tests.hook_helpers import hook_env, injected, payload, run_hook

REASON = "Both services read the same ids, so a change made in one alone broke the other in production."
LISTED = "Dockerfile, src/packwise/labels/printer.py"  # an existing file and one not there yet


def _hand_written(project: Path, scope: str, entry_id: str = "con-090", **extra) -> dict:
    """Append a constraint to constraints.json as a person would, with a key of their own."""
    path = project / ".context" / "constraints.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    entry = {"id": entry_id, "rule": "Label and image builds pin the same printer firmware", "reason": REASON,
             "scope": scope, "hardness": "absolute", "status": "active", "team_note": "kept by ops", **extra}
    path.write_text(json.dumps([*items, entry], indent=2), encoding="utf-8")
    return entry


def _stored(project: Path, entry_id: str) -> dict:
    items = json.loads((project / ".context" / "constraints.json").read_text(encoding="utf-8"))
    return next(item for item in items if item["id"] == entry_id)


# ------------------------------------------------------------------ the matcher


@pytest.mark.parametrize("scope, parts", [
    ("services/trip/, services/billing/", ["services/trip/", "services/billing/"]),
    ("Dockerfile,deploy/helm/", ["Dockerfile", "deploy/helm/"]),
    ("a/,", ["a/"]),
    (" , a/ ,, b.py ", ["a/", "b.py"]),
    ("docs/[a,b].md", ["docs/[a,b].md"]),  # a comma in a bracket class separates nothing
    ("docs/[a,b].md, x/", ["docs/[a,b].md", "x/"]),
    ("hooks/", ["hooks/"]),
    ("  server.py ", ["server.py"]),
])
def test_a_scope_lists_the_paths_between_its_commas(scope, parts):
    assert scope_parts(scope) == parts


@pytest.mark.parametrize("scope, path, covered", [
    ("services/trip/, services/billing/", "services/billing/invoice.py", True),
    ("services/trip/, services/billing/", "services/trip/app.py", True),
    ("services/trip/, services/billing/", "services/pricing/app.py", False),
    ("services/trip/,services/billing/", "services/billing/invoice.py", True),
    ("db/migrations/, services/*/events.py", "services/trip/events.py", True),
    ("db/migrations/, services/*/events.py", "services/trip/models.py", False),
    ("Dockerfile, deploy/helm/", "Dockerfile", True),
    ("Dockerfile, deploy/helm/", "deploy/helm/values.yaml", True),
    ("Dockerfile, deploy/helm/", "deploy/kustomize/a.yaml", False),
    ("a/,", "a/x.py", True),
    ("docs/[a,b].md", "docs/b.md", True),
    ("docs/[a,b].md", "docs/c.md", False),
])
def test_a_listed_scope_covers_what_any_of_its_paths_covers(scope, path, covered):
    assert scope_covers(scope, path) is covered


def test_a_list_with_a_global_part_is_global():
    assert is_global("global, hooks/") and is_global("hooks/, *") and is_global(" , ")
    assert scope_covers("global, hooks/", "src/app.py")
    assert not is_global("hooks/, server.py")


@pytest.mark.parametrize("scope, area, overlaps", [
    ("services/trip/, services/billing/", "services/billing/", True),
    ("services/trip/, services/billing/", "services", True),
    ("services/trip/, services/billing/", "services/pricing", False),
    ("services/billing/", "services/pricing/a.py, services/billing/b.py", True),  # a list of areas too
    ("services/billing/", "services/pricing/a.py, apps/", False),
])
def test_a_listed_scope_overlaps_an_area_any_of_its_paths_overlaps(scope, area, overlaps):
    assert scope_overlaps(scope, area) is overlaps


# ------------------------------------------------------------------ the edit guard


def _edit(project: Path, session: str, relative: str) -> str | None:
    data = payload("pre_tool_use_edit", project, session_id=session)
    data["tool_input"]["file_path"] = str(project / relative)
    return injected(run_hook("scope_guard", data, env=hook_env(project)))


def test_the_edit_guard_shows_a_listed_rule_for_a_file_under_each_of_its_paths(project: Path):
    _hand_written(project, LISTED)
    assert "con-090" in (_edit(project, "s1", "src/packwise/labels/printer.py") or "")
    assert "con-090" in (_edit(project, "s2", "Dockerfile") or "")
    assert "con-090" not in (_edit(project, "s3", "src/packwise/waves/planner.py") or "")


def test_an_index_written_before_scope_lists_is_rebuilt(project: Path):
    # An index from a version that held "Dockerfile, src/..." as one path, with the file's
    # stamps unchanged since: left as it is, the guard would keep missing the rule.
    _hand_written(project, LISTED)
    scope_index.build(str(project))
    path = project / ".context" / scope_index.INDEX_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    part = data["parts"]["constraint"]
    part["scoped"] = [row for row in part["scoped"] if row[0] != "con-090"]
    part["scoped"].append(["con-090", "Dockerfile, src/packwise/labels/printer.py",
                           "Dockerfile, src/packwise/labels/printer.py", False, "constraint"])
    data["format"] = 6
    path.write_text(json.dumps(data), encoding="utf-8")
    assert "con-090" in (_edit(project, "s1", "Dockerfile") or "")


# ------------------------------------------------------------------ get_context / query_entries


def test_get_context_with_a_scope_adds_a_rule_listing_it(project: Path, service: Service):
    _hand_written(project, LISTED)
    answer = service.get_context(query="how are labels printed", scope="src/packwise/labels/printer.py")
    rules = [r["entry"]["id"] for r in answer["results"] if r.get("scope_rule") or r["entry"]["id"] == "con-090"]
    assert "con-090" in rules
    other = service.get_context(query="how are labels printed", scope="src/packwise/waves/planner.py")
    assert "con-090" not in [r["entry"]["id"] for r in other["results"]]


def test_query_entries_scope_filter_matches_each_listed_path(project: Path, service: Service):
    _hand_written(project, LISTED)

    def ids(scope: str) -> list[str]:
        return [r["entry"]["id"] for r in service.query_entries(types=["constraints"], scope=scope)["results"]]

    assert "con-090" in ids("Dockerfile")
    assert "con-090" in ids("src/packwise/labels/printer.py")
    assert "con-090" not in ids("src/packwise/waves/")
    # Asked about several areas at once: a rule about any of them
    assert {"con-090", "con-008"} <= set(ids("src/packwise/waves/, Dockerfile"))


def test_a_pasted_path_under_a_listed_scope_counts_its_directories_for_the_rule(project: Path, service: Service):
    # The directories of a pasted path are asked words only for the rules whose scope covers it.
    _hand_written(project, "infra/terraform/, src/packwise/labels/printer.py",
                  rule="Terraform state for the infra stack is locked before a plan",
                  reason="Two plans at once corrupted the state file and took the network down for an hour.")
    answer = service.get_context(query="infra/terraform/main_network.tf")
    relevance = {r["entry"]["id"]: r.get("relevance", 0.0) for r in answer["results"]}  # a linked entry has none
    assert relevance["con-090"] == answer["top_relevance"] > max(v for i, v in relevance.items() if i != "con-090")


def test_a_listed_query_scope_leaving_the_project_names_that_path(project: Path, service: Service):
    with pytest.raises(InvalidInput, match=r"its path '\.\./other' uses '\.\.'"):
        service.get_context(query="labels", scope="src/, ../other")


def test_the_cli_reads_each_listed_scope_path_from_the_current_directory(project: Path, monkeypatch):
    monkeypatch.chdir(project / "src" / "packwise")
    assert _scope_from_here("labels/, waves/planner.py", project) == "src/packwise/labels/, src/packwise/waves/planner.py"
    assert _scope_from_here("labels/", project) == "src/packwise/labels/"


# ------------------------------------------------------------------ doctor


def _scope_findings(root: Path) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in doctor.diagnose(root).findings
            if f.code in ("miscased_scope", "unmatched_scope") and "con-090" in f.message]


def test_doctor_finds_every_listed_path_on_disk(project: Path):
    (project / "Dockerfile").write_text("FROM python:3.12\n", encoding="utf-8")
    _hand_written(project, LISTED)
    assert _scope_findings(project) == []


def test_doctor_names_the_listed_path_that_matches_nothing(project: Path):
    _hand_written(project, LISTED)
    ((code, message),) = _scope_findings(project)
    assert code == "unmatched_scope"
    assert "whose path 'Dockerfile' matches no file or directory" in message


def test_doctor_corrects_the_case_of_one_listed_path_in_the_whole_scope(project: Path):
    _hand_written(project, "migrations/, src/packwise/Labels/")
    ((code, message),) = _scope_findings(project)
    assert code == "miscased_scope"
    assert "whose path 'src/packwise/Labels/' differs in case" in message
    assert "Write it as 'migrations/, src/packwise/labels/'" in message


# ------------------------------------------------------------------ recording


def _record(service: Service, scope: str) -> dict:
    return service.record("constraint", {"rule": "Trip and bill ids stay in step", "reason": REASON, "scope": scope})


@pytest.mark.parametrize("scope", ["services/trip/, services/billing/", "Dockerfile,deploy/helm/",
                                   "db/migrations/, services/*/events.py", "docs/[a,b].md"])
def test_a_listed_scope_is_stored_as_written(project: Path, service: Service, scope: str):
    entry_id = _record(service, scope)["id"]
    assert _stored(project, entry_id)["scope"] == scope


def test_a_listed_scope_is_stored_with_each_path_made_relative(project: Path, service: Service):
    entry = _record(service, f"{project}/services/trip/, services/billing/,")["entry"]
    assert entry["scope"] == "services/trip/, services/billing/"


def test_a_listed_path_leaving_the_project_is_refused_by_name(project: Path, service: Service):
    with pytest.raises(InvalidInput, match=r"its path '\.\./shared/' uses '\.\.'"):
        _record(service, "services/trip/, ../shared/")
    with pytest.raises(InvalidInput, match="its path '/etc/app/' is outside the project root"):
        _record(service, "services/trip/, /etc/app/")


def test_an_update_keeps_a_hand_written_listed_scope_and_unknown_keys(project: Path, service: Service):
    _hand_written(project, "Dockerfile ,deploy/helm/")
    service.update_entry("con-090", {"tags": ["deploy"]})
    stored = _stored(project, "con-090")
    assert stored["scope"] == "Dockerfile ,deploy/helm/" and stored["team_note"] == "kept by ops"
    service.update_entry("con-090", {"scope": "Dockerfile ,deploy/helm/"})  # sent back unchanged
    assert _stored(project, "con-090")["scope"] == "Dockerfile ,deploy/helm/"
    service.update_entry("con-090", {"scope": f"Dockerfile, {project}/deploy/k8s/"})
    assert _stored(project, "con-090")["scope"] == "Dockerfile, deploy/k8s/"
