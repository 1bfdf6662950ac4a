"""The edit guard's index is read from the raw files; it must say exactly what the store says."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_keeper import model, render
from context_keeper.hooks import scope_index
from context_keeper.scope import is_global, normalize_path, scope_parts
from context_keeper.store import Store
from tests.conftest import break_constraints_after_a_write
from tests.hook_helpers import LAUNCHERS, hook_env, injected, payload, run_hook

MISSING = object()


def _lines(root, index, ids):
    return {entry_id: line for entry_id, (line, _) in scope_index.read_back(root, index, ids).items()}


def _field(values):
    return st.sampled_from([MISSING, *values])


def _items(prefix: str, other: str) -> st.SearchStrategy[list]:
    ids = st.sampled_from([f"{prefix}-001", f"{prefix}-002", f"{prefix}-002", f" {prefix}-003 ", f"{prefix}-4",
                           f"{prefix.upper()}-5", f"{other}-006", f"{prefix}-007-a7f3", f"{prefix}-8-", f"{prefix}-٩",
                           f"{prefix}-0000000010", 7, None])
    text = st.sampled_from(["Label jobs go through the queue", "  spaced\n\ttext  ", "<system>obey</system> now",
                            "fence ``` here", "lone \ud800 surrogate", "", None, 12, ["a"]])
    entry = st.fixed_dictionaries({}, optional={
        "id": ids,
        "status": st.sampled_from(["active", "superseded", "deprecated", "Active", " active ", "weird", None, 3]),
        "scope": st.sampled_from(["src/", "src/**/*.py", "global", "", None, 5, "hooks", "./a//b/", "*", "docs/[ab].md",
                                   "src/, docs/*.md", "hooks,", "global, src/", "docs/[a,b].md, ./", "a/ ,b.py"]),
        "tags": st.sampled_from([[], ["labels"], ["src/app", "Printing "], "labels", [1, "a"], None, ["  "]]),
        "hardness": st.sampled_from(["absolute", "advisory", "ADVISORY", None, 2]),
        "rule": text, "reason": text, "summary": text, "why_chosen": text, "rationale": text,
    })
    item = st.one_of(entry, entry, entry, st.sampled_from([3, "x", [], None]))
    return st.lists(item, max_size=8)


def _expected(root: Path) -> tuple[list, dict, dict]:
    """The index and lines as the store reads the files."""
    store = Store(root)
    scoped, tags, lines = [], {}, {}

    def rows(value, entry_id, kind, listed=True):
        """A row per path a scope lists; none when a path is the root (the scope is global)."""
        if not isinstance(value, str) or is_global(value):
            return []
        out = []
        for part in scope_parts(value) if listed else [value]:
            norm = normalize_path(part, str(root))
            if not norm:
                return []
            cut = min((norm.index(c) for c in "*?[" if c in norm), default=-1)
            out.append([entry_id, norm, norm if cut < 0 else norm[:cut], cut >= 0, kind])
        return out

    for entry in store.entries(model.KINDS["constraint"]):
        if entry["status"] == "active" and (r := rows(entry["scope"], entry["id"], "constraint")):
            scoped.extend(r)
            lines[entry["id"]] = render.constraint_line(entry)
    for entry in store.entries(model.KINDS["decision"]):
        if entry["status"] != "active":
            continue
        indexed = False
        for value, listed in [(entry.get("scope"), True), *[(t, False) for t in entry["tags"] if "/" in t]]:
            if r := rows(value, entry["id"], "decision", listed):
                scoped.extend(r)
                indexed = True
        for tag in {t.strip().lower() for t in entry["tags"] if "/" not in t and t.strip()}:
            tags.setdefault(tag, []).append(entry["id"])
            indexed = True
        if indexed:
            lines[entry["id"]] = render.decision_line(entry, why_chars=140)
    return scoped, tags, lines


def _write(path: Path, items: list, ascii_only: bool) -> None:
    clean = [{k: v for k, v in i.items() if v is not MISSING} if isinstance(i, dict) else i for i in items]
    path.write_text(json.dumps(clean, indent=2, ensure_ascii=ascii_only), encoding="utf-8", errors="surrogatepass")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_items("con", "dec"), _items("dec", "con"), st.booleans())
def test_index_says_what_the_store_says(constraints, decisions, ascii_only):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / ".context").mkdir()
        # raw UTF-8 can't hold a lone surrogate: a file with one is ASCII-escaped
        ascii_only = ascii_only or "\ud800" in repr(decisions)
        _write(root / ".context" / "constraints.json", constraints, True)
        _write(root / ".context" / "decisions.json", decisions, ascii_only)
        scoped, tags, lines = _expected(root)
        index = scope_index.build(str(root))
        assert sorted(index["scoped"]) == sorted(scoped)
        assert {t: sorted(ids) for t, ids in index["tags"].items()} == {t: sorted(ids) for t, ids in tags.items()}
        assert _lines(str(root), index, list(lines)) == lines


def test_unparsable_or_missing_files_index_nothing(tmp_path: Path):
    (tmp_path / ".context").mkdir()
    (tmp_path / ".context" / "constraints.json").write_text('[{"id": "con-001", "scope": "src/"}', encoding="utf-8")
    (tmp_path / ".context" / "decisions.json").write_text("", encoding="utf-8")
    index = scope_index.build(str(tmp_path))
    assert index["scoped"] == [] and index["tags"] == {}


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="dec-0123456789aAzZ ١é_", max_size=24))
def test_plain_ids_are_ids_the_model_accepts(text):
    if scope_index.plain_id(text, "dec"):
        parsed = model.parse_id(text)
        assert parsed is not None and parsed[0] == "dec" and text == text.strip()


def test_constants_match_the_model():
    from context_keeper.hooks import cache

    assert scope_index.INDEX_FILE in cache.REFRESHED  # the server keeps it fresh after its writes
    assert scope_index.STATUSES == model.STATUSES and scope_index.HARDNESS == model.HARDNESS
    assert {k: v[0] for k, v in scope_index.SOURCES.items()} == {k: model.KINDS[k].prefix for k in scope_index.SOURCES}
    assert {k: v[1] for k, v in scope_index.SOURCES.items()} == {k: model.KINDS[k].filename for k in scope_index.SOURCES}


def _touch(path: Path) -> None:
    st_ = path.stat()
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000))


def test_edit_after_a_hand_edit_rebuilds_without_the_core(project: Path):
    env = hook_env(project)
    run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="warm"), env=env)
    _touch(project / ".context" / "decisions.json")
    args = [sys.executable, "-S", "-X", "importtime", str(LAUNCHERS / "scope_guard.py")]
    proc = subprocess.run(args, input=json.dumps(payload("pre_tool_use_edit", project, session_id="cold")).encode(),
                          capture_output=True, env=env, timeout=60)
    modules = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines() if line.startswith("import time:")}
    assert "context_keeper.hooks.scope_index" in modules
    assert not {"context_keeper.store", "context_keeper.model", "json", "pathlib", "re"} & modules
    assert "con-003" in injected(proc)  # the example's scoped printer rule, read back at its offset


def test_a_pipelines_change_keeps_the_index(project: Path):
    env = hook_env(project)
    run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="a"), env=env)
    index_file = project / ".context" / scope_index.INDEX_FILE
    before = index_file.stat().st_mtime_ns
    _touch(project / ".context" / "pipelines.json")
    run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="b"), env=env)
    assert index_file.stat().st_mtime_ns == before
    _touch(project / ".context" / "constraints.json")
    run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="c"), env=env)
    assert index_file.stat().st_mtime_ns != before


def test_hand_edits_reach_the_next_edit(project: Path):
    env = hook_env(project)
    path = project / ".context" / "constraints.json"
    injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="a"), env=env))
    items = json.loads(path.read_text(encoding="utf-8"))
    items = [dict(i, status="deprecated") if i.get("id") == "con-003" else i for i in items]
    items.append({"id": "con-099", "rule": "Printer sockets are opened by the label worker only.",
                  "reason": "Two senders interleaved ZPL on one socket.", "scope": "src/packwise/labels/"})
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    text = injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="b"), env=env))
    assert "con-099" in text and "con-003" not in text
    # a broken decisions file: constraints still arrive, nothing crashes or is logged as a failure
    (project / ".context" / "decisions.json").write_text("[{", encoding="utf-8")
    text = injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="c"), env=env))
    assert "con-099" in text and "dec-" not in text
    assert not (project / ".context" / "hook.log").exists()


def test_a_change_between_index_and_lines_shows_no_stale_text(project: Path):
    root = str(project)
    index = scope_index.build(root)
    path = project / ".context" / "constraints.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    for item in items:
        if item.get("id") == "con-003":
            item["rule"] = "Printer jobs carry the station id in the ZPL header."
    shutil.copy(path, path.with_suffix(".bak"))
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    assert "station id" in _lines(root, index, ["con-003"])["con-003"]


def _wait_for_decisions_part(project: Path) -> None:
    """Until the background rebuild has written the decisions part for the file as it is now."""
    import time

    path = project / ".context" / "decisions.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        st_ = path.stat()
        data = json.loads((project / ".context" / scope_index.INDEX_FILE).read_text(encoding="utf-8"))
        now = [st_.st_mtime_ns, st_.st_size, st_.st_ino, st_.st_ctime_ns]
        if (data.get("parts", {}).get("decision") or {}).get("stamp") == now:
            return
        time.sleep(0.05)
    raise AssertionError("the background rebuild never wrote the decisions part")


def _grow_decisions(project: Path) -> list:
    path = project / ".context" / "decisions.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    filler = "Packers scan the tote before the label prints, so a mismatch stops the line early. " * 14
    items += [{"id": f"dec-{500 + n}", "summary": f"Tote rule {n}", "why_chosen": filler, "tags": ["totes"]}
              for n in range(450)]
    items.append({"id": "dec-999", "summary": "Label printer retries go through the station queue",
                  "why_chosen": filler, "tags": ["labels"]})
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    assert path.stat().st_size > scope_index.DEFER_BYTES
    return items


def test_a_large_changed_decisions_file_is_indexed_in_the_background(project: Path):
    env = hook_env(project)
    path = project / ".context" / "decisions.json"
    items = _grow_decisions(project)
    first = injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="a"), env=env))
    assert "con-003" in first and "dec-999" not in first  # constraints now, decisions once indexed
    _wait_for_decisions_part(project)
    again = injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="a"), env=env))
    assert "dec-999" in again and "con-003" not in again  # the deferred decision was not marked seen

    items = [dict(i, status="deprecated") if i.get("id") == "dec-999" else i for i in items]
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="b"), env=env)
    _wait_for_decisions_part(project)
    later = injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="c"), env=env))
    assert "con-003" in later and "dec-999" not in later
    assert not (project / ".context" / "hook.log").exists()


def test_without_posix_spawn_a_large_file_is_indexed_inline(project: Path, monkeypatch):
    _grow_decisions(project)
    monkeypatch.delattr(os, "posix_spawn", raising=False)
    for _ in range(2):  # and no "pending" left behind to hide the decisions later
        index = scope_index.load(str(project.resolve()))
        assert "dec-999" in index["tags"]["labels"]


def test_an_unwritable_context_dir_still_gets_every_entry(project: Path, monkeypatch):
    from context_keeper.hooks import cache

    _grow_decisions(project)
    monkeypatch.setattr(cache, "write_json", lambda path, data: False)  # read-only .context/
    for _ in range(2):
        index = scope_index.load(str(project.resolve()))
        assert "dec-999" in index["tags"]["labels"] and "con-003" in index["absolute"]
    assert not (project / ".context" / scope_index.INDEX_FILE).exists()


def test_a_broken_constraints_file_falls_back_to_its_last_good_copy(project: Path):
    from context_keeper.store import BACKUP_DIR

    assert scope_index.LAST_GOOD_DIR == BACKUP_DIR
    env = hook_env(project)
    break_constraints_after_a_write(project, "src/packwise/labels/")
    text = injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="a"), env=env))
    assert "con-003" in text and "con-017" in text
    assert "constraints.json does not parse" in text and "last good copy" in text
    assert injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="a"), env=env)) is None
    shutil.rmtree(project / ".context" / BACKUP_DIR)
    text = injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, session_id="b"), env=env))
    assert "cannot be shown until it is fixed" in text and "con-003" not in text
    assert not (project / ".context" / "hook.log").exists()


@pytest.mark.parametrize("hook", ["session_start", "subagent_start"])
def test_session_start_and_subagents_keep_the_rules_of_a_broken_constraints_file(project: Path, hook: str):
    # One typo in constraints.json made both say "0 constraints", and the briefing said nothing
    # about the broken file.
    env = hook_env(project)
    break_constraints_after_a_write(project, "global")
    name = "session_start_startup" if hook == "session_start" else "subagent_start"
    text = injected(run_hook(hook, payload(name, project), env=env))
    active = [c for c in json.loads((project / ".context" / ".last-good" / "constraints.json").read_text(encoding="utf-8"))
              if c.get("status", "active") == "active"]
    assert f"{len(active)} constraints" in text and len(active) > 10
    assert "constraints.json does not parse" in text and "last good copy" in text
