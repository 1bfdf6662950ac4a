"""Wall time per hook invocation, Python start-up included, as Claude Code would spawn them.

    python benchmarks/bench_hooks.py [--runs 40] [--entries 2000] [--style launcher|console|both]

Each case spawns the hook as a fresh process with a recorded-shape payload on stdin and takes
the median (and min) over ``--runs`` runs after two warm-up runs, on a copy of the example
project and on a synthetic store of ``--entries`` entries (benchmarks/synthetic.py).

Styles (see docs/hooks.md):
- ``launcher``: ``<python> -S hooks/<name>.py`` — what ``context-keeper install`` writes from a
  source checkout; ``-S`` skips ``site`` start-up, which the fast path does not need.
- ``console``: the ``context-keeper-hook <event>`` console script (normal ``site`` start-up;
  an editable install adds its import finder to every start).

Cases marked *warm* run with the hook cache valid (the store unchanged since the last hook ran —
the normal case); *cold* changes ``decisions.json``'s mtime before every run (0.5 s after the
previous run, as edits come seconds apart), so the caches derived from it are rebuilt — for the
edit guard on a store whose decisions.json exceeds ``scope_index.DEFER_BYTES``, in a background
process (the row then measures the answer with constraints only; the last row times that
rebuild on its own).
The Python start-up floor is measured too, so the hooks' own share is visible.
"""

from __future__ import annotations

import argparse
import json
import os
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

LAUNCHERS = {
    "session-start": "session_start.py", "scope-guard": "scope_guard.py", "subagent-start": "subagent_start.py",
    "commit-capture-reminder": "commit_capture_reminder.py", "post-compact": "post_compact.py",
    "pre-compact": "pre_compact.py", "user-prompt-submit": "user_prompt_submit.py",
}


def command(style: str, event: str) -> list[str]:
    if style == "launcher":
        return [sys.executable, "-S", str(REPO / "hooks" / LAUNCHERS[event])]
    script = shutil.which("context-keeper-hook") or str(Path(sys.executable).with_name("context-keeper-hook"))
    return [script, event]


def timed(cmd: list[str], payload: bytes | None, env: dict, before=None, runs: int = 40) -> tuple[float, float, bytes]:
    samples = []
    out = b""
    for i in range(runs + 2):
        if before:
            before(i)
        start = time.perf_counter()
        proc = subprocess.run(cmd, input=payload, capture_output=True, env=env)
        elapsed = (time.perf_counter() - start) * 1000
        if proc.returncode != 0:
            raise SystemExit(f"{cmd} exited {proc.returncode}: {proc.stderr.decode()[:500]}")
        out = proc.stdout
        if i >= 2:
            samples.append(elapsed)
    return statistics.median(samples), min(samples), out


def payloads(root: Path, scoped_file: str) -> dict[str, object]:
    base = {"transcript_path": str(root / "t.jsonl"), "cwd": str(root)}
    return {
        "session-start warm": ("session-start", {**base, "hook_event_name": "SessionStart", "source": "startup"}),
        "session-start cold (store changed)": ("session-start", {**base, "hook_event_name": "SessionStart", "source": "startup"}),
        "scope-guard, unscoped file": ("scope-guard", {**base, "hook_event_name": "PreToolUse", "tool_name": "Edit",
                                                        "tool_input": {"file_path": str(root / "NOTES.md"), "old_string": "a", "new_string": "b"}}),
        "scope-guard, scoped file, new session (injects)": ("scope-guard", {**base, "hook_event_name": "PreToolUse", "tool_name": "Write",
                                                        "tool_input": {"file_path": str(root / scoped_file), "content": "x"}}),
        "scope-guard cold (store changed), scoped file, new session": ("scope-guard", {**base, "hook_event_name": "PreToolUse", "tool_name": "Write",
                                                        "tool_input": {"file_path": str(root / scoped_file), "content": "x"}}),
        "scope-guard, scoped file, already shown": ("scope-guard", {**base, "hook_event_name": "PostToolUse", "tool_name": "Edit",
                                                        "tool_input": {"file_path": str(root / scoped_file), "old_string": "a", "new_string": "b"}}),
        "subagent-start warm": ("subagent-start", {**base, "hook_event_name": "SubagentStart", "agent_id": "a1", "agent_type": "Explore"}),
        "commit reminder, non-commit command": ("commit-capture-reminder", {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                                                        "tool_input": {"command": "ls -la"}, "tool_response": {"stdout": ""}}),
        "post-compact (Stop), nothing pending": ("post-compact", {**base, "hook_event_name": "Stop", "stop_hook_active": False}),
        "user-prompt-submit": ("user-prompt-submit", {**base, "hook_event_name": "UserPromptSubmit",
                                                      "prompt": "how do we retry carrier API calls when they time out?"}),
        "user-prompt-submit cold (store changed outside the server)": ("user-prompt-submit", {
            **base, "hook_event_name": "UserPromptSubmit", "prompt": "how do we retry carrier API calls when they time out?"}),
    }


def bench_store(label: str, root: Path, scoped_file: str, style: str, runs: int) -> list[tuple[str, str, float, float]]:
    env = {k: v for k, v in os.environ.items() if k not in ("CONTEXT_KEEPER_PROJECT", "CLAUDE_PROJECT_DIR")}
    env["CLAUDE_PROJECT_DIR"] = str(root)
    rows = []
    decisions = root / ".context" / "decisions.json"
    for name, (event, payload) in payloads(root, scoped_file).items():
        cmd = command(style, event)
        cold, new_session = "cold" in name, "new session" in name
        payload["session_id"] = "bench-fixed"

        def before(i, p=payload, path=decisions, cold=cold, new_session=new_session):
            if cold:  # a hand edit: the store file changed behind every cache's back
                # Edits come seconds apart: let the previous run's background index rebuild (large
                # stores) finish, so it does not compete with this run for the CPU.
                time.sleep(0.5)
                st = path.stat()
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
            if new_session:
                p["session_id"] = f"bench-new-{time.monotonic_ns()}"
        if "already shown" in name:
            subprocess.run(cmd, input=json.dumps({**payload, "hook_event_name": "PreToolUse"}).encode(), capture_output=True, env=env)
        n = max(5, runs // 4) if event == "user-prompt-submit" or cold else runs
        if new_session:  # each sample is the first call of its session (and must inject)
            samples = []
            for i in range(n + 2):
                before(i)
                start = time.perf_counter()
                proc = subprocess.run(cmd, input=json.dumps(payload).encode(), capture_output=True, env=env)
                elapsed = (time.perf_counter() - start) * 1000
                if proc.returncode != 0 or b"additionalContext" not in proc.stdout:
                    raise SystemExit(f"{name}: expected an injection, got {proc.stdout[:200]!r} {proc.stderr[:300]!r}")
                if i >= 2:
                    samples.append(elapsed)
            med, low = statistics.median(samples), min(samples)
        else:
            med, low, _ = timed(cmd, json.dumps(payload).encode(), env, before=before if cold else None, runs=n)
        rows.append((label, name, med, low))
    # clean up per-run session files so the store copy does not grow
    shutil.rmtree(root / ".context" / "sessions", ignore_errors=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--style", choices=["launcher", "console", "both"], default="launcher")
    args = parser.parse_args()
    styles = ["launcher", "console"] if args.style == "both" else [args.style]

    rows = []
    with tempfile.TemporaryDirectory(prefix="ck-bench-hooks-") as tmp:
        example = Path(tmp) / "packwise"
        shutil.copytree(REPO / "examples" / "demo-project", example)
        synthetic = make_sized_store(Path(tmp) / "synthetic", args.entries)
        for style in styles:
            floor = [sys.executable, "-S", "-c", "pass"] if style == "launcher" else [sys.executable, "-c", "pass"]
            med, low, _ = timed(floor, None, dict(os.environ), runs=args.runs)
            rows.append((f"[{style}]", "python start-up floor (" + " ".join(Path(floor[0]).name if i == 0 else a for i, a in enumerate(floor)) + ")", med, low))
            rows += [(f"[{style}] {lab}", n, m, lo) for lab, n, m, lo in
                     bench_store("example store", example, "src/packwise/labels/printer.py", style, args.runs)]
            rows += [(f"[{style}] {lab}", n, m, lo) for lab, n, m, lo in
                     bench_store(f"{args.entries}-entry store", synthetic, "src/app/main.py", style, args.runs)]
        # What the background process does after a large decisions.json changed (same work the
        # edit guard does inline below DEFER_BYTES): a fresh interpreter rebuilding the index.
        rebuild = [sys.executable, "-S", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                   "from context_keeper.hooks.scope_index import load; load(sys.argv[2], defer=False)",
                   str(REPO), str(synthetic)]
        decisions = synthetic / ".context" / "decisions.json"

        def touch(i, path=decisions):
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        med, low, _ = timed(rebuild, None, dict(os.environ), before=touch, runs=max(5, args.runs // 4))
        rows.append((f"{args.entries}-entry store", "edit-guard index rebuild after decisions.json changed (background process)", med, low))

    width = max(len(r[0]) + len(r[1]) for r in rows) + 4
    print(f"{'case':<{width}} {'median ms':>10} {'min ms':>8}")
    for label, name, med, low in rows:
        print(f"{label + ' · ' + name:<{width}} {med:>10.1f} {low:>8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
