"""Run hooks the way Claude Code does: a fresh process, a JSON payload on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PAYLOADS = REPO / "tests" / "fixtures" / "hook_payloads"
LAUNCHERS = REPO / "hooks"


def payload(name: str, project: Path, **overrides) -> dict:
    text = (PAYLOADS / f"{name}.json").read_text(encoding="utf-8")
    text = text.replace("{{PROJECT}}", str(project).replace("\\", "\\\\")).replace("{{HOME}}", "/home/dev")
    data = json.loads(text)
    data.update(overrides)
    return data


def hook_env(project: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CONTEXT_KEEPER_PROJECT", "CLAUDE_PROJECT_DIR")}
    if project is not None:
        env["CLAUDE_PROJECT_DIR"] = str(project)
    env.update(extra)
    return env


def run_hook(event_file: str, stdin: bytes | dict | None, *, env: dict[str, str], cwd: Path | None = None,
             site: bool = False) -> subprocess.CompletedProcess:
    """Spawn ``hooks/<event_file>.py`` (``-S`` like the installed launcher wiring)."""
    if isinstance(stdin, dict):
        stdin = json.dumps(stdin).encode("utf-8")
    args = [sys.executable] + ([] if site else ["-S"]) + [str(LAUNCHERS / f"{event_file}.py")]
    return subprocess.run(args, input=stdin or b"", capture_output=True, env=env, cwd=cwd, timeout=60)


def injected(proc: subprocess.CompletedProcess) -> str | None:
    """The additionalContext of a hook run (None when silent); checks the output contract."""
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    if not proc.stdout.strip():
        return None
    proc.stdout.decode("ascii")  # ASCII-escaped JSON: valid UTF-8 on every platform
    data = json.loads(proc.stdout)
    text = data["hookSpecificOutput"]["additionalContext"]
    assert data["additionalContext"] == text
    assert len(text.encode("utf-16-le", "surrogatepass")) // 2 <= 10_000  # the client counts UTF-16 units
    return text
