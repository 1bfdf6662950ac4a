"""Old vs new hooks on the same store, same machine, same payloads.

    python benchmarks/bench_old_hooks.py [--runs 25]

Downloads the last published context-keeper hooks (``context-keeper-mcp==0.19.0``) with pip
into a temporary directory (needs the package index), then times its ``session_start.py`` and
``scope_guard.py`` against ours (``hooks/*.py``, ``-S`` launcher form) on a copy of the
example project and on a 2,000-entry synthetic store, with the store unchanged between runs
and with a store change before every run (our hooks then rebuild their derived cache). Median / min wall ms per invocation,
Python start-up included, as Claude Code spawns them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.synthetic import make_sized_store  # noqa: E402

OLD_PACKAGE = "context-keeper-mcp==0.19.0"


def _fetch_old(dest: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", OLD_PACKAGE, "-d", str(dest)],
                   check=True, capture_output=True)
    wheel = next(dest.glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(dest / "old")
    return dest / "old" / "hooks"


def _time(cmd: list[str], payload: bytes, env: dict, runs: int, touch: Path | None = None) -> tuple[float, float]:
    samples = []
    for i in range(runs + 2):
        if touch is not None:
            os.utime(touch)  # a store change: derived caches must be rebuilt in this run
        start = time.perf_counter()
        subprocess.run(cmd, input=payload, capture_output=True, env=env, timeout=60)
        if i >= 2:  # two warm-up runs (page cache, derived caches)
            samples.append(time.perf_counter() - start)
    return round(statistics.median(samples) * 1000, 1), round(min(samples) * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()
    import json

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        old_hooks = _fetch_old(tmp / "download")
        example = tmp / "example"
        shutil.copytree(REPO / "examples" / "demo-project", example)
        big = make_sized_store(tmp / "big", 2000)
        (big / "src" / "app").mkdir(parents=True, exist_ok=True)
        print(f"{'store':<14} {'hook':<36} {'old median/min ms':>18} {'new median/min ms':>18}")
        for label, root, scoped in (("example", example, "src/packwise/labels/printer.py"), ("2000 entries", big, "src/app/x.py")):
            env = {**os.environ, "CLAUDE_PROJECT_DIR": str(root)}
            env.pop("CONTEXT_KEEPER_PROJECT", None)
            start = {"session_id": "bench", "cwd": str(root), "hook_event_name": "SessionStart", "source": "startup"}
            edit = {"session_id": "bench", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Edit",
                    "tool_input": {"file_path": str(root / scoped), "old_string": "a", "new_string": "b"}}
            decisions = root / ".context" / "decisions.json"
            for name, payload, touch in (("session_start", start, None), ("session_start", start, decisions),
                                         ("scope_guard", edit, None), ("scope_guard", edit, decisions)):
                data = json.dumps(payload).encode()
                old = _time([sys.executable, str(old_hooks / f"{name}.py")], data, env, args.runs, touch)
                new = _time([sys.executable, "-S", str(REPO / "hooks" / f"{name}.py")], data, env, args.runs, touch)
                case = name + (" (store just changed)" if touch else "")
                print(f"{label:<14} {case:<36} {old[0]:>10} / {old[1]:<6} {new[0]:>10} / {new[1]:<6}")


if __name__ == "__main__":
    main()
