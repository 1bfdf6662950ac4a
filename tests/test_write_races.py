"""Another agent's write landing in the gap between two steps of ours, forced deterministically:
the second writer runs from inside the first one's code path (no sleeps, no timing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_keeper.service import Service


def _decision(summary: str) -> dict:
    return {"summary": summary,
            "problem": "Workers retried failed jobs by hand and the queue backed up every night.",
            "why_chosen": "It removes the manual step and keeps the nightly queue short on busy days."}


def _service(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)


def _ids(answer: dict) -> list[str]:
    return [item["entry"]["id"] for item in answer["results"] if not answer.get("no_confident_match")]


def _write_between_commit_and_index(monkeypatch, other_write) -> None:
    """Run ``other_write`` after our transaction released the lock, before our index bookkeeping."""
    original = Service._index_after_write

    def late(self, *args, **kwargs):
        monkeypatch.setattr(Service, "_index_after_write", original)
        other_write()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Service, "_index_after_write", late)


# (their write, our query, what our warm index must answer: first hit, or None for "not dec-001")
THEIR_WRITES = {
    "record": (lambda s: s.record("decision", _decision("Use betaworker queue retries")), "betaworker queue retries", "dec-003"),
    "update": (lambda s: s.update_entry("dec-001", {"summary": "Adopt gammaworker sharding"}), "gammaworker sharding", "dec-001"),
    "deprecate": (lambda s: s.deprecate_entry("dec-001", "the caching layer was dropped"), "alphaworker caching layer", None),
}


@pytest.mark.parametrize("shape", sorted(THEIR_WRITES))
def test_a_warm_index_sees_a_write_that_landed_just_after_our_own(empty_project: Path, monkeypatch, shape):
    ours, theirs = _service(empty_project), _service(empty_project)
    ours.record("decision", _decision("Adopt alphaworker caching layer"))
    ours.get_context(query="warm the index")
    their_write, query, expected = THEIR_WRITES[shape]
    _write_between_commit_and_index(monkeypatch, lambda: their_write(theirs))
    ours.record("decision", _decision("Pin the deltaworker image digest"))

    found = _ids(ours.get_context(query=query))
    if expected is None:
        assert "dec-001" not in found  # deprecated on disk: no longer a confident answer
    else:
        assert found[:1] == [expected]


def test_the_background_prompt_index_is_stamped_with_the_store_it_was_built_from(project: Path, monkeypatch):
    """A write landing while the rebuild builds its documents: the saved index must not claim
    to be of the newer store, or every later prompt searches the old text."""
    from context_keeper import search
    from context_keeper.hooks import user_prompt
    from tests.hook_helpers import hook_env, injected, payload, run_hook

    real_doc = search.Doc

    def doc_after_their_update(*args, **kwargs):
        monkeypatch.setattr(search, "Doc", real_doc)
        _service(project).update_entry("dec-001", {"summary": "Use kestrelmq for outbound webhooks instead"})
        return real_doc(*args, **kwargs)

    monkeypatch.setattr(search, "Doc", doc_after_their_update)
    user_prompt.rebuild_main(str(project))
    monkeypatch.setattr(search, "Doc", real_doc)
    assert not (project / ".context" / "hook.log").exists()

    prompt = payload("user_prompt_submit", project, prompt="should we use kestrelmq for outbound webhooks?")
    text = injected(run_hook("user_prompt_submit", prompt, env=hook_env(project)))
    assert text is not None and "dec-001" in text
