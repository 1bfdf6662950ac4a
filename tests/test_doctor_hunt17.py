"""Doctor and hand-edit defects found in round 17's hunt, each test failing before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper.doctor import diagnose
from context_keeper.service import Service

REASON = "A test run charged real cards once, and the refunds took the support team a week."
P, W = "P" * 45, "W" * 65


@pytest.fixture
def root(tmp_path: Path) -> Path:
    Service(env={}).init_project(str(tmp_path))
    return tmp_path


def _write(root: Path, name: str, entries: list) -> None:
    (root / ".context" / name).write_text(json.dumps(entries, indent=2), encoding="utf-8")


def _findings(root: Path, code: str) -> list[str]:
    return [f.message for f in diagnose(root).findings if f.code == code]


def test_doctor_names_a_missing_title_and_the_key_that_was_probably_meant(root):
    _write(root, "constraints.json", [
        {"id": "con-001", "rule": "Tests never call the live payments API", "reason": REASON, "scope": "global"},
        {"id": "con-002", "rules": "Never call the payments API from tests", "reason": REASON, "scope": "global"}])
    _write(root, "decisions.json", [{"id": "dec-001", "summary": "  ", "problem": P, "why_chosen": W}])
    said = _findings(root, "missing_title")
    assert len(said) == 2
    assert any('con-002 has no rule (it has "rules": rename that key to "rule")' in m for m in said)
    assert any(m.startswith("dec-001 has no summary, so") for m in said)


def test_doctor_names_a_superseded_entry_without_a_successor_and_a_successor_that_is_no_id(root):
    _write(root, "decisions.json", [
        {"id": "dec-001", "summary": "Docs on Netlify", "problem": P, "why_chosen": W, "status": "superseded",
         "superseded_by": ["dec-002"]},
        {"id": "dec-002", "summary": "Docs on GitHub Pages", "problem": P, "why_chosen": W},
        {"id": "dec-003", "summary": "Docs built with Sphinx", "problem": P, "why_chosen": W, "status": "superseded"}])
    history = _findings(root, "history_link")
    assert any(m.startswith("dec-003 is superseded but names no successor") for m in history)
    malformed = _findings(root, "malformed_entry")
    assert any("dec-001: superseded_by ['dec-002'] should be one id as text" in m for m in malformed)


def test_nan_in_a_key_another_tool_added_is_named_by_key_in_the_refusal_and_by_doctor(root):
    from context_keeper.errors import StoreError

    (root / ".context" / "decisions.json").write_text(json.dumps(
        [{"id": "dec-001", "summary": "Score leads nightly", "problem": P, "why_chosen": W, "confidence": float("nan")}],
        indent=2), encoding="utf-8")  # what json.dump writes by default
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)
    with pytest.raises(StoreError, match="dec-001 holds NaN in confidence, which would be written back as NaN, and that is not JSON"):
        service.update_entry("dec-001", {"tags": ["scoring"]})
    assert any("dec-001 holds NaN in confidence: Python reads it, but jq" in m for m in _findings(root, "not_json_number"))


def test_doctor_fix_keeps_a_duplicate_that_differs_only_in_true_against_one(root):
    from context_keeper.doctor import repair

    base = {"id": "dec-002", "summary": "Pin the scanner firmware", "problem": P, "why_chosen": W}
    _write(root, "decisions.json", [
        {"id": "dec-001", "summary": "Scan in batches", "problem": P, "why_chosen": W},
        {**base, "pinned": True}, {**base, "pinned": 1.0}])
    assert not any("repeats the first one exactly" in (f.fix or "") for f in diagnose(root).findings)
    repair(diagnose(root))
    kept = json.loads((root / ".context" / "decisions.json").read_text(encoding="utf-8"))
    assert sorted(json.dumps(e.get("pinned")) for e in kept if e["summary"] == base["summary"]) == ["1.0", "true"]


def test_an_item_with_a_problem_in_a_crlf_file_gets_the_files_one_line_end_style_on_a_write(root):
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)
    for n in (1, 2):
        service.record("decision", {"summary": f"Decision number {n}", "problem": P, "why_chosen": W})
    path = root / ".context" / "decisions.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    entries[0]["tags"] = "storage, db"  # a problem doctor reports: tags should be a list
    path.write_bytes(json.dumps(entries, indent=2).replace("\n", "\r\n").encode("utf-8"))
    service.record("decision", {"summary": "Decision number 3", "problem": P, "why_chosen": W})
    data = path.read_bytes()
    # The file's own style, CRLF, for every line: the item with a problem and the new one too.
    assert data.count(b"\n") == data.count(b"\r\n") and json.loads(data)[0]["tags"] == "storage, db"


def test_doctor_says_where_an_item_without_an_id_is_and_in_json_words(root):
    items = [{"id": f"dec-{n:03d}", "summary": f"Decision {n}", "problem": P, "why_chosen": W} for n in range(1, 5)]
    _write(root, "decisions.json", items[:2] + [None, "TODO: add the kafka decision"] + items[2:])
    (root / ".context" / "pipelines.json").write_text("null", encoding="utf-8")
    messages = "\n".join(f.message for f in diagnose(root).findings)
    lines = (root / ".context" / "decisions.json").read_text(encoding="utf-8").splitlines()
    null_line = lines.index("  null,") + 1
    assert f"item 3: item is null, not an object (line {null_line})" in messages
    assert f"item 4: item is text, not an object (line {null_line + 1})" in messages
    assert "found null" in messages and "NoneType" not in messages


def test_an_invalid_utf8_byte_is_placed_by_its_character_column(root):
    path = root / ".context" / "decisions.json"
    path.write_bytes('[{"id": "dec-001", "summary": "Größe café '.encode("utf-8") + b"\xef" + b'"}]')
    (message,) = [f.message for f in diagnose(root).findings if f.code == "corrupt_file"]
    assert "not valid UTF-8 at line 1, column 43" in message


def test_a_rule_for_a_directory_not_created_yet_is_a_note_not_a_warning(root):
    (root / "src").mkdir()
    _write(root, "constraints.json", [{"id": "con-001", "rule": "Webhook handlers must be idempotent",
                                       "reason": REASON, "scope": "src/webhooks/", "hardness": "absolute"}])
    (finding,) = [f for f in diagnose(root).findings if f.code == "unmatched_scope"]
    assert finding.severity == "info" and "applies it to files created there" in finding.message
    assert diagnose(root).exit_code == 0


def test_successor_chains_are_walked_once_each_not_once_per_entry():
    from context_keeper.doctor import _successor_loops

    reads = []

    class Entry(dict):
        def get(self, key, default=None):
            reads.append(key)
            return super().get(key, default)

    n = 2000  # a chain of 2,000 replacements took 16 s: every entry walked the rest of it
    entries = {f"dec-{i:04d}": Entry(superseded_by=f"dec-{i + 1:04d}" if i < n else None) for i in range(1, n + 1)}
    entries[f"dec-{n:04d}"]["superseded_by"] = f"dec-{n - 2:04d}"  # a loop at the far end
    (finding,) = _successor_loops(entries, "decisions.json")
    assert finding.message.startswith(f"dec-{n - 2:04d} → dec-{n - 1:04d} → dec-{n:04d} → dec-{n - 2:04d}")
    assert len(reads) <= 2 * n


def test_doctor_names_a_context_that_is_a_file_instead_of_asking_for_init(tmp_path):
    from context_keeper.errors import NoProject

    (tmp_path / ".context").write_text("x", encoding="utf-8")
    with pytest.raises(NoProject, match=r"\.context is a file, not a directory: move it aside"):
        diagnose(tmp_path)
