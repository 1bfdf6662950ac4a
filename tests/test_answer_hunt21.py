"""get_context's answer around the ranking: what its warnings, guidance, notes and annotations
take of the budget, and what they say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_keeper.budget import entry_tokens
from context_keeper.service import Service


def _service(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)})


def _decisions(root: Path) -> Path:
    return root / ".context" / "decisions.json"


def _rewrite(path: Path, change) -> None:
    items = json.loads(path.read_text(encoding="utf-8"))
    for item in items:
        change(item)
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")


def _accepted(item: dict) -> None:
    if item.get("status", "active") == "active":
        item["status"] = "accepted"


def test_status_warnings_take_room_only_for_what_is_packed_and_come_once_per_word(project):
    _rewrite(_decisions(project), _accepted)
    accepted = {e["id"] for e in json.loads(_decisions(project).read_text(encoding="utf-8")) if e["status"] == "accepted"}
    svc = _service(project)
    answer = svc.get_context(query="how do we retry carrier API calls", token_budget=1000)
    assert answer["entries_returned"] > 3 and answer["tokens_used"] <= 1000
    for budget in (1000, 20000):
        answer = svc.get_context(query="how do we retry carrier API calls", token_budget=budget)
        packed = [r["entry"]["id"] for r in answer["results"] if r["entry"]["id"] in accepted]
        odd = [w for w in answer["warnings"] if "status 'accepted'" in w]
        named = ", ".join(packed[:3]) + (f" and {len(packed) - 3} more" if len(packed) > 3 else "")
        assert odd == [f".context/decisions.json: {named}: status 'accepted' is not one of active, superseded, "
                       "deprecated; it is read as active (still served, and a constraint still enforced): write "
                       "\"active\", or \"deprecated\" if the entry is retired"]
    assert len(packed) > 3


@pytest.mark.parametrize("asked,said", [
    ({"query": "dec-999"}, "No entry has the id dec-999"),
    ({"query": "dec-001", "types": ["pipelines"]}, "dec-001 is recorded, but the filters given (types) leave it out"),
    ({"query": "???"}, "nothing was searched"),
    ({"query": "zebra quantum", "tags": ["nope"]}, "within the filters given (tags)"),
])
def test_min_relevance_zero_keeps_the_factual_guidance(project, asked, said):
    # 0 turns off abstaining on relevance; that an id names no entry, or that nothing was
    # searched, is no matter of relevance.
    svc = _service(project)
    for min_relevance in (None, 0):
        answer = svc.get_context(min_relevance=min_relevance, **asked)
        assert answer["no_confident_match"] is True and said in answer["guidance"]


def test_min_relevance_zero_still_answers_a_weak_match_without_abstaining(project):
    answer = _service(project).get_context(query="zebra quantum carrier", min_relevance=0)
    assert answer["results"] and "guidance" not in answer and "no_confident_match" not in answer
    assert not any(r.get("weak_match") for r in answer["results"])


def _long_successor(root: Path) -> None:
    (root / ".context" / "config.json").write_text(json.dumps({"max_entry_tokens": 300}), encoding="utf-8")

    def change(item: dict) -> None:
        if item["id"] == "dec-013-a7f3":
            item["why_chosen"] = ("Signed device tokens expire within hours, so a stolen handheld loses its access "
                                  "before anyone notices it is gone. ") * 50
        if item["id"] == "dec-006":
            item["tags"] = [*item.get("tags", []), "legacy-auth"]
    _rewrite(_decisions(root), change)


def test_what_replaced_an_entry_is_summed_up_within_max_entry_tokens(project):
    _long_successor(project)
    svc = _service(project)
    alone = svc.get_context(query="handhelds authenticate shared header", tags=["legacy-auth"], token_budget=2000)
    [item] = alone["results"]
    assert item["entry"]["id"] == "dec-006" and item["replaced_by"]["id"] == "dec-013-a7f3"
    assert 0 < len(item["replaced_by"]["why"]) and entry_tokens(item["replaced_by"]) <= 300 // 2
    # Its successor in the same answer says the whole of why it was chosen: not said twice.
    both = svc.get_context(query="handhelds authenticate shared X-Packwise-Key header", token_budget=2000)
    ids = [r["entry"]["id"] for r in both["results"]]
    assert ids[:2] == ["dec-013-a7f3", "dec-006"] and len(ids) > 3
    assert both["results"][1]["replaced_by"] == {"id": "dec-013-a7f3", "type": "decision",
                                                 "summary": both["results"][0]["entry"]["summary"]}
    assert both["tokens_used"] <= 2000


def _retired_helm_decision(root: Path) -> None:
    svc = _service(root)
    svc.record("decision", {"summary": "Deploy with helm charts",
                            "problem": "Releases were applied by hand with kubectl and drifted between clusters.",
                            "why_chosen": "Helm charts version every release and roll back with one command, which "
                                          "hand-applied manifests never did."})
    svc.deprecate_entry("dec-001", "moved to argo")


def test_a_topic_only_a_retired_entry_matches_says_how_to_read_it(empty_project, capsys):
    from context_keeper import cli

    _retired_helm_decision(empty_project)
    answer = _service(empty_project).get_context(query="helm charts")
    assert answer["results"] == [] and answer["no_confident_match"] is True
    assert "retired" in answer["guidance"] and "include_deprecated" in answer["guidance"]
    assert "record it with" not in answer["guidance"]
    assert answer["tokens_used"] <= answer["token_budget"]
    assert _service(empty_project).get_context(query="helm charts", include_deprecated=True)["results"]
    assert cli.main(["get", "helm charts", "--project", str(empty_project)]) == 0
    out = capsys.readouterr().out
    assert "--include-deprecated" in out and "Nothing recorded matches" not in out


def test_a_topic_nothing_matches_still_says_nothing_is_recorded(empty_project):
    _retired_helm_decision(empty_project)
    answer = _service(empty_project).get_context(query="zebra quantum")
    assert answer["guidance"].startswith("Nothing recorded matches this question.")


def test_cli_get_blames_unreadable_files_only_when_a_file_could_not_be_read(empty_project, capsys):
    from context_keeper import cli

    config = empty_project / ".context" / "config.json"
    config.write_text(json.dumps({"token_budget": "lots"}), encoding="utf-8")
    assert cli.main(["get", "zebra quantum", "--project", str(empty_project)]) == 0
    out, err = capsys.readouterr()
    assert "token_budget" in err and out == "Nothing recorded matches.\n"
    (empty_project / ".context" / "decisions.json").write_text("[{", encoding="utf-8")
    assert cli.main(["get", "zebra quantum", "--project", str(empty_project)]) == 0
    assert "Nothing matches in what could be read (see the warnings above)." in capsys.readouterr().out


def test_omitted_past_the_ranked_matches_is_said_as_a_lower_bound(empty_project, capsys):
    from context_keeper import cli

    stamp = "2026-05-01T10:00:00+00:00"
    items = [{"id": f"dec-{n:03d}", "summary": f"Retry the carrier webhook {n} with backoff",
              "problem": "Carrier webhooks time out under load and the retries pile up behind each other.",
              "why_chosen": "Backoff with jitter spreads the retries of the carrier webhook so they stop piling up.",
              "status": "active", "created_at": stamp, "updated_at": stamp, "verified_at": stamp}
             for n in range(1, 301)]
    _decisions(empty_project).write_text(json.dumps(items, indent=2), encoding="utf-8")
    answer = _service(empty_project).get_context(query="retry the carrier webhook with backoff", token_budget=2000)
    left_out = 300 - answer["entries_returned"]
    assert answer["omitted"] <= left_out and answer["tokens_used"] <= 2000
    assert answer["budget_note"].startswith(f"At least {answer['omitted']} more matching entries did not fit")
    assert cli.main(["get", "retry the carrier webhook with backoff", "--budget", "2000",
                     "--project", str(empty_project)]) == 0
    assert f"(at least {answer['omitted']} more did not fit" in capsys.readouterr().out


def test_omitted_within_the_ranked_matches_is_an_exact_count(project):
    answer = _service(project).get_context(query="carrier retries", token_budget=150)
    assert answer["budget_note"].startswith(f"{answer['omitted']} more matching")


@pytest.mark.parametrize("budget", [50, 55, 60])
def test_an_entry_named_by_id_is_given_at_the_smallest_budget(project, budget):
    answer = _service(project).get_context(query="dec-006", token_budget=budget)
    assert [r["entry"]["id"] for r in answer["results"]] == ["dec-006"]
    first = answer["results"][0]["entry"]
    assert first["status"] == "superseded" and first["superseded_by"] == "dec-013-a7f3"
    assert "omitted" not in answer and "budget_note" not in answer
    assert _measured(answer) <= answer["tokens_used"]


@pytest.mark.parametrize("budget", [50, 60, 80])
@pytest.mark.parametrize("query", ["???", "xylophone quokka"])
def test_an_answer_of_guidance_alone_stays_within_the_budget(project, budget, query):
    answer = _service(project).get_context(query=query, token_budget=budget)
    assert answer["results"] == [] and answer["no_confident_match"] is True
    assert _measured(answer) <= answer["tokens_used"] <= budget
    full = _service(project).get_context(query=query)["guidance"]
    assert answer["guidance"] == full or answer["guidance"].endswith("…")
    assert answer["guidance"][:30] == full[:30]


def _measured(answer: dict) -> int:
    return (len(json.dumps(answer, ensure_ascii=False, separators=(",", ":"))) + 3) // 4


def test_the_rule_written_for_the_file_comes_before_the_rule_for_its_directory(project):
    # con-005 is scoped to client.py, con-004 to carriers/: with room for one, the file's own.
    answer = _service(project).get_context(query="xylophone quokka", scope="src/packwise/carriers/client.py",
                                           token_budget=200)
    rules = [r["entry"]["id"] for r in answer["results"] if r.get("scope_rule")]
    assert rules[:1] == ["con-005"]
    roomy = _service(project).get_context(query="xylophone quokka", scope="src/packwise/carriers/client.py")
    assert [r["entry"]["id"] for r in roomy["results"] if r.get("scope_rule")] == ["con-005", "con-004"]
