"""Rewrite a JSON document keeping the text of everything that did not change.

``install`` edits a client's config file (another tool's, often committed): re-serialising the whole
document would reformat the person's other entries (a one-line ``{"type": "http", ...}`` spread over
four lines), so a diff shows more than our edit. ``rewrite`` instead keeps the original text of every
value equal to the old one, edits objects and arrays member by member, and writes only new values,
indented like their neighbours. When the result would not parse back to exactly the new data it
returns None, and the caller re-serialises the whole document.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass
class _Node:
    value: Any
    start: int
    end: int
    # object: (key, where the key starts, value); array: (None, -1, value)
    members: list[tuple[str | None, int, _Node]] = field(default_factory=list)


def _skip(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()  # type: ignore[union-attr]


def _parse(text: str, pos: int) -> _Node:
    """The value at ``pos`` (no whitespace before it) with the spans of its members."""
    opener = text[pos:pos + 1]
    if opener not in ("{", "["):
        value, end = _DECODER.raw_decode(text, pos)
        return _Node(value, pos, end)
    closer = "}" if opener == "{" else "]"
    node = _Node({} if opener == "{" else [], pos, pos)
    pos = _skip(text, pos + 1)
    while text[pos] != closer:
        key, key_start = None, -1
        if opener == "{":
            key_start = pos
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _skip(text, _skip(text, pos) + 1)  # past the colon
        child = _parse(text, pos)
        node.members.append((key, key_start, child))
        if opener == "{":
            node.value[key] = child.value
        else:
            node.value.append(child.value)
        pos = _skip(text, child.end)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
    node.end = pos + 1
    return node


def rewrite(text: str, new: Any, indent: str, newline: str) -> str | None:
    """``text`` (a JSON document) rewritten to hold ``new``; None when that cannot be done by
    keeping the text of what did not change (the caller then serialises ``new`` afresh)."""
    try:
        start = _skip(text, 0)
        root = _parse(text, start)
    except (ValueError, IndexError, RecursionError):  # nested past Python's stack: rewritten whole
        return None
    result = text[:root.start] + _edit(text, root, new, indent, newline) + text[root.end:]
    try:
        return result if json.loads(result) == new else None
    except ValueError:
        return None


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    return _SPACE.match(text, line_start).group().replace("\r", "").replace("\n", "")  # type: ignore[union-attr]


def _fresh(value: Any, text: str, pos: int, indent: str, newline: str, one_line: bool) -> str:
    """``value`` serialised as a new member at ``pos``: on one line inside a one-line container,
    else indented from the line it starts on."""
    if one_line:
        return json.dumps(value, ensure_ascii=False)
    dumped = json.dumps(value, indent=indent, ensure_ascii=False)
    return dumped.replace("\n", newline + _line_indent(text, pos))


def _edit(text: str, node: _Node, new: Any, indent: str, newline: str) -> str:
    if node.value == new and type(node.value) is type(new):
        return text[node.start:node.end]
    same_kind = isinstance(node.value, dict) and isinstance(new, dict) or (
        isinstance(node.value, list) and isinstance(new, list))
    if not same_kind or not node.members:
        return _fresh(new, text, node.start, indent, newline, one_line=False)
    pieces = (_object_members if isinstance(new, dict) else _array_members)(text, node, new, indent, newline)
    if pieces is None:
        return _fresh(new, text, node.start, indent, newline, one_line=False)
    if not pieces:
        return "{}" if isinstance(new, dict) else "[]"
    first, last = node.members[0], node.members[-1][2]
    opening = text[node.start:first[1] if first[1] >= 0 else first[2].start]
    closing = text[last.end:node.end]
    separator = _separator(text, node, opening)
    return opening + separator.join(pieces) + closing


def _separator(text: str, node: _Node, opening: str) -> str:
    """What goes between two members: the text between the first two, or made from the whitespace
    after the opening bracket."""
    if len(node.members) > 1:
        end = node.members[0][2].end
        nxt = node.members[1]
        return text[end:nxt[1] if nxt[1] >= 0 else nxt[2].start]
    return "," + opening[1:] if opening[1:] else ", "


def _object_members(text: str, node: _Node, new: dict[str, Any], indent: str, newline: str) -> list[str] | None:
    old_keys = [key for key, _, _ in node.members]
    kept = [key for key in old_keys if key in new]
    if list(new)[:len(kept)] != kept:
        return None  # reordered: no member-by-member edit keeps that
    one_line = "\n" not in text[node.start:node.end]
    pieces = []
    for key, key_start, child in node.members:
        if key in new:
            pieces.append(text[key_start:child.start] + _edit(text, child, new[key], indent, newline))
    anchor = node.members[-1][1]
    for key in list(new)[len(kept):]:
        pieces.append(json.dumps(key, ensure_ascii=False) + ": "
                      + _fresh(new[key], text, anchor, indent, newline, one_line))
    return pieces


def _array_members(text: str, node: _Node, new: list[Any], indent: str, newline: str) -> list[str] | None:
    old = [child for _, _, child in node.members]
    one_line = "\n" not in text[node.start:node.end]
    keys = [json.dumps(v, sort_keys=True) for v in new]
    matcher = difflib.SequenceMatcher(None, [json.dumps(c.value, sort_keys=True) for c in old], keys, autojunk=False)
    pieces = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else (i2 - i1 if tag == "equal" else 0)
        for k in range(paired):
            pieces.append(_edit(text, old[i1 + k], new[j1 + k], indent, newline))
        for value in new[j1 + paired:j2]:
            pieces.append(_fresh(value, text, old[min(i1 + paired, len(old) - 1)].start, indent, newline, one_line))
    return pieces
