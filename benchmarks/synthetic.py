"""Synthetic stores of any size for benchmarks (deterministic: seeded)."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from itertools import accumulate
from pathlib import Path

def _vocabulary() -> list[str]:
    """Words of the bundled example and eval stores, most frequent first: synthetic text then
    has a realistic vocabulary size and a Zipf-like frequency curve (posting-list lengths
    matter for retrieval timings)."""
    counts: Counter[str] = Counter()
    repo = Path(__file__).resolve().parent.parent
    for path in [*repo.glob("examples/*/.context/*.json"), *repo.glob("evals/stores/*/.context/*.json")]:
        if path.name == "config.json":
            continue
        counts.update(re.findall(r"[a-z][a-z0-9_-]{1,}", path.read_text(encoding="utf-8").lower()))
    return [w for w, _ in counts.most_common()]


WORDS = _vocabulary()
# Cumulative weights, summed once: ``rng.choices(WORDS, weights=...)`` sums all ~20,000 of them
# again on every call. Handing it the sums draws exactly the same words (choices() builds the
# same list itself) and makes a 1,900-entry store in a fraction of a second instead of ~16 s.
_CUM_WEIGHTS = list(accumulate(1.0 / (rank + 1) for rank in range(len(WORDS))))


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, cum_weights=_CUM_WEIGHTS, k=n)).capitalize() + "."


def make_store(root: Path, decisions: int, constraints: int, pipelines: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    context = root / ".context"
    context.mkdir(parents=True, exist_ok=True)
    stamp = "2026-05-01T10:00:00+00:00"
    common = {"origin": "agent", "schema_version": 2, "status": "active", "created_at": stamp,
              "updated_at": stamp, "verified_at": stamp, "verified_sha": None, "retrieval_hints": []}
    decs = [{"id": f"dec-{i:03d}", "summary": _sentence(rng, 8), "problem": _sentence(rng, 25),
             "why_chosen": _sentence(rng, 30), "what_we_tried": _sentence(rng, 10), "tradeoffs": _sentence(rng, 10),
             "alternatives": [{"option": _sentence(rng, 4), "reason_rejected": _sentence(rng, 8)}],
             "constraints_created": [], "related_to": [f"dec-{rng.randint(1, max(1, i - 1)):03d}"] if i > 1 else [],
             "tags": rng.sample(WORDS[:300], 2), "superseded_by": None, **common}
            for i in range(1, decisions + 1)]
    cons = [{"id": f"con-{i:03d}", "rule": _sentence(rng, 10), "reason": _sentence(rng, 20),
             "triggering_incident": _sentence(rng, 10), "enforced_by": "review",
             "scope": rng.choice(["global", "src/", "src/app/", "migrations/*.sql", "hooks/"]),
             "hardness": rng.choice(["absolute", "advisory"]), "related_to": [], "tags": rng.sample(WORDS[:300], 2), **common}
            for i in range(1, constraints + 1)]
    pipes = [{"id": f"pipe-{i:03d}", "name": _sentence(rng, 4), "purpose": _sentence(rng, 15),
              "when_to_invoke": _sentence(rng, 6),
              "steps": [{"order": s, "action": _sentence(rng, 6)} for s in range(1, 5)],
              "constraints": [], "related_to": [], "tags": rng.sample(WORDS[:300], 2), **common}
             for i in range(1, pipelines + 1)]
    for name, items in (("decisions", decs), ("constraints", cons), ("pipelines", pipes)):
        (context / f"{name}.json").write_text(json.dumps(items, indent=2), encoding="utf-8")
    (context / "config.json").write_text(json.dumps({"project_name": "synthetic"}), encoding="utf-8")
    return root


def make_sized_store(root: Path, total: int, seed: int = 7) -> Path:
    """``total`` entries split 70% decisions, 20% constraints, 10% pipelines."""
    constraints = total // 5
    pipelines = total // 10
    return make_store(root, total - constraints - pipelines, constraints, pipelines, seed)
