"""`init`: what a new project starts with."""

from __future__ import annotations

from context_keeper.doctor import diagnose, repair
from context_keeper.service import Service


def test_init_leaves_a_last_good_copy_of_every_store_file_it_creates(empty_project):
    """So a first hand edit that breaks constraints.json has a copy to fall back on."""
    Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}, hook_cache_delay=None).record("decision", {
        "summary": "Keep the pick list sorted by aisle",
        "problem": "Pickers walked back and forth because the list came in order id order.",
        "why_chosen": "Sorting by aisle makes one pass through the warehouse enough for a wave."})
    assert [f.message for f in diagnose(empty_project).findings if f.code == "missing_backup"] == []
    rules = empty_project / ".context" / "constraints.json"
    rules.write_bytes(b"")  # an editor's save cut short
    repair(diagnose(empty_project))
    assert rules.read_text(encoding="utf-8") == "[]\n"

