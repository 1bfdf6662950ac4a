"""``context-keeper install`` / ``uninstall``: wire the hooks and register the server in a client.

Claude Code (the default client) gets both: the hook wiring merged into
``<project>/.claude/settings.json`` (or ``~/.claude/settings.json`` with ``--user``) and the
server in ``<project>/.mcp.json``. Cursor, VS Code, Windsurf, Gemini CLI and Codex CLI get the
server registration, printed by default and merged into their config file with ``--write``.

Every write is a merge: other servers, other hooks and unknown keys stay as they were; an entry
is "ours" only when its command's program is context-keeper's (see ``is_our_command``): a
command of the person's that runs our hook inside it is theirs, and install adds no second copy
of that hook beside it (``wrapped_hook``). Re-running is a no-op (a matcher the person changed
on one of our entries stays: ``kept_matchers``), an older wiring of ours (the
``python .../hooks/<name>.py`` style of context-keeper 0.x) is replaced rather than duplicated,
a timestamped backup of each file written is kept (a project file's out of the working tree, a
user-level file's beside it: see ``backup_base``),
``--dry-run`` prints a unified diff and writes nothing, and ``uninstall`` removes only our
entries. A server entry that holds keys install does not write was the user's before install
merged into it, so uninstall leaves it (see ``merge_server``). A config file that does not parse
is refused, never overwritten.

Where the commands point (``--command-style auto``, the default):

- A project file a team commits (``.claude/settings.json``, ``.mcp.json``, ``.cursor/mcp.json``,
  ``.vscode/mcp.json``, ``.gemini/settings.json``) names the programs bare (``context-keeper-hook
  <event>``, ``context-keeper serve``) when PATH has them, so every teammate's install writes the
  same bytes. Without them on PATH it gets absolute paths, and install says so — unless the file
  already names them bare (a teammate's install): that stays, with a note on what to do here.
- ``--local`` (Claude Code) puts the hooks in ``.claude/settings.local.json``, this machine's file
  that stays out of git, leaves ``.mcp.json`` alone and prints the ``claude mcp add -s local``
  command for the server.
- User-level files (``--user``, Windsurf, Codex) get absolute paths: only this machine reads them,
  and the wiring then works from a shell that does not have the install's ``bin`` on PATH.

Older forms (absolute console scripts, a teammate's launcher path, bare names) are recognised as
ours and replaced.

Hook command styles (``--command-style``):

- ``portable`` ``context-keeper-hook <event>`` — the program found on PATH when the hook runs.
- ``console``  ``"<bin>/context-keeper-hook" <event>`` — the console script of this install.
- ``launcher`` ``"<python>" -S "<checkout>/hooks/<name>.py" || exit 1`` — from a source checkout;
  ``-S`` skips ``site`` start-up (an editable install's import finder alone costs ~15 ms per hook);
  ``|| exit 1`` turns Python's exit 2 for a checkout that moved into a non-blocking error.
- ``module``   ``"<python>" -m context_keeper.hookio <event>`` — works from any install.
- ``auto`` (default): ``portable`` for a committed project file as above; otherwise ``launcher``
  when running from a checkout, else ``console`` when the script can be found, else ``module``.

Paths are written in double quotes, or in single quotes when a shell would read something in them
(a ``$``, a backquote, a ``"``): see ``_quoted``.
"""

from __future__ import annotations

import argparse
import difflib
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_keeper.errors import InvalidInput, StoreError, json_mistake
from context_keeper.hookio import EVENTS, event_named
from context_keeper.json_layout import rewrite

SERVER_NAME = "context-keeper"
PACKAGE_PARENT = Path(__file__).resolve().parent.parent
LEGACY_LAUNCHERS = ("constraint_reinject.py",)  # 0.x hook names that may still be wired
EDIT_TOOLS = "Edit|Write|MultiEdit|NotebookEdit"

# (client event, matcher or None, our event, timeout seconds)
CLAUDE_HOOKS: tuple[tuple[str, str | None, str, int], ...] = (
    ("SessionStart", None, "session-start", 30),
    ("UserPromptSubmit", None, "user-prompt-submit", 20),
    ("PreToolUse", EDIT_TOOLS, "scope-guard", 10),
    ("PostToolUse", EDIT_TOOLS, "scope-guard", 10),
    ("PostToolUse", "Bash", "commit-capture-reminder", 10),
    ("SubagentStart", None, "subagent-start", 10),
    ("PreCompact", None, "pre-compact", 60),
    ("Stop", None, "post-compact", 30),
)
CLIENTS = ("claude", "cursor", "vscode", "windsurf", "gemini", "codex")
USER_LEVEL_CLIENTS = ("windsurf", "codex")  # their configs live in the home directory only


# ------------------------------------------------------------------ commands


def checkout_launcher(event: str) -> Path | None:
    """The ``hooks/<name>.py`` launcher when the package runs from a source checkout."""
    path = PACKAGE_PARENT / "hooks" / EVENTS[event].launcher
    return path if path.is_file() else None


def console_script(name: str) -> str | None:
    """Absolute path of the console script ``name``, or None when there is none.

    The one on PATH (what the person installing runs), else the one beside the running
    interpreter (``/venv/bin/context-keeper install`` from a shell without the venv activated).
    Symlinks are not followed: a venv's ``python`` is a symlink to the base interpreter, and the
    link, not its target, is what carries the venv.
    """
    found = shutil.which(name)
    if not found and sys.executable:
        found = shutil.which(name, path=str(Path(sys.executable).parent))
    return os.path.abspath(found) if found else None


# Python exits 2 when the script it is given is missing (a checkout that moved), and Claude Code
# takes exit 2 from a hook as "block": every prompt, edit, stop and compaction would be refused.
# `||` and `exit` mean the same in sh, bash, zsh, fish and cmd.exe (`true` is not in cmd.exe).
LAUNCHER_GUARD = " || exit 1"


def _python(python: str | None) -> str:
    return os.path.abspath(python or sys.executable)


# What a POSIX shell (Claude Code runs hook commands with one: they use $CLAUDE_PROJECT_DIR) still
# reads inside double quotes: `$`, a backquote, `"`, and a backslash before one of those, another
# backslash or the end; `!` is history expansion in an interactive bash (the printed commands).
_SPECIAL_IN_DOUBLE_QUOTES = re.compile(r'[$`"!]|\\(?=[$`"\\\n]|$)')


def _quoted(word: str) -> str:
    """``word`` quoted for a POSIX shell so that it reaches the program as it is: in double quotes
    (the form every earlier install wrote) when nothing in it is special there, otherwise in single
    quotes, each ``'`` in it written ``'\\''``."""
    if not _SPECIAL_IN_DOUBLE_QUOTES.search(word):
        return f'"{word}"'
    return "'" + word.replace("'", "'\\''") + "'"


def _shell_word(word: str) -> str:
    """``word`` as typed in a shell command to paste: bare when the shell would read it as it is."""
    return _quoted(word) if not word or re.search(r"[^\w@%+=:,./-]", word) else word


def resolve_style(style: str) -> str:
    if style != "auto":
        return style
    if checkout_launcher("session-start") is not None:
        return "launcher"
    if console_script("context-keeper-hook"):
        return "console"
    return "module"


def hook_command(event: str, style: str, project: Path | None = None, python: str | None = None,
                 script: str | None = None) -> str:
    python = _python(python)
    if style == "portable":
        return f"context-keeper-hook {event}"
    if style == "console":
        script = script or console_script("context-keeper-hook")
        if script is None:
            raise InvalidInput("--command-style console: the context-keeper-hook script was found neither beside "
                               f"{python} nor on PATH; use module", field="command_style")
        return f"{_quoted(script)} {event}"
    if style == "launcher":
        launcher = checkout_launcher(event)
        if launcher is None:
            raise InvalidInput("--command-style launcher needs a source checkout with hooks/*.py; "
                               "use console or module", field="command_style")
        if project is not None and launcher.parent.parent == project.resolve():
            where = f'"$CLAUDE_PROJECT_DIR/hooks/{launcher.name}"'  # the variable expands in double quotes
        else:
            where = _quoted(str(launcher))
        return f"{_quoted(python)} -S {where}{LAUNCHER_GUARD}"
    if style == "module":
        return f'{_quoted(python)} -m context_keeper.hookio {event}'
    raise InvalidInput(f"unknown command style {style!r}: use auto, portable, console, launcher or module",
                       field="command_style")


def server_spec(style: str, python: str | None = None, script: str | None = None) -> dict[str, Any]:
    """How a client starts the server; ``command`` is an absolute path except in the portable style."""
    if style == "portable":
        return {"command": SERVER_NAME, "args": ["serve"]}
    if style != "module":
        script = script or console_script("context-keeper")
        if script is not None:
            return {"command": script, "args": ["serve"]}
    return {"command": _python(python), "args": ["-m", "context_keeper", "serve"]}


_OUR_NAMES = tuple(e.launcher for e in EVENTS.values()) + LEGACY_LAUNCHERS
_OUR_MARKERS = ("context_keeper", "context-keeper", "Context Keeper")
# How each launcher in hooks/ begins its docstring (the 0.x name kept, and this version's): a
# script of the person's that only mentions context-keeper does not begin so.
_LAUNCHER_DOCSTRINGS = ('"""context-keeper hook launcher (', '"""context-keeper 0.x hook name kept ')
# A word as ``_quoted`` writes it: in double quotes, or in single quotes with ``'\''`` for a quote.
_QUOTED_WORD = r"""(?:"[^"]+"|'[^']*(?:'\\''[^']*)*')"""
# The launcher form exactly as install writes it. A committed file can carry it from a teammate's
# machine, where the checkout path does not exist here to be checked for our markers.
_WRITTEN_LAUNCHER = re.compile(rf"{_QUOTED_WORD} -S (?P<script>{_QUOTED_WORD})(?:{re.escape(LAUNCHER_GUARD)})?")
# Compared with ``our_program``'s answer, which drops the case and a ``.exe``: on Windows
# ``shutil.which`` gives the extension as PATHEXT spells it (``.EXE`` by default) and the file
# system ignores case, so ``Context-Keeper-Hook.EXE`` is the same program.
_HOOK_PROGRAMS = ("context-keeper-hook",)
_CLI_PROGRAMS = ("context-keeper",)
_PYTHON = re.compile(r"(?:python|pythonw|py)(?:\d+(?:\.\d+)*)?(?:\.exe)?", re.IGNORECASE)
PROJECT_VARS = ("${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR", "%CLAUDE_PROJECT_DIR%")
# A word is a run of pieces with no space between them: 'single-quoted', "double-quoted", an
# escaped quote (the \' of '\''), other characters.
_WORD = re.compile(r"""(?:'[^']*'|"[^"]*"|\\['"]|[^\s'"])+""")
_PIECE = re.compile(r"""'([^']*)'|"([^"]*)"|\\(['"])|((?:[^'"\\]|\\(?!['"]))+)""")


def shell_words(command: str) -> list[tuple[str, bool]]:
    """``(word, literal)`` for each word of a command line, quotes taken off; ``literal``: it has
    no ``$`` the shell would expand (one inside single quotes is just a character). Backslashes
    are not escapes, except before a quote: a Windows path keeps them (the forms install writes
    quote every path instead)."""
    out = []
    for word in _WORD.findall(command):
        text, literal = [], True
        for single, double, escaped, bare in _PIECE.findall(word):
            if single or (not double and not escaped and not bare):
                text.append(single)
                continue
            piece = double or escaped or bare
            literal = literal and "$" not in piece
            text.append(piece)
        out.append(("".join(text), literal))
    return out


def command_words(command: str) -> list[str]:
    """The words of a command line, quotes taken off (see ``shell_words``)."""
    return [word for word, _ in shell_words(command)]


def program_name(word: str) -> str:
    """The file name of a program word: ``/venv/bin/context-keeper-hook`` -> ``context-keeper-hook``."""
    return word.replace("\\", "/").rsplit("/", 1)[-1]


def our_program(word: str) -> str:
    """The program name of a word as it is compared with ours: lower case, without a ``.exe``
    (``C:\\venv\\Scripts\\context-keeper-hook.EXE`` -> ``context-keeper-hook``)."""
    name = program_name(word).lower()
    return name[:-len(".exe")] if name.endswith(".exe") else name


def interpreter_args(words: list[str]) -> list[str] | None:
    """What a Python interpreter (the first word) runs: the words after its own options; None when
    the program is not Python."""
    if not words or not _PYTHON.fullmatch(program_name(words[0])):
        return None
    rest = words[1:]
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c", "-"):
        rest = rest[2 if rest[0] in ("-X", "-W") else 1:]
    return rest


def _launcher_path(word: str, project: Path | None) -> str | None:
    """``word`` with ``$CLAUDE_PROJECT_DIR`` filled in, when it names a file with one of our hook
    names in a ``hooks/`` folder; else None."""
    norm = word.strip().replace("\\", "/")
    if program_name(norm) not in _OUR_NAMES or "hooks/" not in norm:
        return None
    for var in PROJECT_VARS:
        if var in norm and project is not None:
            norm = norm.replace(var, str(project))
    return norm


def _is_our_launcher(word: str, project: Path | None) -> bool:
    """Does ``word`` name one of our ``hooks/<name>.py`` launchers? One that exists here must begin
    as ours do (the user may have a script of that name: see ``_launcher_head``); one that does not
    needs our markers in its path."""
    norm = _launcher_path(word, project)
    if norm is None:
        return False
    head = _launcher_head(norm)
    if head is not None:
        return any(line.startswith(_LAUNCHER_DOCSTRINGS) for line in head.splitlines()[:3])
    return any(marker in norm for marker in _OUR_MARKERS)


def _launcher_head(path: str) -> str | None:
    """The text of the file at ``path``; ``""`` for one that cannot be a launcher of ours (a FIFO, a
    file far larger than ours), None when there is none here or it cannot be read."""
    from context_keeper.bounded_read import FileTooLarge, NotRegularFile, read_regular

    try:
        return read_regular(path, 64 * 1024).decode("utf-8", "replace")
    except (FileTooLarge, NotRegularFile, IsADirectoryError):
        return ""
    except OSError:
        return None


def is_our_command(command: Any, project: Path | None = None) -> bool:
    """Is a hook command context-keeper's own: one whose program, the first word (bare or a path,
    quoted or not), is ``context-keeper-hook``, ``context-keeper hook``, a Python running
    ``-m context_keeper.hookio`` or one of our ``hooks/<name>.py`` launchers (this version's or
    0.x's), with nothing after the hook's own arguments (but the ``LAUNCHER_GUARD`` install
    writes after a launcher)?

    A command of the person's that runs our hook inside it (``bash -lc '. venv/bin/activate &&
    context-keeper-hook session-start'``, ``with-env.sh context-keeper-hook session-start``,
    ``context-keeper-hook session-start || true``) is theirs: install and uninstall leave it
    (see ``wrapped_hook``)."""
    if not isinstance(command, str):
        return False
    words = command_words(command)
    if not words:
        return False
    program = our_program(words[0])
    if program in _HOOK_PROGRAMS:
        return len(words) <= 2  # with no event named, the hook takes it from the payload
    if program in _CLI_PROGRAMS:
        return words[1:2] == ["hook"] and len(words) <= 3
    if _is_written_launcher(command):
        return True
    rest = interpreter_args(words)
    if rest is not None and rest[:2] == ["-m", "context_keeper.hookio"]:
        return len(rest) <= 3
    script = words if rest is None else rest
    return len(script) == 1 and _is_our_launcher(script[0], project)


def _is_written_launcher(command: str) -> bool:
    """Is ``command`` the launcher form as install writes it, running a ``hooks/<our name>`` file?"""
    match = _WRITTEN_LAUNCHER.fullmatch(command.strip())
    script = command_words(match.group("script"))[0].replace("\\", "/") if match else ""
    return program_name(script) in _OUR_NAMES and script.endswith("/hooks/" + program_name(script))


def hook_run_by(command: Any, project: Path | None = None) -> str | None:
    """The context-keeper hook a command runs (``session-start``, ...), whether it is ours or the
    person's command that runs it inside; ``""`` when it runs one but which cannot be told, None
    when it shows no sign of running one."""
    if not isinstance(command, str):
        return None
    ours = is_our_command(command, project)
    # The words of quoted words too (``bash -lc '...'``), split at the shell's command separators.
    tokens = [t for word in command_words(command) for part in re.split(r"[;&|()`]", word)
              for t in command_words(part)]
    for i, token in enumerate(tokens):
        name = program_name(token)
        if our_program(token) in _HOOK_PROGRAMS or token == "context_keeper.hookio":
            given = tokens[i + 1:i + 2]
        elif our_program(token) in _CLI_PROGRAMS and tokens[i + 1:i + 2] == ["hook"]:
            given = tokens[i + 2:i + 3]
        elif _is_our_launcher(token, project) or (ours and _launcher_path(token, project) is not None):
            given = [name]
        else:
            continue
        event = event_named(given[0]) if given else None
        return event.name if event is not None else ""
    return None


def wrapped_hook(command: Any, project: Path | None = None) -> str | None:
    """For the person's own command that seems to run our hook inside it (not ``is_our_command``),
    the hook it runs (``""``: which cannot be told); None for any other command."""
    return None if is_our_command(command, project) else hook_run_by(command, project)


def unconfirmed_old_hooks(settings: dict[str, Any], project: Path | None = None) -> list[tuple[str, str, str]]:
    """``(event, command, why)`` of each hook that runs a file with one of our hook names from a
    ``hooks/`` folder but could not be confirmed as ours: a 0.x wiring from a teammate's checkout,
    or the user's own script with the same name. Install leaves these, so it names them."""
    return [(event, hook["command"], why) for event, _, hook in hook_entries(settings.get("hooks"))
            if isinstance(hook.get("command"), str) and (why := _unconfirmed_launcher(hook["command"], project))
            and hook_run_by(hook["command"], project) is None]


def _unconfirmed_launcher(command: str, project: Path | None) -> str | None:
    """Why a ``hooks/<one of our names>`` file that ``command`` runs could not be confirmed as ours:
    it does not exist here (and its path has no marker of ours), or it mentions context-keeper but
    does not begin as our launchers do. None when the command runs no such file, or one that is
    plainly the user's own (it never mentions us) or ours."""
    why = None
    for token in command.replace("'", '"').split('"') + command.split():  # quoted parts, then words
        norm = _launcher_path(token.strip().strip('"'), project)
        if norm is None:
            continue
        head = _launcher_head(norm)
        if head is None:
            why = why or "its path does not exist here"
        elif any(marker in head[:4000] for marker in _OUR_MARKERS) and not _is_our_launcher(norm, None):
            return "it mentions context-keeper but is not a launcher context-keeper ships"
        else:
            return None
    return why


def hook_entries(hooks: Any) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(event, group, hook)`` for each hook entry of a settings file's ``"hooks"`` object, skipping
    shapes Claude Code does not read."""
    for event, groups in (hooks.items() if isinstance(hooks, dict) else ()):
        for group in groups if isinstance(groups, list) else ():
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else ():
                if isinstance(hook, dict):
                    yield event, group, hook


# ------------------------------------------------------------------ merging


def merge_claude_hooks(settings: dict[str, Any], desired: Sequence[tuple[str, str | None, str, int]],
                       project: Path | None = None) -> dict[str, Any]:
    """``settings`` with exactly ``desired`` as our hook entries; everything else untouched.

    ``desired`` items are (client event, matcher, command, timeout); an empty list uninstalls. An
    entry of ours for the same event and hook takes each one's place, keeping a matcher the person
    changed on it (``kept_matchers``) unless it is a 0.x launcher; one is not added where the
    person's own command already runs that hook under that event (see ``wrapped_hook``).
    Raises ``StoreError`` (and changes nothing) when ``hooks``, or an event we must add to, is not
    of the shape Claude Code reads: guessing how to merge into it could lose the user's entries.
    That is a file to fix by hand, as one that does not parse is, and exits as one does.
    """
    settings = json.loads(json.dumps(settings))  # deep copy, JSON types only
    hooks = settings.get("hooks")
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, dict):
        raise StoreError('"hooks" in the settings file is not an object; fix it by hand first')
    for event in dict.fromkeys(event for event, *_ in desired):
        if event in hooks and not isinstance(hooks[event], list):
            found = _json_kind(hooks[event])
            raise StoreError(
                f'"hooks.{event}" is {found}; Claude Code expects a list of groups, '
                f'e.g. "{event}": [{{"matcher": "", "hooks": [{{"type": "command", "command": "..."}}]}}]. '
                "Fix it by hand first (nothing was written)")
    # Each wanted hook is matched to an entry of ours by event and hook, not by matcher, so that a
    # matcher the person changed on it (the edit guard narrowed to Edit|Write) stays. A wanted
    # command not in the file yet takes the place of the old one: appending it would move the
    # event to the end of "hooks" (its groups emptied and re-added), a large diff for a committed
    # file that only changed commands.
    slots = {_slot(event, command, project): (matcher or "", command, timeout)
             for event, matcher, command, timeout in desired}
    ours = [(event, g, h) for event, g, h in hook_entries(hooks) if is_our_command(h.get("command"), project)]
    passes: tuple[Callable[[str, str, str, str], bool], ...] = (
        lambda matcher, command, want_matcher, want_command: (matcher, command) == (want_matcher, want_command),
        lambda matcher, command, want_matcher, _: matcher != want_matcher and _current_form(command),
        lambda matcher, _, want_matcher, __: matcher == want_matcher,  # an older form of ours
    )
    keeper: dict[tuple[str, str], Any] = {}
    for fits in passes:
        for event, group, hook in ours:
            slot = _slot(event, hook["command"], project)
            if slot in slots and slot not in keeper and fits(group.get("matcher") or "", hook["command"],
                                                             *slots[slot][:2]):
                keeper[slot] = hook
    # A hook the person's own command already runs under that event (a wrapper that activates a
    # venv first, say) is not added beside it: both would run.
    wrapped = {(event, runs) for event, _, h in hook_entries(hooks) if (runs := wrapped_hook(h.get("command"), project))}
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        new_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                new_groups.append(group)
                continue
            kept = []
            for hook in inner:
                command = hook.get("command") if isinstance(hook, dict) else None
                if not is_our_command(command, project):
                    kept.append(hook)
                    continue
                slot = _slot(event, command, project)
                if keeper.get(slot) is not hook:
                    continue  # a second copy, an old form in another group, or a hook no longer wired
                _, wanted, timeout = slots[slot]
                kept.append(hook if command == wanted else
                            {**hook, "type": "command", "command": wanted, "timeout": timeout})
            if kept or not inner:
                new_groups.append({**group, "hooks": kept})
        if new_groups or not groups:
            hooks[event] = new_groups
        else:
            del hooks[event]
    for event, matcher, command, timeout in desired:
        slot = _slot(event, command, project)
        if slot in keeper or slot in wrapped:
            continue
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
        keeper[slot] = group["hooks"][0]
        hooks.setdefault(event, []).append(group)
    if hooks:
        settings["hooks"] = hooks
    else:
        settings.pop("hooks", None)
    return settings


def _json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words: ``an object``, ``null``, ``a string``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), "a number")


def _slot(event: str, command: str, project: Path | None) -> tuple[str, str]:
    """What a hook entry of ours is for: its client event and the hook it runs."""
    return event, hook_run_by(command, project) or command


def _current_form(command: str) -> bool:
    """Is a command of ours in a form this installer writes (in any style), rather than a 0.x
    launcher wired by hand from that version's README, whose matchers were that README's?"""
    words = command_words(command)
    rest = interpreter_args(words)
    return (our_program(words[0]) in _HOOK_PROGRAMS + _CLI_PROGRAMS
            or _is_written_launcher(command)
            or (rest is not None and rest[:2] == ["-m", "context_keeper.hookio"]))


def kept_matchers(settings: dict[str, Any], desired: Sequence[tuple[str, str | None, str, int]],
                  project: Path | None = None) -> list[tuple[str, str, str, str]]:
    """``(event, hook, matcher in the file, matcher install writes)`` for each hook entry of ours in
    ``settings`` (as merged) whose group has a matcher other than the one install writes: one the
    person changed, which ``merge_claude_hooks`` keeps."""
    wanted = {_slot(event, command, project): matcher or "" for event, matcher, command, _ in desired}
    out = []
    for event, group, hook in hook_entries(settings.get("hooks")):
        if not is_our_command(hook.get("command"), project):
            continue
        slot = _slot(event, hook["command"], project)
        if slot in wanted and (group.get("matcher") or "") != wanted[slot]:
            out.append((event, slot[1], group.get("matcher") or "", wanted[slot]))
    return out


def _matcher_shown(matcher: str) -> str:
    return json.dumps(matcher) if matcher else "no matcher (every occurrence of the event)"


def is_our_server(entry: Any) -> bool:
    """Does a server entry start context-keeper's stdio server, from any install's path and in any
    style install writes (``<bin>/context-keeper serve``, ``python -m context_keeper serve``, a
    checkout's ``server.py``)? A remote entry (``url``, ``serverUrl``, ``httpUrl``, a ``type``
    other than stdio) or another program under our name is the user's own server."""
    if not isinstance(entry, dict) or any(k in entry for k in ("url", "serverUrl", "httpUrl")):
        return False
    if entry.get("type", "stdio") != "stdio" or not isinstance(entry.get("command"), str):
        return False
    args = entry.get("args") if isinstance(entry.get("args"), list) else []
    if our_program(entry["command"]) in _CLI_PROGRAMS:
        return True
    if args[:2] == ["-m", "context_keeper"]:
        return True
    launcher = args[0].replace("\\", "/") if args and isinstance(args[0], str) else ""
    return launcher.rsplit("/", 1)[-1] == "server.py" and (
        any(marker in launcher for marker in _OUR_MARKERS) or _runs_our_server(Path(launcher)))


def _runs_our_server(path: Path) -> bool:
    try:
        return "context_keeper" in (_launcher_head(str(path)) or "")[:4000]
    except OSError:
        return False


def _foreign_server_refusal(where: str, entry: Any, spec: dict[str, Any]) -> str:
    return (f"{where} holds a server that is not context-keeper's stdio server: {json.dumps(entry)}; install "
            f"would replace it with {json.dumps(spec)}. Nothing was written: rename or remove that entry, or "
            "pass --force to replace it")


def user_keys(entry: Any, spec: dict[str, Any]) -> list[str]:
    """The keys of our server entry that install does not write: the user's (their ``env``, ``cwd``,
    a timeout). ``command`` and ``args`` are ours in any form (install rewrites them); any other key
    is ours only while it holds exactly what install writes there."""
    if not isinstance(entry, dict):
        return []
    return [k for k, v in entry.items() if k not in ("command", "args") and not (k in spec and v == spec[k])]


def merge_server(config: dict[str, Any], key: str, spec: dict[str, Any], *, remove: bool = False,
                 force: bool = False) -> dict[str, Any]:
    """Our server ``spec`` added under ``config[key]``, or with ``remove`` taken out again.

    Install merges into an entry of ours already there, keeping the user's keys (and the variables
    of their ``env``). Uninstall removes the entry only when it holds nothing but what install
    writes (``spec``); one that also holds keys of the user's was theirs before install, so it
    stays. An entry under our name that is not ours (``is_our_server``) stays on uninstall, and on
    install raises ``InvalidInput`` unless ``force`` replaces it.
    """
    config = json.loads(json.dumps(config))
    servers = config.get(key)
    if servers is None:
        servers = {}
    if not isinstance(servers, dict):
        raise StoreError(f'"{key}" in the config file is not an object; fix it by hand first')
    existing = servers.get(SERVER_NAME)
    foreign = existing is not None and not is_our_server(existing)
    if foreign and not remove and not force:
        raise InvalidInput(_foreign_server_refusal(f"{key}.{SERVER_NAME}", existing, spec), field=key)
    if remove:
        if not foreign and not user_keys(existing, spec):
            servers.pop(SERVER_NAME, None)
    elif isinstance(existing, dict) and not foreign:
        merged = {**existing, **spec}
        if isinstance(existing.get("env"), dict) and isinstance(spec.get("env"), dict):
            # A variable the user set wins (a CONTEXT_KEEPER_PROJECT naming one project of a
            # monorepo): install only adds the ones missing.
            merged["env"] = {**existing["env"], **{k: v for k, v in spec["env"].items() if k not in existing["env"]}}
        servers[SERVER_NAME] = merged
    else:
        servers[SERVER_NAME] = spec
    if servers:
        config[key] = servers
    else:
        config.pop(key, None)
    return config


def _toml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _codex_spec_lines(spec: dict[str, Any]) -> list[str]:
    lines = [f"command = {_toml_str(spec['command'])}",
             "args = [" + ", ".join(_toml_str(a) for a in spec.get("args", [])) + "]"]
    if spec.get("env"):
        lines.append("env = { " + ", ".join(f"{k} = {_toml_str(v)}" for k, v in spec["env"].items()) + " }")
    return lines


def codex_block(spec: dict[str, Any]) -> str:
    return "\n".join([f"[mcp_servers.{SERVER_NAME}]", *_codex_spec_lines(spec)]) + "\n"


# A TOML key part: bare, "basic" (with escapes) or 'literal'.
_TOML_KEY_PART = re.compile(r"""\s*(?:([A-Za-z0-9_-]+)|"((?:[^"\\]|\\.)*)"|'([^']*)')\s*""")


def _toml_key(text: str) -> tuple[str, ...] | None:
    """The parts of a dotted TOML key (``mcp_servers."context-keeper"`` -> two parts), or None."""
    parts = []
    pos = 0
    while True:
        match = _TOML_KEY_PART.match(text, pos)
        if not match:
            return None
        bare, basic, literal = match.groups()
        if basic is not None:
            try:
                basic = json.loads(f'"{basic}"')
            except json.JSONDecodeError:
                return None
        parts.append(bare if bare is not None else basic if basic is not None else literal)
        pos = match.end()
        if pos == len(text):
            return tuple(parts)
        if text[pos] != ".":
            return None
        pos += 1


def _table_header(line: str) -> tuple[str, ...] | None:
    """The key of a ``[table]`` or ``[[array]]`` header line; None for any other line."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    match = re.match(r"^\[\[?(.*?)\]\]?\s*(?:#.*)?$", stripped)
    return _toml_key(match.group(1)) if match else None  # e.g. a line of a multi-line array


def _toml_parse(text: str) -> dict[str, Any] | None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: tomli, the package tomllib came from (a dependency there)
        try:
            import tomli as tomllib
        except ModuleNotFoundError:  # neither: merge_codex refuses rather than edit blind
            return None
    try:
        return tomllib.loads(text)
    except RecursionError as exc:  # deeper than the parser goes: as any other parse error
        raise ValueError("nested too deeply") from exc


def _no_toml_parser_refusal(spec: dict[str, Any] | None) -> str:
    """Without a parser the edit could not check what it keeps (the user's keys, a server under our
    name that is not ours) nor that the result is valid TOML, so it is not made."""
    what = (f"Paste this into it by hand (or merge command and args into the table there):\n{codex_block(spec)}"
            if spec is not None else f"Remove its [mcp_servers.{SERVER_NAME}] table by hand.")
    return ("cannot be edited safely by this Python, which has no TOML parser (tomllib, in Python 3.11 and "
            "later, or the tomli package), so nothing was written. Install tomli (pip install tomli) or run "
            f"install with Python 3.11 or later, or pass --client for the other clients alone. {what}")


def _drop_keys(body: list[str], keys: set[str]) -> list[str]:
    """``body`` (the lines of one table) without the key/value pairs named in ``keys``.

    A value may span lines (a multi-line array or string): lines are gathered until they parse.
    """
    out: list[str] = []
    i = 0
    while i < len(body):
        key = _toml_key(body[i].split("=", 1)[0]) if "=" in body[i] else None
        if key is None or len(key) != 1 or key[0] not in keys:
            out.append(body[i])
            i += 1
            continue
        end = i + 1
        while end < len(body) and not _parses("".join(body[i:end])):
            end += 1
        i = end
    return out


def _parses(text: str) -> bool:
    try:
        return _toml_parse(text) is not None  # merge_codex refuses before this without a parser
    except ValueError:
        return False


def _leading_comments(body: list[str]) -> list[str]:
    """The comment lines (and blank lines between them) at the end of a table's lines: they sit
    right above the next header and describe that table, so removing the table keeps them."""
    tail = _table_tail(body)
    while tail and not tail[0].strip():
        tail.pop(0)
    return tail


def _table_tail(body: list[str]) -> list[str]:
    """The blank lines and comments that end a table's lines: the gap before the next header and
    the comments that describe it, which stay when the table's own keys are replaced."""
    tail: list[str] = []
    for line in reversed(body[1:]):
        if line.strip() and not line.lstrip().startswith("#"):
            break
        tail.insert(0, line)
    return tail


def _without_ours(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    servers = doc.get("mcp_servers")
    if isinstance(servers, dict):
        servers = {k: v for k, v in servers.items() if k != SERVER_NAME}
        if servers:
            doc["mcp_servers"] = servers
        else:
            del doc["mcp_servers"]
    return doc


def _codex_form_refusal(before: dict[str, Any] | None, spec: dict[str, Any] | None) -> str:
    """Why ``merge_codex``'s text edit was not made: our entry, or the ``mcp_servers`` it would go
    into, is written in a form other than ``[table]`` headers (an inline table, dotted keys), which
    a ``[mcp_servers.context-keeper]`` table cannot be put beside; and what to write by hand."""
    servers = before.get("mcp_servers") if before else None
    ours = isinstance(servers, dict) and SERVER_NAME in servers
    where = f"mcp_servers.{SERVER_NAME}" if ours else "mcp_servers"
    if spec is None:
        return (f"defines {where} as an inline table or dotted keys, not a [mcp_servers.{SERVER_NAME}] table, "
                f"which is what uninstall takes out; nothing was written. Remove mcp_servers.{SERVER_NAME} by hand.")
    entry = f"{SERVER_NAME} = {{ " + ", ".join(_codex_spec_lines(spec)) + " }"
    todo = ("Merge its command and args into the entry there by hand" if ours
            else "Add this entry into mcp_servers by hand")
    return (f"defines {where} as an inline table or dotted keys, not [mcp_servers.<name>] tables, so install "
            f"cannot add a [mcp_servers.{SERVER_NAME}] table beside it; nothing was written. {todo}:\n  {entry}")


def merge_codex(text: str, spec: dict[str, Any] | None, *, replace: bool = False) -> str:
    """``config.toml`` text with our ``[mcp_servers.context-keeper]`` table set or removed.

    The header is recognised in any spelling (``context-keeper``, ``"context-keeper"``,
    ``'context-keeper'``, spaces around dots). On install only ``command`` and ``args`` of an
    existing table are replaced; other keys the user added (``env``, ``startup_timeout_sec``,
    sub-tables) stay, unless ``replace`` (``--force`` over a server that is not ours) leaves
    ``spec`` alone in the table. Raises ``StoreError`` when the file does not parse, or when our entry is
    spelled some other way (an inline table, dotted keys) that this text edit would duplicate.
    """
    ours = ("mcp_servers", SERVER_NAME)
    try:
        before = _toml_parse(text)
    except ValueError as exc:
        raise StoreError(f"does not parse as TOML ({exc}); nothing was written. Fix it by hand, or "
                         f"{_by_hand(None if spec is not None else f'[mcp_servers.{SERVER_NAME}]')}.") from exc
    if before is None and text.strip():
        if spec is None and SERVER_NAME not in text:
            return text  # no spelling of our table can be in it
        raise StoreError(_no_toml_parser_refusal(spec))
    newline = "\r\n" if "\r\n" in text else "\n"  # keep a Windows file's line endings
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += newline
    sections: list[tuple[tuple[str, ...] | None, list[str]]] = [(None, [])]  # (header key, lines)
    for line in lines:
        key = _table_header(line)
        if key is not None:
            sections.append((key, [line]))
        else:
            sections[-1][1].append(line)
    found = any(key == ours for key, _ in sections)
    out: list[str] = []
    for key, body in sections:
        if key is not None and key[:2] == ours:
            if spec is None:
                out.extend(_leading_comments(body))
                continue
            if replace and key != ours:
                out.extend(_leading_comments(body))
                continue
            if key == ours:
                rest = _table_tail(body) if replace else _drop_keys(body[1:], {"command", "args"})
                body = [body[0], *(line + newline for line in _codex_spec_lines(spec)), *rest]
        out.extend(body)
    result = "".join(out)
    if spec is not None and not found:
        result = result.rstrip("\r\n")
        block = codex_block(spec).replace("\n", newline)
        result = (result + newline * 2 if result else "") + block
    elif spec is None:
        result = result.rstrip("\r\n") + newline if result.strip() else ""
    # The edit is textual; check its outcome so that a spelling it missed can never produce an
    # invalid file, a duplicate, or a lost user entry.
    refusal = StoreError(_codex_form_refusal(before, spec))
    try:
        after = _toml_parse(result)
    except ValueError as exc:
        raise refusal from exc
    if before is not None and after is not None:
        old, new = (doc.get("mcp_servers") for doc in (before, after))
        old = old.get(SERVER_NAME) if isinstance(old, dict) else None
        new = new.get(SERVER_NAME) if isinstance(new, dict) else None
        expected = None if spec is None else {**(old if isinstance(old, dict) and not replace else {}), **spec}
        if new != expected or _without_ours(after) != _without_ours(before):
            raise refusal
    return result


# ------------------------------------------------------------------ files


@dataclass
class Change:
    path: Path
    before: str | None
    after: str | None  # None: delete the file
    backup_as: Path | None = None  # the backup is named after this path; None: beside ``path``
    note: str = ""  # what to tell the person about this file beside the change itself
    warnings: list[str] = field(default_factory=list)  # "note: ..." lines for stderr
    shared: bool = False  # a project file a team commits

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            (self.before or "").splitlines(keepends=True), (self.after or "").splitlines(keepends=True),
            fromfile=f"{self.path} (current)" if self.before is not None else "/dev/null",
            tofile=f"{self.path} (new)",
        ))


# How to make by hand the edit install refused to make: what ``--print`` shows, pasted in.
PASTE = "use --print and paste the entry into it"


def _by_hand(entry: str | None) -> str:
    """``PASTE``, or for uninstall (which has no --print) taking out ``entry``, what it would remove."""
    return f"remove {entry} from it" if entry else PASTE


def _read(path: Path, entry: str | None = None) -> str | None:
    """The text of a client's config file; None when there is none. A cloned repository can
    commit one that is a link to ``/dev/zero``, or a FIFO: only a regular file, up to a cap, is read."""
    from context_keeper.bounded_read import CLIENT_CONFIG_LIMIT, FileTooLarge, NotRegularFile, read_regular

    try:
        # utf-8-sig: a byte-order mark (Windows editors add one) is read past, and not written back;
        # bytes, not read_text: its newline translation would hide a file's CRLF line endings
        return read_regular(path, CLIENT_CONFIG_LIMIT).decode("utf-8-sig")
    except FileNotFoundError:
        return None
    except (NotRegularFile, FileTooLarge, IsADirectoryError) as exc:
        what = "is a directory" if isinstance(exc, IsADirectoryError) else exc.strerror
        raise StoreError(f"{path} {what}, not a config file that can be read; nothing was written. Replace it "
                         "with a regular file (or remove it), then run the command again.") from exc
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path} is not valid UTF-8 (byte {exc.start + 1}); nothing was written. "
                         f"Save it as UTF-8, or {_by_hand(entry)} by hand.") from exc


def _load_json(path: Path, text: str | None, entry: str | None = None) -> dict[str, Any]:
    """The object in ``text``. Raises ``StoreError`` for anything install cannot rewrite without
    losing what the file says: a parse error, comments, an object with a key twice (JSON parsers
    keep one of them; rewriting would silently drop the other). ``entry``: what uninstall would
    remove, named in the advice (see ``_by_hand``)."""
    if text is None or not text.strip():
        return {}

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise StoreError(f"{path} has the key {json.dumps(key)} twice in one object; rewriting it would keep "
                                 "only one of them, so nothing was written. Remove the one you do not want by hand.")
            seen[key] = value
        return seen

    advice = _by_hand(entry)
    try:
        data = json.loads(text, object_pairs_hook=unique)
    except RecursionError as exc:  # deeper than the parser goes; no client config nests more than a few levels
        raise StoreError(f"{path} does not parse (nested too deeply); nothing was written. Fix it by hand, "
                         f"or {advice}.") from exc
    except json.JSONDecodeError as exc:
        if _is_jsonc(text):
            raise StoreError(f"{path} has comments or trailing commas, which would be lost if it were rewritten, "
                             f"so nothing was written. {advice[0].upper()}{advice[1:]} by hand.") from exc
        raise StoreError(f"{path} does not parse ({json_mistake(exc)}); "
                         f"nothing was written. Fix it by hand, or {advice}.") from exc
    if not isinstance(data, dict):
        raise StoreError(f"{path} is not a JSON object; nothing was written")
    return data


# One token of a JSONC file (JSON with comments and trailing commas, as VS Code writes it). Once
# an alternative starts it matches, running to the end of the text if its closing quote or "*/"
# never comes, and the last one takes any other character: every match starts where the one
# before ended, so the scan reads each character once whatever the file holds.
_JSONC_TOKEN = re.compile(r"""
    (?P<string>"(?:[^"\\]|\\.)*"?)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<space>\s+)
  | (?P<comma>,)
  | (?P<close>[]}])
  | (?P<other>[^"/,\]}\s]+|/)
""", re.VERBOSE | re.DOTALL)


def jsonc_tokens(text: str) -> Iterator[tuple[str, str]]:
    """``(piece, kind)`` for each token of ``text``, in order; the pieces make up the text."""
    for match in _JSONC_TOKEN.finditer(text):
        yield match.group(), match.lastgroup or "other"


def without_jsonc(text: str) -> str:
    """``text`` with each comment, and each comma that only comments and closing brackets follow,
    made a space: what JSON parses when ``text`` is valid JSONC. A comment parts what is either
    side of it (``1/**/2`` is two numbers), as it does in JSONC."""
    out: list[str] = []
    comma = None  # where in ``out`` the last comma is while no value has followed it
    for piece, kind in jsonc_tokens(text):
        if kind == "comment":
            out.append(" ")
            continue
        if kind == "close" and comma is not None:
            out[comma] = " "
        if kind != "space":
            comma = len(out) if kind == "comma" else None
        out.append(piece)
    return "".join(out)


def _is_jsonc(text: str) -> bool:
    """Does ``text`` parse once its comments and trailing commas are taken out?"""
    try:
        json.loads(without_jsonc(text))
    except (json.JSONDecodeError, RecursionError):
        return False
    return True


def _json_change(path: Path, edit: Callable[[dict[str, Any]], dict[str, Any]], *, remove: str | None = None,
                 backups: Path | None = None, holds_ours: Callable[[dict[str, Any]], bool] | None = None) -> Change:
    """``remove``: an uninstall of that entry. It takes out only what install put in: an object or
    list it empties stays when it was there, empty, before install (``_before_install`` reads that
    from the file's backups, named after ``backups``; ``holds_ours`` tells the one taken before
    install wrote our entries) or before this uninstall. A file left holding nothing but empty
    containers of our sections, of which no such backup is kept, held only our entries: install
    created it, so it is deleted (``apply`` keeps a backup) rather than left as ``{}`` — unless it
    is a symlink (a dotfiles checkout): deleting the link would leave our entries in the real file,
    so that is written through the link as ``{}``."""
    before = _read(path, remove)
    data = _load_json(path, before, remove)
    try:
        after_data = edit(data)
    except InvalidInput as exc:
        raise InvalidInput(f"{path}: {exc}", field=exc.field) from exc
    except StoreError as exc:
        raise StoreError(f"{path}: {exc}") from exc
    earlier = None
    if remove and backups is not None and holds_ours is not None:
        earlier = _before_install(backups, holds_ours)
        after_data = _kept_empty(data, after_data, earlier)
    if before is not None and after_data == data:
        return Change(path, before, before)
    after = _dump_json(after_data, before or "")
    if ((before is None or remove and set(after_data) <= _OUR_SECTIONS and earlier is None) and _empty(after_data)
            and not path.is_symlink()):
        after = None
    return Change(path, before, after)


def _before_install(base: Path, holds_ours: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The file as it was before install wrote our entries into it: its newest backup (``apply``
    keeps one of each file it rewrites, named after ``base``) that holds none of them. None when
    there is none: install created the file, or its backups were deleted."""
    def newest_first(backup: Path) -> tuple[str, int]:
        stamp, _, n = backup.name.rsplit(".bak-", 1)[-1].partition("-")
        return stamp, int(n) if n.isdigit() else 0

    for backup in sorted(base.parent.glob(glob.escape(base.name) + ".bak-*"), key=newest_first, reverse=True):
        try:
            data = _load_json(backup, _read(backup))
        except (StoreError, OSError):
            continue
        if not holds_ours(data):
            return data
    return None


def _kept_empty(current: Any, after: Any, earlier: Any) -> Any:
    """``after`` (``current`` with our entries taken out) with each object or list the removal took
    out back in its place when it was empty before install (in ``earlier``) or before this removal
    (then nothing of ours was in it)."""
    if not isinstance(current, dict) or not isinstance(after, dict):
        return after
    earlier = earlier if isinstance(earlier, dict) else {}
    out = {}
    for key, value in current.items():
        if key in after:
            out[key] = _kept_empty(value, after[key], earlier.get(key))
        elif isinstance(value, (dict, list)) and _empty(value):
            out[key] = value
        elif isinstance(earlier.get(key), (dict, list)) and _empty(earlier[key]):
            out[key] = earlier[key]
    out.update((key, value) for key, value in after.items() if key not in out)
    return out


# The top-level sections install writes into a client's JSON config. A file left with only
# these, empty, held nothing but our entries; one with a section of the person's own, even an
# empty one (VS Code's template "inputs": [], Claude Code's "permissions": {"allow": []}), is
# theirs and stays.
_OUR_SECTIONS = frozenset(("mcpServers", "servers", "hooks"))


def _dump_json(data: dict[str, Any], like: str) -> str:
    """``data`` as JSON in the layout of the file's text ``like``, so a rewrite's diff shows only our
    edit: the text of every entry we did not change is kept as it was (``json_layout.rewrite``), and
    what is new gets the file's line ending and the indent of its first indented line (two spaces
    when it has none)."""
    newline = "\r\n" if "\r\n" in like else "\n"
    found = re.search(r"^([ \t]+)\S", like, re.MULTILINE)
    indent: str | int = found.group(1) if found else 2
    kept = rewrite(like, data, indent if isinstance(indent, str) else " " * indent, newline) if like.strip() else None
    if kept is not None and _utf8(kept):
        return kept
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    if not _utf8(text):
        # A lone surrogate escape ("\ud800", valid JSON) has no UTF-8 form: kept as an escape.
        text = json.dumps(data, indent=indent, ensure_ascii=True)
    return (text + "\n").replace("\n", newline)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _empty(value: Any) -> bool:
    """Nothing but empty objects and lists."""
    if isinstance(value, dict):
        return all(_empty(v) for v in value.values())
    if isinstance(value, list):
        return all(_empty(v) for v in value)
    return False


def apply(change: Change, *, now: float | None = None) -> Path | None:
    """Write one change with a timestamped backup of the previous file; returns the backup."""
    if not change.changed:
        return None
    if change.after is None and change.path.is_symlink():  # deleting the link would leave the real file as it was
        raise StoreError(f"{change.path} is a symlink; nothing was removed. Edit {change.path.resolve()} by hand.")
    backup = None
    if change.before is not None:
        base = change.backup_as or change.path
        stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(now))
        backup = base.with_name(f"{base.name}.bak-{stamp}")
        n = 1
        while backup.exists():
            backup = base.with_name(f"{base.name}.bak-{stamp}-{n}")
            n += 1
        backup.parent.mkdir(parents=True, exist_ok=True)
        ignore = _backup_root(backup)
        if ignore is not None and not (ignore / ".gitignore").exists():
            # Self-ignoring, so the backups stay out of commits whatever the project's
            # .context/.gitignore says (one written by an older version does not list them).
            (ignore / ".gitignore").write_text("*\n", encoding="utf-8")
        shutil.copy2(change.path, backup)
    if change.after is None:
        change.path.unlink(missing_ok=True)
        return backup
    from context_keeper.fsio import atomic_write_text

    # A symlinked config (a dotfiles checkout) is written through the link: renaming over the
    # link would turn it into a plain file and leave the real one behind.
    atomic_write_text(change.path, change.after, follow_symlinks=True)
    return backup


BACKUP_DIR = "install-backups"


def _backup_root(backup: Path) -> Path | None:
    """The ``install-backups`` directory ``backup`` is in, if any."""
    return next((p for p in backup.parents if p.name == BACKUP_DIR), None)


def backup_base(target_path: Path, project: Path, home: Path, in_project: bool) -> Path | None:
    """What a project file's backup is named after: kept out of the working tree, where
    ``git add -A`` would commit it. Under the project's ``.context/`` when there is one (the
    project's own bookkeeping area); before ``init``, under the user's state directory rather
    than creating ``.context/`` (which would make the directory look initialised). None for a
    user-level file: its backup stays beside it."""
    if not in_project:
        return None
    from context_keeper.project import CONTEXT_DIR

    from context_keeper.confine import leads_out

    relative = target_path.relative_to(project)
    # Not into an install-backups/ (or a .context) that a link leads out of the project: the
    # user's state directory instead, as before init.
    if (project / CONTEXT_DIR).is_dir() and leads_out(project / CONTEXT_DIR / BACKUP_DIR, project) is None:
        return project / CONTEXT_DIR / BACKUP_DIR / relative
    digest = hashlib.sha256(os.fsencode(project)).hexdigest()[:8]  # any path, UTF-8 or not
    return home / ".local" / "state" / "context-keeper" / BACKUP_DIR / f"{project.name}-{digest}" / relative


# ------------------------------------------------------------------ plans per client


@dataclass
class Target:
    client: str
    path: Path
    kind: str  # "claude-hooks" | "json-servers" | "codex"
    key: str = "mcpServers"
    note: str = ""
    shared: bool = False  # a project file a team commits: machine-specific paths there cause diffs
    in_project: bool = False  # inside the project's working tree (committed or not)

    def __post_init__(self) -> None:
        self.in_project = self.in_project or self.shared


# The program a portable command names, per target kind.
PORTABLE_PROGRAMS = {"claude-hooks": "context-keeper-hook", "json-servers": SERVER_NAME, "codex": SERVER_NAME}


def client_targets(client: str, project: Path, home: Path, user: bool, local: bool = False) -> list[Target]:
    if local and (client != "claude" or user):
        raise InvalidInput("--local writes Claude Code's .claude/settings.local.json, which has no counterpart for "
                           "other clients or with --user: drop --local, or use --client claude without --user",
                           field="local")
    if client == "claude":
        if local:
            return [Target(client, project / ".claude" / "settings.local.json", "claude-hooks", in_project=True)]
        settings = (home if user else project) / ".claude" / "settings.json"
        targets = [Target(client, settings, "claude-hooks", shared=not user)]
        if not user:
            targets.append(Target(client, project / ".mcp.json", "json-servers", shared=True,
                                  note="Claude Code asks once to approve project servers from .mcp.json."))
        return targets
    if client == "cursor":
        return [Target(client, (home if user else project) / ".cursor" / "mcp.json", "json-servers", shared=not user)]
    if client == "vscode":
        if user:
            raise InvalidInput("VS Code keeps its user-level MCP servers in your profile, which install does not "
                               "edit: run install without --user for the workspace's .vscode/mcp.json, or add the "
                               "server with VS Code's 'MCP: Add Server' command", field="user")
        return [Target(client, project / ".vscode" / "mcp.json", "json-servers", key="servers", shared=True)]
    if client == "windsurf":
        return [Target(client, home / ".codeium" / "windsurf" / "mcp_config.json", "json-servers")]
    if client == "gemini":
        return [Target(client, (home if user else project) / ".gemini" / "settings.json", "json-servers",
                       shared=not user)]
    if client == "codex":
        return [Target(client, home / ".codex" / "config.toml", "codex")]
    raise InvalidInput(f"unknown client {client!r}: use one of {', '.join(CLIENTS)}", field="client")


def target_style(style: str, target: Target) -> str:
    """The command style for one file. ``auto`` writes bare program names into a file a team
    commits when PATH provides them, so every teammate's install writes the same bytes; elsewhere
    absolute paths, which keep working from a shell without the install on PATH. A committed file
    that already names the programs bare keeps that form even where PATH lacks them: rewriting
    the team's wiring with this machine's paths makes teammates' installs rewrite it back."""
    if style == "auto" and target.shared and (shutil.which(PORTABLE_PROGRAMS[target.kind]) or carries_portable(target)):
        return "portable"
    return resolve_style(style)


def carries_portable(target: Target) -> bool:
    """Does ``target``'s file already run context-keeper by bare program name (the portable form)?"""
    try:
        data = _load_json(target.path, _read(target.path))
    except StoreError:
        return False
    if target.kind == "claude-hooks":
        return any(isinstance(c, str) and c.strip().startswith(PORTABLE_PROGRAMS[target.kind] + " ")
                   for c in _hook_commands_in(data))
    if target.kind == "json-servers":
        servers = data.get(target.key)
        entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
        return isinstance(entry, dict) and entry.get("command") == PORTABLE_PROGRAMS[target.kind]
    return False


def client_server_spec(client: str, style: str, project: Path, user: bool) -> dict[str, Any]:
    spec = server_spec(style)
    if client == "vscode":
        return {"type": "stdio", **spec, "env": {"CONTEXT_KEEPER_PROJECT": "${workspaceFolder}"}}
    if client == "cursor" and not user:
        return {**spec, "env": {"CONTEXT_KEEPER_PROJECT": "${workspaceFolder}"}}
    if client == "claude":
        return {"type": "stdio", **spec}
    return spec  # user-level configs: the server resolves the project from its working directory


def _desired_hooks(style: str, project: Path, user: bool) -> list[tuple[str, str | None, str, int]]:
    return [(event, matcher, hook_command(ours, style, None if user else project), timeout)
            for event, matcher, ours, timeout in CLAUDE_HOOKS]


def plan(client: str, project: Path, home: Path, *, user: bool = False, style: str = "auto",
         remove: bool = False, local: bool = False, force: bool = False) -> list[Change]:
    """The change to each of ``client``'s files; ``force`` replaces a server entry under our name
    that is not ours (see ``merge_server``)."""
    changes = []
    for target in client_targets(client, project, home, user, local):
        if target.in_project and not force:
            _refuse_link_out(target.path, project, remove)
        chosen = target_style(style, target)
        backup_as = backup_base(target.path, project, home, target.in_project)
        if target.kind == "claude-hooks":
            desired = [] if remove else _desired_hooks(chosen, project, user)
            change = _json_change(target.path, lambda d, w=desired: merge_claude_hooks(d, w, project),
                                  remove="context-keeper's hooks" if remove else None, backups=backup_as or target.path,
                                  holds_ours=lambda d: any(is_our_command(h.get("command"), project)
                                                           for _, _, h in hook_entries(d.get("hooks"))))
            after = _load_json(target.path, change.after) if change.after is not None else {}
            change.warnings = _wrapper_notes(target.path, after, desired, project, remove=remove) + [
                f"{target.path}: kept the matcher {_matcher_shown(kept)} you set on context-keeper's {event} hook "
                f"({hook}); install would have written {_matcher_shown(written)}"
                for event, hook, kept, written in kept_matchers(after, desired, project)]
            if not remove:
                change.warnings += [
                    f"note: left `{command}` ({event}) in {target.path}: it has one of context-keeper's old hook "
                    f"names but could not be confirmed as ours ({why}); remove it if it is"
                    for event, command, why in unconfirmed_old_hooks(after, project)]
            changes.append(change)
        elif target.kind == "json-servers":
            spec = client_server_spec(client, chosen, project, user)
            change = _json_change(target.path, lambda d, s=spec, k=target.key: merge_server(
                d, k, s, remove=remove, force=force), remove=f"{target.key}.{SERVER_NAME}" if remove else None,
                backups=backup_as or target.path,
                holds_ours=lambda d, k=target.key: isinstance(d.get(k), dict) and SERVER_NAME in d[k])
            if remove:
                entry = _load_json(target.path, change.after).get(target.key) if change.after else None
                entry = entry.get(SERVER_NAME) if isinstance(entry, dict) else None
                change.note = (_foreign_note(target.path, f"{target.key}.{SERVER_NAME}", entry)
                               or _kept_note(target.path, f"{target.key}.{SERVER_NAME}", user_keys(entry, spec)))
            else:
                change.warnings = _twin_notes(target.path, target.key, _load_json(target.path, change.before).get(target.key))
            changes.append(change)
        else:
            spec = client_server_spec(client, chosen, project, user)
            before = _read(target.path, f"[mcp_servers.{SERVER_NAME}]" if remove else None)
            entry = _codex_entry(before)
            foreign = entry is not None and not is_our_server(entry)
            kept = user_keys(entry, spec) if remove else []
            try:
                after = before if kept or (remove and foreign) else merge_codex(
                    before or "", None if remove else spec, replace=foreign and force)
            except StoreError as exc:
                raise StoreError(f"{target.path} {exc}") from exc
            if foreign and not remove and not force:
                raise InvalidInput(f"{target.path}: "
                                   + _foreign_server_refusal(f"mcp_servers.{SERVER_NAME}", entry, spec))
            if (remove and before is not None and after is not None and after != before and not after.strip()
                    and not target.path.is_symlink()):
                after = None  # only our table was in it: delete (with a backup) rather than leave it empty
            note = ((_foreign_note(target.path, f"mcp_servers.{SERVER_NAME}", entry) if remove else "")
                    or _kept_note(target.path, f"mcp_servers.{SERVER_NAME}", kept))
            changes.append(Change(target.path, before, after if (after or before is not None) else None, note=note,
                                  warnings=[] if remove else _twin_notes(target.path, "mcp_servers", _codex_servers(before))))
        changes[-1].backup_as = backup_as
        changes[-1].shared = target.shared
    return changes


def _refuse_link_out(path: Path, project: Path, remove: bool) -> None:
    """Refuse a project file that leads out of the project through a symbolic link (the file or
    a directory above it, such as ``.claude``): a cloned repository can commit one to have the
    wiring meant for this project merged into the user-level settings, read in every project, or
    (``remove``) to have uninstall in this project strip the wiring every other project uses."""
    from context_keeper.confine import leads_out

    real = leads_out(path, project)
    if real is not None:
        command, done = ("uninstall", "rewrite that file instead; nothing was changed") if remove else (
            "install", "write that file instead; nothing was written")
        raise InvalidInput(f"{path} is a symbolic link to {real}, outside the project, so {command} would {done}. "
                           "If that file is meant to be this project's settings (a dotfiles checkout), pass --force; "
                           f"otherwise remove the link (or run {command} --user for your user-level settings)",
                           field="project")


def written_path(path: Path) -> str:
    """``path`` as a report line names it: the file really written when a link leads there."""
    real = Path(os.path.realpath(path))
    return str(path) if real == Path(os.path.abspath(path)) else f"{real} (through the link {path})"


def _wrapper_notes(path: Path, settings: dict[str, Any], desired: Sequence[tuple[str, str | None, str, int]],
                   project: Path, *, remove: bool) -> list[str]:
    """A note for each command of the person's that seems to run our hook inside it (a wrapper:
    see ``wrapped_hook``). Install and uninstall leave it; install does not add that hook beside it
    under the same event (``merge_claude_hooks``), and says when one of ours runs there too."""
    hooks = settings.get("hooks")
    ours = {(event, hook_run_by(h["command"], project)): h["command"] for event, _, h in hook_entries(hooks)
            if is_our_command(h.get("command"), project)}
    wanted = {(event, hook_run_by(command, project)): command for event, _, command, _ in desired}
    notes = []
    for event, _, hook in hook_entries(hooks):
        runs = wrapped_hook(hook.get("command"), project)
        if runs is None:
            continue
        left = f"note: left `{hook['command']}` ({event}) in {path}: it is your own command"
        what = f"context-keeper's {runs} hook" if runs else "a context-keeper hook"
        if remove:
            notes.append(f"{left}, though it seems to run {what}; remove it by hand if context-keeper should no "
                         "longer run")
        elif (event, runs) in ours:
            notes.append(f"{left}, and it seems to run {what}, which `{ours[(event, runs)]}` runs there too, so "
                         "that hook runs twice: remove one of them")
        elif (event, runs) in wanted:
            notes.append(f"{left}, and it seems to run {what}, so install did not add `{wanted[(event, runs)]}` "
                         "beside it (the hook would run twice); if it does not run that hook, replace it with "
                         "that command")
        else:
            notes.append(f"{left}, and it seems to run {what} too: check that none of the hooks install wires "
                         "runs twice")
    return notes


def _codex_servers(text: str | None) -> Any:
    """The ``mcp_servers`` table of a Codex config as parsed; None when there is none, the text does
    not parse (the edit then refuses with the parse error) or Python 3.10 has no TOML parser."""
    try:
        doc = _toml_parse(text or "")
    except ValueError:
        return None
    return doc.get("mcp_servers") if doc else None


def _codex_entry(text: str | None) -> Any:
    """Our Codex table as parsed (None as for ``_codex_servers``; ``merge_codex`` then refuses, unless
    the file is empty or, on uninstall, does not name us)."""
    servers = _codex_servers(text)
    return servers.get(SERVER_NAME) if isinstance(servers, dict) else None


def _twin_notes(path: Path, key: str, servers: Any) -> list[str]:
    """A note for each server entry under another name that starts context-keeper too (a
    ``claude mcp add ck -- context-keeper``): with ours beside it the client would start two
    servers and list every tool twice."""
    if not isinstance(servers, dict):
        return []
    return [f"note: {path}: {key}.{name} starts context-keeper too, so with {key}.{SERVER_NAME} the client runs two "
            f"servers and lists every tool twice; remove one of them" for name, entry in servers.items()
            if name != SERVER_NAME and is_our_server(entry)]


def _foreign_note(path: Path, where: str, entry: Any) -> str:
    if entry is None or is_our_server(entry):
        return ""
    return f"{path}: left {where}: it does not start context-keeper's stdio server, so install did not write it"


def _kept_note(path: Path, where: str, kept: list[str]) -> str:
    if not kept:
        return ""
    return (f"{path}: kept {where}: it holds keys install did not write ({', '.join(kept)}), so it was yours "
            "before install merged into it; remove it by hand if you no longer want it")


def snippet(client: str, project: Path, home: Path, *, user: bool, style: str, local: bool = False) -> str:
    """The ready-to-paste config for ``client`` (what ``--print`` shows)."""
    parts = []
    for target in client_targets(client, project, home, user, local):
        chosen = target_style(style, target)
        if target.kind == "claude-hooks":
            body = json.dumps(merge_claude_hooks({}, _desired_hooks(chosen, project, user), project), indent=2)
        elif target.kind == "json-servers":
            body = json.dumps({target.key: {SERVER_NAME: client_server_spec(client, chosen, project, user)}}, indent=2)
        else:
            body = codex_block(client_server_spec(client, chosen, project, user)).rstrip()
        parts.append(f"# {target.path}\n{body}")
    return "\n\n".join(parts) + "\n"


def portability_notes(client: str, project: Path, home: Path, *, user: bool, style: str,
                      local: bool = False) -> list[str]:
    """What to tell the person about the files a team commits: which name programs by PATH (so each
    teammate needs them there) and which got this machine's absolute paths (and how to avoid it)."""
    notes = []
    for target in client_targets(client, project, home, user, local):
        if not target.shared:
            continue
        program = PORTABLE_PROGRAMS[target.kind]
        if target_style(style, target) == "portable" and style == "auto" and not shutil.which(program):
            notes.append(f"note: {target.path} runs `{program}` from PATH, as committed, but it is not on PATH "
                         "here, so on this machine those commands fail; the file was left in that form, since "
                         "it is the team's. Put context-keeper on PATH (pipx install / uv tool install, or "
                         "activate its venv before starting the client)"
                         + _machine_alone(client, target, ", or run `context-keeper install --local` for hooks of "
                                                          "this machine alone"))
        elif target_style(style, target) == "portable":
            notes.append(f"{target.path}: runs `{program}` from PATH, so it can be committed; each teammate needs "
                         "context-keeper installed on PATH (pipx install / uv tool install, or an activated venv)")
        elif style == "auto":
            notes.append(f"note: `{program}` is not on PATH, so {target.path} gets absolute paths of this machine, "
                         "which a teammate's install would rewrite. Put the console scripts on PATH and install "
                         "again for commands that work on every machine"
                         + _machine_alone(client, target, ", or use --local to keep machine-specific hooks out of git"))
    return notes


def _machine_alone(client: str, target: Target, hooks: str) -> str:
    """The end of a portability note: how to wire this machine alone instead. ``--local`` writes
    only the hooks (into settings.local.json) and leaves .mcp.json alone, so for the server it is
    the ``claude mcp add -s local`` line it prints."""
    if client != "claude":
        return ""
    if target.kind == "claude-hooks":
        return hooks
    return (f", or register the server for this machine alone with `claude mcp add -s local` (the command "
            f"`context-keeper install --local` prints) and leave it out of {target.path.name}")


def _git_would_commit(path: Path) -> bool:
    """Is ``path`` inside a git work tree without being git-ignored? False when git is unavailable."""
    git = shutil.which("git")
    if git is None:
        return False
    try:
        inside = subprocess.run([git, "-C", str(path.parent), "rev-parse", "--is-inside-work-tree"],
                                capture_output=True, text=True, timeout=10, check=False)
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return False
        ignored = subprocess.run([git, "-C", str(path.parent), "check-ignore", "-q", path.name],
                                 capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return ignored.returncode == 1  # 0: ignored, 1: not ignored, 128: error


# ------------------------------------------------------------------ CLI


def _project(args: argparse.Namespace) -> Path:
    if args.project:
        given = Path(args.project).expanduser().resolve()
        if not given.is_dir():
            raise InvalidInput(f"{given} is not a directory", field="project")
        from context_keeper.project import resolve_project

        # A directory inside a project names that project, as --project does for every other
        # command and as the server resolves it: wiring written into src/.claude/ is never read.
        # The root itself stays as given, for the refusal that says what to do instead.
        root = given if given.parent == given else resolve_project(str(given))
        if root != given:
            sys.stderr.write(f"note: {given} is inside the project {root}; wiring that project\n")
    else:
        from context_keeper.project import default_project

        # Not initialised yet, a client reads .claude/ (.cursor/, ...) at the repository root
        # it was opened in, not in the subdirectory install happened to run from.
        root = default_project()
    if not root.is_dir():
        raise InvalidInput(f"{root} is not a directory", field="project")
    return root


def _uninitialised_hint(project: Path) -> str | None:
    from context_keeper.project import CONTEXT_DIR

    if (project / CONTEXT_DIR).is_dir():
        return None
    return (f"note: {project} has no {CONTEXT_DIR}/ yet, so the server has no store to answer from and the "
            f"hooks stay silent: run `context-keeper init {_shell_word(str(project))}` (or pass --project the "
            "project root)\n")


def _not_a_project(project: Path, home: Path, clients: Sequence[str], local: bool) -> str | None:
    """Why ``project`` cannot take these clients' project-level wiring (None when it can): init
    and project resolution refuse the file system root; and in the home directory a project file
    can be the client's user-level one (``~/.claude/settings.json``), read in every project, where
    wiring written for one project would run in all of them."""
    if project.parent == project:
        return (f"{project} is the root of the file system, which no tool uses as a project: run install in the "
                "project's directory, or pass --project DIR")
    # Windsurf's and Codex's one file is user-level wherever install runs: that is what they ask for.
    per_project = [client for client in clients if client not in USER_LEVEL_CLIENTS]
    user_files = {path for client in per_project for path in _user_level_files(client, project, home.resolve())}
    both = [str(t.path) for client in per_project for t in client_targets(client, project, home, False, local)
            if t.path in user_files]
    if both:
        return (f"{project} is your home directory, where {', '.join(both)} {'is' if len(both) == 1 else 'are'} the "
                "user-level settings read in every project: run install in the project's directory (or pass "
                "--project DIR), or pass --user to wire context-keeper for all your projects")
    return None


def _user_level_files(client: str, project: Path, home: Path) -> list[Path]:
    try:
        return [t.path for t in client_targets(client, project, home, True)]
    except InvalidInput:  # VS Code: its user-level servers live in its profile, which install does not write
        return []


def _run(args: argparse.Namespace, remove: bool) -> int:
    project = _project(args)
    local = getattr(args, "local", False)
    user_level = args.user or args.client in USER_LEVEL_CLIENTS
    if local and args.client != "claude":
        client_targets(args.client, project, Path.home(), args.user, local)  # raises the explanation
    home = Path(args.home).expanduser() if getattr(args, "home", None) else Path.home()
    clients = CLIENTS if args.client == "all" else (args.client,)
    refusal = None if remove or user_level else _not_a_project(project, home, clients, local)
    if refusal:  # uninstall still may clean up what an earlier install wrote there
        raise InvalidInput(refusal, field="project")
    hint = None if remove or user_level else _uninitialised_hint(project)
    if hint:
        sys.stderr.write(hint)
    if args.client == "all" and args.user:
        clients = tuple(c for c in clients if c != "vscode")
        print("vscode: skipped (its user-level servers live in your VS Code profile; install without --user "
              "writes the workspace's .vscode/mcp.json)")
    printing = getattr(args, "print", False)

    def writes(client: str) -> bool:  # Claude Code's files are written; the others' printed unless --write
        return remove or client == "claude" or args.write

    # Every client is planned before any file is written: a refusal (a file it cannot edit, a
    # server under our name that is not ours) then leaves every file as it was, as it says.
    planned = {client: plan(client, project, home, user=args.user, style=args.command_style, remove=remove,
                            local=local, force=getattr(args, "force", False))
               for client in clients if not printing and (writes(client) or args.dry_run)}
    notes: list[str] = []
    for client in clients:
        if not remove:
            notes += portability_notes(client, project, home, user=args.user, style=args.command_style, local=local)
        if client not in planned:
            if not remove:
                sys.stdout.write(snippet(client, project, home, user=args.user, style=args.command_style, local=local))
                if not printing:
                    sys.stdout.write("(pass --write to merge this into the file above)\n")
            continue
        for change in planned[client]:
            if change.note:
                print(change.note)
            notes += change.warnings
            if not change.changed:
                if not change.note:
                    print(f"{change.path}: {'nothing of ours to remove' if remove else 'already up to date'}")
                continue
            if args.dry_run:
                sys.stdout.write(change.diff() or f"{change.path}: would be removed\n")
                if remove and change.shared:
                    notes.append(_shared_removal_note(change.path, client, project))
                continue
            change.path.parent.mkdir(parents=True, exist_ok=True)
            backup = apply(change)
            print(_what_was_done(change, remove, f"backup: {_shown(backup, project)}" if backup else ""))
            if remove and change.shared:
                notes.append(_shared_removal_note(change.path, client, project))
            if local and not remove and _git_would_commit(change.path):
                notes.append(f"note: git does not ignore {change.path}; add `.claude/settings.local.json` to "
                             ".gitignore (or .git/info/exclude) so its machine-specific paths stay out of commits")
    for note in notes:
        (sys.stderr if note.startswith("note:") else sys.stdout).write(note + "\n")
    # Claude Code among the clients (`--client all` too): its hooks were wired, its server was not.
    if not remove and "claude" in clients and (args.user or local) and not args.dry_run:
        spec = server_spec(resolve_style(args.command_style))
        words = [_shell_word(w) for w in (spec["command"], *spec["args"])]
        scope = "user" if args.user else "local"
        where = "for all projects" if args.user else "for this project on this machine only (kept out of git)"
        print(f"Register the server {where} with:\n  claude mcp add -s {scope} {SERVER_NAME} -- {' '.join(words)}")
        note = _committed_wiring_note(project, "--user" if args.user else "--local")
        if note:
            sys.stderr.write(note + "\n")
    if not remove and "claude" in clients and not args.dry_run:
        written = "user" if args.user else "local" if local else "project"
        for note in _personal_wiring_notes(project, home, args.command_style, written):
            sys.stderr.write(note + "\n")
    if remove and "claude" in clients and (args.user or local) and not args.dry_run:
        # The counterpart of the `claude mcp add` line install printed: that registration lives in
        # Claude Code's own config, which uninstall does not edit.
        print(f"If you registered the server with `claude mcp add -s {'user' if args.user else 'local'}`, remove "
              f"it with:\n  claude mcp remove -s {'user' if args.user else 'local'} {SERVER_NAME}")
    return 0


def _what_was_done(change: Change, remove: bool, backup: str) -> str:
    """The report line for a change just applied: a file made or deleted is said to be, not
    "updated" (the README promises a file left with nothing else in it is deleted)."""
    if change.after is None:
        return f"removed {change.path} (file deleted: nothing else was in it" + (f"; {backup})" if backup else ")")
    if change.before is None:
        line = f"created {written_path(change.path)}"
    else:
        line = f"{'removed context-keeper from' if remove else 'updated'} {written_path(change.path)}"
    return line + (f" ({backup})" if backup else "")


def _shared_removal_note(path: Path, client: str, project: Path) -> str:
    """Uninstall from a file a team commits removes the wiring for everyone once it is pushed."""
    alone = {"claude": "`context-keeper uninstall --local` (or `--user`) removes only the wiring you added for "
                       "yourself",
             # VS Code's user-level servers live in its profile, which install does not edit (no --user).
             "vscode": "VS Code's 'MCP: List Servers' command stops the server in this workspace for you alone",
             }.get(client, f"`context-keeper uninstall --client {client} --user` removes only your user-level entry")
    return (f"note: {path} is a project file a team commits: once pushed, this removes context-keeper for the whole "
            f"team. To opt out alone, restore it (`git checkout -- {_shell_word(_shown(path, project))}` in {project}); {alone}"
            + ("; Claude Code's `disabledMcpjsonServers` in .claude/settings.local.json turns off a server of "
               ".mcp.json for you alone" if client == "claude" and path.name == ".mcp.json" else ""))


def _committed_wiring_note(project: Path, option: str) -> str | None:
    """What to say when the project's own ``.claude/settings.json`` wires our hooks beside the
    ones ``install --local`` / ``--user`` just wrote. Claude Code merges only identical commands,
    so both would run (the session-start summary injected twice) — unless the committed ones are
    the portable form and this machine has no ``context-keeper-hook`` on PATH, when they fail
    here and the new ones are the only ones that work. Either way the committed file is the
    team's: the advice never removes it."""
    shared = project / ".claude" / "settings.json"
    # A wrapper of the person's that runs our hook counts: with the new hooks it runs twice too.
    ours = [c for c in _hook_commands(shared) if hook_run_by(c, project) is not None]
    if not ours:
        return None
    program = PORTABLE_PROGRAMS["claude-hooks"]
    portable = all(c.strip().startswith(program + " ") for c in ours)
    where = "this machine's settings.local.json" if option == "--local" else "your user-level settings"
    if portable and not shutil.which(program):
        return (f"note: {shared} wires context-keeper hooks as `{program} <event>`, which is not on PATH here, so "
                f"on this machine they fail and the hooks in {where} are the ones that run. Leave {shared.name} "
                f"as it is: it is the team's. Once context-keeper is on PATH the committed hooks work; then run "
                f"`context-keeper uninstall {option}`, or each would run twice")
    if option == "--user":
        return (f"note: {shared} wires context-keeper hooks too, so in this project each would run twice (the "
                "session-start summary injected twice). User-level hooks suit projects that do not wire them "
                "(`context-keeper uninstall --user` removes them again); leave that file alone if it is the team's, "
                "and if its hooks are yours alone, `context-keeper uninstall` (without --user) removes them")
    if portable:
        return (f"note: {shared} wires context-keeper hooks too (the team's portable commands, which run here), "
                "so each would run twice; the committed ones already cover this machine: "
                "`context-keeper uninstall --local` removes the ones just written")
    return (f"note: {shared} wires context-keeper hooks too, so each would run twice; if they are yours alone, "
            "remove them with `context-keeper uninstall` (without --local)")


def _personal_wiring_notes(project: Path, home: Path, style: str, written: str) -> list[str]:
    """What to say when the hooks just ``written`` (into the project's settings, ``"local"`` or
    ``"user"`` ones) run beside ones an earlier ``install --local`` or ``--user`` wrote, which run in
    this project too (the committed file beside local or user hooks: ``_committed_wiring_note``).
    Not when the project's are the portable form this machine cannot run: there the others are the
    ones that work (``portability_notes`` says so)."""
    if written == "project":
        target = client_targets("claude", project, home, False)[0]
        if target_style(style, target) == "portable" and not shutil.which(PORTABLE_PROGRAMS["claude-hooks"]):
            return []
    local, user = project / ".claude" / "settings.local.json", home / ".claude" / "settings.json"
    others = {
        "project": [(local, "the project's hooks now cover this machine: `context-keeper uninstall --local` removes "
                            "the local ones"),
                    (user, "user-level hooks run in every project: keep one set, with `context-keeper uninstall "
                           "--user` (then projects that do not wire the hooks get none) or `context-keeper uninstall` "
                           "for this project's")],
        "local": [(user, "the user-level ones run in every project: `context-keeper uninstall --local` removes the "
                         "ones just written, which they cover")],
        "user": [(local, "the user-level ones now cover this project: `context-keeper uninstall --local` removes "
                         "the local ones")],
    }[written]
    notes = []
    for path, advice in others:
        if any(hook_run_by(c, project) is not None for c in _hook_commands(path)):
            notes.append(f"note: {path} wires context-keeper hooks too, so in this project each would run twice (the "
                         f"session-start summary injected twice); {advice}")
    return notes


def _shown(path: Path, project: Path) -> str:
    try:
        return str(path.relative_to(project))
    except ValueError:
        return str(path)


def _hook_commands(path: Path) -> list[Any]:
    try:
        data = _load_json(path, _read(path))
    except StoreError:
        return []
    return _hook_commands_in(data)


def _hook_commands_in(data: dict[str, Any]) -> list[Any]:
    return [h.get("command") for _, _, h in hook_entries(data.get("hooks"))]


def _add_common(parser: argparse.ArgumentParser, remove: bool) -> None:
    parser.add_argument("--client", choices=[*CLIENTS, "all"], default="claude",
                        help="which client to configure (default: claude)")
    parser.add_argument("--user", action="store_true",
                        help="user-level config (~/.claude/settings.json, ~/.cursor/...) instead of the project's")
    parser.add_argument("--local", action="store_true",
                        help="claude: the hooks are removed from .claude/settings.local.json, and .mcp.json is left "
                             "alone" if remove else
                        "claude: the hooks go to .claude/settings.local.json (this machine only, kept out of "
                        "git) with absolute paths, and .mcp.json is left alone")
    parser.add_argument("--project", help="the project, or a directory in it (resolved to its root as the server resolves "
                                          "one; default: the current directory's project)")
    parser.add_argument("--dry-run", action="store_true", help="show a unified diff; write nothing")
    parser.add_argument("--home", help=argparse.SUPPRESS)
    # uninstall recognises every style it could have written: the option stays accepted, unlisted.
    parser.add_argument("--command-style", default="auto",
                        choices=["auto", "portable", "console", "launcher", "module"],
                        help=argparse.SUPPRESS if remove else "how hook/server commands are written (see docs/hooks.md)")
    if not remove:
        parser.add_argument("--write", action="store_true",
                            help="for clients other than claude: merge into the config file instead of printing")
        parser.add_argument("--print", action="store_true", help="print the config to paste; write nothing")
        parser.add_argument("--force", action="store_true",
                            help="replace a context-keeper server entry that runs something else (a remote "
                                 "server, another command), and write a project file that is a symbolic link "
                                 "out of the project, instead of refusing")
    else:
        parser.add_argument("--force", action="store_true",
                            help="edit a project file that is a symbolic link out of the project instead of refusing")


def _exit_codes(command: str) -> str:
    return (f"exit codes: 0 done (with --dry-run{'' if command == 'uninstall' else ' or --print'}: shown); 2 bad "
            "input (an option that does not apply, a project directory that is the file system root or your home "
            "directory, a project file that is a symbolic link out of the project without --force"
            + ("" if command == "uninstall" else ", a context-keeper server entry that runs something else "
               "without --force")
            + f"); 5 a config file {command} must edit does not parse or has a shape it cannot edit (fix it by hand; "
            "nothing was written), or the file system refused a write; 6 the output could not be written.")


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser("install", help="wire the hooks and register the server in a client's config",
                              epilog=_exit_codes("install"))
    _add_common(p, remove=False)
    p.set_defaults(func=lambda args: _run(args, remove=False))
    p = subparsers.add_parser("uninstall", help="remove context-keeper's hooks and server entry from a client's config",
                              epilog=_exit_codes("uninstall"))
    _add_common(p, remove=True)
    p.set_defaults(func=lambda args: _run(args, remove=True))
