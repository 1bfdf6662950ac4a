"""``context-keeper doctor``: what it reports, what ``--fix`` repairs, and that nothing is lost."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from context_keeper import doctor, gitshared
from context_keeper.cli import main as cli_main
from context_keeper.errors import NotFound
from context_keeper.service import Service
from tests.conftest import REPO

STORES = REPO / "tests" / "fixtures" / "stores"


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(STORES / name, target)
    return target


def _run(capsys, *args: str) -> tuple[int, str]:
    code = cli_main(["doctor", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def _codes(report: doctor.Report) -> list[str]:
    return [f.code for f in report.findings if not f.fixed and f.code != "fixed"]


def _give_last_good(project: Path) -> bytes:
    """A last-good decisions.json as a successful write would have left it."""
    good = [{"id": "dec-001", "summary": "Postgres is the system of record", "tags": ["storage"]},
            {"id": "dec-002", "summary": "Wave picking replaces order picking", "tags": ["waves"]}]
    data = (json.dumps(good, indent=2) + "\n").encode()
    (project / ".context" / ".last-good").mkdir(exist_ok=True)
    (project / ".context" / ".last-good" / "decisions.json").write_bytes(data)
    return data


def test_the_bundled_example_is_healthy(project, capsys):
    code, out = _run(capsys, "--project", str(project))
    assert code == 0, out
    assert "Healthy" in out


def test_a_corrupt_file_is_an_error_with_its_position(tmp_path, capsys):
    project = _copy(tmp_path, "corrupt")
    code, out = _run(capsys, "--project", str(project))
    assert code == doctor.EXIT_ERRORS
    # The fixture is broken by a merge conflict: named as one, with the first marker's line.
    assert "decisions.json has unresolved git merge conflict markers" in out and "the first at line 14" in out


def _written_then_broken(project: Path, breakage) -> tuple[Path, bytes]:
    """decisions.json as a tool write left it (live file and last-good copy), then changed by
    ``breakage(text) -> text``; returns the live path and the last-good bytes."""
    good = _give_last_good(project)
    live = project / ".context" / "decisions.json"
    live.write_bytes(breakage(good.decode()).encode())
    return live, good


def _drop_colon(text: str, after: str = '"summary"') -> str:
    return text.replace(f"{after}: ", f"{after} ", 1)


def test_fix_saves_the_broken_file_aside_before_restoring_the_last_good_copy(tmp_path, capsys):
    project = _copy(tmp_path, "corrupt")
    live, good = _written_then_broken(project, _drop_colon)
    broken = live.read_bytes()
    code, out = _run(capsys, "--project", str(project), "--fix")
    assert code == 0, out
    assert live.read_bytes() == good
    aside = list((project / ".context").glob("decisions.json.broken-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == broken
    assert "FIXED" in out and aside[0].name in out
    assert "line 4: '\"summary\" \"Postgres is the system of record\",'" in out  # what the restore replaced
    # the store is writable again, and a later doctor run points at the saved copy
    Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}).record("decision", {
        "summary": "Zone batches for stock take",
        "problem": "A full stop for stock take cost a day of shipping every year at every site.",
        "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs."})
    report = doctor.diagnose(project)
    assert "broken_copy" in [f.code for f in report.findings]
    assert report.exit_code == 0


def _teammates(text: str) -> str:
    """Two entries arriving by a pull (the last-good copy never saw them), one with a typo."""
    items = json.loads(text)
    items += [{"id": "dec-010", "summary": "Teammate decision one", "tags": ["pull"]},
              {"id": "dec-011", "summary": "Teammate decision two", "tags": ["pull"]}]
    return _drop_colon(json.dumps(items, indent=2) + "\n", '"Teammate decision one",\n    "tags"')


@pytest.mark.parametrize("breakage,lost", [
    (_teammates, ["entries dec-010, dec-011", "lines 15-28 (changed or added)"]),
    # a valid retitle, then a typo further down: restoring would quietly revert the retitle
    (lambda t: _drop_colon(t.replace("Postgres is the system of record", "Postgres is the only system of record"),
                           '"Wave picking replaces order picking",\n    "tags"'), ["lines 4, 12 (changed or added)"]),
], ids=["entries-from-a-pull", "hand-edit-before-the-typo"])
def test_fix_refuses_to_restore_over_what_only_the_broken_file_has(tmp_path, capsys, breakage, lost):
    project = _copy(tmp_path, "corrupt")
    live, _ = _written_then_broken(project, breakage)
    broken = live.read_bytes()
    code, out = _run(capsys, "--project", str(project), "--fix")
    assert code == doctor.EXIT_ERRORS, out
    assert live.read_bytes() == broken and not list((project / ".context").glob("*.broken-*"))
    assert "restored" not in out and "Healthy" not in out
    refusal = [f for f in doctor.diagnose(project).findings if f.code == "restore_would_lose"]
    assert len(refusal) == 1 and all(phrase in refusal[0].message for phrase in lost), refusal[0].message
    assert "by hand" in refusal[0].message and "diff .context/.last-good/decisions.json" in refusal[0].message
    corrupt = next(f for f in doctor.diagnose(project).findings if f.code == "corrupt_file")
    assert corrupt.fix is None and f"line {corrupt.message.split('line ')[1].split(',')[0]}, column" in refusal[0].message


def test_fix_refuses_a_merge_conflict_whose_other_side_the_copy_lacks(tmp_path):
    project = _copy(tmp_path, "corrupt")
    live = project / ".context" / "decisions.json"
    broken = live.read_text(encoding="utf-8")
    # the last write this machine made is its own side of the conflict (HEAD)
    ours = broken.replace("<<<<<<< HEAD\n", "")
    ours = ours[:ours.index("=======")] + ours[ours.index(">>>>>>> feature/waves\n") + len(">>>>>>> feature/waves\n"):]
    json.loads(ours)
    (project / ".context" / ".last-good").mkdir()
    (project / ".context" / ".last-good" / "decisions.json").write_text(ours, encoding="utf-8")
    report = doctor.repair(doctor.diagnose(project))
    assert live.read_text(encoding="utf-8") == broken
    [conflict] = [f for f in report.findings if f.code == "corrupt_file"]
    assert conflict.fix is None and "does not put that copy back" in conflict.message
    assert not any(f.code == "fixed" and f.file == "decisions.json" for f in report.findings)
    assert report.exit_code == doctor.EXIT_ERRORS


@pytest.mark.parametrize("breakage", [
    lambda t: t[: t.index('"waves"') + 3],  # truncated mid-entry
    lambda t: "",
    lambda t: "\x00" * 40,  # a crash that left zeros
    lambda t: t.replace('"storage"\n', '"storage",\n'),  # a trailing comma
    lambda t: t.replace("  },\n  {", "  }\n  {"),  # a dropped comma, reported on the next line
    lambda t: "\ufeff" + _drop_colon(t).replace("\n", "\r\n"),  # resaved with BOM and CRLF, plus a typo
], ids=["truncated", "emptied", "zeros", "trailing-comma", "missing-comma", "bom-crlf-typo"])
def test_fix_restores_when_the_copy_holds_everything_but_the_broken_position(tmp_path, breakage):
    project = _copy(tmp_path, "corrupt")
    live, good = _written_then_broken(project, breakage)
    report = doctor.diagnose(project)
    assert "restore_would_lose" not in _codes(report), [f.message for f in report.findings]
    assert doctor.repair(report).exit_code == 0
    assert live.read_bytes() == good


def test_fix_never_restores_over_a_broken_file_without_a_usable_copy(tmp_path, capsys):
    project = _copy(tmp_path, "corrupt")
    live = project / ".context" / "decisions.json"
    broken = live.read_bytes()
    (project / ".context" / ".last-good").mkdir()
    (project / ".context" / ".last-good" / "decisions.json").write_text("[{", encoding="utf-8")
    code, out = _run(capsys, "--project", str(project), "--fix")
    assert code == doctor.EXIT_ERRORS
    assert live.read_bytes() == broken
    assert not list((project / ".context").glob("*.broken-*"))


def test_two_repairs_in_the_same_second_keep_both_broken_files(tmp_path):
    project = _copy(tmp_path, "corrupt")
    live, good = _written_then_broken(project, _drop_colon)
    now = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
    first_broken = live.read_bytes()
    doctor.repair(doctor.diagnose(project), now=now)
    second_broken = good[:40]  # a truncation: every byte it has is in the copy, so it is restored too
    live.write_bytes(second_broken)
    doctor.repair(doctor.diagnose(project), now=now)
    saved = sorted(p.read_bytes() for p in (project / ".context").glob("decisions.json.broken-*"))
    assert saved == sorted([first_broken, second_broken])


def test_malformed_entries_are_warnings_that_need_a_person(tmp_path, capsys):
    project = _copy(tmp_path, "malformed")
    before = (project / ".context" / "pipelines.json").read_bytes()
    report = doctor.diagnose(project)
    assert report.exit_code == doctor.EXIT_WARNINGS
    messages = "\n".join(f.message for f in report.findings)
    assert "pipelines.json item 1: pipe-001: steps should be a list" in messages
    assert "pipelines.json item 4: item is text" in messages
    assert all(f.fix is None for f in report.findings if f.code == "malformed_entry")
    code, _ = _run(capsys, "--project", str(project), "--fix")
    assert code == doctor.EXIT_WARNINGS
    after = (project / ".context" / "pipelines.json").read_bytes()
    # the conflicting duplicate pipe-002 was renumbered and the pipeline without an id got one;
    # every item is still there
    assert len(json.loads(after)) == len(json.loads(before))
    assert b'"previous_id": "pipe-002"' in after
    assert json.loads(after)[2]["id"] == "pipe-008"


def test_links_scopes_and_duplicates_are_reported(tmp_path):
    project = _copy(tmp_path, "tangled")
    report = doctor.diagnose(project)
    messages = [f.message for f in report.findings]
    assert any("dec-001.related_to names dec-404" in m for m in messages)
    assert any("dec-002.superseded_by names dec-077" in m for m in messages)
    assert any("con-002.related_to names pipe-009" in m for m in messages)
    assert any("con-002 has scope 'vendor/printers/**/*.c', which matches no file" in m for m in messages)
    assert not any("con-001 has scope" in m for m in messages)
    dupes = [f for f in report.findings if f.code == "duplicate_id"]
    assert len(dupes) == 2
    assert report.exit_code == doctor.EXIT_WARNINGS


def test_fix_drops_an_exact_duplicate_and_renumbers_a_conflicting_one(tmp_path):
    project = _copy(tmp_path, "tangled")
    path = project / ".context" / "decisions.json"
    before = json.loads(path.read_text(encoding="utf-8"))
    doctor.repair(doctor.diagnose(project))
    after = json.loads(path.read_text(encoding="utf-8"))
    # an entry's superseded_by names dec-077, so the new id goes above it rather than risk reusing
    # it (dec-001's related_to link to dec-404 does not count: related_to may name a future entry)
    assert [e["id"] for e in after] == ["dec-001", "dec-002", "dec-003", "dec-078"]
    renumbered = after[3]
    assert renumbered["previous_id"] == "dec-002"
    assert {k: v for k, v in renumbered.items() if k not in ("id", "previous_id")} == \
        {k: v for k, v in before[4].items() if k != "id"}
    assert after[2] == before[2] == before[3]
    report = doctor.diagnose(project)
    assert "duplicate_id" not in _codes(report)
    assert {f.code for f in report.findings if f.severity == "warning"} == {"dangling_link"}
    assert "unmatched_scope" in {f.code for f in report.findings if f.severity == "info"}


def test_a_context_symlink_leading_out_of_the_project_is_an_error(tmp_path, capsys):
    outside = tmp_path / "elsewhere"
    shutil.copytree(STORES / "tangled" / ".context", outside)
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".context").symlink_to(outside, target_is_directory=True)
    code, out = _run(capsys, "--project", str(project))
    assert code == doctor.EXIT_ERRORS
    assert "symlink" in out and str(outside) in out


def test_a_store_file_symlink_is_reported(project):
    target = project / "decisions-real.json"
    live = project / ".context" / "decisions.json"
    live.rename(target)
    live.symlink_to(target)
    report = doctor.diagnose(project)
    assert "file_symlink" in _codes(report)


def test_no_project_exits_4(tmp_path, capsys):
    code, out = _run(capsys, "--project", str(tmp_path))
    assert code == doctor.EXIT_NO_PROJECT
    assert ".context" in out


def test_old_temp_files_are_removed_by_fix_and_fresh_ones_left_alone(project):
    context = project / ".context"
    old = context / ".decisions.json.abc123.tmp"
    fresh = context / ".decisions.json.def456.tmp"
    old.write_text("[partial", encoding="utf-8")
    fresh.write_text("[partial", encoding="utf-8")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    report = doctor.diagnose(project)
    assert [f.file for f in report.findings if f.code == "stale_temp"] == [old.name]
    doctor.repair(report)
    assert not old.exists() and fresh.exists()


def test_fix_seeds_a_missing_last_good_copy(project):
    backup = project / ".context" / ".last-good" / "decisions.json"
    assert not backup.exists()
    doctor.repair(doctor.diagnose(project))
    assert backup.read_bytes() == (project / ".context" / "decisions.json").read_bytes()


def test_json_output_and_the_console_script(tmp_path):
    project = _copy(tmp_path, "corrupt")
    proc = subprocess.run([sys.executable, "-m", "context_keeper", "doctor", "--json", "--project", str(project)],
                          capture_output=True, text=True, encoding="utf-8", timeout=60, cwd=str(REPO))
    assert proc.returncode == doctor.EXIT_ERRORS, proc.stderr
    report = json.loads(proc.stdout)
    assert report["exit_code"] == doctor.EXIT_ERRORS
    corrupt = [f for f in report["findings"] if f["code"] == "corrupt_file"]
    assert corrupt and corrupt[0]["file"] == "decisions.json" and "the first at line 14" in corrupt[0]["message"]


def test_doctor_never_writes_without_fix(tmp_path):
    for name in ("corrupt", "malformed", "tangled"):
        project = _copy(tmp_path, name)
        before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
        doctor.diagnose(project)
        after = {p: p.read_bytes() for p in project.rglob("*") if p.is_file() and p.name != ".lock"}
        assert after == {p: b for p, b in before.items() if p.name != ".lock"}
        assert not (project / ".context" / ".last-good").exists()


def test_a_corrupt_file_does_not_make_links_into_it_look_dangling(project: Path):
    (project / ".context" / "decisions.json").write_text('[{"id": "dec-001",', encoding="utf-8")
    report = doctor.diagnose(project)
    codes = _codes(report)
    assert "corrupt_file" in codes and "dangling_link" not in codes  # constraints link to decisions
    no_backup = [f for f in report.findings if f.code == "no_backup"]
    assert no_backup and "git checkout" in no_backup[0].message
    _give_last_good(project)
    assert "no_backup" not in _codes(doctor.diagnose(project))


def test_a_restore_names_the_entries_it_brings_back(tmp_path):
    project = _copy(tmp_path, "corrupt")
    live, good = _written_then_broken(project, lambda t: t[: t.index('"id": "dec-002"')])
    report = doctor.repair(doctor.diagnose(project))
    assert live.read_bytes() == good
    assert any("dec-002, missing from the broken file, is back" in f.message for f in report.findings if f.code == "fixed")


@pytest.mark.parametrize("config,expected", [
    ({"min_relevance": 5}, "min_relevance is 5, but it must be a number from 0 to 1"),
    ({"min_relevance": -0.1}, "min_relevance is -0.1, but it must be a number from 0 to 1"),
    ({"token_budget": 10}, "token_budget is 10, but it must be a number of tokens, at least 50 (default 4000)"),
    ({"token_budget": "abc"}, 'token_budget is "abc", but it must be a number of tokens'),
    ({"markdown_export": True}, "markdown_export is true, but it must be an object with the keys enabled, path"),
    ({"markdown_export": {"enabled": True, "path": "../outside.md"}}, "markdown_export.path cannot be used"),
    ({"semantic": "on"}, 'semantic is "on", but it must be an object with the keys enabled, weight'),
    ({"semantic": {"api": "azure"}}, 'semantic.api is "azure", but it must be "ollama" or "openai"'),
    ({"semantic": {"url": "localhost:11434"}}, 'semantic.url is "localhost:11434", but it must be an http:// or https:// URL'),
    ({"semantic": {"url": "http://localhost:abc"}}, 'semantic.url is "http://localhost:abc", but it must be an http:// or https:// URL'),
    ({"scope_guard": {"confirm_absolute": "yes"}}, 'scope_guard.confirm_absolute is "yes", but it must be true or false'),
    ({"id_suffix": "yes"}, 'id_suffix is "yes", but it must be true or false (default false)'),
    ({"mmr": {"lamda": 0.5}}, "'mmr.lamda' is not a setting context-keeper knows, so it has no effect (did you mean 'mmr.lambda'?)"),
    ({"tokn_budget": 3000}, "'tokn_budget' is not a setting context-keeper knows, so it has no effect (did you mean 'token_budget'?)"),
])
def test_config_values_that_would_be_ignored_are_warnings_saying_what_to_fix(project, config, expected):
    (project / ".context" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    report = doctor.diagnose(project)
    found = [f for f in report.findings if f.code == "config"]
    assert len(found) == 1 and found[0].severity == doctor.WARNING, [f.message for f in found]
    assert expected in found[0].message and "Edit .context/config.json by hand" in found[0].message
    assert report.exit_code == doctor.EXIT_WARNINGS


def test_every_default_setting_written_out_is_a_valid_config(project):
    from context_keeper.config import DEFAULTS

    full = {**DEFAULTS, "project_name": "packwise", "min_relevance": 0.5}
    (project / ".context" / "config.json").write_text(json.dumps(full), encoding="utf-8")
    assert "config" not in _codes(doctor.diagnose(project))


def test_remedies_name_a_hand_edit_as_well_as_the_agent_tool(tmp_path):
    report = doctor.diagnose(_copy(tmp_path, "tangled"))
    for code in ("dangling_link", "unmatched_scope"):
        found = [f for f in report.findings if f.code == code]
        assert found and all(f"edit .context/{f.file} by hand, or have the agent call update_entry" in f.message
                             for f in found), [f.message for f in found]


# Read as written, so not reported: a step object with a text action but no order (the order is
# its position) or a non-integer order, and an alternative without reason_rejected (the tools accept it).
_COERCED_ITEMS = {
    "steps": ("pipelines.json", [
        {"action": "create account"}, {"order": "2", "action": "x"}, "read the wiki", 42, None, {"order": 6},
        {"order": 7, "action": ["a", "b"]}], [
        'steps item 3 is text, not an {order, action} object; it is read as the step "read the wiki"',
        'steps item 4 is the number 42, not an {order, action} object; it is read as the step "42"',
        "steps item 5 is null; it is skipped, leaving a gap at step 5",
        "steps item 6 has no action; it is read as an empty step",
        'steps item 7 has a list as its action, not text; it is read as the step "a; b"',
    ]),
    "alternatives": ("decisions.json", [
        {"option": "MongoDB", "reason_rejected": "no transactions"}, {"option": "Redis"}, "DynamoDB", 42, None,
        {"reason_rejected": "too slow"}, {"option": ["a", "b"]}, {"option": "CouchDB", "reason_rejected": 7}], [
        'alternatives item 3 is text, not an {option, reason_rejected} object; it is read as the alternative '
        '"DynamoDB" with no reason. Write it as {"option": ..., "reason_rejected": ...}, or remove it',
        'alternatives item 4 is the number 42, not an {option, reason_rejected} object; it is read as the '
        'alternative "42" with no reason',
        "alternatives item 5 is null; it is skipped. Remove it",
        'alternatives item 6 has no option; it is read as an alternative with no option. Give it an "option" string',
        'alternatives item 7 has a list as its option, not text; it is read as the alternative "a; b"',
        'alternatives item 8 has the number 7 as its reason_rejected, not text; it is read as "7". Write the '
        "reason as a string",
    ]),
}


@pytest.mark.parametrize("field", sorted(_COERCED_ITEMS))
def test_each_list_item_that_is_coerced_or_dropped_on_read_is_a_warning(project, field):
    name, items, expected = _COERCED_ITEMS[field]
    path = project / ".context" / name
    entries = json.loads(path.read_text(encoding="utf-8"))
    entries[0][field] = items
    path.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    before = path.read_bytes()
    found = [f for f in doctor.diagnose(project).findings if f.code == "malformed_entry"]
    assert all(f.severity == doctor.WARNING and f.file == name for f in found)
    messages = [f.message for f in found]
    assert len(messages) == len(expected), messages
    for message, sentence in zip(messages, expected):
        assert message.startswith(f"{name} item 1: {entries[0]['id']}: {sentence}"), message
    doctor.repair(doctor.diagnose(project))  # nothing for --fix to do: the item stays as written
    assert path.read_bytes() == before


@pytest.mark.parametrize("existing,added,reported", [
    ("dec-005", "dec-5", "dec-005 (item 5) and dec-5 (item 34) are one id written 2 ways"),
    ("dec-005", "dec-0005", "dec-005 (item 5) and dec-0005 (item 34) are one id written 2 ways"),
    ("dec-013-a7f3", "dec-013-A7F3", "dec-013-a7f3 (item 13) and dec-013-A7F3 (item 34) are one id written 2 ways"),
    ("dec-013-a7f3", "dec-013", None),  # a suffix makes a different id: the old tool added them to avoid collisions
    ("dec-013-a7f3", "dec-13-b000", None),
], ids=["zero-padding", "more-padding", "suffix-case", "suffix-absent", "other-suffix"])
def test_ids_that_differ_only_in_spelling_are_reported_with_the_links_each_one_gets(project, existing, added, reported):
    path = project / ".context" / "decisions.json"
    decisions = json.loads(path.read_text(encoding="utf-8"))
    decisions.append({"id": "dec-032", "summary": "Links to the first spelling", "related_to": [existing]})
    decisions.append({"id": "dec-033", "summary": "Links to the second spelling", "related_to": [added]})
    decisions.append({"id": added, "summary": "Written by hand with another spelling"})
    path.write_text(json.dumps(decisions, indent=2), encoding="utf-8")
    found = [f for f in doctor.diagnose(project).findings if f.code == "id_spelling"]
    if reported is None:
        assert found == []
        return
    assert len(found) == 1 and found[0].severity == doctor.WARNING and found[0].file == "decisions.json"
    message = found[0].message
    assert message.startswith(f"decisions.json: {reported}"), message
    # each spelling is reached only by the links that spell it exactly
    reach = message.split("exactly (")[1].split("). ")[0].split("; ")
    assert reach[0].startswith(f"{existing} is named by ") and "dec-032.related_to" in reach[0]
    assert "dec-033" not in reach[0]
    assert reach[1] == f"{added} is named by dec-033.related_to"
    assert "deprecate_entry with merge_into" in message and "by hand in .context/decisions.json" in message


def _decision(entry_id: str, summary: str, **extra) -> dict:
    return {"id": entry_id, "summary": summary, "problem": "p" * 45, "why_chosen": "w" * 65, "tags": [],
            "related_to": [], "status": "active", "superseded_by": None, **extra}


def _new_project(project: Path) -> Path:
    project.mkdir()
    Service(env={}).init_project(str(project))
    return project


def _write_store_file(project: Path, name: str, items: list[dict]) -> Path:
    path = project / ".context" / name
    path.write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
    return path


def _write_decisions(project: Path, items: list[dict]) -> Path:
    return _write_store_file(project, "decisions.json", items)


def test_history_links_whose_two_ends_disagree_are_reported(tmp_path):
    project = _new_project(tmp_path / "sup")
    # As an earlier `doctor --fix` left the team review's store: the renumbered Redis decision
    # still names dec-003 as its successor, while dec-003 still claims the id it lost.
    _write_decisions(project, [
        _decision("dec-001", "Base"),
        _decision("dec-002", "Bob: structured JSON logging"),
        _decision("dec-004", "Alice: Redis sessions", status="superseded", superseded_by="dec-003",
                  previous_id="dec-002"),
        _decision("dec-003", "Alice: Memcached instead of Redis", supersedes=["dec-002"]),
        _decision("dec-005", "Keep the old admin UI", superseded_by="dec-001"),
    ])
    found = [f.message for f in doctor.diagnose(project).findings if f.code == "history_link"]
    assert len(found) == 2, found
    assert found[0].startswith("dec-003.supersedes names dec-002, but dec-002 is active and names no successor, "
                               "so both read as the current answer")
    assert ("(dec-004, which was dec-002 before a renumbering, names dec-003 as its successor: the link "
            "probably means dec-004)") in found[0]
    assert "deprecate_entry dec-002 with superseded_by dec-003" in found[0]
    assert "remove dec-002 from dec-003.supersedes" in found[0]
    assert found[1].startswith("dec-005 names dec-001 as its successor (superseded_by) but its status is active")


def test_history_written_by_the_tools_is_consistent(empty_project):
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)})
    why = {"problem": "p" * 45, "why_chosen": "w" * 65}
    svc.record("decision", {"summary": "Cache sessions in Redis", **why})
    svc.record("decision", {"summary": "Cache sessions in Memcached", **why}, supersedes=["dec-001"])
    svc.record("decision", {"summary": "Log as plain text", **why})
    svc.record("decision", {"summary": "Log as structured JSON", **why})
    svc.deprecate_entry("dec-003", "replaced by JSON logs", superseded_by="dec-004")  # one end only
    assert "history_link" not in _codes(doctor.diagnose(empty_project))


def test_fix_renumbers_a_duplicate_with_the_history_links_that_came_with_it(tmp_path):
    project = _new_project(tmp_path / "sup")
    # The team review's merge: Alice's branch has dec-002 superseded by her dec-003, Bob's
    # branch has another dec-002; both kept, Bob's first.
    path = _write_decisions(project, [
        _decision("dec-001", "Base"),
        _decision("dec-002", "Bob: structured JSON logging"),
        _decision("dec-002", "Alice: Redis sessions", status="superseded", superseded_by="dec-003"),
        _decision("dec-003", "Alice: Memcached instead of Redis", supersedes=["dec-002"]),
    ])
    report = doctor.repair(doctor.diagnose(project))
    after = {e["id"]: e for e in json.loads(path.read_text(encoding="utf-8"))}
    assert after["dec-004"]["summary"] == "Alice: Redis sessions" and after["dec-004"]["previous_id"] == "dec-002"
    assert after["dec-004"]["superseded_by"] == "dec-003"
    assert after["dec-003"]["supersedes"] == ["dec-004"]
    assert after["dec-002"]["summary"] == "Bob: structured JSON logging" and after["dec-002"]["status"] == "active"
    done = [f.message for f in report.findings if f.code == "fixed"]
    assert ('decisions.json: dec-002 "Alice: Redis sessions" (item 3) is now dec-004, previous_id keeps dec-002; '
            'dec-002 stays with "Bob: structured JSON logging" (item 2): it comes first in the file, as git cannot '
            'tell which one is already shared (the project is not in a git work tree)') in done
    assert any("dec-003.supersedes names dec-002 and dec-004 links back to it" in m for m in done)
    assert report.exit_code == doctor.EXIT_OK
    assert {"duplicate_id", "history_link"}.isdisjoint(_codes(doctor.diagnose(project)))


def test_one_entry_edited_on_two_sides_is_reported_for_a_person_and_left_alone_by_fix(tmp_path):
    project = _new_project(tmp_path / "edit")
    # Both sides edited dec-002 (same created_at) and the merge kept both objects; dec-003 is a
    # real duplicate next to them, which --fix still renumbers.
    bobs = _decision("dec-002", "Use Redis for sessions, 24h TTL", created_at="2026-11-02T10:00:00+00:00",
                     updated_at="2026-11-03T09:00:00+00:00")
    alices = dict(bobs, summary="Use Redis for sessions, 1h TTL", updated_at="2026-11-03T11:30:00+00:00")
    items = [_decision("dec-001", "Base"), alices, bobs, _decision("dec-003", "Bob: logs"),
             _decision("dec-003", "Alice: metrics")]
    path = _write_decisions(project, items)
    report = doctor.diagnose(project)
    edits = [f for f in report.findings if f.code == "conflicting_edit"]
    assert len(edits) == 1 and edits[0].fix is None and edits[0].severity == doctor.WARNING
    assert edits[0].message.startswith(
        'decisions.json: dec-002 was edited on two sides of a merge and both versions were kept (item 2: "Use Redis '
        'for sessions, 1h TTL"; item 3: "Use Redis for sessions, 24h TTL"; both were created at '
        "2026-11-02T10:00:00+00:00, so they are one entry, not two)")
    assert "`doctor --fix` leaves them alone" in edits[0].message
    assert [f.message.split(":")[0] for f in report.findings if f.code == "duplicate_id"] == ["decisions.json item 5"]
    repaired = doctor.repair(report)
    after = json.loads(path.read_text(encoding="utf-8"))
    assert after[:3] == items[:3]
    assert [(e["id"], e["summary"]) for e in after[3:]] == [("dec-003", "Bob: logs"), ("dec-004", "Alice: metrics")]
    assert [f.code for f in repaired.findings if f.code == "conflicting_edit" and not f.fixed] == ["conflicting_edit"]
    assert "conflicting_edit" in _codes(doctor.diagnose(project))


@pytest.mark.parametrize("before, after", [
    ("24h TTL", "1h TTL"),
    ("Use Redis", "Use Valkey"),
    ("Retry payouts 3 times", "Retry payouts 5 times with backoff"),
])
def test_a_short_title_edited_on_two_sides_is_a_conflict_not_a_copy(tmp_path, before, after):
    # Each side's edit re-stamped updated_at, which a hand copy used as a template keeps: however
    # few words the two titles share, one entry is left whole for a person to merge.
    project = _new_project(tmp_path / "edit")
    bobs = _decision("dec-002", before, created_at="2026-11-02T10:00:00+00:00",
                     updated_at="2026-11-03T09:00:00+00:00")
    alices = dict(bobs, summary=after, updated_at="2026-11-03T11:30:00+00:00")
    path = _write_decisions(project, [_decision("dec-001", "Base"), bobs, alices])
    before_fix = path.read_bytes()
    report = doctor.diagnose(project)
    assert "conflicting_edit" in _codes(report)
    assert not [f for f in report.findings if f.code == "duplicate_id" and "copy" in f.message]
    doctor.repair(report)
    assert path.read_bytes() == before_fix
    assert "conflicting_edit" in _codes(doctor.diagnose(project))


@pytest.mark.parametrize("stamps, copied", [
    ({}, True),
    ({"verified_at": "2026-11-04T08:00:00+00:00"}, True),
    ({"verified_at": "2026-11-05T08:00:00+00:00"}, False),  # the original has 2026-11-04
], ids=["same stamps", "same verified_at", "verified_at re-stamped"])
def test_only_a_copy_keeping_every_stamp_of_the_original_gets_a_new_id(tmp_path, stamps, copied):
    project = _new_project(tmp_path / "copy")
    original = _decision("dec-002", "Use Redis", created_at="2026-11-02T10:00:00+00:00",
                         updated_at="2026-11-03T09:00:00+00:00", verified_at="2026-11-04T08:00:00+00:00")
    copy = {**original, "summary": "Use Valkey", **stamps}
    path = _write_decisions(project, [_decision("dec-001", "Base"), original, copy])
    report = doctor.diagnose(project)
    assert ("conflicting_edit" in _codes(report)) is not copied
    doctor.repair(report)
    after = json.loads(path.read_text(encoding="utf-8"))
    assert [(e["id"], e["summary"]) for e in after[1:]] == (
        [("dec-002", "Use Redis"), ("dec-003", "Use Valkey")] if copied else
        [("dec-002", "Use Redis"), ("dec-002", "Use Valkey")])
    assert "previous_id" not in after[-1]


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True, text=True)


def _git_repo(path: Path, *clone_of: Path) -> Path:
    """A work tree at ``path`` (a clone of ``clone_of`` when given) that can commit, on main."""
    if clone_of:
        _git(path.parent, "clone", "-q", str(clone_of[0]), str(path))
    else:
        _git(path.parent, "init", "-q", "-b", "main", str(path))
    for key, value in (("user.name", "Test"), ("user.email", "test@example.com"), ("pull.rebase", "false")):
        _git(path, "config", key, value)
    return path


def _commit_all(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)


def _bob_pushed_alice_did_not(tmp_path: Path) -> tuple[Path, dict, dict, dict]:
    """Bob's dec-002 is pushed to origin/main; Alice, on a clone of it from before, has her own
    dec-002 committed but not pushed. Returns (alice, base, Bob's, Alice's)."""
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", "origin.git")
    bob = _git_repo(tmp_path / "bob", tmp_path / "origin.git")
    Service(env={}).init_project(str(bob))
    base = _decision("dec-001", "Base", created_at="2026-11-01T09:00:00+00:00")
    _write_decisions(bob, [base])
    _commit_all(bob, "base")
    _git(bob, "push", "-q", "origin", "HEAD:main")
    alice = _git_repo(tmp_path / "alice", tmp_path / "origin.git")
    bobs = _decision("dec-002", "Bob: structured JSON logging", created_at="2026-11-02T10:00:00+00:00")
    _write_decisions(bob, [base, bobs])
    _commit_all(bob, "bob: dec-002")
    _git(bob, "push", "-q")
    alices = _decision("dec-002", "Alice: Redis sessions", created_at="2026-11-02T10:05:00+00:00")
    _write_decisions(alice, [base, alices])
    _commit_all(alice, "alice: dec-002")
    return alice, base, bobs, alices


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_fix_renumbers_the_copy_of_a_shared_id_that_is_not_pushed_yet(tmp_path):
    alice, base, bobs, alices = _bob_pushed_alice_did_not(tmp_path)
    assert _git(alice, "pull", "-q", check=False).returncode != 0  # both appended: a conflict
    # Resolved by keeping both, her own first: by position alone Bob's pushed one would move.
    path = _write_decisions(alice, [base, alices, dict(bobs, summary="Bob: structured JSON logging, edited since")])
    report = doctor.repair(doctor.diagnose(alice))
    after = json.loads(path.read_text(encoding="utf-8"))
    assert [(e["id"], e["summary"], e.get("previous_id")) for e in after] == [
        ("dec-001", "Base", None), ("dec-003", "Alice: Redis sessions", "dec-002"),
        ("dec-002", "Bob: structured JSON logging, edited since", None)]
    done = [f.message for f in report.findings if f.code == "fixed"]
    assert ('decisions.json: dec-002 "Alice: Redis sessions" (item 2) is now dec-003, previous_id keeps '
            'dec-002; dec-002 stays with "Bob: structured JSON logging, edited since" (item 3): origin/main has '
            'it and not the other') in done, done


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("flow", ["pull merging", "pull merged", "pull --rebase"])
def test_without_an_upstream_the_remote_tracking_branch_decides_not_the_local_side(tmp_path, flow):
    # HEAD (the local side of a pull) and ORIG_HEAD (Alice's commit before a rebase) hold her
    # unpushed copy only: what origin/main has is what others have.
    alice, base, bobs, alices = _bob_pushed_alice_did_not(tmp_path)
    _git(alice, "branch", "--unset-upstream")
    rebase = flow == "pull --rebase"
    assert _git(alice, "pull", "-q", *(["--rebase"] if rebase else []), "origin", "main", check=False).returncode != 0
    path = _write_decisions(alice, [base, alices, bobs])  # both kept, her own first
    if flow == "pull merged":
        _commit_all(alice, "merge origin/main")
    if rebase:
        _git(alice, "add", "-A")
        _git(alice, "-c", "core.editor=true", "rebase", "--continue")
    report = doctor.repair(doctor.diagnose(alice))
    after = json.loads(path.read_text(encoding="utf-8"))
    assert [(e["id"], e["summary"]) for e in after] == [
        ("dec-001", "Base"), ("dec-003", "Alice: Redis sessions"), ("dec-002", "Bob: structured JSON logging")]
    done = [f.message for f in report.findings if f.code == "fixed" and "is now dec-003" in f.message]
    assert len(done) == 1 and done[0].endswith(
        'dec-002 stays with "Bob: structured JSON logging" (item 3): origin/main has it and not the other'), done


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_copy_on_any_remote_tracking_branch_is_shared_not_only_on_the_upstream(tmp_path):
    # Alice's feat tracks origin/feat, where her dec-002 is pushed; Bob's is on origin/main.
    alice, base, bobs, alices = _bob_pushed_alice_did_not(tmp_path)
    _git(alice, "checkout", "-q", "-b", "feat")
    _git(alice, "push", "-q", "-u", "origin", "feat")
    _git(alice, "fetch", "-q")
    assert _git(alice, "merge", "-q", "origin/main", check=False).returncode != 0
    path = _write_decisions(alice, [base, alices, bobs])
    report = doctor.repair(doctor.diagnose(alice))
    assert [e["summary"] for e in json.loads(path.read_text(encoding="utf-8")) if e["id"] == "dec-002"] == [
        "Alice: Redis sessions"]
    done = [f.message for f in report.findings if f.code == "fixed" and "is now dec-003" in f.message]
    assert len(done) == 1 and done[0].endswith(
        'dec-002 stays with "Alice: Redis sessions" (item 2): both copies are already on remote-tracking branches '
        "(origin/feat and origin/main), so git cannot tell which one others cite, and it comes first in the file "
        "among them"), done


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_of_three_copies_each_unpushed_one_is_renumbered_and_file_order_decides_among_the_pushed(tmp_path):
    alice, base, bobs, alices = _bob_pushed_alice_did_not(tmp_path)
    # Carol merged Bob's dec-002 with her own and pushed both without running doctor.
    carol = _git_repo(tmp_path / "carol", tmp_path / "origin.git")
    carols = _decision("dec-002", "Carol: gRPC between services", created_at="2026-11-02T10:10:00+00:00")
    _write_decisions(carol, [base, bobs, carols])
    _commit_all(carol, "carol: dec-002")
    _git(carol, "push", "-q")
    assert _git(alice, "pull", "-q", check=False).returncode != 0
    path = _write_decisions(alice, [base, alices, carols, bobs])  # all three kept, her own first
    report = doctor.repair(doctor.diagnose(alice))
    assert [(e["id"], e["summary"]) for e in json.loads(path.read_text(encoding="utf-8"))] == [
        ("dec-001", "Base"), ("dec-003", "Alice: Redis sessions"), ("dec-002", "Carol: gRPC between services"),
        ("dec-004", "Bob: structured JSON logging")]
    done = [f.message for f in report.findings if f.code == "fixed" and "previous_id keeps" in f.message]
    rule = ('dec-002 stays with "Carol: gRPC between services" (item 3): 2 of the 3 copies are already on '
            "remote-tracking branches (origin/main), so git cannot tell which one others cite, and it comes first "
            "in the file among them")
    assert len(done) == 2 and all(m.endswith(rule) for m in done), done


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_remote_version_that_does_not_parse_leaves_the_choice_to_the_position(tmp_path):
    alice, base, bobs, alices = _bob_pushed_alice_did_not(tmp_path)
    # Alice's branch is pushed too; origin/main has Bob's and Carol's copies with the markers committed.
    _git(alice, "push", "-q", "origin", "HEAD:alice")
    bob = tmp_path / "bob"
    carols = _decision("dec-002", "Carol: gRPC between services", created_at="2026-11-02T10:10:00+00:00")
    text = json.dumps([base, bobs, carols], indent=2)
    (bob / ".context" / "decisions.json").write_text("<<<<<<< HEAD\n" + text + "\n=======\n>>>>>>> carol\n",
                                                      encoding="utf-8")
    _commit_all(bob, "merge carol (markers left in)")
    _git(bob, "push", "-q")
    _git(alice, "fetch", "-q")
    path = _write_decisions(alice, [base, bobs, alices, carols])
    report = doctor.repair(doctor.diagnose(alice))
    assert [e["summary"] for e in json.loads(path.read_text(encoding="utf-8")) if e["id"] == "dec-002"] == [
        "Bob: structured JSON logging"]
    done = [f.message for f in report.findings if f.code == "fixed" and "previous_id keeps" in f.message]
    assert len(done) == 2 and all(m.endswith(
        "it comes first in the file, as git cannot tell which one is already shared (the version of the file on "
        "origin/main does not parse)") for m in done), done


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_remote_branch_with_a_directory_where_the_file_is_says_so(tmp_path):
    alice, base, bobs, alices = _bob_pushed_alice_did_not(tmp_path)
    bob = tmp_path / "bob"
    _git(bob, "checkout", "-q", "-b", "odd")
    (bob / ".context" / "decisions.json").unlink()
    (bob / ".context" / "decisions.json").mkdir()
    (bob / ".context" / "decisions.json" / "note.txt").write_text("not a store file\n", encoding="utf-8")
    _commit_all(bob, "a directory where the file was")
    _git(bob, "push", "-q", "origin", "odd")
    _git(alice, "fetch", "-q")
    _write_decisions(alice, [base, alices, bobs])
    report = doctor.repair(doctor.diagnose(alice))
    done = [f.message for f in report.findings if f.code == "fixed" and "previous_id keeps" in f.message]
    assert len(done) == 1 and done[0].endswith(
        "(on origin/odd, .context/decisions.json is a tree, not a file)"), done


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_project_path_with_a_line_break_is_named_as_why_git_cannot_tell(tmp_path):
    # cat-file reads one object name a line: the path cannot be asked for, and the repair says so.
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", "origin.git")
    repo = _git_repo(tmp_path / "repo", tmp_path / "origin.git")
    project = repo / "two\nlines"
    project.mkdir()
    Service(env={}).init_project(str(project))
    base = _decision("dec-001", "Base", created_at="2026-11-01T09:00:00+00:00")
    _write_decisions(project, [base])
    _commit_all(repo, "base")
    _git(repo, "push", "-q", "origin", "HEAD:main")
    _git(repo, "fetch", "-q")
    _write_decisions(project, [base, _decision("dec-002", "One"), _decision("dec-002", "Two")])
    report = doctor.repair(doctor.diagnose(project))
    done = [f.message for f in report.findings if f.code == "fixed" and "previous_id keeps" in f.message]
    assert len(done) == 1 and done[0].endswith(
        "(the project's path in the repository has a line break, which `git cat-file` cannot read)"), done


def _git_reads(monkeypatch) -> list[list[str]]:
    """The git commands that read a file's versions (``show`` or ``cat-file``), as gitshared runs them."""
    reads, real_run = [], subprocess.run

    def run(args, **kwargs):
        if "show" in args[1:2] or "cat-file" in args[1:2]:
            reads.append(list(args))
        return real_run(args, **kwargs)
    monkeypatch.setattr("context_keeper.gitshared.subprocess.run", run)
    return reads


def _fixed_dec_002(report: doctor.Report) -> list[str]:
    return [f.message for f in report.findings if f.code == "fixed" and "previous_id keeps dec-002" in f.message]


def _assert_alices_copy_renumbered(path: Path, report: doctor.Report, base: dict, alices: dict, bobs: dict,
                                   shown_by: str) -> None:
    """Alice's unpushed dec-002 became dec-003, Bob's pushed one kept its id, and the repair
    says which remote-tracking branches showed that (``shown_by``: "origin/main has")."""
    assert [(e["id"], e["summary"]) for e in json.loads(path.read_text(encoding="utf-8"))] == [
        ("dec-001", base["summary"]), ("dec-003", alices["summary"]), ("dec-002", bobs["summary"])]
    done = _fixed_dec_002(report)
    assert len(done) == 1 and done[0].endswith(
        f'dec-002 stays with "{bobs["summary"]}" (item 3): {shown_by} it and not the other'), done


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_many_remote_tracking_branches_are_read_with_one_git_command(tmp_path, monkeypatch):
    # 30 teammates' branches, every other one from before Bob's dec-002: one git per branch
    # would be 31 commands, each paying git's start-up.
    alice, base, bobs, alices = _bob_pushed_alice_did_not(tmp_path)
    bob = tmp_path / "bob"
    _git(bob, "push", "-q", "origin", *(f"HEAD{'~1' if n % 2 else ''}:refs/heads/team-{n:02}" for n in range(30)))
    _git(alice, "fetch", "-q")
    path = _write_decisions(alice, [base, alices, bobs])  # both kept, her own first
    reads = _git_reads(monkeypatch)
    counted: dict[bytes, int] = {}
    real_parsed = gitshared._parsed

    def parsed(blob: bytes):
        counted[blob] = counted.get(blob, 0) + 1
        return real_parsed(blob)
    monkeypatch.setattr(gitshared, "_parsed", parsed)
    report = doctor.repair(doctor.diagnose(alice))
    parses = sorted(counted.values())
    assert len(reads) == 1 and reads[0][1:] == ["cat-file", "--batch"], reads
    # 31 branches, two versions of the file among them: each version is parsed once.
    assert parses == [1, 1], parses
    having = ["origin/main", *(f"origin/team-{n:02}" for n in range(0, 30, 2))]
    _assert_alices_copy_renumbered(path, report, base, alices, bobs, f'{", ".join(having[:-1])} and {having[-1]} have')


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_remote_version_with_multibyte_text_is_read_whole_and_the_branches_after_it_too(tmp_path):
    # git counts a version's size in bytes: read as characters, "café — naïve 日本" would run
    # into the next branch's answer. No created_at, so only the exact text can match Bob's copy.
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", "origin.git")
    bob = _git_repo(tmp_path / "bob", tmp_path / "origin.git")
    Service(env={}).init_project(str(bob))
    base = _decision("dec-001", "Base: café — naïve 日本")
    bobs = _decision("dec-002", "Bob: café — naïve 日本, « logs »", problem="Ünïcödé " * 9)
    path = bob / ".context" / "decisions.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([base, bobs], indent=2, ensure_ascii=False).encode("utf-8"))
    _commit_all(bob, "bob: dec-002, with a BOM")
    # alpha comes before main in git's order, so main's answer follows the multi-byte one.
    _git(bob, "push", "-q", "origin", "HEAD:main", "HEAD:alpha")
    alice = _git_repo(tmp_path / "alice", tmp_path / "origin.git")
    alices = _decision("dec-002", "Alice: 日本語のセッション")
    mine = _write_decisions(alice, [base, alices, bobs])
    report = doctor.repair(doctor.diagnose(alice))
    _assert_alices_copy_renumbered(mine, report, base, alices, bobs, "origin/alpha and origin/main have")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_project_in_a_subdirectory_of_the_repository_reads_its_own_file_on_the_branches(tmp_path):
    # The repository's top-level has a .context of its own, holding Alice's copy: read from the
    # top-level instead of the project, it would say hers is the pushed one.
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", "origin.git")
    bob = _git_repo(tmp_path / "bob", tmp_path / "origin.git")
    base = _decision("dec-001", "Base", created_at="2026-11-01T09:00:00+00:00")
    bobs = _decision("dec-002", "Bob: structured JSON logging", created_at="2026-11-02T10:00:00+00:00")
    alices = _decision("dec-002", "Alice: Redis sessions", created_at="2026-11-02T10:05:00+00:00")
    decoy = _new_project(bob / "decoy")
    _write_decisions(decoy, [base, alices])
    (decoy / ".context").rename(bob / ".context")
    project = Path("services", "web app")
    (bob / project).mkdir(parents=True)
    Service(env={}).init_project(str(bob / project))
    _write_decisions(bob / project, [base, bobs])
    _commit_all(bob, "bob: dec-002 in services/web app")
    _git(bob, "push", "-q", "origin", "HEAD:main")
    alice = _git_repo(tmp_path / "alice", tmp_path / "origin.git")
    path = _write_decisions(alice / project, [base, alices, bobs])
    report = doctor.repair(doctor.diagnose(alice / project))
    _assert_alices_copy_renumbered(path, report, base, alices, bobs, "origin/main has")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_remote_tracking_branch_without_the_file_is_skipped_among_branches_that_have_it(tmp_path):
    alice, base, bobs, alices = _bob_pushed_alice_did_not(tmp_path)
    bob = tmp_path / "bob"
    # origin/docs (between origin/alpha and origin/main in git's order) never had a .context.
    _git(bob, "checkout", "-q", "--orphan", "docs")
    _git(bob, "rm", "-r", "-q", "--cached", ".")
    _git(bob, "clean", "-f", "-d", "-q", "-x")
    (bob / "README.md").write_text("docs only\n", encoding="utf-8")
    _commit_all(bob, "docs")
    _git(bob, "push", "-q", "origin", "docs", "main:alpha")
    _git(alice, "fetch", "-q")
    path = _write_decisions(alice, [base, alices, bobs])
    report = doctor.repair(doctor.diagnose(alice))
    assert [e["summary"] for e in json.loads(path.read_text(encoding="utf-8")) if e["id"] == "dec-002"] == [
        "Bob: structured JSON logging"]
    done = _fixed_dec_002(report)
    assert len(done) == 1 and done[0].endswith(
        'dec-002 stays with "Bob: structured JSON logging" (item 3): origin/alpha and origin/main have it and not '
        "the other"), done


def test_cat_file_answers_are_framed_by_byte_counts_and_a_short_one_is_refused():
    from context_keeper.gitshared import _batch_answers
    text = "[\"café — 日本\"]".encode("utf-8")  # 20 bytes, 13 characters
    asked = [b"1111:a.json", b"2222:a.json", b"3333:a.json"]
    out = (b"abcd blob %d\n" % len(text) + text + b"\n" + b"2222:a.json missing\n" + b"3333:a.json ambiguous\n")
    assert _batch_answers(out, asked) == [("blob", text), ("missing", b""), ("ambiguous", b"")]
    with pytest.raises(ValueError, match="the blob for 1111:a.json is not 21 bytes long"):
        _batch_answers(b"abcd blob 21\n" + text + b"\n", asked[:1])
    with pytest.raises(ValueError, match="no answer for 2222:a.json"):
        _batch_answers(b"abcd blob %d\n" % len(text) + text + b"\n", asked[:2])
    with pytest.raises(ValueError, match="4 bytes follow the last answer"):
        _batch_answers(b"1111:a.json missing\nmore", asked[:1])


def _fake_git(tmp_path: Path, fails_on: str, stderr: str) -> Path:
    """A directory holding a ``git`` that fails ``git <fails_on>`` with ``stderr`` and runs the
    real git for everything else."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    script = bin_dir / "git"
    script.write_text(f'#!/bin/sh\nif [ "$1" = "{fails_on}" ]; then echo "{stderr}" >&2; exit 128; fi\n'
                      f'exec {shutil.which("git")} "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return bin_dir


@pytest.mark.skipif(shutil.which("git") is None or os.name != "posix", reason="needs git and sh")
@pytest.mark.parametrize("failure,rule", [
    ("rev-parse", "`git rev-parse` failed: fatal: detected dubious ownership in repository"),
    ("cat-file", "`git cat-file --batch` failed: fatal: unable to read tree"),
    ("timeout", "`git cat-file` took longer than 10 s and was stopped"),
])
def test_when_git_fails_the_reason_says_what_failed(tmp_path, monkeypatch, failure, rule):
    alice, base, bobs, alices = _bob_pushed_alice_did_not(tmp_path)
    assert _git(alice, "pull", "-q", check=False).returncode != 0
    path = _write_decisions(alice, [base, alices, bobs])
    if failure == "timeout":
        real_run = subprocess.run

        def run(args, **kwargs):
            if args[1] == "cat-file":
                raise subprocess.TimeoutExpired(args, kwargs["timeout"])  # as a hung git would end
            return real_run(args, **kwargs)
        monkeypatch.setattr("context_keeper.gitshared.subprocess.run", run)
    else:
        said = rule.split(": ", 1)[1]
        monkeypatch.setenv("PATH", f"{_fake_git(tmp_path, failure, said)}{os.pathsep}{os.environ['PATH']}")
    report = doctor.repair(doctor.diagnose(alice))
    assert [e["summary"] for e in json.loads(path.read_text(encoding="utf-8")) if e["id"] == "dec-002"] == [
        "Alice: Redis sessions"]
    done = [f.message for f in report.findings if f.code == "fixed" and "is now dec-003" in f.message]
    assert len(done) == 1 and done[0].endswith(
        f"it comes first in the file, as git cannot tell which one is already shared ({rule})"), done


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("situation,rule", [
    ("no remote", "there is no remote-tracking branch, so nothing shows what is pushed"),
    ("no git", "git is not installed"),
])
def test_without_a_remote_tracking_branch_or_git_the_position_decides(tmp_path, monkeypatch, situation, rule):
    repo = _git_repo(tmp_path / "repo")
    Service(env={}).init_project(str(repo))
    base = _decision("dec-001", "Base")
    _write_decisions(repo, [base])
    _commit_all(repo, "base")
    _git(repo, "checkout", "-q", "-b", "feature")
    feature = _decision("dec-002", "Feature: X")
    _write_decisions(repo, [base, feature])
    _commit_all(repo, "feature")
    _git(repo, "checkout", "-q", "main")
    main = _decision("dec-002", "Main: Y")
    _write_decisions(repo, [base, main])
    _commit_all(repo, "main")
    assert _git(repo, "merge", "-q", "feature", check=False).returncode != 0
    path = _write_decisions(repo, [base, feature, main])
    if situation == "no git":
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    report = doctor.repair(doctor.diagnose(repo))
    after = {e["id"]: e["summary"] for e in json.loads(path.read_text(encoding="utf-8"))}
    assert after["dec-002"] == "Feature: X"
    done = [f.message for f in report.findings if f.code == "fixed" and "is now dec-003" in f.message]
    assert len(done) == 1 and done[0].endswith(
        'dec-002 stays with "Feature: X" (item 2): it comes first in the file, as git cannot tell which one is '
        f"already shared ({rule})"), done


def test_an_id_lookup_follows_a_renumbering_and_names_the_other_entry_that_had_the_id(tmp_path):
    project = _new_project(tmp_path / "lookup")
    path = _write_decisions(project, [_decision("dec-001", "Base"), _decision("dec-002", "Bob: structured JSON logging"),
                                      _decision("dec-002", "Alice: Redis sessions")])
    doctor.repair(doctor.diagnose(project))  # Alice's is now dec-003, previous_id dec-002
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    both = svc.get_context(id="dec-002")
    assert both["entry"]["summary"] == "Bob: structured JSON logging" and "renumbered" not in both
    assert both["renumbered_from_this_id"] == [{"id": "dec-003", "summary": "Alice: Redis sessions"}]
    assert both["note"].startswith('dec-003 "Alice: Redis sessions" had the id dec-002 too before being renumbered '
                                   "(previous_id dec-002). If the dec-002 you were given was written before that")
    assert "it may mean dec-003" in both["note"]
    # Bob's entry retired by hand: the old id now leads to the entry that had it.
    _write_decisions(project, [e for e in json.loads(path.read_text(encoding="utf-8")) if e["id"] != "dec-002"])
    moved = svc.get_context(id=" dec-002")
    assert moved["type"] == "decision" and moved["entry"]["id"] == "dec-003"
    assert moved["renumbered"] == {"from": "dec-002", "to": "dec-003"} and "renumbered_from_this_id" not in moved
    assert moved["note"].startswith("No entry has the id dec-002 now: this entry, dec-003, had it before it was "
                                    "renumbered (its previous_id is dec-002;")
    assert set(svc.get_context(id="dec-001")) == {"type", "entry"}  # the answer for any other id is as before
    with pytest.raises(NotFound):
        svc.get_context(id="dec-004")


def test_renumbering_an_entry_that_has_only_previous_ids_keeps_its_first_old_id(tmp_path):
    # A hand edit left previous_ids and dropped previous_id: the first old id must not be lost.
    project = _new_project(tmp_path / "only-later")
    alices = {**_decision("dec-003", "Alice: Redis sessions"), "previous_ids": ["dec-002"]}
    path = _write_decisions(project, [_decision("dec-001", "Base"), _decision("dec-003", "Carol: gRPC"), alices])
    doctor.repair(doctor.diagnose(project))
    after = json.loads(path.read_text(encoding="utf-8"))
    assert (after[2]["id"], after[2]["previous_id"], after[2]["previous_ids"]) == ("dec-004", "dec-002", ["dec-003"])
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    assert svc.get_context(id="dec-002")["entry"]["id"] == "dec-004"


def test_a_second_renumbering_keeps_every_id_the_entry_had(tmp_path):
    project = _new_project(tmp_path / "chain")
    bobs, alices = _decision("dec-002", "Bob: structured JSON logging"), _decision("dec-002", "Alice: Redis sessions")
    path = _write_decisions(project, [_decision("dec-001", "Base"), bobs, alices])
    doctor.repair(doctor.diagnose(project))  # Alice's is now dec-003
    first_fix = json.loads(path.read_text(encoding="utf-8"))
    carols = _decision("dec-003", "Carol: gRPC between services")
    # A later merge brings Carol's dec-003 in ahead of Alice's.
    _write_decisions(project, first_fix[:2] + [carols, first_fix[2]])
    report = doctor.repair(doctor.diagnose(project))
    after = json.loads(path.read_text(encoding="utf-8"))
    assert (after[3]["id"], after[3]["previous_id"], after[3]["previous_ids"]) == ("dec-004", "dec-002", ["dec-003"])
    assert any(f.message.startswith('decisions.json: dec-003 "Alice: Redis sessions" (item 4) is now dec-004, '
                                    "previous_ids keeps dec-003 (previous_id keeps dec-002); dec-003 stays with "
                                    '"Carol: gRPC between services" (item 3)') for f in report.findings), report.findings
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    assert svc.get_context(id="dec-002")["renumbered_from_this_id"] == [{"id": "dec-004", "summary": "Alice: Redis sessions"}]
    cited = svc.get_context(id="dec-003")
    assert cited["renumbered_from_this_id"] == [{"id": "dec-004", "summary": "Alice: Redis sessions"}]
    assert "before being renumbered (previous_ids dec-003)" in cited["note"]
    _write_decisions(project, [e for e in after if e["id"] != "dec-002"])  # Bob's retired by hand
    moved = svc.get_context(id="dec-002")
    assert moved["entry"]["id"] == "dec-004" and moved["renumbered"] == {"from": "dec-002", "to": "dec-004"}


def test_fix_moves_links_of_two_renumbered_entries_and_reports_the_ones_it_cannot_decide(tmp_path):
    project = _new_project(tmp_path / "both")
    constraints = _write_store_file(project, "constraints.json", [
        {"id": "con-001", "rule": "Never log card numbers", "reason": "r" * 45, "related_to": ["dec-003"]},
    ])
    path = _write_decisions(project, [
        _decision("dec-002", "Bob: structured JSON logging"),
        _decision("dec-003", "Bob: log retention of 30 days"),
        _decision("dec-002", "Alice: Redis sessions", status="superseded", superseded_by="dec-003"),
        _decision("dec-003", "Alice: Memcached instead of Redis", supersedes=["dec-002"]),
    ])
    report = doctor.repair(doctor.diagnose(project))
    after = json.loads(path.read_text(encoding="utf-8"))
    assert [(e["id"], e.get("previous_id")) for e in after] == \
        [("dec-002", None), ("dec-003", None), ("dec-004", "dec-002"), ("dec-005", "dec-003")]
    assert after[2]["superseded_by"] == "dec-005" and after[3]["supersedes"] == ["dec-004"]
    # con-001 names dec-003, and neither dec-003 links back: which one it meant is for a person.
    assert json.loads(constraints.read_text(encoding="utf-8"))[0]["related_to"] == ["dec-003"]
    left = [f for f in report.findings if f.code == "renumbered_link"]
    assert len(left) == 1 and left[0].severity == doctor.WARNING
    assert left[0].message.startswith(
        'constraints.json: con-001.related_to names dec-003, which stays with "Bob: log retention of 30 days"; '
        'it may mean dec-005 "Alice: Memcached instead of Redis" (renumbered from dec-003) instead, and no entry '
        "links back to it")
    assert report.exit_code == doctor.EXIT_WARNINGS


def test_fix_moves_a_related_to_link_in_another_file_when_the_link_back_decides(tmp_path):
    project = _new_project(tmp_path / "rel")
    constraints = _write_store_file(project, "constraints.json", [
        {"id": "con-001", "rule": "Sessions expire after an hour", "reason": "r" * 45, "related_to": ["dec-002"]},
    ])
    _write_decisions(project, [
        _decision("dec-002", "Bob: structured JSON logging"),
        _decision("dec-002", "Alice: Redis sessions", related_to=["con-001"]),
    ])
    doctor.repair(doctor.diagnose(project))
    assert json.loads(constraints.read_text(encoding="utf-8"))[0]["related_to"] == ["dec-003"]


def test_fix_gives_an_entry_without_an_id_the_next_free_one(tmp_path):
    project = _new_project(tmp_path / "noid")
    path = project / ".context" / "constraints.json"
    rule = "Do not call the payments API from request handlers"
    items = [{"id": f"con-00{n}", "rule": f"Rule number {n} for the team", "reason": "r" * 45} for n in (1, 2, 3)]
    # Half of a split merge hunk (its "id" line stayed with the other half), then a stray object.
    items += [{"rule": rule, "reason": "r" * 45, "scope": "src/api/", "hardness": "absolute"},
              {"id": "", "reason": "nothing else here"}]
    path.write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
    report = doctor.diagnose(project)
    missing = [f for f in report.findings if f.code == "missing_id"]
    assert [f.message for f in missing] == [
        f'constraints.json item 4: the constraint whose rule is "{rule}" has no id, so every tool and hook skips '
        'it (it stays in the file as written). Add "id": "con-004" to it, or let `doctor --fix` do that']
    stray = [f.message for f in report.findings if f.code == "malformed_entry"]
    assert stray == ['constraints.json item 5: a constraint with no rule has no id, so every tool and hook skips it '
                     '(it stays in the file as written). Give it a rule and "id": "con-005" by hand, or remove the item']
    repaired = doctor.repair(report, now=datetime(2026, 12, 4, 2, 0, tzinfo=timezone.utc))
    assert any(f.message == f'constraints.json: item 4, the constraint whose rule is "{rule}", had no id and is now con-004'
               for f in repaired.findings if f.code == "fixed")
    after = json.loads(path.read_text(encoding="utf-8"))
    stamp = "2026-12-04T02:00:00+00:00"
    assert after[3] == {"id": "con-004", **items[3], "created_at": stamp, "updated_at": stamp}
    assert after[4] == items[4]  # nothing says what it is: left for a person
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    assert svc.get_context(id="con-004")["entry"]["rule"] == rule
    assert "missing_id" not in _codes(doctor.diagnose(project))


def test_bookkeeping_missing_from_an_older_gitignore_is_reported_and_appended(tmp_path):
    project = tmp_path / "carol"
    project.mkdir()
    (project / ".git").mkdir()  # a work tree: what doctor looks for
    Service(env={}).init_project(str(project))
    ignore = project / ".context" / ".gitignore"
    older = b"# mine\nhook.log\n*_state.json\n/.lock\nsessions\n!embeddings.json\nnotes-draft.md"
    ignore.write_bytes(older)
    found = [f for f in doctor.diagnose(project).findings if f.code == "gitignore"]
    assert len(found) == 1 and found[0].severity == doctor.WARNING
    missing = ".commit-token, .last-good/, *.tmp, *.broken-*, hook.log*, compaction_snapshot.json, compaction_report.json"
    assert found[0].message.startswith(f".context/.gitignore does not list {missing}: these bookkeeping files")
    doctor.repair(doctor.diagnose(project))
    after = ignore.read_bytes()
    assert after.startswith(older + b"\n")  # every line of the person's stays, byte for byte
    assert after.endswith(b"\n" + "\n".join(missing.split(", ")).encode() + b"\n")
    assert "gitignore" not in _codes(doctor.diagnose(project))


def test_gitignore_is_not_checked_outside_a_git_work_tree(tmp_path):
    project = _new_project(tmp_path / "plain")
    (project / ".context" / ".gitignore").write_text("hook.log\n", encoding="utf-8")
    assert "gitignore" not in _codes(doctor.diagnose(project))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_after_the_fix_git_sees_no_bookkeeping_file(tmp_path):
    project = tmp_path / "repo"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    svc.init_project(str(project))
    (project / ".context" / ".gitignore").write_text("hook.log\n*_state.json\n.lock\n", encoding="utf-8")
    svc.record("constraint", {"rule": "Never log card numbers", "reason": "r" * 45})
    (project / ".context" / "sessions").mkdir()
    (project / ".context" / "sessions" / "c1.seen").write_text("con-001\n", encoding="utf-8")

    def untracked() -> set[str]:
        out = subprocess.run(["git", "-C", str(project), "status", "--porcelain", "-uall"], check=True,
                             capture_output=True, text=True).stdout
        return {line[3:] for line in out.splitlines()}

    assert {".context/.commit-token", ".context/sessions/c1.seen"} <= untracked()
    doctor.repair(doctor.diagnose(project))
    assert untracked() == {f".context/{n}" for n in (".gitignore", "config.json", "constraints.json",
                                                      "decisions.json", "pipelines.json")}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_bookkeeping_the_projects_own_gitignore_covers_is_not_reported(tmp_path):
    project = tmp_path / "repo"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    Service(env={}).init_project(str(project))
    (project / ".context" / ".gitignore").write_text("hook.log\n", encoding="utf-8")
    (project / ".gitignore").write_text(".context/*\n!.context/*.json\n.context/*_state.json\n"
                                        ".context/embeddings.json\n.context/compaction_*.json\n", encoding="utf-8")
    assert "gitignore" not in _codes(doctor.diagnose(project))


def _scoped_project(tmp_path: Path, *scopes: str) -> Path:
    project = tmp_path / "scoped"
    (project / ".context").mkdir(parents=True)
    rules = [{"id": f"con-{n:03d}", "rule": f"Rule {n}", "reason": "r", "scope": scope, "hardness": "advisory",
              "status": "active"} for n, scope in enumerate(scopes, 1)]
    (project / ".context" / "constraints.json").write_text(json.dumps(rules), encoding="utf-8")
    return project


def test_a_scope_naming_a_directory_the_scan_skips_still_matches(tmp_path):
    project = _scoped_project(tmp_path, "node_modules/", "vendor/lib.py", "gone/")
    (project / "node_modules").mkdir()
    (project / "vendor").mkdir()
    (project / "vendor" / "lib.py").write_text("", encoding="utf-8")
    unmatched = [f.message for f in doctor.diagnose(project).findings if f.code == "unmatched_scope"]
    assert len(unmatched) == 1 and unmatched[0].startswith("con-003")


def test_a_scan_cut_short_does_not_call_a_scope_unmatched(tmp_path, monkeypatch):
    project = _scoped_project(tmp_path, "zzz/*.py")
    for n in range(5):
        (project / f"aaa{n}.txt").write_text("", encoding="utf-8")
    (project / "zzz").mkdir()
    (project / "zzz" / "settings.py").write_text("", encoding="utf-8")
    monkeypatch.setattr(doctor, "MAX_SCAN_PATHS", 3)
    found = [f for f in doctor.diagnose(project).findings if f.code == "unmatched_scope"]
    assert [f.severity for f in found] == ["info"] and "not checked" in found[0].message


@pytest.mark.parametrize("api", ["OpenAI", "Ollama", "OLLAMA"])
def test_an_api_in_another_case_is_no_config_finding(project, api):
    # embeddings reads the api in any case, so doctor must not call "OpenAI" wrong.
    (project / ".context" / "config.json").write_text(json.dumps({"semantic": {"api": api}}), encoding="utf-8")
    assert [f for f in doctor.diagnose(project).findings if f.code == "config"] == []


def test_fix_restores_a_linked_store_file_through_the_link(tmp_path):
    project = _copy(tmp_path, "corrupt")
    live, good = _written_then_broken(project, _drop_colon)
    shared = project / "shared" / "decisions.json"
    shared.parent.mkdir()
    live.rename(shared)
    live.symlink_to(shared)
    assert doctor.repair(doctor.diagnose(project)).exit_code == 0
    assert live.is_symlink() and shared.read_bytes() == good
