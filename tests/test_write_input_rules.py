"""What a write tool refuses, and how it says so: each refusal names the parameter or field the
caller sent and leaves every store file byte-identical."""

from __future__ import annotations

import pytest

from context_keeper.errors import InvalidInput
from tests.conftest import snapshot_files

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
