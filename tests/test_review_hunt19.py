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
