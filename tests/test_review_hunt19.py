"""Defects a reviewer found in round 19's own changes, each test failing before its fix."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from context_keeper import doctor, json_slips
from context_keeper.errors import NotFound
from context_keeper.gitignore import GITIGNORE
from context_keeper.model import DECISION
from context_keeper.service import Service
from context_keeper.store import Store

PROBLEM = "Messages are lost when a pod restarts, so checkout needs a durable queue."
WHY = "Postgres is already operated by the team and SKIP LOCKED gives a safe work queue without a new dependency."
RULE = dict(rule="Never call the payment API from tests",
            reason="A test once charged a real card because the sandbox key was missing in CI.")
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _service(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)


# ---------------------------------------------------------------- 1. a stray quote is not mended


def _decision_with_hint(root: Path) -> Path:
    _service(root).record("decision", dict(summary="Retry rate-limited payment calls", problem=PROBLEM,
                                           why_chosen=WHY, retrieval_hints=["rate limit"]))
    return root / ".context" / "decisions.json"


@pytest.mark.parametrize("old,new", [
    # a list item: a comma between the fragments made 429 an item of its own, so it parsed
    ('"rate limit"\n', '"rate limit",\n      "error "429" from the payment API"\n'),
    ('"rate limit"\n', '"rate limit",\n      "say ""retry"" to the payment API"\n'),
    # a field's value: the fragment after the comma read as the next field's name
    ('"Retry rate-limited payment calls"', '"Retry ""rate-limited"" payment calls now"'),
], ids=["list-item-number", "list-item-doubled-quotes", "field-value"])
def test_a_stray_quote_is_neither_called_a_missing_comma_nor_mended_into_other_text(empty_project, old, new):
    live = _decision_with_hint(empty_project)
    text = live.read_text(encoding="utf-8")
    assert old in text
    broken = text.replace(old, new, 1)
    live.write_text(broken, encoding="utf-8")
    error = Store(empty_project).state(DECISION).error
    assert error is not None and "missing comma" not in str(error) and error.detail == "Expecting ',' delimiter"
    report = doctor.diagnose(empty_project)
    assert not any("missing comma" in f.message or "missing comma" in (f.fix or "") for f in report.findings)
    doctor.repair(report)
    assert live.read_text(encoding="utf-8") == broken  # the person's text, as they wrote it
    assert json_slips.mend(broken) is None


def _two_entries() -> tuple[list[dict], str]:
    items = [dict(id=f"dec-00{i}", summary=f"Decision {i} about queues", problem=PROBLEM, why_chosen=WHY,
                  tags=["queue", "postgres"]) for i in (1, 2)]
    return items, json.dumps(items, indent=2) + "\n"


@pytest.mark.parametrize("slip", ["between-entries", "between-fields", "after-a-list", "trailing-comma-field",
                                  "trailing-comma-entry", "single-entry", "bom", "crlf"])
def test_the_good_mends_still_mend(empty_project, slip):
    items, text = _two_entries()
    if slip == "between-entries":
        broken = text.replace("  },\n  {", "  }\n  {", 1)
    elif slip == "between-fields":
        broken = text.replace('"Decision 2 about queues",', '"Decision 2 about queues"', 1)
    elif slip == "after-a-list":
        broken = text.replace('"queue",\n      "postgres"', '"queue"\n      "postgres"', 1)
    elif slip == "trailing-comma-field":
        broken = text.replace('"postgres"\n    ]\n  }\n]', '"postgres"\n    ],\n  }\n]', 1)
    elif slip == "trailing-comma-entry":
        broken = text.replace("  }\n]", "  },\n]", 1)
    elif slip == "single-entry":
        items = items[:1]
        broken = json.dumps(items[0], indent=2) + "\n"
    elif slip == "bom":
        broken = "\ufeff" + text.replace("  },\n  {", "  }\n  {", 1)
    else:
        broken = text.replace("  },\n  {", "  }\n  {", 1).replace("\n", "\r\n")
    live = empty_project / ".context" / "decisions.json"
    live.write_bytes(broken.encode("utf-8"))
    assert Store(empty_project).state(DECISION).error is not None  # the slip is there
    doctor.repair(doctor.diagnose(empty_project))
    mended = live.read_bytes().decode("utf-8")
    assert json.loads(mended.removeprefix("\ufeff")) == items
    assert mended.startswith("\ufeff") == (slip == "bom")
    if slip == "crlf":
        assert "\n" not in mended.replace("\r\n", "")


# ---------------------------------------------------------------- 2. bookkeeping out of git, no file in the work tree


def _git(cwd: Path, *args: str) -> str:
    # The machine's own excludes must not hide what the store leaves untracked.
    done = subprocess.run(["git", "-c", "core.excludesFile=/dev/null", "-c", "user.name=T",
                           "-c", "user.email=t@example.com", "-c", "protocol.file.allow=always", *args],
                          cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def _untracked(repo: Path) -> list[str]:
    return sorted(line[3:] for line in _git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()
                  if line.startswith("?? "))


def _hand_made_store(project: Path) -> None:
    (project / ".context").mkdir(parents=True)
    (project / ".context" / "decisions.json").write_text("[]\n", encoding="utf-8")
    (project / ".context" / "config.json").write_text('{"project_name": "x"}\n', encoding="utf-8")


def _record(project: Path) -> None:
    _service(project).record("decision", dict(summary="Use Postgres as the job queue", problem=PROBLEM,
                                              why_chosen=WHY))


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    return repo


@needs_git
def test_a_write_on_a_branch_without_the_gitignore_does_not_block_checking_out_one_that_has_it(tmp_path):
    repo = _repo(tmp_path)
    _hand_made_store(repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "store")
    _git(repo, "checkout", "-q", "-b", "feature")
    (repo / ".context" / ".gitignore").write_text(GITIGNORE, encoding="utf-8")  # as `init` writes it
    _git(repo, "add", ".context/.gitignore")
    _git(repo, "commit", "-qm", "gitignore")
    _git(repo, "checkout", "-q", "main")
    _record(repo)  # a tool's write in the store without a .gitignore
    assert _untracked(repo) == []  # its lock and last good copy are ignored all the same
    assert not (repo / ".context" / ".gitignore").exists()
    _git(repo, "commit", "-qam", "record")
    _git(repo, "checkout", "-q", "feature")  # refused before: the untracked .gitignore was in the way
    assert (repo / ".context" / ".gitignore").read_text(encoding="utf-8") == GITIGNORE


@needs_git
def test_the_exclude_block_is_added_once_after_the_persons_lines_and_works(tmp_path):
    repo = _repo(tmp_path)
    _hand_made_store(repo)
    exclude = repo / ".git" / "info" / "exclude"
    exclude.write_text("# mine\n/build", encoding="utf-8")  # no newline at the end
    for _ in range(3):
        _record(repo)
        _service(repo).get_context(query="job queue")
    text = exclude.read_text(encoding="utf-8")
    marker = "# context-keeper: bookkeeping files of /.context (a store without its own .gitignore)"
    assert text.startswith("# mine\n/build\n" + marker + "\n") and text.count(marker) == 1
    assert "/.context/**/*_state.json" in text.splitlines()
    assert _untracked(repo) == [".context/config.json", ".context/decisions.json"]


@needs_git
def test_a_nested_project_gets_patterns_anchored_to_its_own_context_dir(tmp_path):
    repo = _repo(tmp_path)
    nested = repo / "services" / "billing"
    _hand_made_store(nested)
    (repo / "other" / ".context").mkdir(parents=True)
    (repo / "other" / ".context" / "hook.log").write_text("not ours\n", encoding="utf-8")
    _record(nested)
    text = (repo / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    assert "# context-keeper: bookkeeping files of /services/billing/.context (" in text
    assert "/services/billing/.context/**/.lock" in text.splitlines()
    # anchored: another directory's .context/ is not covered
    assert _untracked(repo) == ["other/.context/hook.log", "services/billing/.context/config.json",
                                "services/billing/.context/decisions.json"]


@needs_git
def test_a_linked_worktree_writes_to_the_common_exclude(tmp_path):
    repo = _repo(tmp_path)
    _hand_made_store(repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "store")
    tree = tmp_path / "tree"
    _git(repo, "worktree", "add", "-q", "-b", "side", str(tree))
    assert (tree / ".git").is_file()
    _record(tree)
    assert "bookkeeping files of /.context" in (repo / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    assert _untracked(tree) == [] and not (tree / ".context" / ".gitignore").exists()


@needs_git
def test_a_submodule_writes_to_its_own_exclude_in_the_superproject(tmp_path):
    inner = tmp_path / "inner"
    inner.mkdir()
    _git(inner, "init", "-q", "-b", "main")
    _hand_made_store(inner)
    _git(inner, "add", "-A")
    _git(inner, "commit", "-qm", "store")
    repo = _repo(tmp_path)
    _git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    _git(repo, "submodule", "add", "-q", str(inner), "lib")
    sub = repo / "lib"
    assert (sub / ".git").is_file()
    _record(sub)
    assert "bookkeeping files of /.context" in (repo / ".git" / "modules" / "lib" / "info" / "exclude").read_text(
        encoding="utf-8")
    assert "context-keeper" not in (repo / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    assert _untracked(sub) == []


def test_outside_git_nothing_is_written_for_the_bookkeeping(tmp_path):
    project = tmp_path / "plain"
    _hand_made_store(project)
    _record(project)
    assert not (project / ".context" / ".gitignore").exists() and not (project / ".git").exists()


@needs_git
def test_an_exclude_that_cannot_be_written_leaves_the_write_working(tmp_path):
    repo = _repo(tmp_path)
    _hand_made_store(repo)
    shutil.rmtree(repo / ".git" / "info")
    (repo / ".git" / "info").write_text("not a directory\n", encoding="utf-8")
    _record(repo)
    assert [e["id"] for e in Store(repo).entries(DECISION)] == ["dec-001"]
    assert not (repo / ".context" / ".gitignore").exists()


@needs_git
def test_doctor_says_the_bookkeeping_is_excluded_in_this_clone_and_how_to_share_it(tmp_path):
    repo = _repo(tmp_path)
    _hand_made_store(repo)
    report = doctor.diagnose(repo)
    [missing] = [f for f in report.findings if f.code == "gitignore"]
    assert ".git/info/exclude" in missing.message and "context-keeper init" in missing.message
    fixed = doctor.repair(report)
    assert any(".git/info/exclude" in f.message for f in fixed.findings if f.code == "fixed")
    assert not (repo / ".context" / ".gitignore").exists()
    [note] = [f for f in doctor.diagnose(repo).findings if f.code == "gitignore_local"]
    assert "in this clone only" in note.message and ".git/info/exclude" in note.message
    assert "`context-keeper init` writes .context/.gitignore" in note.message and "with the team" in note.message
    Service(env={}).init_project(str(repo))  # what the note says to run
    assert (repo / ".context" / ".gitignore").read_text(encoding="utf-8") == GITIGNORE
    assert "gitignore_local" not in [f.code for f in doctor.diagnose(repo).findings]


# ---------------------------------------------------------------- 3. an upper-case id in the wrong file


def _misfiled_upper_case(root: Path) -> Service:
    svc = _service(root)
    svc.record("constraint", RULE)
    path = root / ".context" / "constraints.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    items.append(dict(id="DEC-002", summary="Use Kafka for order events", problem=PROBLEM, why_chosen=WHY))
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    return _service(root)


def test_an_upper_case_id_in_the_wrong_file_is_found_there_and_told_where_it_belongs(empty_project):
    svc = _misfiled_upper_case(empty_project)
    with pytest.raises(NotFound) as caught:
        svc.get_context(id="dec-002")
    assert "dec-002 is in .context/constraints.json" in str(caught.value)
    assert "move that item into decisions.json" in str(caught.value)
    assert svc.record("decision", dict(summary="Use S3 for invoices", problem=PROBLEM, why_chosen=WHY))["id"] == "dec-003"


def test_doctor_tells_to_move_an_upper_case_id_in_the_wrong_file_not_to_renumber_it(empty_project):
    _misfiled_upper_case(empty_project)
    messages = [f.message for f in doctor.diagnose(empty_project).findings]
    assert any("DEC-002" in m and "it is a decision id, so move the item to decisions.json" in m for m in messages)
    assert not any("con-002" in m or "Correct the id" in m for m in messages)


# ---------------------------------------------------------------- 4. query_entries and an odd status word


def _constraint_with_status(root: Path, status: str) -> Service:
    _service(root).record("constraint", RULE)
    path = root / ".context" / "constraints.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    items[0]["status"] = status
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    return _service(root)


@pytest.mark.parametrize("written,read_as,filters", [
    ("paused", "active", {"kind": "constraint"}),
    ("retired", "deprecated", {"kind": "constraint", "status": "deprecated"}),
])
def test_query_entries_says_how_an_odd_status_word_was_read(empty_project, written, read_as, filters):
    svc = _constraint_with_status(empty_project, written)
    answer = svc.query_entries(**filters)
    assert [(r["entry"]["id"], r["entry"]["status"]) for r in answer["results"]] == [("con-001", read_as)]
    assert any(f"status {written!r}" in w and f"read as {read_as}" in w and "constraints.json" in w
               for w in answer.get("warnings") or [])


def test_query_entries_does_not_warn_of_an_odd_status_it_does_not_list(empty_project):
    svc = _constraint_with_status(empty_project, "paused")
    answer = svc.query_entries(kind="decision")
    assert answer["results"] == [] and not any("paused" in w for w in answer.get("warnings") or [])


# ---------------------------------------------------------------- 5. config.json slips named


@pytest.mark.parametrize("text,said", [
    ('{\n  "project_name": "x",\n}\n', "a trailing comma, which JSON does not allow before a closing } or ], "
                                      "at line 2, column 22: remove the comma at line 2, column 22"),
    ('{\n  // ours\n  "project_name": "x"\n}\n', "a comment, which JSON does not allow, at line 2, column 3: "
                                                "remove line 2 (// ours)"),
    ('{\n  "project_name": "x"\n  "token_budget": 3000\n}\n', "a missing comma between two fields or two entries "
                                                             "at line 2, column 22"),
], ids=["trailing-comma", "comment", "missing-comma"])
def test_a_config_slip_is_named_in_every_warning_and_by_doctor(empty_project, text, said):
    (empty_project / ".context" / "config.json").write_text(text, encoding="utf-8")
    warnings = _service(empty_project).get_context(query="job queue")["warnings"]
    assert any("config.json does not parse (" + said in w and "using defaults" in w for w in warnings), warnings
    assert not any("Expecting" in w for w in warnings)
    messages = [f.message for f in doctor.diagnose(empty_project).findings if f.file == "config.json"]
    assert any(said in m for m in messages)
    assert not any("move the note into a field" in m for m in messages)  # a "note" key is no setting


def test_any_other_config_error_keeps_the_parsers_words(empty_project):
    (empty_project / ".context" / "config.json").write_text('{"project_name": x}\n', encoding="utf-8")
    warnings = _service(empty_project).get_context(query="job queue")["warnings"]
    assert any("config.json does not parse (Expecting value at line 1, column 18)" in w for w in warnings)
