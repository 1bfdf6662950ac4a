"""Token estimates and best-first packing into a budget.

Estimates use ~4 characters per token, the usual rule of thumb for English and code with the
tokenizers agents run on; it needs no tokenizer dependency and errs on the generous side for
JSON punctuation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

TYPE_CHECKING = False  # typing costs ~5 ms to import on the hooks' cold path
if TYPE_CHECKING:
    from typing import Any

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return chars_to_tokens(len(text))


def chars_to_tokens(chars: int) -> int:
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


# json.dumps with non-default options builds an encoder per call, which costs as much as
# encoding a small item; packing one answer measures dozens of them.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def json_chars(value: Any) -> int:
    """Length of ``value`` as compact JSON, the text every estimate here is taken from."""
    return len(_COMPACT.encode(value))


def entry_tokens(entry: Mapping[str, Any]) -> int:
    return chars_to_tokens(json_chars(entry))


_SHORTEN_ORDER = (
    "what_we_tried", "tradeoffs", "triggering_incident", "why_chosen", "problem", "reason",
    "purpose", "when_to_invoke", "rationale",
)


def shorten_entry(entry: Mapping[str, Any], max_tokens: int, chars: int | None = None) -> tuple[dict, bool]:
    """A copy of ``entry`` within ``max_tokens``: long text fields are cut (marked with …),
    lists trimmed, bookkeeping dropped. Returns (entry, was_shortened). ``chars``, when the
    caller has it, is ``json_chars(entry)``."""
    if chars_to_tokens(json_chars(entry) if chars is None else chars) <= max_tokens:
        return dict(entry), False
    out = dict(entry)
    for key in ("verified_sha", "schema_version", "retrieval_hints"):
        out.pop(key, None)
    budget_chars = max_tokens * CHARS_PER_TOKEN
    text_keys = [k for k in _SHORTEN_ORDER if isinstance(out.get(k), str)]
    text_keys += [k for k, v in out.items() if isinstance(v, str) and k not in text_keys and len(v) > 200]
    for cap in (600, 300, 150, 60):
        for key in text_keys:
            value = out.get(key)
            if isinstance(value, str) and len(value) > cap:
                out[key] = value[:cap].rstrip() + "…"
        for key, value in list(out.items()):
            if isinstance(value, list) and len(value) > 8:
                out[key] = value[:8] + [f"… {len(value) - 8} more"]
        if entry_tokens(out) <= max_tokens:
            break
    if entry_tokens(out) > max_tokens:
        keep = ("id", "summary", "name", "rule", "status", "superseded_by", "scope", "hardness")
        out = {k: out[k] for k in keep if out.get(k) is not None}
        _cut_title(out, max(40, budget_chars // 2))
        # Still over (a tiny budget): what the entry's title can do without goes first, then the
        # title is cut to the room left. An answer with the best match cut short beats one that
        # skips it for a lower-ranked entry that happens to be shorter.
        for key in ("hardness", "scope", "status"):
            if entry_tokens(out) <= max_tokens:
                break
            if key != "status" or out.get(key) == "active":
                out.pop(key, None)
        excess = json_chars(out) - budget_chars
        if excess > 0:
            title = next((out[k] for k in ("summary", "name", "rule") if isinstance(out.get(k), str)), "")
            _cut_title(out, max(MIN_TITLE_CHARS, len(title) - excess))
    return out, True


MIN_TITLE_CHARS = 24  # shorter than this a title no longer says what the entry is about


def _cut_title(out: dict, cap: int) -> None:
    for key in ("summary", "name", "rule"):
        value = out.get(key)
        if isinstance(value, str) and len(value) > cap:
            # Marked, like every other cut: a rule missing its exception reads as stricter.
            out[key] = value[: cap - 1].rstrip() + "…"
