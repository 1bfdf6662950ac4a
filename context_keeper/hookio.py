"""The hook process boundary: ``context-keeper-hook <event>`` and the ``hooks/*.py`` launchers.

Contract, the same for every event:

- stdin is the client's JSON payload, read defensively: empty, garbage or a non-object means
  there is nothing to act on, so the hook is silent. Missing fields are tolerated.
- stdout is either nothing or exactly one JSON object, written as ASCII-escaped UTF-8 bytes::

      {"hookSpecificOutput": {"hookEventName": E, "additionalContext": S}, "additionalContext": S}

  (Claude Code reads the first; some other clients read the flat key). ``S`` is framed as
  project reference material and never exceeds ``MAX_CHARS``.
- the exit status is always 0. ``run`` is the documented fail-open boundary: any exception a
  handler raises becomes one line in ``.context/hook.log`` (or stderr when no project is
  known) and silence, never a traceback on stdout and never a blocked turn.

Handlers live in ``context_keeper.hooks.<module>`` and expose ``handle(ctx) -> str | None``.
This module imports only ``os``/``sys`` and the lean hook layer at load time; the MCP SDK and
pydantic are never imported on any hook path.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, BinaryIO

# Claude Code spills strings over 10,000 characters to a file. It counts as JavaScript does, in
# UTF-16 units, so a character outside the Basic Multilingual Plane (most emoji) counts twice:
# every size here is measured with js_len.
MAX_CHARS = 9_500
LOG_FILE = "hook.log"
LOG_MAX_BYTES = 512 * 1024
FRAME_OPEN = '<project-memory source="context-keeper">'
FRAME_CLOSE = "</project-memory>"


class Event:
    def __init__(self, name: str, module: str, client_events: tuple[str, ...], launcher: str, doc: str) -> None:
        self.name = name
        self.module = module
        self.client_events = client_events  # first one is the default hookEventName
        self.launcher = launcher
        self.doc = doc


EVENTS: dict[str, Event] = {
    e.name: e
    for e in (
        Event("session-start", "session_start", ("SessionStart",), "session_start.py",
              "project summary, compaction check and one quality note at session start"),
        Event("scope-guard", "scope_guard", ("PreToolUse", "PostToolUse"), "scope_guard.py",
              "constraints and decisions that apply to the file about to be edited"),
        Event("commit-capture-reminder", "commit_capture", ("PostToolUse",), "commit_capture_reminder.py",
              "after a git commit that reads like a decision, note that it is not recorded yet"),
        Event("subagent-start", "subagent_start", ("SubagentStart",), "subagent_start.py",
              "a compact briefing for subagents"),
        Event("user-prompt-submit", "user_prompt", ("UserPromptSubmit",), "user_prompt_submit.py",
              "entries confidently relevant to the prompt, once per session"),
        Event("pre-compact", "pre_compact", ("PreCompact",), "pre_compact.py",
              "snapshot the active and superseded entries before the conversation is compacted"),
        Event("post-compact", "post_compact", ("Stop",), "post_compact.py",
              "compare the store with the snapshot and write the compaction report"),
    )
}

_ALIASES = {
    "SessionStart": "session-start", "PreCompact": "pre-compact", "Stop": "post-compact",
    "SubagentStart": "subagent-start", "UserPromptSubmit": "user-prompt-submit",
    "commit-capture": "commit-capture-reminder",
}


_TOOL_EVENTS = ("PreToolUse", "PostToolUse")  # two of our hooks each: which one, the tool says
_CLIENT_NAMES = {n.lower(): n for n in (*_TOOL_EVENTS, *(k for k in _ALIASES if k[0].isupper()))}


def event_named(name: str | None, payload: Mapping[str, Any] | None = None) -> Event | None:
    """Our event for a command-line name (``scope-guard``, ``scope_guard``, ``SessionStart``,
    ``PreToolUse``...), or — with no name — for the payload's ``hook_event_name``."""
    payload = payload or {}
    client = name.strip() if name else payload.get("hook_event_name")
    if name:  # "pretooluse" typed by hand is PreToolUse, as "SCOPE_GUARD" is scope-guard
        client = _CLIENT_NAMES.get(client.lower(), client)
    if name and client not in _TOOL_EVENTS:
        key = _ALIASES.get(client, client).replace("_", "-").lower()
        if key.endswith(".py"):
            key = key[:-3]
        return EVENTS.get(_ALIASES.get(key, key))
    if client in _TOOL_EVENTS:
        if client == "PostToolUse" and payload.get("tool_name") == "Bash":
            return EVENTS["commit-capture-reminder"]
        return EVENTS["scope-guard"]
    return EVENTS.get(_ALIASES.get(client, "")) if isinstance(client, str) else None


class HookContext:
    """What a handler sees: the payload, the environment, and lazy access to the project."""

    def __init__(self, event: Event, payload: Mapping[str, Any], env: Mapping[str, str]) -> None:
        self.event = event
        self.payload = payload
        self.env = env
        self.root: str | None = None
        self._located = False
        self._cache: dict | None = None
        self._state = None
        # Extra hookSpecificOutput fields a handler sets beside its text (the edit guard's
        # permissionDecision "ask" under scope_guard.confirm_absolute).
        self.decision: dict[str, str] = {}

    def text(self, key: str) -> str:
        value = self.payload.get(key)
        return value if isinstance(value, str) else ""

    @property
    def cwd(self) -> str | None:
        cwd = self.text("cwd")
        return cwd if cwd and os.path.isabs(cwd) else None

    @property
    def context_dir(self) -> str:
        assert self.root is not None
        return os.path.join(self.root, ".context")

    def locate(self) -> bool:
        """Find the project; False when there is no ``.context/``."""
        if not self._located:
            from context_keeper.hooks import cache

            self._located = True
            self.root = cache.locate(self.env, self.cwd, self.event.name)
        return self.root is not None

    @property
    def cache(self) -> dict:
        """The session-start cache (summary, briefing, quality note); after ``locate()``."""
        if self._cache is None:
            from context_keeper.hooks import cache

            assert self.root is not None
            self._cache = cache.summary(self.root)
        return self._cache

    def state(self):
        if self._state is None:
            from context_keeper.hooks.state import SessionState

            self._state = SessionState(self.context_dir, self.payload.get("session_id"))
            if self._state.refused:
                self.log(self._state.refused)
        return self._state

    def log(self, message: str) -> None:
        log_line(self.root, self.event.name, message)


def js_len(text: str) -> int:
    """Length of ``text`` as the client counts it (UTF-16 units)."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def cut_to(text: str, limit: int) -> str:
    """The longest start of ``text`` within ``limit`` UTF-16 units, never half a character."""
    if len(text) <= limit // 2 or js_len(text) <= limit:
        return text
    data = text.encode("utf-16-le", "surrogatepass")[: 2 * limit]
    if data and 0xD8 <= data[-1] <= 0xDB:  # the first half of a surrogate pair
        data = data[:-2]
    return data.decode("utf-16-le", "surrogatepass")


def frame_room(limit: int = MAX_CHARS) -> int:
    """How long a body ``frame`` wraps within ``limit`` without cutting it."""
    return limit - len(FRAME_OPEN) - len(FRAME_CLOSE) - 2


def frame(body: str, limit: int = MAX_CHARS) -> str:
    """Wrap ``body`` (already neutralised text) as project reference material, within ``limit``."""
    room = frame_room(limit)
    if js_len(body) > room:
        note = "\n… (cut to stay within the hook size limit)"
        body = cut_to(body, room - len(note)).rstrip() + note
    return f"{FRAME_OPEN}\n{body}\n{FRAME_CLOSE}"


def output(client_event: str, text: str, decision: Mapping[str, str] | None = None) -> bytes:
    from context_keeper.hooks import leanjson

    text = cut_to(text, MAX_CHARS)
    return (leanjson.dumps({
        "hookSpecificOutput": {"hookEventName": client_event, "additionalContext": text, **(decision or {})},
        "additionalContext": text,
    }) + "\n").encode("ascii")


def log_line(root: str | None, event: str, message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = f"{stamp} {event} {' '.join(str(message).split())[:2000]}\n"
    if root is None:
        try:
            sys.stderr.write(f"context-keeper-hook: {line}")
        except (OSError, ValueError):
            pass
        return
    path = os.path.join(root, ".context", LOG_FILE)
    try:
        if os.path.getsize(path) > LOG_MAX_BYTES:
            os.replace(path, path + ".1")
    except OSError:
        pass
    # Not through a symbolic link: one committed in place of the log (a cloned repository can
    # carry one) would append to wherever it leads. The link is replaced by the log, as the
    # store's other derived files replace theirs.
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    try:
        try:
            fd = os.open(path, flags, 0o644)
        except OSError:
            if not os.path.islink(path):
                raise
            os.unlink(path)
            fd = os.open(path, flags, 0o644)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass


def read_payload(stream: BinaryIO | None) -> dict | None:
    if stream is None:
        return None
    try:
        if stream.isatty():
            return None
        data = stream.read()
    except (OSError, ValueError):
        return None
    if not data or not data.strip():
        return None
    from context_keeper.hooks import leanjson

    try:
        payload = leanjson.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    return payload if isinstance(payload, dict) else None


def std_streams() -> tuple[BinaryIO | None, BinaryIO | None]:
    """The process's stdin and stdout as bytes; None for one it was started without (``<&-``,
    ``>&-``), where Python leaves ``sys.stdin`` / ``sys.stdout`` None."""
    return (sys.stdin.buffer if sys.stdin else None, sys.stdout.buffer if sys.stdout else None)


def run(
    name: str | None,
    stdin: BinaryIO | None,
    stdout: BinaryIO | None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run one hook invocation. Always returns 0 (fail-open)."""
    env = os.environ if env is None else env
    ctx: HookContext | None = None
    try:
        payload = read_payload(stdin)
        event = event_named(name, payload)
        if event is None:
            log_line(None, name or "?", "unknown hook event; expected one of: " + ", ".join(EVENTS))
            return 0
        if payload is None:
            return 0  # nothing (or nothing readable) on stdin: nothing to act on
        if stdout is None:
            # Nothing it says could reach the client; run anyway, a hook would count what it said as
            # shown this session and not say it again.
            return 0
        if name and name.strip() in event.client_events and not isinstance(payload.get("hook_event_name"), str):
            # Run as `hook PostToolUse` with a payload that does not say: the name does.
            payload = {**payload, "hook_event_name": name.strip()}
        ctx = HookContext(event, payload, env)
        module = __import__(f"context_keeper.hooks.{event.module}", fromlist=["handle"])
        text = module.handle(ctx)
        if text:
            client = payload.get("hook_event_name")
            client = client if client in event.client_events else event.client_events[0]
            stdout.write(output(client, text, ctx.decision))
            stdout.flush()
    except Exception as exc:  # the fail-open boundary: a hook must never break the agent's turn
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        at = f" at {os.path.basename(where[0].filename)}:{where[0].lineno}" if where else ""
        log_line(ctx.root if ctx else None, name or "?", f"{type(exc).__name__}: {exc}{at}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Console script ``context-keeper-hook <event>``; reads the payload from stdin."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(_usage())
        return 0
    return run(args[0] if args else None, *std_streams())


def _usage() -> str:
    lines = ["usage: context-keeper-hook <event>  (payload JSON on stdin)", "", "events:"]
    lines += [f"  {e.name:<25} {e.doc}" for e in EVENTS.values()]
    lines += ["", "The client's event names work too (SessionStart, UserPromptSubmit, SubagentStart, PreCompact, Stop,",
              "PreToolUse, PostToolUse). For the two tool events the payload's tool_name picks the hook:",
              "PostToolUse of Bash runs commit-capture-reminder, any other scope-guard."]
    return "\n".join(lines) + "\n"


def register_cli(subparsers: Any) -> None:
    """``context-keeper hook <event>``: the same code path as the console script."""
    import argparse  # here, not at the top: the hook path itself never parses arguments

    parser = subparsers.add_parser("hook", help="run a client hook (payload JSON on stdin)", description=_usage(),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)  # one event per line
    parser.add_argument("event", choices=sorted(EVENTS), help="which hook to run")
    parser.set_defaults(func=lambda args: run(args.event, *std_streams()))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
