"""DECISIONS.md and CLI rendering defects found in round 17's hunt, each test failing before its fix."""

from __future__ import annotations

import re
from pathlib import Path

from context_keeper.service import Service

DECISION = dict(summary="Use Postgres for storage", tags=["db"],
                problem="We needed a relational database for the orders service storage layer.",
                why_chosen="Postgres is what the team already runs in production and it has the features we need.")

# Container markers (list items, block quotes) a line can open with before a block starts.
_CONTAINERS = re.compile(r"(?:[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+|[ \t]*>[ \t]?)*[ \t]*")


def _service(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)


def _block_starts(markdown: str) -> list[str]:
    """Each line's text after its list and quote markers: where CommonMark looks for a heading,
    an HTML block, a fence or a setext underline."""
    return [line[_CONTAINERS.match(line).end():] for line in markdown.splitlines()]


# ------------------------------------------------------------------ body text cannot make blocks

FORGERIES = {
    "problem": "We needed a database.\n\n### dec-999: Store everything in MongoDB\n\n**Why:** forged\n\n## Context",
    "why_chosen": "It is fast.\n<!-- the rest of the file is hidden\n\n- ### dec-998: a heading in a list\n> # quoted",
    "what_we_tried": "MySQL first.\n```\nand nothing after this fence shows\n~~~",
    "tradeoffs": "Costs more\n===\nSetext above, and\n  ---\n<script>",
}


def test_line_breaks_in_decision_bodies_cannot_make_headings_comments_or_fences(empty_project: Path):
    svc = _service(empty_project)
    svc.record("decision", {**DECISION, **FORGERIES})
    svc.record("decision", {**DECISION, "summary": "Queue jobs in Redis"})
    svc.export_markdown()
    text = (empty_project / "DECISIONS.md").read_text(encoding="utf-8")
    starts = _block_starts(text)
    headings = [line for line in starts if re.match(r" {0,3}#{1,6}(\s|$)", line)]
    assert headings == [f"# Decisions — {empty_project.name}", "## Active (2)",
                        "### dec-001: Use Postgres for storage", "### dec-002: Queue jobs in Redis"]
    assert not [line for line in starts if line.startswith(("<", "```", "~~~"))]
    assert not [line for line in text.splitlines() if re.fullmatch(r"[ >]*(=+|-+)[ \t]*", line)]
    # The words are all still there, and dec-002 follows dec-001 outside any block
    for phrase in ("Store everything in MongoDB", "the rest of the file is hidden", "nothing after this fence"):
        assert phrase in text
    assert text.index("### dec-002") > text.index("<script>")


def test_ordinary_paragraphs_and_lists_in_a_body_render_as_written(empty_project: Path):
    why = "Three reasons:\n\n- the team runs it\n- it has JSONB\n1. and it is cheap\n\nA closing paragraph."
    svc = _service(empty_project)
    svc.record("decision", {**DECISION, "why_chosen": why})
    svc.export_markdown()
    assert f"**Why:** {why}\n" in (empty_project / "DECISIONS.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------ retired entries

def test_export_names_the_current_successor_and_why_an_entry_was_retired(empty_project: Path):
    svc = _service(empty_project)
    a, b, c, x = (svc.record("decision", {**DECISION, "summary": s})["id"] for s in (
        "Use Postgres for storage", "Use MySQL for storage everywhere", "Use SQLite for storage locally",
        "Analytics events go to Kafka"))
    svc.deprecate_entry(a, merge_into=b)
    svc.deprecate_entry(b, merge_into=c)
    svc.deprecate_entry(x, "analytics moved to the warehouse team")
    assert svc.get_context(id=a)["replaced_by"]["id"] == c
    svc.export_markdown()
    text = (empty_project / "DECISIONS.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^### (dec-\d+):.*?\n(.*?)(?=^#|\Z)", text, re.M | re.S))
    assert f"superseded by {c} (via {b})" in sections[a] and f"superseded by {b}" not in sections[a]
    assert f"superseded by {c}" in sections[b]
    assert "**Why deprecated:** analytics moved to the warehouse team" in sections[x]
    assert f"**Why deprecated:** merged into {b}" in sections[a]
