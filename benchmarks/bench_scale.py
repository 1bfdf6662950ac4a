"""Wall time of the one-search processes (the prompt hook, ``context-keeper get``) on large stores.

    python benchmarks/bench_scale.py [--sizes 10000,20000,50000] [--runs 3] [--warm-hook]

For each size, a synthetic store (benchmarks/synthetic.py, with the ``.gitignore`` that
``init`` writes) and these cases, each a fresh
process as the client spawns it, median of ``--runs``:

- ``get, no saved state``: the first ``context-keeper get`` on a store (builds the index,
  analysing every entry, and saves ``search_state.json`` and the index snapshot).
- ``get, snapshot``: later gets (the index restored from ``search_index_state.json``).
- ``get, store changed``: after a write by another process (the snapshot is stale, the
  per-entry analyses are reused).
- ``prompt hook, snapshot``: the UserPromptSubmit hook with the snapshot fresh (the normal case:
  the server rebuilds it in the background after its writes).
- ``prompt hook, store changed``: after a hand edit (no fresh snapshot). Up to
  ``user_prompt.INLINE_BUILD_MAX_ENTRIES`` entries the hook builds the index inline; above, it
  starts a background build and answers nothing for that prompt.
- ``background build``: that detached build on its own (``user_prompt.rebuild_main``).

The client allows the prompt hook 20 s (as installed); no row of a store above the inline
limit should come near it.

``--warm-hook`` runs only the ``prompt hook, snapshot`` case, after one unmeasured run that leaves
the derived files a warm hook finds (the index snapshot, the store's reading cache), and reports
the median wall time and the median CPU time (user + system) of the hook process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.synthetic import make_sized_store  # noqa: E402
from context_keeper.store import write_gitignore  # noqa: E402

PROMPT = "how do we handle retries when the upload queue backs up?"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CONTEXT_KEEPER_PROJECT", "CLAUDE_PROJECT_DIR")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode compiled once
    env["PYTHONPATH"] = str(REPO)
    return env


def _run(cmd: list[str], stdin: bytes | None, cwd: Path) -> float:
    return _run_timed(cmd, stdin, cwd)[0]


def _run_timed(cmd: list[str], stdin: bytes | None, cwd: Path) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of ``cmd`` as a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=_env(), cwd=cwd, timeout=600)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} exited {proc.returncode}: {proc.stderr.decode()[:500]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _forget(root: Path, *names: str) -> None:
    for name in names:
        (root / ".context" / name).unlink(missing_ok=True)


def _touch(root: Path) -> None:
    path = root / ".context" / "decisions.json"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def _settled(root: Path) -> None:
    marker = root / ".context" / "search_index_build_state.json"
    deadline = time.monotonic() + 600
    while marker.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


HOOK = [sys.executable, "-S", str(REPO / "hooks" / "user_prompt_submit.py")]
REBUILD = [sys.executable, "-c", ("import sys; from context_keeper.hooks.user_prompt import rebuild_main; "
                                  "rebuild_main(sys.argv[1])")]


def _payload(root: Path, n: int) -> bytes:  # a new session each time: nothing already shown
    return json.dumps({"session_id": f"bench-{n}", "hook_event_name": "UserPromptSubmit", "cwd": str(root),
                       "transcript_path": "/dev/null", "prompt": PROMPT}).encode()


def bench_warm_hook(root: Path, runs: int) -> list[tuple[str, float]]:
    _run([*REBUILD, str(root)], None, root)
    _run(HOOK, _payload(root, -1), root)  # leaves what a warm hook finds
    samples = [_run_timed(HOOK, _payload(root, n), root) for n in range(runs)]
    return [("prompt hook, snapshot (wall)", statistics.median(s[0] for s in samples)),
            ("prompt hook, snapshot (CPU)", statistics.median(s[1] for s in samples))]


def bench(root: Path, runs: int) -> list[tuple[str, float]]:
    get = [sys.executable, "-m", "context_keeper", "get", PROMPT, "--project", str(root)]
    hook = HOOK
    rebuild = [*REBUILD, str(root)]
    state = ("search_state.json", "search_index_state.json")

    def payload(n: int) -> bytes:
        return _payload(root, n)

    rows = []

    def case(label: str, cmd: list[str], before=None, stdin=None) -> None:
        samples = []
        for n in range(runs):
            if before:
                before()
            samples.append(_run(cmd, stdin(n) if stdin else None, root))
        rows.append((label, statistics.median(samples)))

    case("get, no saved state", get, before=lambda: _forget(root, *state))
    case("get, snapshot", get)
    case("get, store changed", get, before=lambda: _touch(root))
    _run(rebuild, None, root)
    case("prompt hook, snapshot", hook, stdin=payload)

    def changed() -> None:
        _settled(root)  # a background build the last run started ends first: it would share the CPU
        _touch(root)

    case("prompt hook, store changed", hook, before=changed, stdin=payload)
    _settled(root)
    case("background build", rebuild, before=lambda: _touch(root))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,20000,50000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warm-hook", action="store_true", help="only the warm prompt hook, wall and CPU")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, list[tuple[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="ck-bench-scale-") as tmp:
        for size in sizes:
            root = make_sized_store(Path(tmp) / f"s{size}", size)
            write_gitignore(root / ".context")  # as init leaves it: get saves its state only then
            results[size] = (bench_warm_hook if args.warm_hook else bench)(root, args.runs)
            shutil.rmtree(root)
    labels = [label for label, _ in results[sizes[0]]]
    print("| case | " + " | ".join(f"{s:,} entries" for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for i, label in enumerate(labels):
        places = 3 if args.warm_hook else 2  # the warm hook of a small store takes tens of ms
        print(f"| {label} | " + " | ".join(f"{results[s][i][1]:.{places}f} s" for s in sizes) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
