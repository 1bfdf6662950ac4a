"""``doctor``'s look at the client wiring: do the programs that run context-keeper still exist?

It reads the project's Claude Code files that ``install`` writes: ``.claude/settings.json`` and
``.claude/settings.local.json`` (hooks) and ``.mcp.json`` (servers). Only context-keeper's own
entries are checked (``install.is_our_command`` / ``install.is_our_server``): another hook or
server, or a command of the person's that runs our hook inside it, is theirs to look after.

A program (and the script a Python runs) named by a path must exist: a relative path is taken
from the project root, where Claude Code runs them, and ``$CLAUDE_PROJECT_DIR`` and ``~`` are
filled in. A bare name must be on PATH. A word with another variable in it cannot be resolved
here and is not reported (a ``$`` in single quotes is no variable).

A hook that both settings files wire runs twice (Claude Code merges only identical commands),
also when one of them is a command of the person's that runs it inside: that is reported too.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from context_keeper import install
from context_keeper.errors import json_mistake

# (file, what it wires, the install command that rewrites it)
FILES = ((".claude/settings.json", "hooks", "context-keeper install"),
         (".claude/settings.local.json", "hooks", "context-keeper install --local"),
         (".mcp.json", "servers", "context-keeper install"))
ON_PATH = ("context-keeper on PATH where Claude Code starts (pipx install / uv tool install, or activate "
           "its venv before starting it)")


def wiring_problems(root: Path, env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``(file relative to root, message)`` for each problem with context-keeper's wiring in the
    project's Claude Code files: a file that cannot be read, or a program it names that is not
    there. Hooks of one file that fail for one reason are reported together."""
    env = os.environ if env is None else env
    out: list[tuple[str, str]] = []
    running: dict[str, list[tuple[str, str]]] = {}  # file -> the (event, hook) its commands run
    for name, kind, rerun in FILES:
        data = _read_json(root / name)
        if isinstance(data, str):
            out.append((name, f"{name} {data}, so context-keeper's wiring in it was not checked, and Claude Code "
                              "cannot read it either: fix it by hand"))
            continue
        if kind == "servers":
            out += [(name, message) for message in _server_problems(name, data, root, env, rerun)]
            continue
        failing: dict[tuple[str, bool], list[tuple[str, str]]] = {}
        for event, _, hook in install.hook_entries(data.get("hooks")):
            command = hook.get("command")
            absent = _hook_absent(command, root, env) if install.is_our_command(command, root) else None
            if absent:
                failing.setdefault(absent, []).append((event, command))
            elif runs := install.hook_run_by(command, root):  # ours that can run here, or a wrapper of the person's
                running.setdefault(name, []).append((event, runs))
        for (reason, exits_2), hooks in failing.items():
            them = "them" if len(hooks) > 1 else "it"
            out.append((name, f"{name}: {reason}, so context-keeper's hook{'s' if len(hooks) > 1 else ''} there "
                              f"cannot run ({_impact(exits_2, [event for event, _ in hooks], them)}): "
                              + "; ".join(f"{event} `{command}`" for event, command in hooks) + ". "
                              + _advice(reason, name, rerun, them)))
    return out + _wired_twice(running)


def _wired_twice(running: dict[str, list[tuple[str, str]]]) -> list[tuple[str, str]]:
    """Claude Code runs the hooks of both settings files (it merges only identical commands), so a
    hook both wire runs twice; reported on the local file, the one of this machine alone."""
    shared, local = (running.get(name, []) for name, _, _ in FILES[:2])
    both = list(dict.fromkeys(key for key in local if key in shared))
    if not both:
        return []
    return [(FILES[1][0], f"{FILES[1][0]} and {FILES[0][0]} both wire context-keeper's "
                          + ", ".join(f"{event} {hook}" for event, hook in both)
                          + " hook" + ("s" if len(both) > 1 else "") + ", so each runs twice (the session-start summary "
                          "injected twice): `context-keeper uninstall --local` removes the ones in "
                          f"{FILES[1][0]}, where the committed ones cover this machine; if those are yours alone, "
                          "`context-keeper uninstall` (without --local) removes them instead")]


# What Claude Code refuses when a hook of that event exits 2.
BLOCKED_BY_EXIT_2 = {"UserPromptSubmit": "prompt", "PreToolUse": "edit", "Stop": "stop", "PreCompact": "compaction"}


def _impact(exits_2: bool, events: list[str], them: str) -> str:
    blocked = list(dict.fromkeys(BLOCKED_BY_EXIT_2[e] for e in events if e in BLOCKED_BY_EXIT_2))
    if not exits_2 or not blocked:
        return f"Claude Code reports a non-blocking hook error and the agent gets nothing from {them}"
    return (f"Python exits 2 when its script is missing, and Claude Code takes exit 2 as a block: every "
            f"{', '.join(blocked)} is refused while {'this hook stays' if them == 'it' else 'these hooks stay'}")


def _read_json(path: Path) -> dict[str, Any] | str:
    """The object in a JSON config file ({} when there is none), or what is wrong with it."""
    from context_keeper.bounded_read import CLIENT_CONFIG_LIMIT, FileTooLarge, NotRegularFile, read_regular

    try:
        # a cloned repository can commit a FIFO, or a link to /dev/zero: neither may hang doctor
        text = read_regular(path, CLIENT_CONFIG_LIMIT).decode("utf-8-sig")
    except FileNotFoundError:
        return {}
    except (NotRegularFile, FileTooLarge) as exc:
        return str(exc.strerror)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    except UnicodeDecodeError as exc:
        return f"is not valid UTF-8 (byte {exc.start + 1})"
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        return f"does not parse as JSON ({json_mistake(exc)})"
    except RecursionError:
        return "does not parse as JSON (nested too deeply)"
    return data if isinstance(data, dict) else "is not a JSON object"


def _server_problems(name: str, data: dict[str, Any], root: Path, env: Mapping[str, str], rerun: str) -> list[str]:
    servers = data.get("mcpServers")
    out = []
    for server, entry in (servers.items() if isinstance(servers, dict) else ()):
        if not install.is_our_server(entry):
            continue
        args = [a for a in entry.get("args") or [] if isinstance(a, str)] if isinstance(entry.get("args"), list) else []
        launcher = args[:1] if args[:1] and args[0].endswith("server.py") else []  # a checkout's server.py
        words = [entry["command"], *launcher]
        reason = next(filter(None, (_absent(word, False, root, env) for word in words)), None)
        if reason:
            shown = " ".join([entry["command"], *args])
            out.append(f"{name}: {reason}, so Claude Code cannot start the server mcpServers.{server} (`{shown}`). "
                       + _advice(reason, name, rerun, "it"))
    return out


def _advice(reason: str, name: str, rerun: str, it: str) -> str:
    if not reason.endswith("is not on PATH"):
        return (f"Re-run `{rerun}` to point {it} at this machine's context-keeper (the path is from a venv that "
                "moved or was deleted, or from another machine)")
    if name == ".claude/settings.local.json":
        return f"Re-run `{rerun}`, which writes this machine's absolute paths, or put {ON_PATH}"
    return (f"Put {ON_PATH}; this file is one a team commits, so its commands name the "
            "programs bare" + (", and `context-keeper install --local` wires hooks for this machine alone"
                               if name == ".claude/settings.json" else ""))


def _hook_absent(command: str, root: Path, env: Mapping[str, str]) -> tuple[str, bool] | None:
    """Why a hook command of ours cannot run here (its program, or the script its Python runs, is
    missing), and whether it then exits 2: Python does for a missing script, unless the command
    carries the guard install now writes after it. None when both are there or cannot be told."""
    words = install.shell_words(command)
    rest = install.interpreter_args([word for word, _ in words])
    script = words[len(words) - len(rest):][:1] if rest and not rest[0].startswith("-") else []
    program = _absent(*words[0], root, env) if words else None
    if program:
        return program, False  # the shell's "not found" is exit 127
    missing = _absent(*script[0], root, env) if script else None
    if missing:
        return missing, not command.rstrip().endswith(install.LAUNCHER_GUARD.strip())
    return None


def _absent(word: str, literal: bool, root: Path, env: Mapping[str, str]) -> str | None:
    """Why the program or script ``word`` cannot be found here; None when it is there or when
    ``word`` holds a variable that cannot be filled in here. ``literal``: the shell expands
    nothing in it (it was in single quotes), so a ``$`` there is just a character."""
    for var in install.PROJECT_VARS if not literal else ():
        word = word.replace(var, str(root))
    home = env.get("HOME") or env.get("USERPROFILE")
    if home and (word == "~" or word.startswith(("~/", "~\\"))):
        word = home + word[1:]
    if ("$" in word and not literal) or "%" in word or word.startswith("~"):
        return None
    if "/" not in word and "\\" not in word:
        return None if shutil.which(word, path=env.get("PATH", os.defpath)) else f"`{word}` is not on PATH"
    path = Path(word) if os.path.isabs(word) else root / word
    return None if path.is_file() else f"{path} does not exist"
