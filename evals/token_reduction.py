"""Token-reduction figure: what session start injects vs dumping the whole store.

    python evals/token_reduction.py

For each store (the demo project, every evals/stores/* store, and synthetic stores of 100,
1,000 and 10,000 entries) prints the estimated tokens of
- the whole store dumped as JSON (what a "just load the memory" approach injects),
- the session-start project summary (``Service().get_project_summary``, default budget),
- a typical ``get_context`` answer (default token budget) for one question,
with the same ~4-characters-per-token estimate the service uses for its budgets.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_retrieval import synthetic_store  # noqa: E402

from context_keeper.budget import estimate_tokens  # noqa: E402

FILES = {"decision": "decisions.json", "pipeline": "pipelines.json", "constraint": "constraints.json"}
QUESTION = "why do we retry the request when the upload times out?"


def store_tokens(project: Path) -> tuple[int, int]:
    entries = []
    for fname in FILES.values():
        f = project / ".context" / fname
        if f.exists():
            entries.extend(json.loads(f.read_text(encoding="utf-8")))
    return len(entries), estimate_tokens(json.dumps(entries, ensure_ascii=False, indent=2))


def measure(service, name: str, project: Path) -> tuple[str, int, int, int, int]:
    n, dump = store_tokens(project)
    summary = service.get_project_summary(project_dir=str(project.resolve()))
    context = service.get_context(project_dir=str(project.resolve()), query=QUESTION)
    s_tokens = estimate_tokens(summary.get("summary", ""))
    # As the server sends it (compact JSON), the form token_budget is counted in.
    c_tokens = estimate_tokens(json.dumps(context, ensure_ascii=False, separators=(",", ":")))
    return name, n, dump, s_tokens, c_tokens


def main() -> int:
    try:
        from context_keeper.service import Service
    except ImportError:
        print("context_keeper.service is not available: nothing to measure")
        return 1
    service = Service(env={})
    rows = []
    projects = [ROOT / "examples" / "demo-project", *sorted((ROOT / "evals" / "stores").glob("*"))]
    for project in projects:
        if (project / ".context").is_dir():
            rows.append(measure(service, project.name, project))
    with tempfile.TemporaryDirectory() as tmp:
        for size in (100, 1_000, 10_000):
            project = Path(tmp) / f"synthetic-{size}"
            (project / ".context").mkdir(parents=True)
            for kind, entries in synthetic_store(size).items():
                (project / ".context" / FILES[kind]).write_text(json.dumps(entries, indent=2), encoding="utf-8")
            rows.append(measure(service, f"synthetic-{size}", project))
    print("| store | entries | whole store (tokens) | session start summary | reduction | one get_context answer |")
    print("|---|---|---|---|---|---|")
    for name, n, dump, s_tokens, c_tokens in rows:
        ratio = dump / s_tokens if s_tokens else float("inf")
        print(f"| {name} | {n} | {dump:,} | {s_tokens:,} | {ratio:,.1f}x | {c_tokens:,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
