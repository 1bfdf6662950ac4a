"""Counts in messages agree with their noun: "1 character", not "1 characters"."""

from __future__ import annotations

import json

import pytest

from context_keeper import compaction, embeddings
from context_keeper.bounded_read import shown_size
from context_keeper.gitshared import _batch_answers
from context_keeper.lines import counted
from context_keeper.service import Service
from tests.test_semantic import Scripted, scripted  # noqa: F401 - the fixture


@pytest.mark.parametrize(("n", "noun", "plural", "said"), [
    (0, "step", None, "0 steps"), (1, "step", None, "1 step"), (2, "step", None, "2 steps"),
    (1, "entry", "entries", "1 entry"), (3, "entry", "entries", "3 entries"),
])
def test_a_count_takes_the_singular_only_for_one(n, noun, plural, said):
    assert counted(n, noun, plural) == said


def _pipeline_store(tmp_path, steps: list[dict], purpose: str) -> Service:
    ctx = tmp_path / "p" / ".context"
    ctx.mkdir(parents=True)
    pipelines = [{"id": "pipe-001", "name": "Season rollover", "purpose": purpose, "steps": steps, "tags": ["seasons"]}]
    (ctx / "pipelines.json").write_text(json.dumps(pipelines), encoding="utf-8")
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(ctx.parent)})


def _detail(answer: dict, issue: str) -> str:
    (found,) = [i["detail"] for i in answer["issues"] if i["issue"] == issue]
    return found


def test_verify_quality_counts_one_character_and_one_thin_step_in_the_singular(tmp_path):
    svc = _pipeline_store(tmp_path, [{"order": 1, "action": "R"}], "x")
    answer = svc.verify_quality()
    assert _detail(answer, "thin_reasoning").startswith("1 character of reasoning (< 80)")
    assert _detail(answer, "thin_steps").startswith("1 of its 1 step is a character or two: step 1 ('R')")


def test_verify_quality_says_is_for_one_thin_step_among_several(tmp_path):
    steps = [{"order": 1, "action": "Freeze ranked queue changes."}, {"order": 2, "action": "R"}, {"order": 3, "action": "Sign"}]
    answer = _pipeline_store(tmp_path, steps, "Close a ranked season and open the next one.").verify_quality()
    assert _detail(answer, "thin_steps").startswith("1 of its 3 steps is a character or two")


@pytest.mark.parametrize(("checked", "superseded", "said"), [
    (1, 0, "Compaction check: the 1 active entry recorded before the compaction (snapshot t) is unchanged"),
    (1, 1, "Compaction check: the 1 entry (0 active, 1 superseded) recorded before the compaction (snapshot t) is unchanged"),
    (1, None, "Compaction check: the 1 entry recorded before the compaction (snapshot t) is unchanged"),
    (2, 1, "Compaction check: all 2 entries (1 active, 1 superseded) recorded before the compaction (snapshot t) are unchanged"),
])
def test_the_compaction_check_counts_one_entry_in_the_singular(checked, superseded, said):
    report = {"status": "clean", "snapshot_timestamp": "t", "checked_count": checked, "missing_entries": [],
              "modified_entries": [], **({} if superseded is None else {"checked_superseded_count": superseded})}
    assert compaction.describe(report).startswith(said)


def test_a_size_of_one_byte_is_one_byte():
    assert shown_size(1) == "1 byte"
    assert shown_size(2) == "2 bytes"
    with pytest.raises(ValueError, match="^1 byte follows the last answer$"):
        _batch_answers(b"abcd blob 2\nok\n!", [b"1111:a.json"])
    with pytest.raises(ValueError, match="is not 1 byte long$"):
        _batch_answers(b"abcd blob 1\nok\n", [b"1111:a.json"])


@pytest.mark.parametrize(("texts", "answer", "said"), [
    (["alpha", "beta"], {"embeddings": [[1.0, 2.0]]}, "returned 1 vector for 2 texts"),
    (["alpha"], {"embeddings": []}, "returned 0 vectors for 1 text"),
    (["alpha", "beta"], {"embeddings": [[1.0, 2.0, 3.0], [1.0]]}, "returned vectors of 1 number where 3 were expected"),
])
def test_an_embedding_answer_of_the_wrong_shape_is_counted_in_good_english(scripted, texts, answer, said):  # noqa: F811
    Scripted.answer = staticmethod(lambda asked: json.dumps(answer).encode())
    with pytest.raises(embeddings.EmbeddingUnavailable) as raised:
        embeddings.embed(texts, {"url": scripted})
    assert str(raised.value).endswith(said)
