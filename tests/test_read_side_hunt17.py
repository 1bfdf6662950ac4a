"""Read-side defects found in round 17's hunt, each test failing before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper.errors import InvalidInput
from context_keeper.service import Service


def _edit(project: Path, name: str, change) -> None:
    path = project / ".context" / name
    entries = json.loads(path.read_text(encoding="utf-8"))
    change(entries)
    path.write_text(json.dumps(entries, indent=2), encoding="utf-8")


def _entry(entries: list[dict], entry_id: str) -> dict:
    return next(e for e in entries if e["id"] == entry_id)


def _ids(answer: dict) -> list[str]:
    return [item["entry"]["id"] for item in answer["results"]]


# ------------------------------------------------------------------ timestamps out of range

@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
@pytest.mark.parametrize("field", ["created_at", "verified_at", "updated_at"])
def test_a_timestamp_past_the_calendar_edge_is_read_as_no_timestamp(project, stamp, field):
    # Each raised OverflowError in every search, listing, record and prune of the store.
    _edit(project, "decisions.json", lambda entries: entries[0].update({field: stamp}))
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project))
    assert service.get_context(query="label printing", types=["pipelines"])["results"]
    assert service.query_entries(types=["decisions"], since="2020-01-01")["total_matches"] > 0
    assert service.prune_stale(days=30)["stale_count"] > 0  # every demo entry is older than 30 days
    service.record("decision", {"summary": "Keep the old scanner firmware pinned",
                                "problem": "Scanner firmware 4.2 drops the paired printer after a sleep cycle.",
                                "why_chosen": "Pinning 4.1 on every handheld keeps the pairing stable until the vendor fixes the sleep bug."})


def test_a_date_argument_past_the_calendar_edge_is_refused_as_a_date(service):
    with pytest.raises(InvalidInput, match="before: .* is not an ISO date"):
        service.get_context(query="labels", before="9999-12-31T23:00:00-05:00")


def test_doctor_names_a_timestamp_it_cannot_read(project):
    from context_keeper.doctor import diagnose

    _edit(project, "decisions.json", lambda entries: entries[0].update({"created_at": "last tuesday"}))
    found = [f for f in diagnose(project).findings if f.code == "bad_timestamp"]
    assert len(found) == 1 and "created_at is 'last tuesday'" in found[0].message


# ------------------------------------------------------------------ an id query whose entry is filtered out

def test_an_id_query_left_out_by_a_filter_is_not_answered_confidently(service):
    answer = service.get_context(query="dec-014", since="2025-06-01")  # dec-014 is older
    assert answer["no_confident_match"] is True and answer["top_relevance"] == 0.0
    assert "dec-014 is recorded, but the filters given (since) leave it out" in answer["guidance"]
    assert "dec-014" not in _ids(answer)


def test_an_id_query_for_a_deprecated_entry_says_how_to_reach_it(service):
    service.deprecate_entry("dec-014", "Printers are driven through the vendor print server now.")
    answer = service.get_context(query="dec-014")
    assert answer["no_confident_match"] is True and "include_deprecated" in answer["guidance"]
    assert _ids(service.get_context(query="dec-014", include_deprecated=True))[0] == "dec-014"


# ------------------------------------------------------------------ weak matches and the budget

def test_weak_matches_take_only_the_room_confident_matches_leave(service):
    # Three relevance-0.0 matches ranked among the confident ones took the room of dec-007 (0.503).
    for budget in (1500, 2500, 4000):
        answer = service.get_context(query="how do we authenticate handhelds", token_budget=budget)
        ranked = [item for item in answer["results"] if not item.get("related")]
        if answer.get("omitted"):
            assert not any(item.get("weak_match") for item in ranked), budget
    full = service.get_context(query="how do we authenticate handhelds", token_budget=20000)
    order = [item["entry"]["id"] for item in full["results"] if not item.get("related")]
    packed = service.get_context(query="how do we authenticate handhelds")
    assert "dec-007" in _ids(packed)
    # ... and the answer still lists them in rank order.
    shown = [i for i in _ids(packed) if i in order]
    assert shown == sorted(shown, key=order.index)


# ------------------------------------------------------------------ query_entries

def test_query_entries_lists_an_unparsable_file_from_its_last_good_copy_and_says_so(project):
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project))
    service.update_entry("dec-001", {"tags": ["database", "postgres", "architecture"]})  # writes the last good copy
    path = project / ".context" / "decisions.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"id": "dec-030"', '"id": "dec-030",,', 1), encoding="utf-8")
    answer = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project)).query_entries(text="postgres")
    assert "dec-001" in _ids(answer)
    assert any("decisions.json does not parse" in w for w in answer["warnings"])
    assert any("last good copy" in w for w in answer["warnings"])


def test_query_entries_text_matches_words_not_the_inside_of_words(service):
    answer = service.query_entries(text="CI")
    assert answer["total_matches"] > 0
    for item in answer["results"]:
        text = json.dumps(item["entry"]).lower()
        assert any(f"{c}ci{d}" in text for c in ' ("/-' for d in ' ,.)/s:-"'), item["entry"]["id"]
    assert "dec-004" not in _ids(answer)  # "circulating", "capacity"
    assert service.query_entries(text="deploy")["total_matches"] >= service.query_entries(text="deployment")["total_matches"]


@pytest.mark.parametrize("spelling", ["dec-006", "DEC-006", "dec-6"])
def test_query_entries_supersedes_takes_any_spelling_of_the_id(service, spelling):
    assert _ids(service.query_entries(supersedes=spelling)) == ["dec-013-a7f3"]


def test_query_entries_superseded_by_takes_any_spelling_of_the_id(service):
    assert _ids(service.query_entries(superseded_by="DEC-013-A7F3")) == ["dec-006"]


def test_query_entries_refuses_an_id_filter_that_is_no_id(service):
    with pytest.raises(InvalidInput, match="superseded_by: 'the new one' is not an entry id"):
        service.query_entries(superseded_by="the new one")


def test_query_entries_bounds_each_tag_list_by_its_own_name(service):
    tags = [f"t{i}" for i in range(60)]
    assert service.query_entries(tags_any=tags, tags_all=tags)["total_matches"] == 0
    with pytest.raises(InvalidInput, match="tags_all has 101 items"):
        service.query_entries(tags_all=[f"t{i}" for i in range(101)])


# ------------------------------------------------------------------ links

def test_a_related_link_in_another_spelling_is_followed(project):
    _edit(project, "decisions.json", lambda entries: _entry(entries, "dec-022").update({"related_to": ["DEC-19"]}))
    service = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project))
    answer = service.get_context(query="ERP orders webhook reconciliation")
    assert "dec-022" in _ids(answer) and "dec-019" in _ids(answer)


# ------------------------------------------------------------------ shortening

def test_an_entry_a_little_over_max_entry_tokens_is_cut_to_about_that_not_to_a_quarter(empty_project):
    from context_keeper.budget import entry_tokens, shorten_entry

    sentence = "The streaming exporter writes chunks to a temp file and renames at the end so readers never see partial output. "
    entry = {"id": "dec-001", "summary": "Streaming exporter design",
             "problem": "Exports were buffered in memory and the process died under the OOM killer.",
             "why_chosen": (sentence * 40)[:4200]}
    assert entry_tokens(entry) > 1000
    short, cut = shorten_entry(entry, 1000)
    assert cut and 900 <= entry_tokens(short) <= 1000
    assert short["problem"] == entry["problem"] and short["why_chosen"].endswith("…")
    (empty_project / ".context" / "decisions.json").write_text(json.dumps([entry]), encoding="utf-8")
    answer = Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}).get_context(query="streaming exporter")
    assert answer["results"][0]["shortened"] is True and len(answer["results"][0]["entry"]["why_chosen"]) > 3000


# ------------------------------------------------------------------ the summary's budget

STORES = Path(__file__).resolve().parents[1] / "evals" / "stores"


@pytest.mark.parametrize("store", ["harbor", "gatehouse", "ovenbird", "pagerline", "castwave"])
def test_the_summary_as_sent_stays_within_every_budget(tmp_path, store):
    import shutil

    from context_keeper.budget import chars_to_tokens, json_chars

    shutil.copytree(STORES / store, tmp_path / store)
    service = Service(env={})
    for budget in [*range(100, 260, 7), 700]:
        answer = service.get_project_summary(budget, project_dir=str(tmp_path / store))
        sent = chars_to_tokens(json_chars(answer))
        assert sent <= budget and answer["tokens_used"] <= budget, (budget, sent, answer["tokens_used"])
        assert answer["summary"].startswith(f"Project memory for {store}: ")
