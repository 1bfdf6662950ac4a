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
_make_encoder = getattr(_json, "make_encoder", None)


def _unserialisable(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
_WS = " \t\n\r"


def loads(text: str | bytes) -> Any:
    """Parse one JSON document; raises ValueError on anything else (nesting too deep included)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8-sig")
    if _scan is None:  # pragma: no cover
        import json

        try:
            return json.loads(text)
        except RecursionError:
            raise ValueError("nested too deeply") from None
    start = len(text) - len(text.lstrip(_WS))
    value, end = scan(text, start)
    if text[end:].strip(_WS):
        raise ValueError(f"extra data after the JSON value (at character {end})")
    return value


def scan(text: str, pos: int) -> tuple[Any, int]:
    """The JSON value starting exactly at ``text[pos]`` and the index just after it. Raises
    ValueError for anything else, including a value nested deeper than the parser goes (a
    crafted file: its readers treat it as unreadable, not as a crash)."""
    try:
        return _scan_value(text, pos)
    except RecursionError:
        raise ValueError(f"nested too deeply (at character {pos})") from None


def _scan_value(text: str, pos: int) -> tuple[Any, int]:
    if _scan is None:  # pragma: no cover
        import json

        try:
            return json.JSONDecoder().raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ValueError(str(exc)) from None
    try:
        return _scan(text, pos)
    except StopIteration as exc:
        raise ValueError(f"not JSON (at character {exc.value})") from None
    except SystemError:
        # The scanner reports most syntax errors through json.decoder.JSONDecodeError, which it
        # looks up in sys.modules only; unimported, that surfaces as a SystemError. Parse again
        # with the json module for the real error (a rare path: the cost does not matter).
        import json

        try:
            return json.JSONDecoder().raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ValueError(str(exc)) from None


def _encode_str(text: str) -> str:
    if _json is not None:
        return _json.encode_basestring_ascii(text)
    import json  # pragma: no cover

    return json.dumps(text)  # pragma: no cover


def dumps(value: Any) -> str:
    """Compact ASCII JSON for dicts, lists, strings, numbers, booleans and None."""
    if _make_encoder is not None:
        # The C encoder behind json.dumps(ensure_ascii=True, separators=(",", ":"),
        # allow_nan=False); a fresh one per call, as json.dumps makes (its circular-reference
        # markers must start empty).
        encode = _make_encoder({}, _unserialisable, _json.encode_basestring_ascii, None, ":", ",", False, False, False)
        return "".join(encode(value, 0))
    out: list[str] = []  # pragma: no cover - interpreters without the C accelerator
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
