"""What of an entry is searchable, in which field group, and tolerant accessors.

Entries come from hand-editable JSON: any field may be missing or of the wrong type. Every
accessor here coerces instead of raising (a string where a list is expected is a one-element
list; a dict step contributes its string values; numbers become text).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from context_keeper.model import parse_time

# Field groups of BM25F. Each group has a weight and a length-normalisation strength; the
# entry fields feeding a group are concatenated. Titles are short and decisive, tags and
# retrieval hints are written to be matched, the "why" text is where symptoms are described.
GROUPS: tuple[str, ...] = ("title", "tags", "main", "aux")
GROUP_INDEX = {name: i for i, name in enumerate(GROUPS)}

FIELD_GROUPS: dict[str, str] = {
    # titles
    "summary": "title",
    "rule": "title",
    "name": "title",
    # written to be matched
    "tags": "tags",
    "retrieval_hints": "tags",
    # the substance
    "problem": "main",
    "why_chosen": "main",
    "rationale": "main",
    "reason": "main",
    "purpose": "main",
    "when_to_invoke": "main",
    "triggering_incident": "main",
    # supporting detail
    "what_we_tried": "aux",
    "tradeoffs": "aux",
    "alternatives": "aux",
    "constraints_created": "aux",
    "constraints": "aux",
    "steps": "aux",
    "enforced_by": "aux",
    "scope": "aux",
    "deprecated_reason": "aux",
}


def flatten_text(value: Any, _depth: int = 0) -> list[str]:
    """All text inside a value: strings, numbers, and the values of lists/dicts (bounded depth)."""
    if value is None or isinstance(value, bool) or _depth > 4:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (int, float)):
        return [str(value)]
    if isinstance(value, Mapping):
        out: list[str] = []
        for key, sub in value.items():
            if key in ("order",):
                continue
            out.extend(flatten_text(sub, _depth + 1))
        return out
    if isinstance(value, Iterable):
        out = []
        for sub in value:
            out.extend(flatten_text(sub, _depth + 1))
        return out
    return [str(value)]


def group_texts(entry: Mapping[str, Any]) -> list[str]:
    """One text per field group, in ``GROUPS`` order."""
    buckets: list[list[str]] = [[] for _ in GROUPS]
    for field, group in FIELD_GROUPS.items():
        if field in entry:
            buckets[GROUP_INDEX[group]].extend(flatten_text(entry[field]))
    return ["\n".join(b) for b in buckets]


def str_list(value: Any) -> list[str]:
    """A list of strings from a list, a single string or anything else."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, (list, tuple, set, frozenset)):
        return [str(v) for v in value if isinstance(v, (str, int, float)) and str(v).strip()]
    return [str(value)]


def text_field(entry: Mapping[str, Any], name: str) -> str:
    value = entry.get(name)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return " ".join(flatten_text(value))


def lowered(value: Any, default: str = "") -> str:
    return value.strip().lower() if isinstance(value, str) else default


def parse_datetime(value: Any) -> datetime | None:
    """An aware UTC datetime from an ISO-8601 string; None when unparsable (one parser for the
    whole package: ``model.parse_time``)."""
    return parse_time(value)


def as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value


def entry_id(entry: Mapping[str, Any]) -> str | None:
    value = entry.get("id")
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None
