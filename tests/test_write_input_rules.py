"""What a write tool refuses, and how it says so: each refusal names the parameter or field the
caller sent and leaves every store file byte-identical."""

from __future__ import annotations

import json

import pytest

from context_keeper.errors import InvalidInput
from tests.conftest import read_json, snapshot_files

DECISION = {
    "summary": "Quote carrier rates in the shipper's currency",
    "problem": "Shippers outside the euro zone compared our quotes by hand and kept asking support to convert them.",
    "why_chosen": "Converting at quote time with the day's rate removes the manual step, and the rate is stored with the quote.",
}


@pytest.mark.parametrize("supersedes", [["postgres decision"], ["dec-001", 7], "dec-001"])
def test_a_bad_supersedes_value_is_refused_naming_supersedes(service, project, supersedes):
    before = snapshot_files(project)
    with pytest.raises(InvalidInput) as caught:
        service.record("decision", DECISION, supersedes=supersedes)
    assert str(caught.value).startswith("supersedes: ")
    assert "related_to" not in str(caught.value)
    assert caught.value.field == "supersedes"
    assert snapshot_files(project) == before


@pytest.mark.parametrize("updates", [
    {"updated_at": "2020-01-01T00:00:00+00:00"},
    {"verified_at": "garbage"},
    {"tags": ["carriers"], "verified_at": "2020-01-01T00:00:00+00:00"},
])
def test_update_refuses_the_timestamps_it_manages_instead_of_discarding_them(service, project, updates):
    before = snapshot_files(project)
    with pytest.raises(InvalidInput) as caught:
        service.update_entry("dec-002", updates)
    named = next(name for name in ("updated_at", "verified_at") if name in updates)
    assert caught.value.field == named
    assert str(caught.value).startswith(f"{named} is set by context-keeper")
    assert snapshot_files(project) == before


PIPELINE = {"name": "Refresh carrier rates", "purpose": "Keep the stored carrier rate cards current so quotes match invoices.",
            "steps": ["download the rate cards"]}
CONTROL_CHARACTERS = [
    # (a write, the field path the message must start with)
    (lambda s: s.record("decision", {**DECISION, "summary": "NUL char \u0000 test here"}), "summary: character 10 "),
    (lambda s: s.record("decision", {**DECISION, "tags": ["ok", "bell\u0007"]}), "tags[1]: character 5 "),
    (lambda s: s.record("pipeline", {**PIPELINE, "steps": ["fetch", {"action": "esc \u001b[31m red"}]}),
     "steps[1].action: character 5 "),
    (lambda s: s.update_entry("dec-001", {"tradeoffs": "a form feed \u000c in the middle"}), "tradeoffs: character 13 "),
    (lambda s: s.update_entry("dec-001", {"alternatives": [{"option": "Redis", "reason_rejected": "nul\u0000"}]}),
     "alternatives[0].reason_rejected: character 4 "),
    (lambda s: s.deprecate_entry("dec-001", "replaced \u0000 by the new cache"), "reason: character 10 "),
]


@pytest.mark.parametrize(("write", "where"), CONTROL_CHARACTERS, ids=[w for _, w in CONTROL_CHARACTERS])
def test_control_characters_are_refused_naming_the_field(service, project, write, where):
    before = snapshot_files(project)
    with pytest.raises(InvalidInput) as caught:
        write(service)
    assert str(caught.value).startswith(where)
    assert "control character U+00" in str(caught.value)
    assert snapshot_files(project) == before


def test_tabs_and_line_breaks_are_still_stored(service):
    text = "First line.\r\nSecond line\twith a tab, and enough words to pass the minimum length easily."
    answer = service.record("decision", {**DECISION, "problem": text})
    assert answer["entry"]["problem"] == text


def _add_spaced_id(project) -> None:
    """A person's hand edit: an entry whose id has stray spaces around it."""
    path = project / ".context" / "decisions.json"
    items = read_json(path)
    items.append({"id": "  dec-050 ", "summary": "Whitespace id entry", "problem": DECISION["problem"],
                  "why_chosen": DECISION["why_chosen"], "owner": "alice"})
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")


WRITES_ON_A_SPACED_ID = [
    (lambda s: s.update_entry("dec-050", {"tags": ["x"]}), "active"),
    (lambda s: s.update_entry(" dec-050 ", {"tags": ["x"]}), "active"),
    (lambda s: s.deprecate_entry("dec-050", "no longer how quotes work"), "deprecated"),
    (lambda s: s.deprecate_entry("dec-050", "folded into the older entry", merge_into="dec-001"), "deprecated"),
    (lambda s: s.deprecate_entry("dec-001", "folded into the hand-written one", merge_into="dec-050"), "active"),
    (lambda s: s.record("decision", {**DECISION, "summary": "Quote in the shipper's currency, daily rate"},
                        supersedes=["dec-050"]), "superseded"),
]


@pytest.mark.parametrize(("write", "status"), WRITES_ON_A_SPACED_ID)
def test_a_hand_written_id_with_spaces_can_be_changed_and_is_stored_stripped(service, project, write, status):
    _add_spaced_id(project)
    write(service)
    items = read_json(project / ".context" / "decisions.json")
    ids = [item["id"] for item in items]
    assert "  dec-050 " not in ids and ids.count("dec-050") == 1
    stored = next(item for item in items if item["id"] == "dec-050")
    assert stored["owner"] == "alice" and stored.get("status", "active") == status
    assert service.get_context(id="dec-050")["entry"]["id"] == "dec-050"
