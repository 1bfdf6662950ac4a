"""The server keeps the hooks' derived cache fresh after its own writes."""

from __future__ import annotations

import pytest

from context_keeper.hooks import cache
from context_keeper.service import Service

DECISION = {
    "summary": "Label reprints go to the station's paired printer first",
    "problem": "Reprints were sent to the original printer even when it had jammed, so packers waited.",
    "why_chosen": "The paired printer is next to the station and idle most of the time, so a reprint is instant.",
    "tags": ["labels"],
}


@pytest.mark.parametrize("delay, fresh", [(0, True), (None, False)])
def test_a_write_refreshes_an_existing_hook_cache(project, delay, fresh):
    root = str(project)
    cache.build(root)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": root}, hook_cache_delay=delay)
    added = svc.record("decision", DECISION)
    data = cache.read(root)
    assert cache.is_fresh(data, root) is fresh
    assert (added["id"] in data["summary"]) is fresh


def test_no_hook_cache_means_nothing_is_written(project):
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, hook_cache_delay=0)
    svc.record("decision", DECISION)
    assert not (project / ".context" / cache.CACHE_FILE).exists()


def test_a_refresh_still_pending_when_the_process_exits_is_done_then(project):
    # A one-shot client's server exits within the delay: the timer, a daemon thread, was dropped.
    import subprocess
    import sys

    root = str(project)
    cache.build(root)
    script = ("import sys; from context_keeper.service import Service; "
              f"s = Service(env={{'CONTEXT_KEEPER_PROJECT': {root!r}}}, hook_cache_delay=600); "
              f"print(s.record('decision', {DECISION!r})['id'])")
    added = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
    data = cache.read(root)
    assert cache.is_fresh(data, root) and added in data["summary"]
