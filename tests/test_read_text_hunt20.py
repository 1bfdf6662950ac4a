"""Round-20 hunt of what people read: text cut mid-word, inline Markdown in DECISIONS.md, "1
pipelines", the key order of new entries, and a decision shown where no absolute rule was."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from context_keeper import render
from context_keeper.service import Service

REPO = Path(__file__).resolve().parent.parent
DECISION = {"summary": "Use Postgres for storage", "tags": ["db"],
            "problem": "We needed a relational database for the orders service storage layer.",
            "why_chosen": "Postgres is what the team already runs in production and it has the features we need."}


def _service(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)


# ------------------------------------------------------------------ 1. cuts at a word boundary

SENTENCE = ("The runner stores a checksum per applied file and refuses to start when one changes; "
            "coverage must stay at or above 99.5 percent on the payments module.")


@pytest.mark.parametrize("limit", range(20, len(SENTENCE)))
def test_a_clipped_text_ends_on_a_whole_word_within_its_limit(limit):
    clipped = render.clip(SENTENCE, limit)
    assert len(clipped) <= limit and clipped.endswith("…")
    kept = clipped[:-1].split()
    assert kept == SENTENCE.split()[: len(kept)] or kept[-1].rstrip(",;:") == SENTENCE.split()[len(kept) - 1].rstrip(",;:")
    assert "99." not in clipped or "99.5" in clipped


def test_a_single_word_longer_than_the_limit_is_still_cut_to_it():
    # A path gives way after a slash (round 21), still within the limit and not dropped whole.
    clipped = render.clip("src/packwise/carriers/client/adapters/" * 4, 40)
    assert 20 <= len(clipped) <= 40 and clipped.endswith("/…")
    clipped = render.clip("x" * 100, 40)
    assert len(clipped) == 40 and clipped.endswith("…")


def _words(value) -> set[str]:
    if isinstance(value, str):
        return {w.rstrip(",;:.") for w in value.split()}
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return set().union(*map(_words, items)) if items else set()


def test_the_session_start_summary_cuts_no_word_in_two(project: Path, service):
    words = set().union(*(_words(json.loads((project / ".context" / f"{name}.json").read_text(encoding="utf-8")))
                          for name in ("decisions", "constraints", "pipelines")))
    cut = [w.rstrip(",;:.") for w in re.findall(r"(\S+)…", service.get_project_summary()["summary"])]
    assert cut, "the demo's long reasons are cut in the summary"
    assert [w for w in cut if w not in words] == []


def test_cli_get_cuts_a_long_detail_at_a_word_with_an_ellipsis():
    from context_keeper.cli import _format_hit

    why = " ".join(["the leader election must finish before they leave"] * 10)
    lines = _format_hit({"type": "decision", "entry": {"id": "dec-001", "summary": "Elect a leader", "why_chosen": why}})
    detail = lines.splitlines()[1]
    assert detail.endswith("…") and len(detail.strip()) <= 300
    assert detail.strip()[:-1].split()[-1] in why.split()


# ------------------------------------------------------------------ 2. DECISIONS.md inline text

def _markdown(**fields) -> str:
    return render.decisions_markdown("packwise", [{"id": "dec-001", **DECISION, **fields}])


def test_angle_brackets_stars_and_underscores_in_text_are_escaped_in_decisions_md():
    text = _markdown(summary="Quarantine pending_scans.corrupt-<timestamp>.json files",
                     why_chosen="Keep __init__ small and *never* import [x](y) from it, or ~5 ms and ~8 ms cold starts.",
                     tags=["__init__"])
    assert "### dec-001: Quarantine pending_scans.corrupt-\\<timestamp>.json files" in text
    assert "**Why:** Keep \\_\\_init\\_\\_ small and \\*never\\* import \\[x](y) from it, or \\~5 ms and \\~8 ms" in text
    assert "tags: \\_\\_init\\_\\_" in text


def test_code_spans_the_author_wrote_are_left_as_written():
    text = _markdown(why_chosen="Keep `__init__` and `<timestamp>` readable, and ``a `tick` b`` too; a lone ` stays literal.")
    assert "**Why:** Keep `__init__` and `<timestamp>` readable, and ``a `tick` b`` too; a lone \\` stays literal." in text


def test_an_alternative_option_with_stars_keeps_its_emphasis_and_an_empty_one_is_skipped():
    text = _markdown(alternatives=[{"option": "keep *star* queue", "reason_rejected": "it loses jobs"},
                                   {"option": "", "reason_rejected": ""},
                                   {"option": "  ", "reason_rejected": "nobody remembers what this was"}])
    assert "- Rejected *keep \\*star\\* queue*: it loses jobs" in text
    assert "**" not in text.replace("**Problem:**", "").replace("**Why:**", "")
    assert "- Rejected: nobody remembers what this was" in text


def test_a_superseded_decision_names_its_successor_once(empty_project: Path):
    svc = _service(empty_project)
    old = svc.record("decision", DECISION)["id"]
    new = svc.record("decision", {**DECISION, "summary": "Use Postgres 16 for storage"})["id"]
    svc.deprecate_entry(old, superseded_by=new)
    svc.export_markdown()
    text = (empty_project / "DECISIONS.md").read_text(encoding="utf-8")
    section = text.split(f"### {old}:", 1)[1].split("###", 1)[0]
    assert section.count(f"superseded by {new}") == 1, section


def test_a_superseded_decision_keeps_a_reason_that_says_more(empty_project: Path):
    svc = _service(empty_project)
    old = svc.record("decision", DECISION)["id"]
    new = svc.record("decision", {**DECISION, "summary": "Use Postgres 16 for storage"})["id"]
    svc.deprecate_entry(old, "version 16 has the logical replication we need", superseded_by=new)
    svc.export_markdown()
    text = (empty_project / "DECISIONS.md").read_text(encoding="utf-8")
    assert "**Why superseded:** version 16 has the logical replication we need" in text


# ------------------------------------------------------------------ 3. counts in the singular

def test_the_budget_note_says_one_entry_in_the_singular(tmp_path: Path):
    root = tmp_path / "harbor"
    shutil.copytree(REPO / "evals" / "stores" / "harbor", root)
    summary = _service(root).get_project_summary()["summary"]
    assert "not shown" in summary
    assert not re.search(r"\b1 (pipelines|decisions|constraints)\b", summary), summary.splitlines()[-1]


def test_a_listing_too_big_for_its_budget_names_one_matching_entry_in_the_singular(service):
    from context_keeper.errors import InvalidInput

    with pytest.raises(InvalidInput) as refused:
        service.query_entries(types=["decision"], limit=1, token_budget=20)
    assert "1 matching entries" not in str(refused.value) and "its one matching entry about" in str(refused.value)


# ------------------------------------------------------------------ 4. key order of new entries

TAIL = ["origin", "schema_version", "status", "created_at", "updated_at", "verified_at", "verified_sha"]


@pytest.mark.parametrize("kind, values, tail", [
    ("decision", DECISION, TAIL[:3] + ["superseded_by"] + TAIL[3:]),
    ("pipeline", {"name": "Release a wave", "purpose": "Releases a picking wave once the buffer has room for it.",
                  "steps": ["check the buffer", "release"]}, TAIL),
    ("constraint", {"rule": "Never retry a label purchase", "reason": "A retried purchase buys a second label at the carrier."},
     TAIL),
])
def test_a_new_entry_is_written_in_the_documented_field_order(empty_project: Path, kind, values, tail):
    _service(empty_project).record(kind, values)
    stored = json.loads((empty_project / ".context" / f"{kind}s.json").read_text(encoding="utf-8"))
    keys = list(stored[0] if isinstance(stored, list) else next(iter(stored.values()))[0])
    assert keys[-len(tail):] == tail, keys


# ------------------------------------------------------------------ 5. absolute rules first

@pytest.mark.parametrize("budget", [120, 150, 200])
def test_at_a_tiny_budget_an_absolute_rule_comes_before_any_decision(service, budget):
    summary = service.get_project_summary(budget)["summary"]
    assert "- con-001 (absolute)" in summary, summary
    if "Decisions:" in summary:
        assert summary.index("Constraints (absolute):") < summary.index("Decisions:")


def test_no_budget_shows_a_decision_without_an_absolute_rule_before_it():
    from context_keeper.summary import build_summary

    rule = {"id": "con-001", "rule": "Never retry a label purchase without the carrier's idempotency reference "
            "attached, whatever the client library defaults to", "reason": "A retry is a second purchase."}
    # Two decisions share a short tag: "[db]" costs less than the constraints' heading.
    decisions = [{"id": f"dec-00{i}", "summary": "Ship by DHL", "tags": ["db"]} for i in (1, 2)]
    for budget in range(30, 200):
        for envelope in range(40):
            summary = build_summary("p", decisions, [], [rule], token_budget=budget, envelope=envelope)["summary"]
            assert "Decisions:" not in summary or summary.index("con-001") < summary.index("Decisions:"), (budget, envelope)
