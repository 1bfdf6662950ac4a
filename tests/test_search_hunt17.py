"""Query wording defects found in round 17's hunt (what agents paste), each test failing before its fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from context_keeper.search.tokenize import terms
from context_keeper.service import Service

ROOT = Path(__file__).resolve().parents[1]


def _ids(store: str, query: str, tmp_path: Path) -> list[str]:
    target = tmp_path / store
    if not target.exists():
        source = ROOT / "examples" / "demo-project" if store == "demo-project" else ROOT / "evals" / "stores" / store
        shutil.copytree(source, target)
    answer = Service(env={}, hook_cache_delay=None).get_context(query=query, project_dir=str(target), include_related=False)
    return [item["entry"]["id"] for item in answer["results"]]


@pytest.mark.parametrize("pasted, bare", [
    ("src/output/mbtiles.rs:142:9", "src/output/mbtiles.rs"),
    ("printer.py:57:12", "printer.py"),
    ("at connect (src/packwise/labels/printer.py:57:12)", "at connect (src/packwise/labels/printer.py)"),
])
def test_a_file_position_is_read_as_the_file(pasted, bare):
    assert terms(pasted) == terms(bare)


@pytest.mark.parametrize("kept", ["example.com:443", "localhost:8080", "127.0.0.1:9100"])
def test_a_host_keeps_its_port(kept):
    assert kept.rsplit(":", 1)[1] in terms(kept)


def test_the_constraint_on_a_file_leads_whatever_position_is_pasted(tmp_path):
    assert _ids("tilemill-cli", "src/output/mbtiles.rs:142:9", tmp_path)[0] == "con-011"


@pytest.mark.parametrize("text, whole", [
    ("2024-05-12T08:14:33.123Z", "2024-05-12t08:14:33.123z"),
    ("123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000"),
    ("0x7f3a2b1c", "0x7f3a2b1c"),
    ("4f9c2a1e8b7d4c3e9f216a5b4c3d2e1f", "4f9c2a1e8b7d4c3e9f216a5b4c3d2e1f"),
])
def test_a_pasted_timestamp_or_id_is_one_exact_term_not_fragments(text, whole):
    assert terms(f"at {text} the worker") == [whole, "worker"]


def test_a_pasted_log_timestamp_does_not_pull_in_entries_with_the_same_date_digits(tmp_path):
    plain = "deployments.apps payments is forbidden: cannot patch resource deployments"
    assert _ids("harbor", "2024-05-12T08:14:33.123Z " + plain, tmp_path)[:3] == _ids("harbor", plain, tmp_path)[:3]


@pytest.mark.parametrize("word, like", [("panicked", "panic"), ("panicking", "panic"), ("indices", "index"),
                                        ("vertices", "vertex"), ("matrices", "matrix")])
def test_inflections_the_stemmer_splits_off_meet_their_word(word, like):
    assert terms(word) == terms(like)


def test_a_rust_panic_finds_the_rule_against_panicking(tmp_path):
    assert _ids("tilemill-cli", "the geojson reader panicked on a bad file", tmp_path)[0] == "con-012"
