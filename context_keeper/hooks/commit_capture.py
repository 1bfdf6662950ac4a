"""PostToolUse on Bash: after a ``git commit`` whose message reads like a decision, constraint or
gotcha, note that it is not in the project memory yet. Silent for trivial commits (typo,
formatting, version bumps...), failed commits and commits already noted this session.

The message is taken from the command (``-m`` text or a heredoc body) and the first line git
prints (``[branch abc1234] subject``). Plain string tests; no ``re`` on this path.
"""

from __future__ import annotations

from context_keeper.hookio import frame

TYPE_CHECKING = False
if TYPE_CHECKING:
    from context_keeper.hookio import HookContext

SIGNALS = (
    "decid", "decision", "chose ", "choose ", "chosen", "instead of", "rather than", "switch to",
    "switched to", "switch from", "replace ", "replaced ", "replaces ", "migrate to", "migrated to",
    "adopt", "because", "trade-off", "tradeoff", "constraint", "must not", "must ", "never ",
    "always ", "do not ", "don't ", "gotcha", "workaround", "work around", "caveat", "pitfall",
    "breaking", "deprecat", "policy", "convention", "no longer", "from now on", "root cause",
)
TRIVIAL = (
    "typo", "bump", "format", "lint", "whitespace", "wip", "merge branch", "merge pull", "merge remote",
    "revert \"", "readme", "changelog", "release v", "version", "chore", "style:", "docs:", "rename",
    "update deps", "dependabot",
)
# A trivial word counts with these endings ("typos", "formatted", "linting"), never inside
# another word: "information" is not "format", nor "conversion" "version", nor "swipe" "wip".
_ENDINGS = frozenset(("", "s", "es", "d", "ed", "ing", "er", "ers", "ted", "ting", "ter", "ters", "ped", "ping"))


def is_commit(command: str) -> bool:
    words = command.replace(";", " ").replace("&&", " ").split()
    return "git" in words and "commit" in words and "--dry-run" not in words


def commit_line(response: object) -> tuple[str, str]:
    """``(short sha, subject)`` from git's ``[branch sha] subject`` output line."""
    text = ""
    if isinstance(response, dict):
        text = "\n".join(str(response.get(k) or "") for k in ("stdout", "output"))
    elif isinstance(response, str):
        text = response
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and "] " in line:
            head, _, subject = line[1:].partition("] ")
            words = head.split()
            if len(words) >= 2:
                return words[-1], subject.strip()
    return "", ""


def reads_like_a_decision(message: str) -> bool:
    text = " " + " ".join(message.lower().split()) + " "
    if not any(s in text for s in SIGNALS):
        return False
    subject = message.strip().splitlines()[0].lower() if message.strip() else ""
    return not (len(message) < 120 and any(_has_word(subject, t) for t in TRIVIAL))


def _has_word(text: str, term: str) -> bool:
    start = text.find(term)
    while start != -1:
        end = start + len(term)
        if not (term[0].isalnum() and start and text[start - 1].isalnum()):
            if not term[-1].isalnum():
                return True
            tail = end
            while tail < len(text) and text[tail].isalpha():
                tail += 1
            if text[end:tail] in _ENDINGS:
                return True
        start = text.find(term, start + 1)
    return False


def handle(ctx: HookContext) -> str | None:
    if ctx.payload.get("tool_name") not in (None, "Bash"):
        return None
    tool_input = ctx.payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str) or not is_commit(command):
        return None
    response = ctx.payload.get("tool_response")
    sha, subject = commit_line(response)
    if not sha:
        return None  # nothing was committed (failed hook, nothing to commit...)
    message = _message_part(command) + "\n" + subject
    if not reads_like_a_decision(message):
        return None
    if not ctx.locate():
        return None
    state = ctx.state()
    key = f"commit:{sha}"
    if not state.unseen([key]):
        return None
    state.mark([key])
    shown = subject.replace("<", "‹").replace("`", "'")[:200]
    return frame(
        f"Commit {sha} (\"{shown}\") reads like a decision, constraint or gotcha. If it settles "
        "something later sessions should know and the project memory does not hold it yet "
        "(get_context shows what is there), record_decision (problem, why_chosen, alternatives) "
        "or record_constraint (rule, reason, scope) keeps the reasoning; trivial commits need nothing."
    )


def _message_part(command: str) -> str:
    """The commit message text inside the command, or the whole command when unsure."""
    for flag in (" -m ", " --message ", " --message=", " -am ", " -F "):
        if flag in command:
            return command.split(flag, 1)[1]
    return command
