"""The commonest hand-edit slips in a store file's JSON (or config.json's): named by what they
are, and mended where mending loses nothing (store files only).

Only the error path comes here (a file that parses never does). The JSON parser's own words
name the wrong thing: a ``// note`` is "Expecting property name", a trailing comma points at
the ``}`` on the next line. Each slip found here says what it is, where, and what to do:

- a comment (``//``, ``/* */``, ``#``): JSON has none. Never removed by a repair: the note is
  the person's text, so they choose to drop it or move it into a field;
- a missing comma after a value that ends a line, before a field or an entry on a later line
  (one added without its comma): a repair adds it. Two values on one line with nothing between
  them are a stray quote inside a string far more often, and are left to the person;
- a trailing comma before ``}`` or ``]``: a repair removes it;
- a single entry object where the file holds an array of them: a repair puts it inside ``[ ]``.

A repair only ever adds or removes commas and brackets, so every character the person wrote
stays: that is what makes it safe for ``doctor --fix``.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_BLANK = " \t\r\n"
_VALUE_ENDS = '"}]0123456789el'  # the last character of a string, object, array, number, true/false/null
_MAX_MENDS = 20  # a file with more slips than this was not hand-edited a little: left to the person


class Slip:
    """One slip at ``offset`` in the text: ``detail`` names it (for "does not parse (… at line L,
    column C)"), ``remedy`` says what to do by hand, ``mended`` is the text with it mended (None:
    not safe to mend) and ``mend`` what that does, as (to do, done)."""

    __slots__ = ("offset", "detail", "remedy", "mended", "mend")

    def __init__(self, offset: int, detail: str, remedy: str, mended: str | None = None,
                 mend: tuple[str, str] = ("", "")) -> None:
        self.offset, self.detail, self.remedy, self.mended, self.mend = offset, detail, remedy, mended, mend


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of ``offset``, counted as the JSON parser counts them."""
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


def _before(text: str, offset: int) -> int:
    """The offset of the last non-blank character before ``offset`` (-1: none)."""
    return len(text[:offset].rstrip(_BLANK)) - 1


def _comment(text: str, at: int, entries: bool) -> Slip:
    line, _ = position(text, at)
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    note = text[at:len(text) if end < 0 else end].rstrip("\r").strip()
    whole_line = not text[start:at].strip(_BLANK)
    what = f"line {line}" if whole_line else f"the comment from line {line}"
    shown = note if len(note) <= 60 else note[:59] + "…"
    if not entries:  # config.json: a "note" key would be an unknown setting
        return Slip(at, "a comment, which JSON does not allow,", f"remove {what} ({shown})")
    return Slip(at, "a comment, which JSON does not allow,",
                f"remove {what} ({shown}), or move the note into a field of its entry (such as \"note\"); "
                "`context-keeper doctor --fix` leaves this to you, as the note is yours")


def _trailing_comma(text: str, comma: int) -> Slip:
    line, column = position(text, comma)
    return Slip(comma, "a trailing comma, which JSON does not allow before a closing } or ],",
                f"remove the comma at line {line}, column {column}",
                text[:comma] + text[comma + 1:],
                (f"remove the trailing comma at line {line}, column {column}",
                 f"removed the trailing comma at line {line}, column {column}"))


def _missing_comma(text: str, after: int) -> Slip:
    line, column = position(text, after + 1)
    return Slip(after + 1, "a missing comma between two fields or two entries",
                f"add a comma at line {line}, column {column}, after the value that ends there",
                text[:after + 1] + "," + text[after + 1:],
                (f"add the missing comma at line {line}, column {column}",
                 f"added the missing comma at line {line}, column {column}"))


def find(text: str, exc: json.JSONDecodeError, entries: bool = True) -> Slip | None:
    """The slip that ``exc`` (raised parsing ``text``) stumbled on, or None for any other error.
    ``entries``: ``text`` is a store file, whose entries can hold a note as a field."""
    at = exc.pos
    if text.startswith(("//", "/*", "#"), at):
        return _comment(text, at, entries)
    previous = _before(text, at)
    if text[at:at + 1] in ("}", "]") and previous >= 0 and text[previous] == ",":
        return _trailing_comma(text, previous)
    if exc.msg == "Expecting ',' delimiter" and _ends_a_line_before(text, previous, at):
        slip = _missing_comma(text, previous)
        return slip if _gets_further(slip.mended, at) else None
    return None


def _ends_a_line_before(text: str, previous: int, at: int) -> bool:
    """Does a complete value end at ``previous``, with the next one starting on a later line?

    That is how a field or an entry added without its comma looks. Two values on one line with
    nothing between them are, in a hand-edited file, a stray quote inside a string
    (``"error "429" from the API"``): a comma there would split the person's text into items
    that parse, so the slip is not named as a missing comma and not mended."""
    return previous >= 0 and text[previous] in _VALUE_ENDS and "\n" in text[previous + 1:at]


def _gets_further(text: str, offset: int) -> bool:
    """Does ``text`` parse, or fail only past ``offset`` (one character was added before it)?"""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.pos > offset + 1
    except RecursionError:
        return False
    return True


def is_single_entry(value: Any) -> bool:
    """An object that is one entry (it has an id): a file holding just it lacks the array's ``[ ]``."""
    return isinstance(value, dict) and "id" in value


def single_entry() -> Slip:
    return Slip(0, "a single entry, not a JSON array of entries,",
                "put it inside [ ]: a [ before its { and a ] after its }")


def _wrapped(text: str) -> str:
    body = text.strip(_BLANK)
    newline = "\r\n" if "\r\n" in text else "\n"
    return f"[{newline}{body}{newline}]{newline}"


def mend(text: str) -> tuple[str, list[tuple[str, str]]] | None:
    """``text`` with its missing and trailing commas mended and a lone entry put inside ``[ ]``,
    plus each mend as (to do, done), when that makes it a JSON array; None when anything else
    is wrong (a comment, a typo in a word, a missing quote), which is then left to the person."""
    done: list[tuple[str, str]] = []
    for _attempt in range(_MAX_MENDS):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            slip = find(text, exc)
            if slip is None or slip.mended is None:
                return None
            text = slip.mended
            done.append(slip.mend)
            continue
        except RecursionError:
            return None
        if isinstance(value, list):
            return (text, done) if done else None
        if is_single_entry(value):
            return _wrapped(text), [*done, ("put the single entry inside [ ]", "put the single entry inside [ ]")]
        return None
    return None
