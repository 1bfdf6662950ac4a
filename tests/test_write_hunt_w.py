"""Write-side refusals found by a bug hunt: each leaves every store file byte-identical."""

from __future__ import annotations

import pytest

from context_keeper.errors import InvalidInput
from context_keeper.service import Service
from tests.conftest import snapshot_files

FIELDS = {"problem": "Background jobs in billing need a queue that survives restarts of the workers.",
          "why_chosen": "It is simple to operate and the team has run it in production before, so on-call knows it."}


@pytest.fixture
def svc(empty_project):
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}, hook_cache_delay=None)


@pytest.mark.parametrize("how", ["deprecate", "update"])
def test_a_superseded_by_loop_through_three_entries_is_refused(svc, empty_project, how):
    # a → b → c was accepted and then c → a too: every entry superseded, the summary empty.
    a, b, c = (svc.record("decision", {"summary": f"Jobs go through the {n} queue", **FIELDS})["id"]
               for n in ("alpha", "beta", "gamma"))
    svc.deprecate_entry(a, "beta replaced it", superseded_by=b)
    svc.deprecate_entry(b, "gamma replaced it", superseded_by=c)
    before = snapshot_files(empty_project)
    with pytest.raises(InvalidInput, match=f"{a} → {b} → {c}") as refused:
        if how == "deprecate":
            svc.deprecate_entry(c, "alpha is back", superseded_by=a)
        else:
            svc.update_entry(c, {"status": "superseded", "superseded_by": a})
    assert refused.value.field == "superseded_by"
    assert snapshot_files(empty_project) == before
    assert svc.get_project_summary()["counts"]["decisions"] == 1
