"""The collector is paused for a build and back as it was after it, even when the build fails."""

from __future__ import annotations

import gc

import pytest

from context_keeper.gcpause import gc_paused
from context_keeper.search import Doc, SearchIndex


@pytest.fixture(autouse=True)
def _collector_on():
    gc.enable()
    yield
    gc.enable()


def test_paused_within_and_restored_after_even_on_error():
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nested: the inner block leaves it off for the outer one
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("a failing build")
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off():
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_building_an_index_pauses_the_collector_and_restores_it():
    seen = []

    class Watching(SearchIndex):
        def _post(self, slot, info):
            seen.append(gc.isenabled())
            super()._post(slot, info)

    index = Watching()
    index.replace_kinds({"decision": [Doc("decision", {"id": f"dec-{n:03d}", "summary": f"Retry uploads {n}"})
                                      for n in range(1, 4)]})
    assert seen == [False, False, False] and gc.isenabled()



def test_a_block_ending_while_another_thread_begins_one_leaves_the_collector_on(monkeypatch):
    """Thread B starts a block while thread A's ends: B reads "off" (A's pause), A turns the
    collector back on, then B turns it off, and B, having seen it off, never turns it on."""
    import context_keeper.gcpause as pause

    first = pause.gc_paused()
    reads = []

    class SwitchingThreads:  # the second read of the state: thread A's block ends right after it
        def isenabled(self) -> bool:
            state = gc.isenabled()
            reads.append(state)
            if len(reads) == 2:
                first.__exit__(None, None, None)
            return state

        def disable(self) -> None:
            gc.disable()

        def enable(self) -> None:
            gc.enable()

    monkeypatch.setattr(pause, "gc", SwitchingThreads())
    first.__enter__()
    with pause.gc_paused():
        pass
    if len(reads) < 2:  # the second block did not read the state: the first ends here
        first.__exit__(None, None, None)
    assert gc.isenabled()
