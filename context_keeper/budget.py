"""Token estimates and best-first packing into a budget.

Estimates use ~4 characters per token, the usual rule of thumb for English and code with the
tokenizers agents run on; it needs no tokenizer dependency and errs on the generous side for
JSON punctuation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from context_keeper.lines import shorten

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
    # Once, before the text caps: trimmed again, a list of 20 tags said "… 1 more".
    for key, value in list(out.items()):
        if isinstance(value, list) and len(value) > 8:
            out[key] = value[:8] + [f"… {len(value) - 8} more"]

    def capped(cap: int) -> dict:
        shorter = dict(out)
        for key in text_keys:
            value = shorter.get(key)
            if isinstance(value, str) and len(value) > cap:
                shorter[key] = shorten(value, cap + 1)
        return shorter

    def within(candidate: Mapping[str, Any]) -> bool:
        # Every string is in the JSON whole (escaping only lengthens it): while the strings alone
        # are over the budget the entry cannot fit, and is not encoded to find that out.
        text_chars = sum(len(v) for v in candidate.values() if isinstance(v, str))
        return text_chars <= budget_chars and entry_tokens(candidate) <= max_tokens

    # The longest cap on every text field that fits: fixed caps (600, 300, ...) cut an entry a
    # little over its room to a quarter of it.
    low, high = MIN_CAP_CHARS, max((len(out[k]) for k in text_keys), default=0)
    fits = within(capped(low))
    while fits and low < high:
        middle = (low + high + 1) // 2
        if within(capped(middle)):
            low = middle
        else:
            high = middle - 1
    out = capped(low)
    if not fits:
        # Bookkeeping (dates, origin, links, tags) and the lesser text fields go before the
        # reasoning does: a 365-token decision allowed 200 came back as its title alone.
        gist = _gist(entry, max_tokens)
        if gist is not None:
            return gist, True
        out = {k: out[k] for k in _ESSENTIAL if out.get(k) is not None}
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


MIN_CAP_CHARS = 60  # a text field cut shorter than this is left to the gist below
MIN_TITLE_CHARS = 24  # shorter than this a title no longer says what the entry is about
MIN_REASON_CHARS = 40  # a reason cut shorter than this says nothing: left out instead
_ESSENTIAL = ("id", "summary", "name", "rule", "status", "superseded_by", "scope", "hardness")
# What says why (or, for a pipeline, what to do), most telling first.
_REASONS = ("why_chosen", "rationale", "reason", "purpose", "steps", "problem", "deprecated_reason")
_STEP_CHARS = 150


def _gist(entry: Mapping[str, Any], max_tokens: int) -> dict | None:
    """``entry``'s id, title, status, successor and scope with as much of its reasoning
    (``_REASONS``, in order) as fits in ``max_tokens``, the last one included cut and marked
    with …; None when not even one reason fits beside the title."""
    gist = {k: entry[k] for k in _ESSENTIAL if entry.get(k) is not None}
    if entry_tokens(gist) > max_tokens:
        return None
    budget_chars = max_tokens * CHARS_PER_TOKEN
    added = False
    for key in _REASONS:
        value = entry.get(key)
        if isinstance(value, list) and value:
            steps = _fitting_steps(gist, key, value, max_tokens)
            if steps:
                gist[key] = steps
                added = True
            if len(steps) < len(value):
                break
        elif isinstance(value, str) and value.strip():
            gist[key] = value
            excess = json_chars(gist) - budget_chars
            if excess <= 0:
                added = True
                continue
            # Cut by the excess, then again by what escaping adds ("\n", "\"" count twice).
            cap = len(value) - excess - 1
            while cap >= MIN_REASON_CHARS:
                gist[key] = shorten(value, cap + 1)
                excess = json_chars(gist) - budget_chars
                if excess <= 0:
                    break
                cap -= excess
            if cap < MIN_REASON_CHARS:
                del gist[key]
            else:
                added = True
            break
    return gist if added else None


def _fitting_steps(gist: Mapping[str, Any], key: str, steps: list, max_tokens: int) -> list:
    """The first of ``steps`` (their text cut to ``_STEP_CHARS``) that fit beside ``gist``,
    followed by a "… N more" item when some are left out; [] when none fits."""
    kept: list = []
    for position, step in enumerate(steps):
        if isinstance(step, dict):
            step = {k: (shorten(v, _STEP_CHARS + 1) if isinstance(v, str) else v)
                    for k, v in step.items()}
        elif isinstance(step, str):
            step = shorten(step, _STEP_CHARS + 1)
        left = len(steps) - position - 1
        trial = kept + [step] + ([f"… {left} more"] if left else [])
        if entry_tokens({**gist, key: trial}) > max_tokens:
            break
        kept.append(step)
    if kept and len(kept) < len(steps):
        kept.append(f"… {len(steps) - len(kept)} more")
    return kept


def _cut_title(out: dict, cap: int) -> None:
    for key in ("summary", "name", "rule"):
        value = out.get(key)
        if isinstance(value, str) and len(value) > cap:
            # Marked, like every other cut: a rule missing its exception reads as stricter.
            out[key] = shorten(value, cap)
