"""The retrieval figures on the golden test split must not regress below evals/baseline.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.eval_helpers import run_retrieval

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "evals" / "baseline.json"
GOLDEN = ROOT / "evals" / "golden.jsonl"
TOLERANCE = 0.02  # one case in ~50 may flip on a harmless change; more is a regression

pytestmark = pytest.mark.skipif(
    not (BASELINE.exists() and GOLDEN.exists()), reason="evals/baseline.json or evals/golden.jsonl missing"
)


def _runner():
    return run_retrieval()


@pytest.fixture(scope="module")
def figures():
    rr = _runner()
    stores = rr.load_stores()
    cases = [c for c in rr.load_cases() if c.store in stores]
    try:
        system = rr.ServiceSystem()
    except ImportError:
        system = rr.EngineSystem()
    out = {}
    for split in ("dev", "test"):
        row, _ = rr.evaluate(system, [c for c in cases if c.split == split], stores, split)
        out[split] = dict(zip(rr.COLUMNS, rr.row_values(row)))
    return out


@pytest.mark.parametrize("split", ["test", "dev"])
def test_retrieval_figures_do_not_regress(figures, split):
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))[split]
    got = figures[split]
    worse = []
    for metric, committed in baseline.items():
        if metric == "pos flagged":  # lower is better
            if got[metric] > committed + TOLERANCE:
                worse.append(f"{metric}: {got[metric]:.3f} > {committed:.3f}")
        elif got[metric] < committed - TOLERANCE:
            worse.append(f"{metric}: {got[metric]:.3f} < {committed:.3f}")
    assert not worse, f"{split} split regressed: " + "; ".join(worse)


def test_the_eval_runs_on_stores_given_on_the_command_line(tmp_path, capsys):
    # Someone else's stores and questions, with no split field: one command, one table.
    rr = _runner()
    project = tmp_path / "stores" / "orders-app"
    (project / ".context").mkdir(parents=True)
    demo = ROOT / "examples" / "demo-project" / ".context"
    for name in ("decisions.json", "constraints.json"):
        (project / ".context" / name).write_bytes((demo / name).read_bytes())
    golden = tmp_path / "cases.jsonl"
    golden.write_text(
        json.dumps({"store": "orders-app", "query": "can I edit files under migrations directly?", "kind": "positive", "expected": ["con-001"]})
        + "\n"
        + json.dumps({"store": "orders-app", "query": "which font does the marketing site use?", "kind": "negative", "expected": []})
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "figures.json"
    assert rr.main(["--stores", str(tmp_path / "stores"), "--golden", str(golden), "--no-references", "--json", str(out)]) == 0
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert set(figures) == {"context-keeper (service.get_context)|dev", "engine (SearchIndex)|dev"}
    assert figures["engine (SearchIndex)|dev"]["hit@5"] == 1.0
    printed = capsys.readouterr().out
    assert "stores: orders-app; cases: 2" in printed
    # No history case: its column says so rather than 0.000, which reads as every one missed.
    service_row = next(line for line in printed.splitlines() if line.startswith("| context-keeper (service"))
    assert service_row.endswith("| n/a |") and "| 1/1/0 |" in service_row
    with pytest.raises(SystemExit):
        rr.main(["--stores", str(tmp_path / "stores"), "--golden", str(GOLDEN)])  # no case names orders-app


def test_only_restricts_the_figures_to_the_named_stores(capsys):
    rr = _runner()
    assert rr.main(["--only", "carebook", "--split", "dev", "--no-references", "--engine-only"]) == 0
    dev = [c for c in rr.load_cases() if c.store == "carebook" and c.split == "dev"]
    counts = "/".join(str(sum(c.type == t for c in dev)) for t in ("positive", "negative", "history"))
    table = capsys.readouterr().out
    assert dev and f"| engine (SearchIndex) | dev | {counts} |" in table
