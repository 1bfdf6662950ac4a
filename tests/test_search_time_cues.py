"""Words that only place a question in time ("originally", "in the past") do not make a recorded
answer read as "nothing recorded"."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from context_keeper.search.priors import asks_about_past, without_time_cues
from context_keeper.service import Service

BACKENDS = ["Memcached", "Redis", "DynamoDB", "Postgres", "a signed cookie"]


@pytest.fixture
def sessions(tmp_path: Path) -> tuple[Service, str]:
    """Five decisions on where sessions live, each replacing the one before."""
    clock = [datetime(2026, 1, 1, tzinfo=timezone.utc)]
    svc = Service(env={}, clock=lambda: clock[0], hook_cache_delay=None)
    svc.init_project(str(tmp_path))
    previous = None
    for backend in BACKENDS:
        clock[0] += timedelta(days=70)
        previous = svc.record("decision", {
            "summary": f"Keep user sessions in {backend}", "tags": ["sessions"],
            "problem": "User sessions must survive restarts of the web workers and be shared between them.",
            "why_chosen": f"{backend} was the best fit for session storage at the time, given our traffic and skills.",
        }, supersedes=[previous] if previous else None, project_dir=str(tmp_path))["id"]
    return svc, str(tmp_path)


@pytest.mark.parametrize("plain,cued", [
    ("where did we keep user sessions", "where did we originally keep user sessions"),
    ("what did we use for user sessions", "what did we use for user sessions previously"),
    ("where were user sessions kept", "where were user sessions kept in the past"),
    ("where did we keep user sessions", "where did we keep user sessions at first"),
])
def test_a_time_cue_keeps_the_relevance_of_the_question_without_it(sessions, plain, cued):
    svc, root = sessions
    without = svc.get_context(query=plain, project_dir=root)
    with_cue = svc.get_context(query=cued, project_dir=root)
    assert not with_cue.get("no_confident_match")
    assert with_cue["top_relevance"] == without["top_relevance"]
    # Still a question about the past: superseded entries come with it.
    assert any(r["entry"]["status"] == "superseded" for r in with_cue["results"][:3])


def test_only_the_time_words_go():
    assert without_time_cues("Where did we ORIGINALLY keep sessions in the past?").split() == \
        ["Where", "did", "we", "keep", "sessions", "?"]
    assert without_time_cues("the pastry cache, initialised first") == "the pastry cache, initialised first"
    assert asks_about_past("where did we originally keep sessions")


@pytest.mark.parametrize("question,past", [
    ("how did the backup console stay up to date back in 2023?", True),
    ("Back in the pilot, how were checks getting from the iPads into BigQuery?", True),
    ("which timestamp authority did every seal go through in 2024?", True),
    # Not about the past: no past tense, or "back in" that is no time.
    ("For payments made in 2026, at what dollar amount do we send a tax form?", False),
    ("ingestion was down last night. How do we get the missing readings back in?", False),
    ("gate refused a guy who came straight back in", False),
])
def test_a_year_or_back_in_the_day_in_a_past_tense_question_asks_about_the_past(question, past):
    assert asks_about_past(question) is past
