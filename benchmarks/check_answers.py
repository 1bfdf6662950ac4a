"""Whether a change leaves ``get_context``'s answers alone on a large synthetic store.

    python benchmarks/check_answers.py --save answers.json [--entries 20000] [--queries 200]
    python benchmarks/check_answers.py --compare answers.json

Builds a synthetic store (benchmarks/synthetic.py) in a temporary directory and asks each of
``--queries`` seeded queries three ways: the server's ``Service`` (index built in process), a
one-search process building the index and saving its snapshot (``OneShotService``), and one
restoring it, as the prompt hook does. The clock is fixed, so recency priors do not move between
runs. ``--save`` writes the answers; ``--compare`` recomputes them with the code checked out now
and lists every query whose answer differs (exit status 1 if any).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.synthetic import WORDS, make_sized_store  # noqa: E402

CLOCK = datetime(2026, 6, 1, tzinfo=timezone.utc)


def queries(n: int, seed: int = 11) -> list[str]:
    """Questions in the store's own vocabulary: common and rare words, an id, a path, a tag."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = rng.sample(WORDS[:3000], rng.randint(2, 7))
        if i % 10 == 3:
            words.append(f"dec-{rng.randint(1, 999):03d}")
        if i % 10 == 7:
            words.insert(0, "why did we choose")
        if i % 17 == 5:
            words.append("src/app/main.py")
        out.append(" ".join(words))
    return out


def answers(entries: int, n: int) -> dict[str, list]:
    from context_keeper.oneshot import OneShotService
    from context_keeper.service import Service
    from context_keeper.store import write_gitignore

    asked = queries(n)
    with tempfile.TemporaryDirectory(prefix="ck-check-answers-") as tmp:
        root = make_sized_store(Path(tmp) / "project", entries)
        write_gitignore(root / ".context")  # as init leaves it: the snapshot is saved only then
        env = {"CONTEXT_KEEPER_PROJECT": str(root)}
        out: dict[str, list] = {}
        server = Service(env=env, cwd=str(root), clock=lambda: CLOCK)
        out["service"] = [server.get_context(query=q) for q in asked]
        built = OneShotService(env=env, cwd=str(root), clock=lambda: CLOCK)
        out["one-shot, built"] = [built.get_context(query=q, token_budget=1500, include_related=False) for q in asked]
        built.save_search_state()
        restored = OneShotService(env=env, cwd=str(root), clock=lambda: CLOCK)
        out["one-shot, restored"] = [restored.get_context(query=q, token_budget=1500, include_related=False)
                                     for q in asked]
        if not restored.discard_snapshot():  # True only for a restored index
            raise SystemExit("the one-shot service did not restore the snapshot it had just saved")
    return json.loads(json.dumps(out))  # as saved: tuples as lists


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path)
    group.add_argument("--compare", type=Path)
    parser.add_argument("--entries", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if args.save:
        now = answers(args.entries, args.queries)
        args.save.write_text(json.dumps({"entries": args.entries, "queries": args.queries, "answers": now}),
                             encoding="utf-8")
        print(f"saved {args.queries} queries x {len(now)} ways on {args.entries:,} entries to {args.save}")
        return 0
    saved = json.loads(args.compare.read_text(encoding="utf-8"))
    now = answers(saved["entries"], saved["queries"])
    asked = queries(saved["queries"])
    differ = [(way, i) for way, got in now.items() for i, answer in enumerate(got) if answer != saved["answers"][way][i]]
    for way, i in differ:
        print(f"DIFFERS ({way}): {asked[i]!r}")
    total = sum(map(len, now.values()))
    print(f"{total - len(differ)} of {total} answers identical on {saved['entries']:,} entries")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
