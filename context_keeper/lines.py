"""One-line text forms of entries, as injected into an agent's context.

Importable without the core (no ``re`` unless a text contains ``<``, no ``typing``, no model):
the hooks render lines on their cold path with it. ``render`` re-exports everything here.

Stored text must not be able to close the framing around it and pose as the caller: any tag
spelling of the frame or of a system turn (whatever the case or spacing) loses its ``<``, and
code fences lose their backticks.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

_frame_tag = None


def _frame_tag_pattern():  # -> re.Pattern[str]
    global _frame_tag
    if _frame_tag is None:
        import re

        _frame_tag = re.compile(r"<(?=\s*/?\s*(?:project-memory|system)\b)", re.IGNORECASE)
    return _frame_tag


def neutralize(text: Any) -> str:
    """Collapse whitespace and defuse markup that could break out of an injection frame."""
    out = " ".join(str(text or "").split())
    if "<" in out:
        pattern = _frame_tag_pattern()
        if not out.isascii():
            # Zero-width and other format characters ("<\u200b/system>") are invisible to a
            # reader and to the pattern alike: where dropping them makes a frame tag, they go.
            bare = _without_format_characters(out)
            if bare != out and pattern.search(bare):
                out = bare
        out = pattern.sub("‹", out)
    return out.replace("```", "'" * 3)


def _without_format_characters(text: str) -> str:
    import unicodedata

    return "".join(ch for ch in text if ch.isascii() or unicodedata.category(ch) != "Cf")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with ``noun``, in the plural unless ``n`` is 1 ("1 step", "2 steps"); ``plural``
    for a noun not made plural by an "s" ("entry", "entries")."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def clip(text: Any, limit: int) -> str:
    return shorten(neutralize(text), limit)


def shorten(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut after a whole word and marked with
    "…". Cut anywhere, "at or above 99.5" read "at or above 99." and a reason ended in "cha"."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if not text[limit - 1].isspace():
        # At the last whitespace (a stored field may break its lines or use tabs). A word longer
        # than half the room (a path, a URL) is cut inside it, dropped whole it would leave next
        # to nothing: after its last slash or hyphen, else anywhere.
        floor = limit // 2
        cut = next((i for i in range(len(head) - 1, floor - 1, -1) if head[i].isspace()), -1)
        if cut < floor:
            cut = max(head.rfind("/"), head.rfind("\\"), head.rfind("-")) + 1
        if cut >= floor:
            head = head[:cut]
    return head.rstrip(" \t\r\n,;:—") + "…"


def constraint_line(entry: Mapping[str, Any], *, reason_chars: int = 160) -> str:
    scope = entry.get("scope") or "global"
    # Every stored field is cleaned, the scope and hardness included: a hand-written scope with
    # newlines or a closing tag must not read as text outside the entry.
    where = "" if scope in ("global", "") else f" [scope: {clip(scope, 120)}]"
    hardness = clip(entry.get("hardness", "absolute"), 20)
    line = f"- {clip(entry['id'], 40)} ({hardness}){where}: {clip(entry.get('rule'), 240)}"
    if reason_chars and entry.get("reason"):
        line += f" — because {clip(entry.get('reason'), reason_chars)}"
    return line


def decision_line(entry: Mapping[str, Any], *, why_chars: int = 140) -> str:
    line = f"- {clip(entry['id'], 40)}: {clip(entry.get('summary'), 200)}"
    if why_chars and entry.get("why_chosen"):
        line += f" — why: {clip(entry.get('why_chosen'), why_chars)}"
    return line


def pipeline_line(entry: Mapping[str, Any], *, max_steps: int = 6) -> str:
    steps = [s.get("action", "") for s in entry.get("steps", []) if isinstance(s, dict)]
    shown = " → ".join(clip(s, 60) for s in steps[:max_steps])
    if len(steps) > max_steps:
        shown += f" → … ({len(steps) - max_steps} more)"
    line = f"- {clip(entry['id'], 40)} {clip(entry.get('name'), 80)}"
    if entry.get("when_to_invoke"):
        line += f" (when: {clip(entry.get('when_to_invoke'), 100)})"
    return line + (f": {shown}" if shown else "")


def via_phrase(replacement: Mapping[str, Any]) -> str:
    """The ids a chain of replacements passed on the way (``replaced_by``'s ``via``), as text:
    "dec-002, dec-003 and 42 more" once ``via_more`` says the list was cut."""
    ids = ", ".join(" ".join(str(i or "").split()) for i in replacement.get("via") or ())
    more = replacement.get("via_more")
    return f"{ids} and {more} more" if isinstance(more, int) and more > 0 else ids
