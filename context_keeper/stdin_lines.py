"""The stdio server's request lines, read as the SDK reads them but with one repair.

A JSON-escaped lone UTF-16 surrogate (``"\\ud83d"`` with no low half after it) is valid JSON
text, and what Node's ``JSON.stringify`` writes for a string cut in the middle of an emoji. The
SDK's parser refuses such a line, and its stdio reader drops it without a reply, so the call
hangs forever. Each such escape is rewritten to ``\\ufffd`` (the replacement character) before
the SDK sees the line; a valid pair, an escaped backslash and every other byte are left as they
are. Imports no ``mcp``: ``server.main`` hands the stream to the SDK's transport.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from collections.abc import Iterator
from typing import BinaryIO

# Left to right, so "\\" is taken as an escaped backslash before the "u" after it can start
# an escape; a surrogate pair is matched whole before either half could be taken alone.
_ESCAPE = re.compile(
    r"\\\\"
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)
_LONE_ESCAPE_LENGTH = len("\\ud83d")


def replace_lone_surrogate_escapes(line: str) -> str:
    """``line`` with every ``\\uXXXX`` escape of an unpaired surrogate replaced by ``\\ufffd``."""
    if "\\u" not in line:
        return line
    return _ESCAPE.sub(_repaired, line)


def _repaired(match: re.Match[str]) -> str:
    return "\\ufffd" if len(match.group()) == _LONE_ESCAPE_LENGTH else match.group()


class RepairedLines:
    """The text lines of a binary stream, decoded as the SDK decodes stdin (UTF-8, bad bytes
    replaced), with lone surrogate escapes repaired. Only ``readline`` is needed: that is all
    ``anyio.wrap_file`` calls to iterate."""

    def __init__(self, binary: BinaryIO) -> None:
        self._text = io.TextIOWrapper(binary, encoding="utf-8", errors="replace")

    def readline(self) -> str:
        return replace_lone_surrogate_escapes(self._text.readline())


@contextlib.contextmanager
def claimed_stdin() -> Iterator[RepairedLines]:
    """The requests on fd 0, read through a private duplicate while fd 0 itself points at the
    null device, as the SDK's own stdin claim does: a child process (git) inheriting fd 0 must
    not read requests off the wire. Where that cannot be arranged, fd 0 is read in place."""
    try:
        wire = os.dup(0)
    except OSError:
        yield RepairedLines(sys.stdin.buffer)
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
    except OSError:
        os.close(wire)
        yield RepairedLines(sys.stdin.buffer)
        return
    try:
        # closefd=False: a worker thread may still be blocked reading it when serving ends.
        yield RepairedLines(os.fdopen(wire, "rb", closefd=False))
    finally:
        os.dup2(wire, 0)
