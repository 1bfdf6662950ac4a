"""query_entries: exact filtering over the store, in id order, no ranking."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from context_keeper import model
from context_keeper.budget import entry_tokens, estimate_tokens
from context_keeper.errors import InvalidInput
from context_keeper.model import KINDS
from context_keeper.retrieval import check_bounds, kinds_filter, last_good_notes, parse_date, work_area
from context_keeper.scope import scope_overlaps
from context_keeper.store import odd_statuses, readable_entries
from context_keeper.search.tokenize import nfc

if TYPE_CHECKING:
    from context_keeper.service import Service


# Bookkeeping, and the values that status, origin and hardness filter on: as text, "active"
# matched every active entry and "agent" or "import" every entry of that origin.
_NOT_TEXT = frozenset({"created_at", "updated_at", "verified_at", "verified_sha", "schema_version", "status",
                       "origin", "hardness"})


def _text_of(entry: Mapping[str, Any]) -> str:
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk({k: v for k, v in entry.items() if k not in _NOT_TEXT})
    return nfc(" ".join(parts)).lower()


# "C++" and "C#" keep their marks at a word's end ("c" is in every entry); "ci+cd" is two words.
_WORD = re.compile(r"\w(?:[\w./\-]*\w)?(?:[+#]+(?!\w))?")


def _lower_set(values: Sequence[str] | None) -> set[str]:
    return {model.tag_key(v) for v in values or [] if isinstance(v, str) and v.strip()}


def query_entries(
    service: Service,
    *,
    project_dir: str | None = None,
    types: Sequence[str] | None = None,
    kind: str | None = None,
    text: str | None = None,
    status: str | None = None,
    origin: str | None = None,
    hardness: str | None = None,
    tags_any: Sequence[str] | None = None,
    tags_all: Sequence[str] | None = None,
    scope: str | None = None,
    supersedes: str | None = None,
    superseded_by: str | None = None,
    since: str | None = None,
    before: str | None = None,
    limit: int = 50,
    token_budget: int | None = None,
) -> dict[str, Any]:
    check_bounds(query=text, types=types, scope=scope, query_field="text")
    check_bounds(tags=tags_any, tags_field="tags_any")
    check_bounds(tags=tags_all, tags_field="tags_all")
    store = service.store(project_dir, recorded=True)
    kinds = kinds_filter(types)
    if kind:
        # kind is the one-kind spelling of types; given both, a union or an intersection would
        # each surprise someone, so they have to agree.
        named = kinds_filter([kind])
        if kinds is not None and kinds != named:
            raise InvalidInput(f"kind {kind!r} and types {list(types or [])} name different kinds; give one of "
                               "them (kind for one kind, types for several)", field="kind")
        kinds = named
    for name, value, choices in (("status", status, model.STATUSES), ("origin", origin, model.ORIGINS),
                                 ("hardness", hardness, model.HARDNESS)):
        if value and value.strip().lower() not in choices:
            raise InvalidInput(f"{name}: {value!r} is not one of {', '.join(choices)}", field=name)
    if limit < 1:
        raise InvalidInput("limit must be at least 1", field="limit")
    if token_budget is not None and token_budget < 0:
        raise InvalidInput(f"token_budget must be 0 (no limit) or a number of tokens (got {token_budget})",
                           field="token_budget")
    since_t, before_t = parse_date(since, "since"), parse_date(before, "before")
    if since_t is not None and before_t is not None and since_t >= before_t:
        # As get_context says it: an empty answer read as "nothing recorded in that range".
        raise InvalidInput(f"since ({since}) must be earlier than before ({before}): no entry can be in that range",
                           field="since")
    # Words without the punctuation glued to them ("storage?", "Redis,"); identifier and path
    # punctuation inside a word stays ("scope_guard.py").
    folded = nfc(text or "").strip().lower()
    # An emoji, "#": no word characters, so the text itself is the term (dropping the filter
    # would match every entry).
    terms = _WORD.findall(folded) or ([folded] if folded else [])
    # Each once, longest first: a word repeated 2,000 times ("a a a ...") was looked for 2,000
    # times in every entry (0.45 s at 3,600 entries), and a long word rules an entry out soonest.
    terms = sorted(dict.fromkeys(terms), key=len, reverse=True)
    # Each at the start of a word, "deploy" finding "deployment" (and "guard" "scope_guard.py":
    # "_" separates words here); a word of up to three letters only as itself or its plural, as
    # "ci" is no more in "circuit" than in "inefficient".
    patterns = [re.compile(r"(?<![^\W_])" + re.escape(t) + (r"s?(?![^\W_])" if len(t) <= 3 else ""))
                if _WORD.match(t) else None for t in terms]
    any_tags, all_tags = _lower_set(tags_any), _lower_set(tags_all)
    rel_scope = work_area(scope, str(store.root)) if scope else None
    # An entry replaced with deprecate_entry(superseded_by=...) names its successor; the
    # successor itself may not list it in "supersedes".
    # Ids in any spelling the other tools accept ("DEC-6" for dec-006), on both sides: a link
    # typed by hand may be spelled otherwise too.
    supersedes_key = model.id_key(supersedes)
    superseded_by_key = model.id_key(superseded_by)
    for name, value, key in (("supersedes", supersedes, supersedes_key), ("superseded_by", superseded_by, superseded_by_key)):
        if (value or "").strip() and key is None:
            raise InvalidInput(f"{name}: {model.shown(value)} is not an entry id (ids look like dec-001, pipe-002, "
                               "con-003)", field=name)
    successor_of_named = None
    if supersedes_key:
        for state in store.all_states():
            for entry in readable_entries(store, state)[0]:
                if model.id_key(entry["id"]) == supersedes_key:
                    successor_of_named = model.id_key(entry.get("superseded_by"))

    unreadable = []

    matches: list[tuple[str, dict]] = []
    for kind_def in KINDS.values():
        if kinds and kind_def.name not in kinds:
            continue
        state = store.state(kind_def)
        if state.error is not None:
            unreadable.append(state)
        for entry in readable_entries(store, state)[0]:
            entry_status = entry.get("status", "active")
            if status and entry_status != status.strip().lower():
                continue
            if not status and entry_status == "deprecated":
                continue
            if origin and entry.get("origin") != origin.strip().lower():
                continue
            if hardness and (kind_def.name != "constraint" or entry.get("hardness") != hardness.strip().lower()):
                continue
            entry_tags = {model.tag_key(t) for t in entry.get("tags", []) if isinstance(t, str)}
            if any_tags and entry_tags.isdisjoint(any_tags):
                continue
            if all_tags and not all_tags <= entry_tags:
                continue
            if rel_scope is not None and (kind_def.name != "constraint" or not scope_overlaps(entry.get("scope"), rel_scope, str(store.root))):
                continue
            if supersedes_key and supersedes_key not in {model.id_key(i) for i in model.supersedes_ids(entry)} \
                    and (successor_of_named is None or model.id_key(entry["id"]) != successor_of_named):
                continue
            if superseded_by_key and model.id_key(entry.get("superseded_by")) != superseded_by_key:
                continue
            created = model.parse_time(entry.get("created_at"))
            if since_t and (created is None or created < since_t):
                continue
            if before_t and (created is None or created >= before_t):
                continue
            if terms:
                haystack = _text_of(entry)
                if not all(t in haystack if p is None else p.search(haystack) for t, p in zip(terms, patterns)):
                    continue
            matches.append((kind_def.name, entry))

    matches.sort(key=lambda m: (list(KINDS).index(m[0]), model.id_sort_key(m[1]["id"])))
    # A file that does not parse is listed from its last good copy, and said so: an empty listing
    # read as "nothing recorded" leads to recording it again.
    about_files = service._warnings(store) + last_good_notes(store, unreadable)
    results, used, truncated = [], 0, False
    next_cost = 0
    # The budget bounds the whole answer as sent: its keys and counts, and the budget note
    # (reserved at its longest), come out of it as well as the entries.
    shown = matches[:limit]
    # An entry shows the status its odd word is read as ("paused" as active): the note says so.
    # Reserved for every entry that may be listed, kept for those that are.
    odd = odd_statuses(store, [entry for _, entry in shown])
    warnings = about_files + list(odd.values())
    overhead = _rest_tokens(len(matches), len(shown), token_budget or 0, warnings)
    room = token_budget - overhead - estimate_tokens(_budget_note(len(shown), token_budget, token_budget)) if token_budget else 0
    for kind_name, entry in shown:
        item = {"type": kind_name, "entry": entry}
        cost = entry_tokens(item) + 1  # and its comma
        if token_budget and used + cost > room:
            truncated, next_cost = True, cost
            break
        used += cost
        results.append(item)
    answer: dict[str, Any] = {
        "results": results,
        "entries_returned": len(results),
        "total_matches": len(matches),
        "tokens_used": used,
    }
    if truncated or len(matches) > limit:
        answer["truncated"] = True
    if truncated and room < 0:
        # Not even the counts and the note fit: an answer over the budget it was asked to keep,
        # saying only that nothing fitted, is no answer.
        floor = _needed(0, len(matches), len(shown), warnings)
        first = "its one matching entry" if len(shown) == 1 else f"the first of its {len(shown)} matching entries"
        raise InvalidInput(f"token_budget {token_budget} is too small for this listing: its counts and budget note "
                           f"alone take about {floor} tokens, and an answer with {first} about "
                           f"{_needed(next_cost, len(matches), len(shown), warnings)}; ask with at "
                           "least that, give 0 for no limit, or narrow the filters", field="token_budget")
    if truncated and odd:
        listed = {item["entry"]["id"] for item in results}
        warnings = about_files + [note for entry_id, note in odd.items() if entry_id in listed]
    if truncated:
        left = len(shown) - len(results)
        answer["omitted"] = left
        # Entries come whole in id order from the first: the budget to ask for holds these and the next.
        answer["budget_note"] = _budget_note(left, token_budget, _needed(used + next_cost, len(matches), len(shown), warnings))
    if warnings:
        answer["warnings"] = warnings
    answer["tokens_used"] = used + _rest_tokens(len(matches), len(results), token_budget or used, warnings) + (
        estimate_tokens(answer["budget_note"]) if truncated else 0)
    if token_budget and answer["tokens_used"] > token_budget:
        raise InvalidInput(f"token_budget {token_budget} is too small for any answer: its counts alone take about "
                           f"{answer['tokens_used']} tokens; ask with at least that, or give 0 for no limit",
                           field="token_budget")
    return answer


def _rest_tokens(matches: int, listed: int, budget: int, warnings: Sequence[str] = ()) -> int:
    """The answer's keys and counts, at their longest, and its warnings, beside its entries."""
    rest = {"results": [], "entries_returned": listed, "total_matches": matches, "tokens_used": budget,
            "truncated": True, "omitted": listed, "budget_note": "", **({"warnings": list(warnings)} if warnings else {})}
    return entry_tokens(rest)


def _needed(cost: int, matches: int, listed: int, warnings: Sequence[str] = ()) -> int:
    """The smallest token_budget whose room holds entries costing ``cost`` in all:
    the keys' and the budget note's room, reserved from every budget, grow with its digits."""
    budget = cost
    while (wider := cost + _rest_tokens(matches, listed, budget, warnings)
           + estimate_tokens(_budget_note(listed, budget, budget))) != budget:
        budget = wider
    return budget


def _budget_note(left: int, budget: int, with_next: int) -> str:
    return (f"{left} more matching entr{'y' if left == 1 else 'ies'} did not fit in token_budget {budget}; "
            f"an answer that lists the next one too needs about {with_next} tokens. Ask again with a larger "
            "token_budget (0 for no limit), or narrow the filters.")
