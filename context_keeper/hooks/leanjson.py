"""JSON for the hooks' fast path without importing ``json`` (which pulls in ``re``/``enum``).

``loads`` drives the ``_json`` C scanner directly; ``dumps`` writes ASCII-only JSON (every
non-ASCII character escaped), so the bytes are valid UTF-8 and safe on any console. Both fall
back to the ``json`` module where the accelerator is missing (e.g. PyPy).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations stay strings
if TYPE_CHECKING:
    from typing import Any

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None


class _Context:
    """The attributes ``_json.make_scanner`` reads from a JSONDecoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict = {}

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}[name]


_scan = _json.make_scanner(_Context()) if _json is not None else None
_WS = " \t\n\r"


def loads(text: str | bytes) -> Any:
    """Parse one JSON document; raises ValueError on anything else."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8-sig")
    if _scan is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WS))
    try:
        value, end = _scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"not JSON (at character {exc.value})") from None
    if text[end:].strip(_WS):
        raise ValueError(f"extra data after the JSON value (at character {end})")
    return value


def _encode_str(text: str) -> str:
    if _json is not None:
        return _json.encode_basestring_ascii(text)
    import json  # pragma: no cover

    return json.dumps(text)  # pragma: no cover


def dumps(value: Any) -> str:
    """Compact ASCII JSON for dicts, lists, strings, numbers, booleans and None."""
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_encode_str(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("NaN and infinity are not JSON")
        out.append(float.__repr__(value))
    elif isinstance(value, dict):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(",")
            out.append(_encode_str(str(key)))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON serialisable")
