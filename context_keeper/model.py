"""Entry kinds and their field rules — the one place that declares them.

Record/update validation, ``verify_quality``, tolerant reading of hand-edited files and the
MCP parameter descriptions all read the declarations below. A new entry kind (task, note,
rule, ...) is a new ``Kind`` in ``KINDS``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timezone

from context_keeper.errors import InvalidInput

TYPE_CHECKING = False  # typing costs ~5 ms to import on the hooks' cold path
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 2
STATUSES = ("active", "superseded", "deprecated")
ORIGINS = ("user", "agent", "import")
HARDNESS = ("absolute", "advisory")

MAX_TEXT = 20_000
MAX_SHORT_TEXT = 500
MAX_LIST = 100
MAX_STEPS = 100

# ASCII digits only: "dec-00\u0661" (an Arabic-Indic one) is not an id.
ID_RE = re.compile(r"^(?P<prefix>[a-z]+)-(?P<num>[0-9]{1,9})(?:-(?P<suffix>[0-9a-zA-Z]{1,16}))?$")


# Plain classes rather than dataclasses: the hooks import this module on their cold path, and
# ``dataclasses`` (which imports ``inspect``) costs more than the rest of the module.
class FieldSpec:
    """How one entry field is stored and validated.

    ``shape`` is one of: text, short, enum, text_list, id_list, id, steps, alternatives.
    ``quality``: counts as reasoning text for verify_quality.
    """

    __slots__ = ("name", "shape", "min_len", "choices", "default", "quality")

    def __init__(self, name: str, shape: str = "text", min_len: int = 0, choices: tuple[str, ...] = (),
                 default: Any = "", quality: bool = False) -> None:
        self.name, self.shape, self.min_len = name, shape, min_len
        self.choices, self.default, self.quality = choices, default, quality

    def empty(self) -> Any:
        if self.shape in ("text_list", "id_list", "steps", "alternatives"):
            return []
        return self.default

    def __repr__(self) -> str:
        return f"FieldSpec({self.name!r}, {self.shape!r})"


class Kind:
    """One entry kind: ``name`` "decision", ``plural`` "decisions" (also the ``types`` value
    agents pass), id ``prefix`` "dec", ``title_field`` (the one-line label), ``fields``."""

    def __init__(self, name: str, plural: str, prefix: str, title_field: str, fields: tuple[FieldSpec, ...]) -> None:
        self.name, self.plural, self.prefix, self.title_field = name, plural, prefix, title_field
        self.fields = fields
        self._by_name = {f.name: f for f in fields}

    @property
    def filename(self) -> str:
        return f"{self.plural}.json"

    def spec(self, name: str) -> FieldSpec | None:
        return self._by_name.get(name)

    @property
    def required(self) -> tuple[FieldSpec, ...]:
        return tuple(f for f in self.fields if f.min_len > 0)

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"


_COMMON = (
    FieldSpec("related_to", "id_list"),
    FieldSpec("tags", "text_list"),
    FieldSpec("retrieval_hints", "text_list"),
    FieldSpec("origin", "enum", choices=ORIGINS, default="agent"),
    FieldSpec("status", "enum", choices=STATUSES, default="active"),
)

DECISION = Kind(
    name="decision",
    plural="decisions",
    prefix="dec",
    title_field="summary",
    fields=(
        FieldSpec("summary", "short", min_len=5),
        FieldSpec("problem", min_len=40, quality=True),
        FieldSpec("why_chosen", min_len=60, quality=True),
        FieldSpec("what_we_tried"),
        FieldSpec("tradeoffs"),
        FieldSpec("alternatives", "alternatives"),
        FieldSpec("constraints_created", "text_list"),
        *_COMMON,
        FieldSpec("superseded_by", "id", default=None),
    ),
)

PIPELINE = Kind(
    name="pipeline",
    plural="pipelines",
    prefix="pipe",
    title_field="name",
    fields=(
        FieldSpec("name", "short", min_len=3),
        FieldSpec("purpose", min_len=40, quality=True),
        FieldSpec("when_to_invoke"),
        FieldSpec("steps", "steps"),
        FieldSpec("constraints", "text_list"),
        *_COMMON,
        FieldSpec("superseded_by", "id", default=None),
    ),
)

CONSTRAINT = Kind(
    name="constraint",
    plural="constraints",
    prefix="con",
    title_field="rule",
    fields=(
        FieldSpec("rule", "short", min_len=5),
        FieldSpec("reason", min_len=40, quality=True),
        FieldSpec("triggering_incident"),
        FieldSpec("enforced_by"),
        FieldSpec("scope", "short", default="global"),
        FieldSpec("hardness", "enum", choices=HARDNESS, default="absolute"),
        *_COMMON,
        FieldSpec("superseded_by", "id", default=None),
    ),
)

KINDS: dict[str, Kind] = {k.name: k for k in (DECISION, PIPELINE, CONSTRAINT)}
BY_PLURAL: dict[str, Kind] = {k.plural: k for k in KINDS.values()}
BY_PREFIX: dict[str, Kind] = {k.prefix: k for k in KINDS.values()}

# Fields the store manages; callers cannot set them through update_entry.
MANAGED = ("id", "created_at", "schema_version")

# Only a decision recorded with ``supersedes`` has the field, so it is no part of a kind's
# fields (read_entry would add an empty one to every entry); a value given to update_entry is
# still held to the shape record_decision writes.
SUPERSEDES = FieldSpec("supersedes", "id_list")
# Other fields update_entry takes that no kind declares, held to a shape all the same: stored as
# given, a number or a megabyte of text went to disk as it came.
OFF_KIND = {
    "supersedes": SUPERSEDES,
    "deprecated_reason": FieldSpec("deprecated_reason"),
    "verified_sha": FieldSpec("verified_sha", "short", default=None),
}
TIMESTAMPS = ("created_at", "updated_at", "verified_at")


def kind_named(name: str) -> Kind:
    """Accept ``decision``/``decisions`` (any case); raise InvalidInput otherwise."""
    key = str(name).strip().lower()
    kind = KINDS.get(key) or BY_PLURAL.get(key)
    if kind is None:
        raise InvalidInput(
            f"unknown entry type {shown(name)}: use one of "
            + ", ".join(f"{k.name}/{k.plural}" for k in KINDS.values()),
            field="types",
        )
    return kind


# ---------------------------------------------------------------- ids


SHOWN_CHARS = 80


def shown(value: Any) -> str:
    """``repr(value)`` for a message, cut at ``SHOWN_CHARS``: a 5,000-character status quoted
    whole buried the rest of doctor's report."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def parse_id(entry_id: Any) -> tuple[str, int, str] | None:
    if not isinstance(entry_id, str):
        return None
    m = ID_RE.match(entry_id.strip())
    if not m:
        return None
    return m["prefix"], int(m["num"]), m["suffix"] or ""


ID_ANY_CASE = re.compile(r"([A-Za-z]+)-([0-9]{1,9})(?:-([0-9a-zA-Z]{1,16}))?")


def id_key(entry_id: Any) -> tuple[str, int, str] | None:
    """What makes two spellings of an id one id to a reader: dec-5, DEC-005 and dec-005 are one,
    as are a suffix's cases (dec-013-A7F3)."""
    if not isinstance(entry_id, str):
        return None
    m = ID_ANY_CASE.fullmatch(entry_id.strip())
    return None if m is None else (m[1].lower(), int(m[2]), (m[3] or "").lower())


def misfiled_home(kind: Kind, entry_id: Any) -> Kind | None:
    """The other kind whose id ``entry_id`` is, in any case, on an item of ``kind``'s file: "DEC-002"
    in constraints.json is a decision pasted into the wrong file (as ids are read and counted),
    not a constraint whose id needs correcting. None: not another kind's id."""
    key = id_key(entry_id)
    if key is None or key[0] == kind.prefix:
        return None
    return BY_PREFIX.get(key[0])


def canonical_id(entry_id: str) -> str:
    """An id given in another case as the tools write ids ("DEC-7" is dec-7, "dec-013-A7F3" stays):
    what the read tools accept, the write tools store as a link. The number is kept as given
    (dec-7 and dec-007 can be two stored ids)."""
    text = entry_id.strip()
    return text if parse_id(text) is not None else text.lower()


def kind_of_id(entry_id: str) -> Kind:
    parsed = id_key(entry_id)  # "DEC-004" names a decision, even if not one any tool wrote
    if parsed is None or parsed[0] not in BY_PREFIX:
        raise InvalidInput(
            f"{shown(entry_id)} is not an entry id: ids look like dec-001, pipe-002, con-003 "
            "(optionally with a suffix such as dec-013-a7f3)",
            field="id",
        )
    return BY_PREFIX[parsed[0]]


def id_sort_key(entry_id: Any) -> tuple[int, str]:
    parsed = parse_id(entry_id)
    if parsed is None:
        return (10**12, str(entry_id))
    return (parsed[1], parsed[2])


def format_id(kind: Kind, number: int) -> str:
    """``dec-001`` … ``dec-999``, ``dec-1000``: zero-padded to 3 digits."""
    return f"{kind.prefix}-{number:03d}"


# ---------------------------------------------------------------- time


def now_iso(now: datetime | None = None) -> str:
    return (now or datetime.now(timezone.utc)).astimezone(timezone.utc).isoformat()


def parse_time(value: Any) -> datetime | None:
    """ISO-8601 to an aware UTC datetime; ``None`` for anything unparsable."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        return parsed.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T00:00+05:00 is before the first representable instant
        return None


# ---------------------------------------------------------------- tolerant reading


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "; ".join(_as_text(v) for v in value)
    return str(value)


def _as_list(value: Any) -> list:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, (tuple, set)):
        return list(value)
    return [value]


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the value {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def _quoted(text: str, limit: int = 60) -> str:
    return '"' + (text if len(text) <= limit else text[: limit - 1] + "…") + '"'


def _read_steps(value: Any, problems: list[str] | None = None) -> list[dict]:
    """Steps as ``{order, action, ...}`` objects. With ``problems`` (only when ``value`` is a
    list), a sentence per item that had to be coerced or dropped: from the entry as shown
    nobody can tell that a step was a number, null or had no action in the file."""
    steps = []
    for i, step in enumerate(_as_list(value), start=1):
        if isinstance(step, Mapping):
            item = dict(step)
            item.setdefault("order", i)
            action = step.get("action")
            item["action"] = _as_text(action if action is not None else "")
            if problems is not None and not isinstance(action, str):
                what = "has no action" if action is None else f"has {_json_kind(action)} as its action, not text"
                read = f"the step {_quoted(item['action'])}" if item["action"] else "an empty step"
                problems.append(f"steps item {i} {what}; it is read as {read}. "
                                f"Give it an \"action\" string, or remove it")
            steps.append(item)
        elif step is not None:
            item = {"order": i, "action": _as_text(step)}
            if problems is not None:
                problems.append(f"steps item {i} is {_json_kind(step)}, not an {{order, action}} object; it is read "
                                f"as the step {_quoted(item['action'])}. Write it as "
                                f"{{\"order\": {i}, \"action\": ...}}, or remove it")
            steps.append(item)
        elif problems is not None:
            # The steps after it keep their position as their order, so the numbering has a gap.
            problems.append(f"steps item {i} is null; it is skipped, leaving a gap at step {i}. Remove it")
    return steps


def _read_alternatives(value: Any, problems: list[str] | None = None) -> list[dict]:
    """Alternatives as ``{option, reason_rejected, ...}`` objects. With ``problems`` (only when
    ``value`` is a list), a sentence per item that had to be coerced or dropped, as for steps.
    A missing or null ``reason_rejected`` is not one: the tools accept an option without it."""
    out = []
    for i, alt in enumerate(_as_list(value), start=1):
        if isinstance(alt, Mapping):
            item = dict(alt)
            option, reason = alt.get("option"), alt.get("reason_rejected")
            item["option"] = _as_text(option if option is not None else "")
            item["reason_rejected"] = _as_text(reason if reason is not None else "")
            if problems is not None and not isinstance(option, str):
                what = "has no option" if option is None else f"has {_json_kind(option)} as its option, not text"
                read = (f"the alternative {_quoted(item['option'])}" if item["option"]
                        else "an alternative with no option")
                problems.append(f"alternatives item {i} {what}; it is read as {read}. "
                                "Give it an \"option\" string, or remove it")
            if problems is not None and reason is not None and not isinstance(reason, str):
                problems.append(f"alternatives item {i} has {_json_kind(reason)} as its reason_rejected, not text; "
                                f"it is read as {_quoted(item['reason_rejected'])}. Write the reason as a string")
            out.append(item)
        elif alt is not None:
            item = {"option": _as_text(alt), "reason_rejected": ""}
            if problems is not None:
                problems.append(f"alternatives item {i} is {_json_kind(alt)}, not an {{option, reason_rejected}} "
                                f"object; it is read as the alternative {_quoted(item['option'])} with no reason. "
                                "Write it as {\"option\": ..., \"reason_rejected\": ...}, or remove it")
            out.append(item)
        elif problems is not None:
            problems.append(f"alternatives item {i} is null; it is skipped. Remove it")
    return out


_TEXT_SHAPES = frozenset({"text", "short"})
_LIST_SHAPES = frozenset({"text_list", "id_list"})


# Field shapes read as lists of objects: (reader, what the items should be, for the message).
_OBJECT_LISTS = {"steps": (_read_steps, "{order, action} objects"), "alternatives": (_read_alternatives, "objects")}


# Status words a person types for an entry no longer in force. Read as the default ("active"),
# a rule marked "retired" by hand stayed enforced without a word; these are read as retired:
# superseded when the entry names its successor, else deprecated. Only words that cannot mean
# "still in force" (not "old", "paused" or "draft"), and the usual misspellings of the two.
RETIRED_WORDS = frozenset((
    "retired", "obsolete", "archived", "inactive", "removed", "deleted", "dropped", "abandoned", "withdrawn",
    "revoked", "rejected", "reverted", "disabled", "outdated", "replaced", "cancelled", "canceled", "expired",
    "deprecate", "depreciated", "supersede", "superceded", "superseeded",
))


def status_read_as(written: str, raw: Mapping) -> str:
    """How a status outside the list (lower-cased, stripped) is read."""
    if written not in RETIRED_WORDS:
        return "active"
    successor = raw.get("superseded_by")
    return "superseded" if isinstance(successor, str) and parse_id(successor) is not None else "deprecated"


def status_problem(entry_id: str, written: Any, read_as: str) -> str:
    """What is said of a status outside the list: how it is read and what to write instead."""
    said = f"{entry_id}: status {shown(written)} is not one of {', '.join(STATUSES)}"
    if read_as == "active":
        return (f"{said}; it is read as active (still served, and a constraint still enforced): write \"active\", "
                "or \"deprecated\" if the entry is retired")
    return f"{said}; it is read as {read_as} (retired, as the word says): write \"{read_as}\" to say so"


def odd_status(raw: Any) -> str | None:
    """``status_problem`` for a stored item whose status is outside the list, else None (the
    common case: one dict lookup)."""
    odd = odd_status_word(raw)
    if odd is None:
        return None
    entry_id = raw.get("id")
    return status_problem(entry_id.strip() if isinstance(entry_id, str) else "an entry", *odd)


def odd_status_word(raw: Any) -> tuple[Any, str] | None:
    """The status a stored item has outside the list, and how it is read; else None."""
    if not isinstance(raw, Mapping) or "status" not in raw:
        return None
    written = raw["status"]
    if type(written) is str and written in STATUSES:
        return None
    text = _as_text(written).strip().lower()
    if text in STATUSES:
        return None
    return written, status_read_as(text, raw)


def read_entry(kind: Kind, raw: Any) -> tuple[dict | None, list[str]]:
    """A usable copy of a stored entry with missing fields defaulted and wrong types coerced.

    Returns ``(None, problems)`` for items that cannot be used at all (not an object, no valid
    id, wrong id prefix). The raw item itself is never modified, so a rewrite keeps it as is.
    """
    entry, problems, _ = read_entry_checked(kind, raw)
    return entry, problems


def read_entry_checked(kind: Kind, raw: Any) -> tuple[dict | None, list[str], bool]:
    """``read_entry``, and whether the entry is ``plain_entry(kind, raw)``: every field stored is
    in its own shape, so nothing was coerced and there is no problem to report (what the
    store's reading cache records, to skip these checks while the file is unchanged)."""
    if not isinstance(raw, Mapping):
        return None, [f"item is {_json_kind(raw)}, not an object"], False
    entry_id = raw.get("id")
    parsed = parse_id(entry_id)
    # An id of this kind as the tools write it is one in any case too: no other kind's.
    home = None if parsed is not None and parsed[0] == kind.prefix else misfiled_home(kind, entry_id)
    if home is not None or (parsed is not None and parsed[0] != kind.prefix):
        where = f": it is a {home.name} id, so move the item to {home.filename}" if home is not None else ""
        return None, [f"{entry_id}: id prefix does not belong in {kind.filename}{where}"], False
    if parsed is None:
        return None, [f"entry without a valid id ({shown(entry_id)})"], False
    problems: list[str] = []
    entry = dict(raw)
    entry["id"] = entry_id.strip()
    plain = type(raw) is dict
    for spec in kind.fields:
        value = raw.get(spec.name)
        if value is None and spec.name not in raw:
            entry[spec.name] = spec.empty()
            continue
        # Fast paths first: a well-formed value is kept as stored (this runs for every entry of
        # every file a hook or server loads).
        shape = spec.shape
        if shape in _TEXT_SHAPES:
            if type(value) is str:
                continue
        elif shape in _LIST_SHAPES:
            if type(value) is list and all(type(v) is str for v in value):
                entry[spec.name] = list(value)
                continue
        elif shape == "enum":
            if type(value) is str and value in spec.choices:
                continue
        elif shape == "steps":
            if type(value) is list and all(type(s) is dict and "order" in s and type(s.get("action")) is str for s in value):
                entry[spec.name] = list(value)
                continue
        elif shape == "alternatives":
            if type(value) is list and all(
                type(a) is dict and type(a.get("option")) is str and type(a.get("reason_rejected")) is str for a in value
            ):
                entry[spec.name] = list(value)
                continue
        elif shape == "id":
            if value is None or (type(value) is str and value and value.strip() == value):
                continue
        plain = False
        if spec.shape in ("text", "short"):
            if not isinstance(value, str):
                problems.append(f"{entry_id}: {spec.name} should be text")
            entry[spec.name] = _as_text(value) if value is not None or spec.default is not None else None
        elif spec.shape in ("text_list", "id_list"):
            if not isinstance(value, list):
                problems.append(f"{entry_id}: {spec.name} should be a list")
            entry[spec.name] = [_as_text(v) for v in _as_list(value) if v is not None]
        elif spec.shape in _OBJECT_LISTS:
            reader, expected = _OBJECT_LISTS[spec.shape]
            if not isinstance(value, list):
                problems.append(f"{entry_id}: {spec.name} should be a list of {expected}")
                entry[spec.name] = reader(value)
            else:
                # Item by item only for a list: a lone value is one problem, said above.
                item_problems: list[str] = []
                entry[spec.name] = reader(value, item_problems)
                problems += [f"{entry_id}: {p}" for p in item_problems]
        elif spec.shape == "enum":
            text = _as_text(value).strip().lower()
            if text not in spec.choices and spec.name == "status":
                text = status_read_as(text, raw)
                problems.append(status_problem(entry_id, value, text))
            elif text not in spec.choices:
                problems.append(f"{entry_id}: {spec.name} {shown(value)} is not one of {', '.join(spec.choices)}")
                text = spec.default
            entry[spec.name] = text
        elif spec.shape == "id":
            # As an entry's own id is read: a hand edit may leave spaces around a link (" dec-019 ").
            if value is not None and not isinstance(value, str):
                problems.append(f"{entry_id}: {spec.name} {shown(value)} should be one id as text, such as \"dec-019\"")
            entry[spec.name] = (value.strip() or None) if isinstance(value, str) else None
    if kind is DECISION and not entry.get("why_chosen") and isinstance(raw.get("rationale"), str):
        entry["why_chosen"] = raw["rationale"]
        plain = False
    return entry, problems, plain and not problems


class _PlainFields:
    """A kind's fields as ``plain_entry`` goes through them."""

    def __init__(self, kind: Kind) -> None:
        self.names = frozenset(spec.name for spec in kind.fields)
        self.lists = tuple(spec.name for spec in kind.fields if spec.shape in _LIST_SHAPES or spec.shape in _OBJECT_LISTS)
        self.specs = tuple((spec.name, spec.name in self.lists, spec) for spec in kind.fields)


_PLAIN_FIELDS: dict[str, _PlainFields] = {}  # kind name -> its fields, on first use


def plain_entry(kind: Kind, raw: dict) -> dict:
    """``read_entry(kind, raw)[0]`` for an item ``read_entry_checked`` found plain: the same
    copy, missing fields defaulted, without checking the others. Only for such an item: any
    other would be read wrongly."""
    fields = _PLAIN_FIELDS.get(kind.name)
    if fields is None:
        fields = _PLAIN_FIELDS[kind.name] = _PlainFields(kind)
    entry = dict(raw)
    entry["id"] = raw["id"].strip()
    # read_entry keeps a copy of each list, so the entry shares none with the stored item.
    if raw.keys() >= fields.names:  # every field stored, the usual case: one check in C
        for name in fields.lists:
            entry[name] = list(raw[name])
        return entry
    for name, listed, spec in fields.specs:  # missing ones added in field order, as read_entry does
        if name not in raw:
            entry[name] = spec.empty()
        elif listed:
            entry[name] = list(raw[name])
    return entry


# C0 controls other than tab, line feed and carriage return: JSON escapes them, but an export
# or a terminal gets them raw (a NUL makes git treat DECISIONS.md as a binary file).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def check_text(values: Any, path: str = "") -> None:
    """Refuse text that cannot be stored as UTF-8 (lone surrogates, which JSON escapes allow)
    or that holds control characters, naming the field and the character's position."""
    if isinstance(values, str):
        name = path.split(".")[0].split("[")[0] or "text"
        try:
            values.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(
                f"{path or 'text'}: character {exc.start + 1} is a lone UTF-16 surrogate, which is not "
                "valid Unicode text; send the text as proper UTF-8",
                field=name,
            ) from None
        control = _CONTROL.search(values)
        if control is not None:
            raise InvalidInput(
                f"{path or 'text'}: character {control.start() + 1} is the control character "
                f"U+{ord(control.group()):04X}, which cannot be stored; remove it (tabs and line breaks are fine)",
                field=name,
            )
    elif isinstance(values, Mapping):
        for key, item in values.items():
            check_text(key, path or "field name")
            check_text(item, f"{path}.{key}" if path else str(key))
    elif isinstance(values, (list, tuple)):
        for i, item in enumerate(values):
            check_text(item, f"{path}[{i}]")


def previous_ids(entry: Mapping[str, Any]) -> list[str]:
    """Every id ``entry`` had before ``doctor --fix`` renumbered it, oldest first: ``previous_id``
    (the first, which a reader from before ``previous_ids`` follows) and then ``previous_ids``."""
    out: list[str] = []
    later = entry.get("previous_ids")
    values = [entry.get("previous_id"), *(later if isinstance(later, list) else [])]
    for value in values:
        if isinstance(value, str) and value.strip() and value.strip() not in out:
            out.append(value.strip())
    return out


def supersedes_ids(entry: Mapping[str, Any]) -> list[str]:
    """The ids an entry's ``supersedes`` names. Read tolerantly, as it is not normalised by
    ``read_entry``: a hand edit may leave one id as a string (taken as that id), or a number or
    nested lists (ignored)."""
    value = entry.get("supersedes")
    if isinstance(value, str):
        value = [value]
    elif not isinstance(value, list):
        return []
    return list(dict.fromkeys(v.strip() for v in value if isinstance(v, str) and v.strip()))


def tag_key(tag: str) -> str:
    """A tag as filters and groups compare it: trimmed, lower-case, in composed Unicode form
    (a hand-edited " Database " or a "café" typed on macOS is the tag "database", "café")."""
    text = tag.strip().lower()
    if text.isascii():
        return text
    import unicodedata

    return unicodedata.normalize("NFC", text)


def entry_title(kind: Kind, entry: Mapping[str, Any]) -> str:
    return _as_text(entry.get(kind.title_field)).strip() or str(entry.get("id", ""))


# ---------------------------------------------------------------- strict writing


def _fail(field_name: str, message: str) -> InvalidInput:
    return InvalidInput(f"{field_name}: {message}", field=field_name)


def clean_value(kind: Kind, name: str, value: Any) -> Any:
    """Validate one caller-supplied field value and return its stored form."""
    spec = kind.spec(name) or OFF_KIND.get(name)
    if name == "rationale" and kind is DECISION:
        spec = kind.spec("why_chosen")  # the legacy alias: what answers show, so the same rules
    if spec is None:
        return value  # unknown fields are the caller's own; kept as given
    if spec.shape in ("text", "short"):
        if value is None:
            if spec.default is None:
                return None
            value = ""
        if not isinstance(value, str):
            raise _fail(name, f"must be a string, got {type(value).__name__}")
        limit = MAX_SHORT_TEXT if spec.shape == "short" else MAX_TEXT
        if name == "scope":
            limit = MAX_SHORT_TEXT
        if len(value) > limit:
            raise _fail(name, f"is {len(value)} characters; the maximum is {limit}")
        stripped = value.strip()
        if spec.min_len and len(stripped) < spec.min_len:
            raise _fail(
                name,
                f"needs at least {spec.min_len} characters (got {len(stripped)} after trimming); "
                + _MIN_HINTS.get(name, "say more"),
            )
        return stripped if spec.shape == "short" else value.strip()
    if spec.shape in ("text_list", "id_list"):
        return _clean_list(name, spec.shape, value)
    if spec.shape == "enum":
        text = str(value).strip().lower() if value is not None else spec.default
        if text not in spec.choices:
            raise _fail(name, f"{shown(value)} is not allowed; use one of: {', '.join(spec.choices)}")
        return text
    if spec.shape == "id":
        if value in (None, ""):
            return None
        if id_key(value) is None:
            raise _fail(name, f"{shown(value)} is not an entry id (like dec-001)")
        return canonical_id(value)
    if spec.shape == "steps":
        return clean_steps(value)
    if spec.shape == "alternatives":
        return clean_alternatives(value)
    raise AssertionError(f"unhandled field shape {spec.shape}")


def clean_ids(name: str, value: Any) -> list[str]:
    """Validate a list of entry ids passed as parameter ``name`` (``supersedes``): the same rules
    as an id_list field, with messages that name the parameter the caller actually sent."""
    return _clean_list(name, "id_list", value)


def _clean_list(name: str, shape: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        raise _fail(name, "must be a list of strings, e.g. [\"a\", \"b\"], not a single string")
    if not isinstance(value, (list, tuple)):
        raise _fail(name, f"must be a list of strings, got {type(value).__name__}")
    if len(value) > MAX_LIST:
        raise _fail(name, f"has {len(value)} items; the maximum is {MAX_LIST}")
    out = []
    # Tags as filters compare them: "Database" and " database " are one tag, kept as first spelt.
    seen: set[str] = set()
    for item in value:
        if not isinstance(item, str):
            raise _fail(name, f"items must be strings, got {type(item).__name__}")
        item = item.strip()
        if len(item) > MAX_SHORT_TEXT:
            raise _fail(name, f"an item is {len(item)} characters; the maximum is {MAX_SHORT_TEXT}")
        if shape == "id_list":
            if id_key(item) is None:
                raise _fail(name, f"{shown(item)} is not an entry id (like dec-001)")
            item = canonical_id(item)
        key = tag_key(item) if name == "tags" else item
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out


_MIN_HINTS = {
    "summary": "give a one-line statement of the decision",
    "problem": "describe the problem or situation that forced the decision",
    "why_chosen": "explain why this option won over the alternatives, so a later session does not undo it",
    "rationale": "explain why this option won over the alternatives, so a later session does not undo it",
    "name": "give the pipeline a short descriptive name",
    "purpose": "say what the pipeline achieves and when it matters",
    "rule": "state the rule itself",
    "reason": "explain why the rule exists (the incident or risk behind it)",
}


def clean_steps(value: Any) -> list[dict]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise _fail("steps", "must be a list of steps: strings or {\"action\": ..., \"output\": ...} objects")
    if not value:
        raise _fail("steps", "needs at least 1 step")
    if len(value) > MAX_STEPS:
        raise _fail("steps", f"has {len(value)} steps; the maximum is {MAX_STEPS}")
    steps = []
    last_order: tuple[int, float] | None = None
    for i, step in enumerate(value, start=1):
        if isinstance(step, str):
            step = {"action": step}
        if not isinstance(step, Mapping):
            raise _fail("steps", f"step {i} must be a string or an object with an 'action'")
        order = step.get("order")
        if isinstance(order, (int, float)) and not isinstance(order, bool):
            # Steps are stored numbered by position; an order that says otherwise would be
            # silently overruled, running the pipeline in an order its author did not mean.
            if last_order is not None and order < last_order[1]:
                raise _fail("steps", f"step {i} has order {order:g} but comes after step {last_order[0]} with order "
                                     f"{last_order[1]:g}; list the steps in the order they run (they are numbered by "
                                     f"position)")
            last_order = (i, order)
        action = step.get("action")
        if not isinstance(action, str) or not action.strip():
            raise _fail("steps", f"step {i} needs a non-empty 'action' string")
        if len(action) > MAX_TEXT:
            raise _fail("steps", f"step {i} action is too long (max {MAX_TEXT} characters)")
        item = {k: v for k, v in step.items() if k not in ("order", "action", "output")}
        _bounded_extra("steps", f"step {i}", item)
        item = {"order": i, "action": action.strip(), **item}
        output = step.get("output")
        if output not in (None, ""):
            if not isinstance(output, str):
                raise _fail("steps", f"step {i} 'output' must be a string")
            if len(output) > MAX_TEXT:
                raise _fail("steps", f"step {i} output is too long (max {MAX_TEXT} characters)")
            item["output"] = output.strip()
        steps.append(item)
    return steps


def _bounded_extra(name: str, where: str, extra: Mapping[str, Any]) -> None:
    """Keys of a step or an alternative beyond the known ones are kept as given, within the
    bound of one text field (the known ones each have theirs)."""
    if not extra:
        return
    import json

    size = len(json.dumps(extra, ensure_ascii=False, default=str))
    if size > MAX_TEXT:
        raise _fail(name, f"{where}: its other keys ({', '.join(map(str, extra))}) take {size} characters; "
                          f"the maximum is {MAX_TEXT}")


def clean_alternatives(value: Any) -> list[dict]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise _fail("alternatives", "must be a list of {\"option\": ..., \"reason_rejected\": ...} objects")
    if len(value) > MAX_LIST:
        raise _fail("alternatives", f"has {len(value)} items; the maximum is {MAX_LIST}")
    out = []
    for i, alt in enumerate(value, start=1):
        if isinstance(alt, str):
            alt = {"option": alt}
        if not isinstance(alt, Mapping) or not isinstance(alt.get("option"), str) or not alt["option"].strip():
            raise _fail("alternatives", f"item {i} needs an 'option' string (and ideally 'reason_rejected')")
        reason = alt.get("reason_rejected") or ""
        if not isinstance(reason, str):
            raise _fail("alternatives", f"item {i} 'reason_rejected' must be a string")
        for name, text in (("option", alt["option"]), ("reason_rejected", reason)):
            if len(text) > MAX_TEXT:
                raise _fail("alternatives", f"item {i} '{name}' is too long (max {MAX_TEXT} characters)")
        # Other keys are kept, as a step's are: an update that sends back a hand-written
        # alternative ({"option", "reason_rejected", "adr": ...}) must not drop them.
        extra = {k: v for k, v in alt.items() if k not in ("option", "reason_rejected")}
        _bounded_extra("alternatives", f"item {i}", extra)
        out.append({"option": alt["option"].strip(), "reason_rejected": reason.strip(), **extra})
    return out


def new_entry(kind: Kind, values: Mapping[str, Any], entry_id: str, now: str) -> dict:
    """A complete, validated entry ready to store (field order as users expect to read it)."""
    entry: dict[str, Any] = {"id": entry_id}
    # Every field's problem at once: told one at a time, an agent fixing "problem" was then
    # refused again for "why_chosen", one round trip per field.
    problems: list[InvalidInput] = []
    for spec in kind.fields:
        if spec.name == "status":
            entry["schema_version"] = SCHEMA_VERSION  # COMPAT.md's order: ..., origin, schema_version, status
        try:
            if spec.name in values and values[spec.name] is not None:
                entry[spec.name] = clean_value(kind, spec.name, values[spec.name])
            elif spec.min_len:
                raise _fail(spec.name, f"is required (at least {spec.min_len} characters); " + _MIN_HINTS.get(spec.name, ""))
            elif spec.name == "steps":
                raise _fail("steps", "needs at least 1 step")
            elif spec.name == "superseded_by" and kind is not DECISION:
                # COMPAT.md lists it for decisions only: a pipeline or constraint gets it when it is
                # superseded, and read_entry defaults it meanwhile.
                continue
            else:
                entry[spec.name] = spec.empty()
        except InvalidInput as exc:
            problems.append(exc)
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise InvalidInput(f"{len(problems)} fields need fixing: " + "; ".join(str(p) for p in problems),
                           field=problems[0].field)
    entry["created_at"] = now
    entry["updated_at"] = now
    entry["verified_at"] = now
    entry["verified_sha"] = None
    return entry
