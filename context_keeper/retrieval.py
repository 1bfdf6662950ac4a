"""get_context: rank, abstain honestly, and pack the answer into a token budget."""

from __future__ import annotations

import logging
import os
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from context_keeper import diversity, model
from context_keeper.budget import CHARS_PER_TOKEN, MIN_REASON_CHARS, chars_to_tokens, json_chars, shorten_entry
from context_keeper.config import checked, unapproved_host_problem
from context_keeper.errors import ContextKeeperError, CorruptStoreFile, InvalidInput, NotFound
from context_keeper.lines import counted, shorten
from context_keeper.model import CONSTRAINT, KINDS
from context_keeper.scope import is_global, leaves_project, narrowness, project_area, scope_parts, split_scope
from context_keeper.store import odd_status_notes, odd_statuses, readable_entries

if TYPE_CHECKING:
    from context_keeper.service import Service
    from context_keeper.store import Store

GUIDANCE_NO_MATCH = (
    "Nothing recorded matches this question confidently. The results below are weak matches: do "
    "not present them as established project decisions. If you settle the question, record it "
    "with record_decision / record_constraint."
)
# Only the most relevant entry is checked (search/answer_type.py); {kind} comes with its article.
GUIDANCE_UNSTATED = (
    "The question asks for {kind}, and the entry that matches it best states none: the store "
    "most likely records the topic but not this value. Treat a value in the results below as a "
    "lead to check, not as the answer; once you know it, record it with record_decision / "
    "record_constraint."
)
GUIDANCE_NOTHING = (
    "Nothing recorded matches this question. If you settle the question, record it with "
    "record_decision / record_constraint."
)
GUIDANCE_FILTERED = (
    "Nothing recorded matches this question within the filters given ({filters}). Ask again "
    "without them before concluding that nothing is recorded."
)
GUIDANCE_UNREADABLE = (
    "Nothing matches this question confidently, but {files} could not be read (see warnings), so "
    "this answer may miss what is recorded there: do not conclude that nothing is recorded, and do "
    "not record it again. Once the file is fixed (`context-keeper doctor` says how), ask again."
)
GUIDANCE_RETIRED = (
    "Nothing in force matches this question{within}, but a retired entry does: deprecated entries are left "
    "out unless include_deprecated is true (on the command line, --include-deprecated). Ask again with it to "
    "read what was decided and why it was retired before recording anything anew."
)
GUIDANCE_NO_WORDS = (
    "The query has no word the index can match (it leaves out punctuation, one-letter words and "
    "common words such as 'the' or 'it'), so nothing was searched: ask again in words that name "
    "the task or the problem."
)
GUIDANCE_NO_ID = (
    "No entry has the id {id} (nor had it before a renumbering){hint}: the results below only share its "
    "words, so none of them is that entry. query_entries lists what there is; to search by topic, "
    "ask in words."
)
GUIDANCE_NO_ID_ALONE = (
    "No entry has the id {id} (nor had it before a renumbering){hint}, and nothing recorded shares its "
    "words. query_entries lists what there is; to search by topic, ask in words."
)
GUIDANCE_ID_FILTERED = (
    "{id} is recorded, but {why}: the results below only share its words, so none of them is "
    "that entry. Ask with id=\"{id}\" to read it."
)
GUIDANCE_ID_FILTERED_ALONE = (
    "{id} is recorded, but {why}, and nothing else this answer admits shares its words. Ask with "
    "id=\"{id}\" to read it."
)
# For an id among other words, which were searched without it.
NOTE_NO_ID = "No entry has the id {id} (nor had it before a renumbering){hint}: the rest of the question was searched without it."
NOTE_ID_FILTERED = "{id} is recorded, but {why}: ask with id=\"{id}\" to read it."
NOTE_SKIPPED = (
    "{file} has {entries} that every tool skips as malformed, so this answer may miss what is recorded "
    "there: `context-keeper doctor` lists each with what to fix; do not record the same again."
)
GUIDANCE_LISTED = (
    "The query has no word the index can match (it leaves out punctuation, one-letter words and "
    "common words such as 'the' or 'it'), so it was not searched: the results are the entries that "
    "pass the filters, most recent and most trusted first, not answers to the question."
)
GUIDANCE_SCOPE_RULES = (
    "The items marked scope_rule are the constraints that cover the scope you gave: they hold for "
    "that file whatever the question."
)
MAX_HITS = 50
_PROSE_FIELDS = ("guidance", "budget_note", "warnings")
SEMANTIC_CANDIDATES = 200
MIN_ENTRY_TOKENS = 24  # below this an entry cannot say what it is about: skipped, counted
MIN_FIRST_ENTRY_TOKENS = 16  # an id and a title cut to budget.MIN_TITLE_CHARS
# What the "entry" and "shortened" fields add to an item's compact JSON (it always has fields).
_ENTRY_FIELD = len(',"entry":')
_SHORTENED_FIELD = len(',"shortened":true')
# The shortest a ranked hit's item can be without its entry: no float prints shorter than "0.0".
_LEAST_ITEM = len('{"score":0.0,"relevance":0.0,"type":""}')


MAX_QUERY_CHARS = 4000
MIN_BUDGET = 50


def check_bounds(*, query: str | None = None, tags: Sequence[str] | None = None,
                 types: Sequence[str] | None = None, scope: str | None = None, query_field: str = "query",
                 tags_field: str = "tags") -> None:
    """Read-tool arguments are bounded like write arguments (the schema stays small)."""
    if query and len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"{query_field} is {len(query)} characters; keep it under {MAX_QUERY_CHARS} "
                           "(describe the task, don't paste files)", field=query_field)
    for name, values in ((tags_field, tags), ("types", types)):
        if values and len(values) > model.MAX_LIST:
            raise InvalidInput(f"{name} has {len(values)} items; the maximum is {model.MAX_LIST}", field=name)
    if scope and len(scope) > model.MAX_SHORT_TEXT:
        raise InvalidInput(f"scope is {len(scope)} characters; give one file or directory path", field="scope")


def work_area(scope: str, project_root: str) -> str:
    """The file, directory or glob a read is about, relative to the project (``project_area``);
    for a scope listing several (``"src/jobs/, src/import/"``), each of them so, joined by ``", "``
    (``scope_overlaps`` reads the list), or ``""`` when one is the project root.
    Refused with what to give instead: control characters, and a path that can only lie outside
    the project, which would match nothing (or, its leading slash dropped, some other path)."""
    model.check_text(scope, "scope")
    if len(split_scope(scope)) == 1:
        return _work_path(scope, scope, project_root)
    areas = [_work_path(part, scope, project_root, listed=True) for part in scope_parts(scope)]
    return "" if "" in areas else ", ".join(areas)


def _work_path(path: str, scope: str, project_root: str, *, listed: bool = False) -> str:
    reason = leaves_project(path, project_root)
    if reason is not None:
        hint = "give the path of a file or directory in the project, absolute or relative to its root (e.g. 'src/app.py')"
        which = f": its path {path!r}" if listed else ""
        raise InvalidInput(f"scope: {scope!r}{which} {reason}; {hint}", field="scope")
    area = project_area(path, project_root)
    # The slash says a directory the project may not have yet (scope_overlaps reads it).
    return area + "/" if area and path.rstrip().endswith(("/", "\\")) else area


def parse_date(value: str | None, field: str) -> datetime | None:
    if value in (None, ""):
        return None
    parsed = model.parse_time(value)
    if parsed is None:
        raise InvalidInput(f"{field}: {model.shown(value)} is not an ISO date; use e.g. 2026-01-31 or 2026-01-31T12:00:00+00:00", field=field)
    return parsed


def kinds_filter(types: Sequence[str] | str | None) -> frozenset[str] | None:
    if not types:
        return None
    if isinstance(types, str):
        types = [types]
    return frozenset(model.kind_named(t).name for t in types)


def get_context(service: Service, *, project_dir: str | None = None, **asked: Any) -> dict[str, Any]:
    """The answer to one get_context call (the tool's arguments in ``asked``)."""
    # Arguments first, as before: an oversized query is refused whatever the project.
    check_bounds(query=asked.get("query"), tags=asked.get("tags"), types=asked.get("types"), scope=asked.get("scope"))
    store = service.store(project_dir, recorded=True)
    # One answer, one reading of each store file and of config.json (see Store.pinned).
    with store.pinned():
        return _answer(service, store, service.root_spellings(store.root, project_dir), **asked)


def _answer(
    service: Service,
    store: Store,
    root_spellings: tuple[str, ...] = (),
    *,
    id: str | None = None,
    query: str | None = None,
    tags: Sequence[str] | None = None,
    scope: str | None = None,
    types: Sequence[str] | None = None,
    since: str | None = None,
    before: str | None = None,
    token_budget: int | None = None,
    include_related: bool = True,
    min_relevance: float | None = None,
    include_deprecated: bool = False,
) -> dict[str, Any]:
    if id and id.strip():  # a blank id names no entry: the rest of the call is asked, as a blank tag is
        return _fetched(_by_id(store, _id_asked(store, id)), token_budget,
                        [name for name, value in (("query", query), ("tags", tags), ("scope", scope), ("types", types),
                                                  ("since", since), ("before", before)) if value])
    config = service.config(store)
    config_warnings: list[str] = []
    if token_budget:
        budget = _asked_budget(token_budget)
    else:
        budget, problem = checked(config, "token_budget")
        budget = int(budget)
        if problem:
            # The caller cannot fix the project's config by changing its call: answer with the
            # default instead of refusing every call that leaves token_budget out.
            config_warnings.append(problem)
    from context_keeper.search import SearchOptions

    options = SearchOptions(
        kinds=kinds_filter(types),
        # A blank tag names no tag: [""] filters nothing out rather than everything.
        tags=frozenset(model.tag_key(t) for t in tags if t.strip()) or None if tags else None,
        scope=work_area(scope, str(store.root)) if scope else None,
        include_deprecated=include_deprecated,
        since=parse_date(since, "since"),
        before=parse_date(before, "before"),
        now=service.now(),
        limit=MAX_HITS,
        root=str(store.root),
        root_spellings=root_spellings,
    )
    if options.since is not None and options.before is not None and options.since >= options.before:
        raise InvalidInput(f"since ({since}) must be earlier than before ({before}): no entry can be in that range",
                           field="since")
    # Filters that can hide a recorded answer: named in the guidance when nothing passes them.
    filters = [name for name, value in (("types", options.kinds), ("tags", options.tags), ("scope", options.scope),
                                        ("since", options.since), ("before", options.before)) if value]
    text = (query or "").strip()
    if not text and not (options.tags or options.scope or options.kinds or options.since or options.before):
        if scope and scope.strip():
            # "give at least one filter (..., scope, ...)" to a caller who gave one was no help.
            raise InvalidInput(f"scope: {scope!r} is the project root, which every entry is in, so it filters nothing; "
                               "give a query, or a file or directory inside the project (e.g. 'src/app.py')",
                               field="scope")
        raise InvalidInput(
            "give a query (what you are about to work on or the question you have), an id, or at "
            "least one filter (tags, scope, types, since, before)",
            field="query",
        )
    from context_keeper.search.tokenize import terms

    state = service.index(store)

    def admits(kind: str, entry_id: str) -> bool:
        with state.lock:
            return state.index.admits(kind, entry_id, options)

    found, missing, rest, words = _ids_named_in(store, text, admits)
    # The pieces of an id are no search words: the rest of the question ranks what follows the
    # entries named. What only looks like an id ("Dec-2024", a month) stays in the words searched.
    # Only when the ids name none and are all there is are they searched, to show what shares
    # their words (as no answer).
    searched_ids = bool(missing) and not found and not terms(rest)
    searched = text if searched_ids else words
    searchable = bool(searched) and bool(terms(searched))
    # "?" or "the and of" matches every entry equally (by priors alone): a page of noise. Nor
    # does a filter make it a listing when the question names its entries.
    wordless = bool(text) and not searchable and (not filters or bool(found))
    semantic, problems = _semantic_settings(config)
    config_warnings += problems
    # Only a search is blended: a listing by filters (no word to search) keeps its prior order.
    blend = searchable and semantic is not None
    if blend:
        options = replace(options, limit=SEMANTIC_CANDIDATES)
    elif not wordless and not searchable:
        # Filters alone (or with only common words) list the entries that pass them, best prior
        # first: as many as could fit in the budget, the others counted in omitted. Cut at
        # MAX_HITS, types=["decisions"] listed 50 of 2,500 with nothing said about the rest.
        options = replace(options, limit=max(MAX_HITS, budget // MIN_FIRST_ENTRY_TOKENS + 1))
    with state.lock:
        result = state.index.search("" if wordless else searched, replace(options, limit=0) if wordless else options)
    threshold = service.min_relevance(store, min_relevance)
    keep = MAX_HITS
    best = result.hits[:MAX_HITS]
    if (searchable and len(best) >= MAX_HITS and best[-1].relevance >= threshold
            and sum(chars_to_tokens(_entry_chars(h.entry)) for h in best) < budget):
        # Even the last of the best MAX_HITS answers confidently, so more may, and the budget
        # holds more than these: it gets them (or counts them in omitted) instead of a silent
        # cut at MAX_HITS. (A budget these already fill has its omitted and budget_note anyway.)
        keep = budget // MIN_FIRST_ENTRY_TOKENS + 1
        if keep > len(result.hits):
            with state.lock:
                result = state.index.search(searched, replace(options, limit=keep))
    if blend:
        result = _semantic_blend(store, searched, result, semantic, keep, config_warnings)
    if searchable:
        result = diversity.apply(result, config.get("mmr"))
    max_entry, problem = checked(config, "max_entry_tokens")
    max_entry = int(max_entry)
    relevance_problem = checked(config, "min_relevance")[1] if min_relevance is None else None
    config_warnings += [p for p in (problem, relevance_problem, *_mmr_problems(config)) if p]

    def predecessors(kind: str, entry: Mapping[str, Any]) -> list[str]:
        with state.lock:
            named = state.index.predecessors(kind, entry["id"])
        return _predecessors(store, kind, entry, named)

    result = _named_first(result, found, searched_ids)
    missing_id = missing[0] if searched_ids else None

    # The constraints on the file being worked on belong in the answer even when the task's
    # wording shares nothing with them: clients without the edit-guard hook learn a file's
    # rules only this way. (Without a query, the scope filter alone already lists them.)
    rules = _scope_rules(store, options, admits) if text and options.scope else []
    # Passed the filters, past the listing's end. A wordless query searched nothing, so nothing
    # it left out was a match the budget cut: its guidance says so instead.
    unlisted = 0 if wordless else max(0, (result.matched or 0) - len(result.hits))
    asked = [s for s in store.all_states() if options.kinds is None or s.kind.name in options.kinds]
    unreadable = [s for s in asked if s.error is not None]
    warnings = service._warnings(store) + config_warnings + last_good_notes(store, unreadable)
    if text and not wordless and result.top_relevance < threshold:
        # Found nothing: entries skipped as malformed (a merge that kept both sides of every
        # entry skips them all) may be what was asked about, which "nothing recorded" would hide.
        warnings += [NOTE_SKIPPED.format(file=s.path.name, entries=counted(skipped, "entry", "entries"))
                     for s in asked if s.error is None and (skipped := _skipped(s))]
    if not searched_ids:  # else the guidance says it
        warnings += [NOTE_NO_ID.format(id=entry_id, hint=hint) if hint is not None else
                     NOTE_ID_FILTERED.format(id=entry_id, why=_left_out_by(store, entry_id, filters))
                     for entry_id, hint, likely in missing if likely]

    retired: list[bool] = []

    def retired_match() -> bool:
        # Asked only when nothing in force shares a word with the question: a probe of the index
        # already built, for one entry, on an answer whose search found no candidate.
        if not retired:
            probe = not include_deprecated and searchable and not result.hits and not found
            if probe:
                with state.lock:
                    probe = bool(state.index.search(searched, replace(options, include_deprecated=True, limit=1)).hits)
            retired.append(probe)
        return retired[0]

    def guidance(results: Sequence[Mapping[str, Any]]) -> str | None:
        if text and not searchable and not wordless:
            return GUIDANCE_LISTED
        # What is said of an id, of a query with no word to search (nor an id recorded), or of a
        # search that found nothing is fact, not an abstention on relevance: min_relevance 0 keeps it.
        factual = (wordless and not found) or missing_id or not result.hits
        if not text or (result.top_relevance >= threshold and not factual):
            return None
        if wordless:
            said = GUIDANCE_NO_WORDS
        elif missing_id and missing_id[1] is None:
            said = (GUIDANCE_ID_FILTERED if results else GUIDANCE_ID_FILTERED_ALONE).format(
                id=missing_id[0], why=_left_out_by(store, missing_id[0], filters))
        elif missing_id and not unreadable:
            said = (GUIDANCE_NO_ID if results else GUIDANCE_NO_ID_ALONE).format(id=missing_id[0], hint=missing_id[1])
        elif unreadable:
            said = GUIDANCE_UNREADABLE.format(files=", ".join(s.path.name for s in unreadable))
        elif any(not r.get("scope_rule") for r in results):
            unstated = result.unstated
            article = "an" if unstated and unstated[0] in "aeiou" else "a"  # "an amount of money"
            said = GUIDANCE_UNSTATED.format(kind=f"{article} {unstated}") if unstated else GUIDANCE_NO_MATCH
        elif retired_match():
            said = GUIDANCE_RETIRED.format(within=f" within the filters given ({', '.join(filters)})" if filters else "")
        elif filters:
            said = GUIDANCE_FILTERED.format(filters=", ".join(filters))
        else:
            said = GUIDANCE_NOTHING
        if rules and any(r.get("scope_rule") for r in results):
            said += " " + GUIDANCE_SCOPE_RULES
        return said

    # The guidance and warnings are read as much as the results are, so they come out of the same
    # budget: reserved before packing at the longest they can turn out (which guidance applies
    # depends on what gets packed), with the answer's own keys and numbers.
    rule_item = [{"scope_rule": True}] if rules else []
    # A note per status word, naming the ids of those packed: reserved here with the longest ids
    # of all that may be, so that what is packed cannot outgrow it.
    candidates = sorted([h.entry for h in result.hits] + list(rules), key=lambda e: -len(e["id"]))
    prose = {"guidance": max((guidance(r) or "" for r in ([{}] + rule_item, rule_item)), key=len),
             "warnings": warnings + odd_status_notes(store, candidates)}
    envelope = dict.fromkeys(("tokens_used", "token_budget", "entries_returned", "omitted"), budget)
    envelope.update(top_relevance=0.001, no_confident_match=True)
    # Ranked hits stop at ``keep``: past that, matches were not counted (scoring every one to count
    # it would cost what ranking them does), so a cut that is still confident makes omitted a floor.
    beyond = searchable and len(result.hits) >= keep and result.hits[-1].relevance >= threshold
    answer = _pack(store, result.hits, budget, max_entry, threshold if searchable else None, include_related, admits,
                   predecessors, rules, unlisted, reserve=_prose_tokens(prose), envelope=_envelope_tokens(envelope),
                   beyond=beyond)
    # The lexical signal alone: a rule added for the scope says nothing about the question. A
    # listing by filters alone ranked nothing: 0, as each of its results, never a confident match
    # (a number, as the answer's shape promises: null broke a client comparing it to a threshold).
    answer["top_relevance"] = round(result.top_relevance, 3) if text else 0.0
    said = guidance(answer["results"])
    if said is not None:
        answer["no_confident_match"] = True
        answer["guidance"] = said
    warnings += odd_status_notes(store, [r["entry"] for r in answer["results"]])
    if warnings:
        answer["warnings"] = warnings
    if said is not None and not answer["results"]:
        _guidance_within(answer, budget)
    answer["tokens_used"] += _prose_tokens(answer) + _envelope_tokens({**answer, "tokens_used": budget})
    return answer


MIN_GUIDANCE_CHARS = 40  # its opening words: cli._nothing_found knows a guidance by them


def _guidance_within(answer: dict[str, Any], budget: int) -> None:
    """An answer of prose alone has no match to give the room of the budget to: its guidance is
    cut to what the rest leaves (the warnings stay whole: they say what to fix)."""
    def over() -> int:
        return _prose_tokens(answer) + _envelope_tokens({**answer, "tokens_used": budget}) - budget

    excess = over()
    while excess > 0 and len(answer["guidance"]) > MIN_GUIDANCE_CHARS:
        said = answer["guidance"]
        answer["guidance"] = shorten(said, max(MIN_GUIDANCE_CHARS, len(said) - excess * CHARS_PER_TOKEN))
        excess = over()


def _skipped(state: Any) -> int:
    """How many items of a file tools skip as malformed, but for those of another kind's file
    (``service._misfiled_warning`` names them)."""
    if not state.item_problems:
        return 0
    used = set(state.positions.values())
    return sum(1 for index in state.item_problems if index not in used
               and not (isinstance(state.raw[index], dict) and model.misfiled_home(state.kind, state.raw[index].get("id"))))


def _prose_tokens(answer: Mapping[str, Any]) -> int:
    """What an answer's own text (guidance, budget_note, warnings) adds to its results."""
    prose = {key: answer[key] for key in _PROSE_FIELDS if answer.get(key)}
    return chars_to_tokens(json_chars(prose)) if prose else 0


def _envelope_tokens(answer: Mapping[str, Any]) -> int:
    """What the rest of an answer (its keys, counts and flags, the results' brackets) adds."""
    return chars_to_tokens(json_chars({key: value for key, value in answer.items()
                                       if key not in _PROSE_FIELDS and key != "results"}) + len(',"results":[]'))


def last_good_notes(store: Store, states: Sequence[Any]) -> list[str]:
    return [f"{state.path.name}: its entries here come from its last good copy (.context/.last-good/), which "
            "lacks whatever reached the file since context-keeper last wrote it (a pull, a merge, a hand edit)"
            for state in states if readable_entries(store, state)[1]]


def _scope_rules(store: Store, options: Any, admits: Callable[[str, str], bool]) -> list[Mapping[str, Any]]:
    """The active constraints whose own (non-global) scope covers ``options.scope`` and that
    pass the other filters, as the edit guard orders them: absolute ones first, then the rule
    for the narrower place (client.py's before its directory's), then by id. Global constraints
    are left to the session summary, as the edit guard leaves them."""
    if options.kinds is not None and CONSTRAINT.name not in options.kinds:
        return []
    rules = [entry for entry in readable_entries(store, store.state(CONSTRAINT))[0]
             if entry.get("status", "active") == "active" and not is_global(entry.get("scope"), str(store.root))
             and admits(CONSTRAINT.name, entry["id"])]
    root = str(store.root)
    rules.sort(key=lambda e: (e.get("hardness") != "absolute", -narrowness(e.get("scope"), options.scope, root),
                              model.id_sort_key(e["id"])))
    return rules


def _mmr_problems(config: dict[str, Any]) -> list[str | None]:
    """What is wrong in the ``mmr`` section, for the answer's warnings: ``lambda`` only matters,
    and is only said, when the re-ranking is on."""
    enabled, problem = checked(config, "mmr.enabled")
    return [problem, checked(config, "mmr.lambda")[1] if enabled is True else None]


def _semantic_settings(config: dict[str, Any]) -> tuple[Mapping[str, Any] | None, list[str]]:
    """The ``semantic`` section when the blend is on and has an endpoint to ask (only a literal
    true turns it on: "false" is a string), and what is wrong in it, for the answer's warnings.
    An endpoint that is down stays silent; a URL no request can be sent to is the user's to fix."""
    enabled, problem = checked(config, "semantic.enabled")
    if enabled is not True:
        return None, [problem] if problem else []
    url_problem = checked(config, "semantic.url", instead="the answer is ranked without the semantic blend")[1]
    # Anything but ollama/openai (in any case, as embeddings reads it) goes to the Ollama path,
    # fails there and falls back to lexical ranking on every query: a typo must be said.
    api_problem = checked(config, "semantic.api", instead="requests go to the Ollama API (/api/embed)")[1]
    # Read from the process's environment, as the key is: the user's own consent, not the project's.
    host_problem = None if url_problem else unapproved_host_problem(
        config["semantic"], os.environ, "nothing was sent and the answer is ranked without the semantic blend")
    host_problem = f".context/config.json: {host_problem}." if host_problem else None
    problems = [p for p in (checked(config, "semantic.weight")[1], url_problem, api_problem, host_problem) if p]
    return (None if url_problem or host_problem else config["semantic"]), problems


NOTE_BLEND_SKIPPED = ("the semantic blend was skipped, so this answer is ranked lexically: {why}; "
                      "`context-keeper doctor` says what to fix")


def _semantic_blend(store: Store, text: str, result: Any, settings: Mapping[str, Any], keep: int = MAX_HITS,
                    notes: list[str] | None = None) -> Any:
    """Re-rank the first SEMANTIC_CANDIDATES lexical candidates with embedding similarity, and
    keep ``keep`` hits, as the lexical answer keeps them; on any failure, the lexical order, and
    a note saying so added to ``notes`` (the answer's warnings: nobody could tell otherwise).

    Only the order changes. Each hit's ``relevance`` — hence ``top_relevance``,
    ``no_confident_match`` and ``weak_match`` — stays the calibrated lexical signal: measured
    with all-MiniLM-L6-v2 (evals/README.md), a blended relevance separates unanswered from
    answered questions worse at the operating point for every weight, and against the shipped
    threshold it wrongly flagged 11-41% of answerable questions."""
    from context_keeper import embeddings

    if not result.hits:
        return result
    deadline = time.monotonic() + embeddings.QUERY_TIMEOUT_S
    head, tail = result.hits[:SEMANTIC_CANDIDATES], result.hits[SEMANTIC_CANDIDATES:]
    query_vec = None
    try:
        # The query first: cached entry vectors of another length come from another model.
        query_vec = embeddings.query_vector(text, settings, deadline)
        vectors = embeddings.entry_vectors(store, [h.entry for h in head], settings,
                                           dim=len(query_vec), deadline=deadline)
    except embeddings.EmbeddingUnavailable as exc:
        logging.getLogger("context_keeper").info("semantic blend skipped: %s", exc)
        if query_vec is None:
            why = "the embedding endpoint gave no answer in time" if exc.timed_out else "the embedding endpoint failed"
        else:  # those embedded in time are cached: a slow endpoint fills the cache over a few queries
            why = ("not every entry was embedded in time (those that were are kept for the next questions)"
                   if exc.timed_out else "the embedding endpoint failed on the entries")
        if notes is not None:
            notes.append(NOTE_BLEND_SKIPPED.format(why=why))
        return replace(result, hits=result.hits[:keep])
    weight = embeddings.blend_weight(settings)
    # The order mixes the relevance as matched: an answer-type check scales it for the
    # abstention only, and must not tilt the mix towards the embeddings.
    scale = result.relevance_scale or 1.0  # a factor of 0 (an eval override) leaves nothing to divide
    blended = []
    for hit in head:
        vec = vectors.get(hit.entry["id"])
        similarity = max(embeddings.cosine(query_vec, vec), 0.0) if vec else 0.0
        lexical = hit.relevance / scale
        mixed = (1 - weight) * lexical + weight * similarity
        priors = hit.score / lexical if lexical > 0 else 1.0
        score = mixed * priors
        # Finite vectors can still overflow a cosine (1e200 squared is inf, inf/inf is NaN).
        blended.append(replace(hit, score=score if math.isfinite(score) else hit.score))
    blended.sort(key=lambda h: h.score, reverse=True)
    return replace(result, hits=(blended + tail)[:keep])


_ID_LIKE = model.ID_ANY_CASE


def _asked_budget(token_budget: int) -> int:
    budget = int(token_budget)
    if budget < MIN_BUDGET:
        raise InvalidInput(f"token_budget must be at least {MIN_BUDGET} tokens (got {budget}); leave it out (or give 0) "
                           "for the default (a ranked answer: the budget set in .context/config.json; an entry by id: "
                           "all of it)", field="token_budget")
    return budget


def _fetched(answer: dict[str, Any], token_budget: int | None, ignored: list[str]) -> dict[str, Any]:
    """An entry fetched by id: within ``token_budget`` when one is given (shortened as a ranked
    answer shortens its entries), and saying which other arguments a fetch by id does not use."""
    if ignored:
        note = f"id given, so {', '.join(ignored)} {'was' if len(ignored) == 1 else 'were'} not used: the entry is returned as it is"
        answer["warnings"] = [*answer.get("warnings", []), note]
    if token_budget:
        budget = _asked_budget(token_budget)
        # The whole answer within the budget, as for a ranked one: the entry gets what its
        # warnings and keys leave (at least an id and a title).
        room = _room_for_entry(answer, budget)
        entry, shortened = shorten_entry(answer["entry"], max(room, MIN_FIRST_ENTRY_TOKENS))
        # What replaced it, spelled out (the successor's title and whole reasoning), left the
        # entry asked for a stub and the answer still over the budget: when the entry does not
        # fit beside it, it shrinks to ids as in a ranked answer (superseded_by still names it).
        if chars_to_tokens(json_chars(entry)) > room and _compact_annotations(answer, answer["entry"], ()):
            room = _room_for_entry(answer, budget)
            entry, shortened = shorten_entry(answer["entry"], max(room, MIN_FIRST_ENTRY_TOKENS))
        answer["entry"] = entry
        if shortened:
            answer["shortened"] = True
        answer["tokens_used"] = _self_counted(answer, budget)
    return answer


def _self_counted(answer: Mapping[str, Any], guess: int) -> int:
    """The tokens of ``answer`` with its ``tokens_used`` saying that many. Measured with the
    budget (``guess``) in its place, an answer over the budget (its warnings alone can be) was
    a token short when its count had more digits; the count returned is measured with a value
    at least as long in its place."""
    while (measured := chars_to_tokens(json_chars({**answer, "tokens_used": guess}))) > guess:
        guess = measured
    return measured


def _room_for_entry(answer: Mapping[str, Any], budget: int) -> int:
    """What a fetched entry may take of ``budget`` beside the rest of its answer."""
    rest = {**answer, "entry": {}, "shortened": True, "tokens_used": budget}
    return budget - chars_to_tokens(json_chars(rest))


def _id_named_by(store: Store, query: str | None) -> str | None:
    """The id a query consists of ("dec-007", "DEC-7"), as the store writes it."""
    # "dec-007?", "`dec-007`" and "(dec-007)" are the id too.
    match = _ID_LIKE.fullmatch((query or "").strip().strip(_AROUND_ID))
    return None if match is None else _stored_id(store, match)


def _stored_id(store: Store, match: re.Match[str]) -> str | None:
    """The id ``match`` (of ``_ID_LIKE``) spells, as the store writes it; zero-padded when no
    entry has it; None when its prefix is no kind's."""
    if match[1].lower() not in model.BY_PREFIX:
        return None
    prefix, number, suffix = match[1].lower(), int(match[2]), f"-{match[3]}" if match[3] else ""
    kind = model.BY_PREFIX[prefix]
    padded = model.format_id(kind, number) + suffix
    as_given = f"{prefix}-{match[2]}{suffix}"
    state = store.state(kind)
    present = state.entries_by_id
    # A suffix's case does not make another id (model.id_key): the tools write dec-013-a7f3,
    # a hand edit may write dec-013-A7F3, and either spelling names it.
    stored = (state.ids.as_stored(c) for c in (as_given, padded))
    return next((c for c in stored if c in present), padded)


# An id among other words, not a piece of a longer word, path or file name ("codec-7",
# "src/dec-7.py"): what follows it may end a sentence, not start an extension. A hyphen may join
# it to the words around it ("dec-001-and-dec-003", "dec-007-style").
_ID_IN_TEXT = re.compile(r"(?<![\w./\\])" + _ID_LIKE.pattern + r"(?!\w|\.\w)")


_AROUND_ID = "?!.,;:'\"`()[]<>"
_SUFFIX_MADE = re.compile(r"[0-9a-fA-F]{4}")
# "Dec-20", "Dec-2024": a month and a day or year, written as a date is, not as an id (the tools
# write dec-020; a hand-typed id in capitals is DEC-20).
_A_DATE = re.compile(r"Dec-(?:[0-3]?[0-9]|(?:19|20)[0-9]{2})")


def _id_asked(store: Store, entry_id: str) -> str:
    """The id ``get_context(id=...)`` looks up: the one the store writes when ``entry_id``
    names it in another spelling ("DEC-7", "dec-7" for dec-007, as an id in a query
    is read); else ``entry_id`` with its prefix in lower case, so that an unknown id is answered
    "no entry with id ..." (with what it may have meant) rather than "not an entry id"."""
    key = entry_id.strip()
    if model.parse_id(key) is not None and key in store.state(model.kind_of_id(key)).entries_by_id:
        return key
    match = _ID_LIKE.fullmatch(key)
    if match is None or match[1].lower() not in model.BY_PREFIX:
        return entry_id
    named = _id_named_by(store, key)
    kind = model.BY_PREFIX[match[1].lower()]
    if named is not None and named in store.state(kind).entries_by_id:
        return named
    return match[1].lower() + key[len(match[1]):]


def ids_named_in(store: Store, text: str) -> frozenset[str]:
    """The ids of the recorded entries ``text`` names, as a query reads them (``_ids_named_in``:
    "DEC-8" is dec-008, "Dec-2024" a month): the entries its answer puts first."""
    return frozenset(entry["id"] for _, entry in _ids_named_in(store, text, lambda kind, entry_id: True)[0])


def _ids_named_in(store: Store, text: str, admits: Callable[[str, str], bool]) -> tuple[
        list[tuple[str, Mapping[str, Any]]], list[tuple[str, str | None, bool]], str, str]:
    """What the ids ``text`` names are: the entries they name that pass the filters (kind name,
    entry); the ids no entry has (or had), each with the ids it may have meant and whether it is
    written as an id (``_written_as_id``), or that name an entry the filters leave out (``None``,
    ``True``); ``text`` without any of them; and ``text`` without those read as ids (recorded or
    written as one), which is what is searched. Searched as words, an id finds the entries that
    cite it ("dec" is in every one), not the entry itself; "Dec-2024" is words."""
    found: dict[str, tuple[str, Mapping[str, Any]]] = {}
    missing: dict[str, tuple[str | None, bool]] = {}
    rest, words = [], []
    end = kept = 0
    for match in _ID_IN_TEXT.finditer(text):
        named = None if _A_DATE.fullmatch(match[0]) else _stored_id(store, match)
        if named is None:
            continue
        stop = match.end()
        recorded = store.state(model.kind_of_id(named)).entries_by_id
        if match[3] and not _SUFFIX_MADE.fullmatch(match[3]) and named not in recorded:
            # "dec-007-style", "con-3-compliant": a word after the id, not a suffix, when the id
            # without it is recorded and with it is not (four hex digits are a suffix as
            # id_suffix makes them: another clone's entry, not a word).
            plain = _ID_IN_TEXT.fullmatch(match[0][: match.end(2) - match.start()])
            base = _stored_id(store, plain) if plain else None
            if base is not None and base in recorded:
                named, stop = base, match.end(2)
        try:
            fetched = _by_id(store, named)
        except NotFound:
            state = store.state(model.kind_of_id(named))
            likely = _written_as_id(match, state.max_number)
            missing.setdefault(named, (state.ids.spelled_otherwise(named), likely))
        except CorruptStoreFile:
            continue  # the file is warned about; its last good copy is searched, the id with it
        else:
            kind, entry = fetched["type"], fetched["entry"]
            if admits(kind, entry["id"]):
                found.setdefault(entry["id"], (kind, entry))
            else:
                missing.setdefault(entry["id"], (None, True))
            likely = True
        rest.append(text[end:match.start()])
        end = stop
        if likely:
            words.append(text[kept:match.start()])
            kept = stop
    rest.append(text[end:])
    words.append(text[kept:])
    return ([*found.values()], [(i, hint, likely) for i, (hint, likely) in missing.items()],
            " ".join(rest).strip(), " ".join(words).strip())


def _written_as_id(match: re.Match[str], highest: int) -> bool:
    """Whether an id no entry has, among other words, is likely meant as one: its prefix in
    lower case, as the tools write ids, and its number zero-padded as they pad it ("dec-999") or
    no higher than ``highest``, the kind's highest in its file (an entry removed by hand).
    "Dec-2024" is a month and "dec-20" a date in a store whose decisions stop at dec-009: warned
    about, they would only mislead."""
    if not match[1].islower():
        return False
    width = len(model.format_id(model.BY_PREFIX[match[1]], 0)) - len(match[1]) - 1
    return len(match[2]) == width or int(match[2]) <= highest


def _named_first(result: Any, found: Sequence[tuple[str, Mapping[str, Any]]], searched_ids: bool) -> Any:
    """The entries a query names by id first, as fully relevant, then the ranked entries. When
    it names none the filters pass and nothing but its ids was searched, what their words match
    is no answer: the hits keep their order with no relevance."""
    if not found:
        if not searched_ids:
            return result
        unrelated = [replace(h, relevance=0.0) for h in result.hits]
        return replace(result, hits=unrelated, top_relevance=0.0, unstated=None)
    from context_keeper.search import Hit

    top = max((h.score for h in result.hits), default=1.0)
    ids = {(kind, entry["id"]) for kind, entry in found}
    rest = [h for h in result.hits if (h.kind, h.entry.get("id")) not in ids]
    first = [Hit(kind, entry, max(top, 1.0), 1.0) for kind, entry in found]
    return replace(result, hits=[*first, *rest], top_relevance=1.0, unstated=None)


def _left_out_by(store: Store, entry_id: str, filters: Sequence[str]) -> str:
    status = store.find(entry_id)[1].get("status")
    if status == "deprecated":
        return "it is deprecated, which an answer leaves out unless include_deprecated is true"
    return f"the filters given ({', '.join(filters)}) leave it out" if filters else "this answer leaves it out"


def _by_id(store: Store, entry_id: str) -> dict[str, Any]:
    notes: list[str] = []
    key = entry_id.strip()
    try:
        kind, entry = store.find(entry_id)
        entries: Sequence[dict] = store.state(kind).entries
    except CorruptStoreFile as exc:
        # As a ranked answer does: an id found there must be fetchable while the file is broken.
        state = store.state(model.kind_of_id(entry_id))
        entries, from_last_good = readable_entries(store, state)
        entries = entries if from_last_good else ()
        found = [e for e in entries if e["id"] == key] or _renumbered_from(entries, key)
        if not found:
            raise
        kind, entry = state.kind, found[0]
        notes = [str(exc), *last_good_notes(store, [state])]
    except NotFound:
        state = store.state(model.kind_of_id(entry_id))
        entries = state.entries
        found = [] if state.problems_of(key) else _renumbered_from(entries, key)
        if not found:
            raise
        kind, entry = state.kind, found[0]
    answer: dict[str, Any] = {"type": kind.name, "entry": entry}
    notes += _other_copies(store, kind, entry)
    notes += odd_statuses(store, [entry]).values()
    if notes:
        answer["warnings"] = notes
    # doctor --fix gives one of two entries that share an id (after a merge) a new id and keeps
    # the old one as previous_id: an id cited before that may mean either of them.
    said = []
    if entry["id"] != key:
        answer["renumbered"] = {"from": key, "to": entry["id"]}
        said.append(f"No entry has the id {key} now: this entry, {entry['id']}, had it before it was renumbered "
                    f"(its {'previous_id is' if _kept_in(entry, key) == 'previous_id' else 'previous_ids include'} "
                    f"{key}; `doctor --fix` renumbers one of two entries that share an id "
                    "after a merge).")
    moved = [e for e in _renumbered_from(entries, key) if e is not entry]
    if moved:
        answer["renumbered_from_this_id"] = [{"id": e["id"], "summary": model.entry_title(kind, e)} for e in moved]
        others = ", ".join(f"{e['id']} \"{model.entry_title(kind, e)}\"" for e in moved)
        which = "one of those" if len(moved) > 1 else moved[0]["id"]
        kept_in = ", ".join(dict.fromkeys(_kept_in(e, key) for e in moved))
        said.append(f"{others} had the id {key} too before being renumbered ({kept_in} {key}). If the {key} "
                    f"you were given was written before that (in a commit, a note or another clone), it may mean "
                    f"{which}: compare the summaries.")
    if said:
        answer["note"] = " ".join(said)
    replacement = current_replacement(store, entry)
    if replacement is not None:
        answer["replaced_by"] = replacement
    return answer


def _other_copies(store: Store, kind: Any, entry: Mapping[str, Any]) -> list[str]:
    """A warning naming the other items of the file that carry ``entry``'s id (a merge that
    kept both sides): only the first is read, so the one fetched may not be the one meant."""
    state = store.state(kind)
    if state.error is not None:
        return []
    used = state.positions.get(entry["id"])
    others = [i for i in sorted(state.item_problems) if i != used and isinstance(state.raw[i], dict)
              and isinstance(state.raw[i].get("id"), str) and state.raw[i]["id"].strip() == entry["id"]]
    if not others:
        return []
    named = ", ".join(f"item {i + 1} \"{model.entry_title(kind, state.raw[i])[:80]}\"" for i in others)
    return [f"{kind.filename} has {len(others) + 1} items with the id {entry['id']}: this is the first; {named} "
            "cannot be read until it has an id of its own (`context-keeper doctor` says how: two entries that "
            "share an id are renumbered by `doctor --fix`, one entry edited on both sides is merged by hand)."]


def _kept_in(entry: Mapping[str, Any], old_id: str) -> str:
    """The field in which ``entry`` keeps ``old_id`` (the first old id, or a later one)."""
    first = entry.get("previous_id")
    return "previous_id" if isinstance(first, str) and first.strip() == old_id else "previous_ids"


_RENUMBERED: tuple[Sequence[dict], dict[str, list[dict]]] | None = None


def _renumbered_from(entries: Sequence[dict], old_id: str) -> list[dict]:
    """The entries that had ``old_id`` before ``doctor --fix`` renumbered them, in file order.
    The old ids of a file's entries are gathered once per store-cache tuple (which stays the same
    object until the file changes): a scan of every entry cost ~3 ms at 6,000 decisions, on a
    lookup by id that otherwise takes microseconds. The cache holds the tuple itself, so its id
    cannot be reused while the index is kept."""
    global _RENUMBERED
    cached = _RENUMBERED
    if cached is None or cached[0] is not entries:
        index: dict[str, list[dict]] = {}
        for entry in entries:
            for old in model.previous_ids(entry):
                index.setdefault(old, []).append(entry)
        cached = _RENUMBERED = (entries, index)
    return list(cached[1].get(old_id, ()))


def _link_summary(store: Store, entry_id: str) -> dict[str, Any] | None:
    try:
        kind, entry = store.find(entry_id)
    except ContextKeeperError:
        return None
    return {"id": entry["id"], "type": kind.name, "summary": model.entry_title(kind, entry),
            "why": entry.get("why_chosen") or entry.get("reason") or entry.get("purpose") or ""}


VIA_LISTED = 10  # a year of weekly revisions would put 50 ids in every answer about the chain


# What follows an id in a chain of replacements: the chain's end, the first ``VIA_LISTED`` ids
# passed on the way there (the id itself first, unless it is the end) and how many were passed.
_Tail = tuple  # (end id, tuple of ids, count)


def current_replacement(store: Store, entry: Mapping[str, Any], memo: dict[str, _Tail] | None = None) -> dict[str, Any] | None:
    """What replaced ``entry`` today: its successor, or, when that was itself replaced
    (a → b → c), the end of the chain, however long, with the ids passed on the way in ``via``
    (the first ``VIA_LISTED`` of them; ``via_more`` counts the others). Naming b alone told the
    agent that b is the current answer, and so did stopping after a fixed number of hops. A
    chain that ends in a retired entry says so (``status``); one that loops back (a hand edit)
    names the first successor. Linear in the chain; with one ``memo`` for many entries of a
    store (DECISIONS.md lists them all), linear in the store rather than in chain × entries."""
    successor = entry.get("superseded_by")
    if not isinstance(successor, str) or not successor.strip():
        return None
    # A link typed by hand in another spelling ("DEC-19" for dec-019) names the entry all the same.
    successor = _id_asked(store, successor)
    if successor == entry.get("id"):
        return None  # an entry replaced by itself names nothing that replaced it
    tail = _chain_tail(store, str(entry.get("id")), successor, {} if memo is None else memo)
    if tail is None:
        return None
    end, passed, passed_count = tail
    summary = _link_summary(store, end)
    if summary is None:
        return None
    try:
        status = store.find(end)[1].get("status", "active")
    except ContextKeeperError:
        status = "active"
    if status != "active":
        summary["status"] = status
    if passed_count:
        summary["via"] = list(passed)
        if passed_count > len(passed):
            summary["via_more"] = passed_count - len(passed)
    return summary


def _chain_tail(store: Store, start: str, successor: str, memo: dict[str, _Tail]) -> _Tail | None:
    """The tail that follows ``successor`` for the entry ``start``; None when ``successor``
    names no readable entry. Tails of chains without a loop are kept in ``memo``."""
    looped = (successor, (), 0)  # a loop: no entry in it is current
    path = [successor]
    on_path = {start, successor}
    joined: _Tail | None = None
    while True:  # ends: every step adds an id to ``on_path`` or stops
        known = memo.get(path[-1])
        if known is not None:
            if known[0] == start:  # the known chain ends at this very entry: it loops back
                return looped
            joined = known
            path.pop()
            break
        try:
            _kind, current = store.find(path[-1])
        except ContextKeeperError:
            if len(path) == 1:
                return None
            path.pop()  # the last link names no readable entry: the one before it is the end
            break
        following = current.get("superseded_by")
        replaced = current.get("status") == "superseded" or current.get("status") == "deprecated" and following
        if not replaced or not isinstance(following, str) or not following.strip():
            break
        following = _id_asked(store, following)
        if following in on_path:
            return looped
        on_path.add(following)
        path.append(following)
    if joined is None:
        end = path.pop()
        joined = memo[end] = (end, (), 0)
    tail = joined
    for passed in reversed(path):
        tail = memo[passed] = (tail[0], (passed, *tail[1])[:VIA_LISTED], tail[2] + 1)
    return tail


def _predecessors(store: Store, kind_name: str, entry: Mapping[str, Any], named: Sequence[str] = ()) -> list[str]:
    """The entries this one replaced: its own ``supersedes`` list and those whose
    ``superseded_by`` names it (``deprecate_entry`` records only that side)."""
    out = []
    for old_id in dict.fromkeys([*model.supersedes_ids(entry), *named]):
        old = store.state(KINDS[kind_name]).entries_by_id.get(old_id)
        if old is not None:
            out.append(f"{old_id}: {model.entry_title(KINDS[kind_name], old)}")
    return out


_CHARS_CACHE: dict[int, tuple[Mapping[str, Any], int]] = {}
_CHARS_CACHE_SIZE = 20_000


def _entry_chars(entry: Mapping[str, Any]) -> int:
    """``json_chars(entry)``, remembered per entry object: the store cache hands out the same
    objects until a file changes, and a warm server packs the same entries again and again.
    The cache holds the object itself, so its id cannot be reused while the length is kept."""
    cached = _CHARS_CACHE.get(id(entry))
    if cached is not None and cached[0] is entry:
        return cached[1]
    if len(_CHARS_CACHE) >= _CHARS_CACHE_SIZE:
        _CHARS_CACHE.clear()
    chars = json_chars(entry)
    _CHARS_CACHE[id(entry)] = (entry, chars)
    return chars


def _surely_refused(left: int, entry_chars: int, per_entry: int, kind: str) -> bool:
    """Whether ``_pack``'s ``add`` must refuse a ranked hit whose entry is ``entry_chars``
    long when ``left`` tokens of the budget are left and an entry is already in (the first one
    has a lower floor), judged from a lower bound of the item's cost: an item has at least a
    score, a relevance and a type. Exact where it says True; an entry that would be shortened
    anyway is left to ``add``."""
    tokens = chars_to_tokens(entry_chars)
    if tokens > per_entry:
        return False
    least = chars_to_tokens(_LEAST_ITEM + len(kind) + _ENTRY_FIELD + entry_chars) + 2
    # Too big as it is, and the room left for a shortened copy is under the floor.
    return least > left and left - (least - tokens) < MIN_ENTRY_TOKENS


def _compact_annotations(item: dict[str, Any], entry: Mapping[str, Any], replaced: Sequence[str]) -> bool:
    """Shrink an item's history annotations to ids; False when there is nothing to shrink.
    ``replaced_by`` goes when the entry's own ``superseded_by`` (kept by every shortening) names
    the same successor, and ``history`` still says it was replaced. ``replaced`` is what
    ``predecessor`` was joined from ("id: title" each)."""
    changed = False
    successor = item.get("replaced_by")
    if isinstance(successor, dict):
        if successor.get("id") == entry.get("superseded_by") and "status" not in successor:
            del item["replaced_by"]
            changed = True
        else:
            # The end of a chain keeps how it was reached, and a retired one says so.
            short = {k: successor[k] for k in ("id", "status", "via", "via_more") if k in successor}
            if short != successor:
                item["replaced_by"] = short
                changed = True
    predecessor = item.get("predecessor")
    if predecessor:
        ids = "; ".join(part.split(":", 1)[0] for part in replaced)
        if ids != predecessor:
            item["predecessor"] = ids
            changed = True
    return changed


def _pack(
    store: Store,
    hits: list[Any],
    budget: int,
    max_entry_tokens: int,
    threshold: float | None,
    include_related: bool,
    admits: Callable[[str, str], bool],
    predecessors: Callable[[str, Mapping[str, Any]], list[str]],
    scope_rules: Sequence[Mapping[str, Any]] = (),
    unlisted: int = 0,
    reserve: int = 0,
    envelope: int = 0,
    beyond: bool = False,
) -> dict[str, Any]:
    """``scope_rules`` (constraints covering the scope asked about) are placed right after the
    last confident match, so weak matches cannot take their room in the budget. ``reserve`` is
    what the answer's own text will take, ``envelope`` its keys and numbers; the budget note's
    room is kept here as well. When the rest cannot hold the best match, it is packed into what
    the envelope leaves instead (into the whole budget when even that is too small, and in its
    smallest form when not even that holds it). ``beyond``: the ranking was cut while still
    confident, so more than ``hits`` match and what is omitted is a lower bound."""
    asked = budget
    most_omitted = len(hits) + len(scope_rules) + unlisted
    reserve += _prose_tokens({"budget_note": _budget_note(most_omitted, asked, beyond)}) if most_omitted else 0
    fallbacks = [max(asked - envelope, 0), asked]
    budget = max(asked - envelope - reserve, 0)
    results: list[dict[str, Any]] = []
    # The stored entry behind each result: a shortened copy has lost its related_to links.
    sources: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    # Where each result goes in the answer: its rank (scope rules and links right after the last
    # confident match), whatever order the budget was handed out in.
    places: list[tuple[float, int]] = []
    place = 0.0
    used = 0
    omitted = 0
    squeezed = False  # the best match took the room of the answer's own text

    # No one entry takes more than a third of a small budget: a long first match is shortened
    # instead of crowding out the next ones (at the default budget this is above max_entry_tokens).
    per_entry = min(max_entry_tokens, max(MIN_ENTRY_TOKENS, budget // 3))

    def try_add(item: dict[str, Any], entry: Mapping[str, Any]) -> bool:
        nonlocal budget, squeezed
        if add(item, entry):
            return True
        # Too little room with what replaced it (or what it replaced) spelled out: those shrink
        # to ids, so the entry itself is not given up for a lower-ranked one.
        # What it replaced is looked up again only when there is a "predecessor" to shrink.
        replaced = predecessors(item["type"], entry) if item.get("predecessor") else ()
        if _compact_annotations(item, entry, replaced) and add(item, entry):
            return True
        if results:
            return False
        # An answer of prose alone tells the agent nothing to check: the best match takes the
        # room of the text. The budget note is then left out (omitted still counts what did not
        # fit); guidance and warnings are not, and go over the budget. That room is the match's
        # alone: the entries after it are packed into the budget as it was.
        packing = budget
        for room in fallbacks:
            if room > packing:
                budget = room
                squeezed = add(item, entry)
                if squeezed:
                    break
        budget = packing
        if not squeezed:
            # Not even the whole budget holds its smallest form (a replaced entry's status and
            # successor come with it): it comes in that form all the same, rather than an answer
            # that has nothing to say but that one entry did not fit.
            shortened, _ = shorten_entry(entry, MIN_FIRST_ENTRY_TOKENS, _entry_chars(entry))
            item["entry"] = shortened
            item["shortened"] = True
            put(item, entry, chars_to_tokens(json_chars(item)) + 2)
            squeezed = True
        return squeezed

    def add(item: dict[str, Any], entry: Mapping[str, Any]) -> bool:
        # Costs come from JSON lengths: the item's own fields, plus its entry, plus the
        # "shortened" flag, add up to exactly json_chars of the finished item. Most hits of a
        # full answer are refused, and this way a refusal costs no shortening and no copy.
        rest = json_chars(item)
        chars = _entry_chars(entry)
        shortened: Mapping[str, Any] = entry
        cut = chars_to_tokens(chars) > per_entry
        if cut:
            shortened, cut = shorten_entry(entry, per_entry, chars)
        entry_chars = chars if not cut else json_chars(shortened)
        cost = chars_to_tokens(rest + _ENTRY_FIELD + (_SHORTENED_FIELD if cut else 0) + entry_chars) + 2
        if used + cost > budget:
            # Shortened further rather than dropped for a lower-ranked entry: to half the room
            # left, so the entries after it still get some (all of it when that is too little).
            room = budget - used - (cost - chars_to_tokens(entry_chars))
            # The first entry may go down to its id and a cut title: anything else in its place
            # would be a lower-ranked match.
            if room < (MIN_ENTRY_TOKENS if results else MIN_FIRST_ENTRY_TOKENS):
                return False
            target = room // 2 if room // 2 >= MIN_ENTRY_TOKENS else room
            shortened, _ = shorten_entry(entry, target, chars)
            cut = True
            cost = chars_to_tokens(rest + _ENTRY_FIELD + _SHORTENED_FIELD + json_chars(shortened)) + 2
            if used + cost > budget:
                # The room was measured without the "shortened" flag's own length when the
                # entry was not cut before, and rounding to tokens can add one more: cut it
                # again by what it is over, rather than leave the room unused.
                target -= used + cost - budget
                if target < (MIN_ENTRY_TOKENS if results else MIN_FIRST_ENTRY_TOKENS):
                    return False
                shortened, _ = shorten_entry(entry, target, chars)
                cost = chars_to_tokens(rest + _ENTRY_FIELD + _SHORTENED_FIELD + json_chars(shortened)) + 2
                if used + cost > budget:
                    return False
        item["entry"] = shortened if cut else dict(entry)
        if cut:
            item["shortened"] = True
        put(item, entry, cost)
        return True

    def put(item: dict[str, Any], entry: Mapping[str, Any], cost: int) -> None:
        nonlocal used
        used += cost
        results.append(item)
        sources.append(entry)
        places.append((place, len(places)))
        seen.add(entry["id"])

    def annotate(item: dict[str, Any], kind: str, entry: Mapping[str, Any]) -> None:
        # A replaced entry always says so and names what replaced it, however it got here; an
        # entry merged away with deprecate_entry(merge_into=...) was replaced as much.
        if entry.get("status") == "superseded" or entry.get("status") == "deprecated" and entry.get("superseded_by"):
            item["history"] = True
            replacement = current_replacement(store, entry)
            if replacement is not None:
                item["replaced_by"] = _summed_up(replacement, per_entry, False)
        elif entry.get("status") == "deprecated":
            item["deprecated"] = True  # retired without a successor: include_deprecated asked for it
        replaced = predecessors(kind, entry)
        if replaced:
            item["predecessor"] = "; ".join(replaced)

    rule_ids = {entry["id"] for entry in scope_rules}
    rule_hits = {hit.entry["id"]: hit for hit in hits if hit.kind == CONSTRAINT.name and hit.entry["id"] in rule_ids}

    def is_rule(hit: Any) -> bool:
        return hit.kind == CONSTRAINT.name and hit.entry["id"] in rule_ids

    def is_weak(hit: Any) -> bool:
        return not is_rule(hit) and threshold is not None and hit.relevance < threshold

    def hit_item(hit: Any) -> dict[str, Any]:
        item: dict[str, Any] = {"score": round(hit.score, 3), "relevance": round(hit.relevance, 3), "type": hit.kind}
        if is_rule(hit):
            item["scope_rule"] = True  # it holds for the scope, however weakly it matched
        elif is_weak(hit):
            item["weak_match"] = True
        return item

    def place_scope_rules() -> None:
        nonlocal omitted, place
        place = rules_after + 0.25
        for entry in scope_rules:
            if entry["id"] in seen or entry["id"] in tried:  # a ranked rule that did not fit is counted once
                continue
            hit = rule_hits.get(entry["id"])
            item = hit_item(hit) if hit is not None else {"score": 0.0, "type": CONSTRAINT.name, "scope_rule": True}
            annotate(item, CONSTRAINT.name, entry)
            if not try_add(item, entry):
                omitted += 1

    linked_ids: set[str] = set()

    def place_related(from_entries: Sequence[Mapping[str, Any]], after: float) -> None:
        nonlocal place
        place = after
        for primary in from_entries:
            for linked in primary.get("related_to", []) or []:
                if linked in seen:
                    continue
                try:
                    # A link typed by hand may spell the id otherwise ("DEC-19"), as a lookup may.
                    kind, entry = store.find(_id_asked(store, linked))
                except ContextKeeperError:  # a dangling link is skipped, not fatal
                    continue
                if entry["id"] in seen:
                    continue
                # The question's filters (types, tags, dates, scope, deprecated) hold for linked
                # entries too: "tags": ["caching"] must not bring back untagged ones.
                if not admits(kind.name, entry["id"]):  # deprecated ones only with include_deprecated
                    # Merged away (deprecate_entry merge_into) or replaced: the link is followed to
                    # the entry that carries what it said today, which the filters must admit.
                    replacement = current_replacement(store, entry) if entry.get("superseded_by") else None
                    if replacement is None or replacement.get("status", "active") != "active":
                        continue
                    try:
                        kind, entry = store.find(replacement["id"])
                    except ContextKeeperError:
                        continue
                    if entry["id"] in seen or not admits(kind.name, entry["id"]):
                        continue
                item = {"score": 0.0, "type": kind.name, "related": True, "via": primary["id"]}
                annotate(item, kind.name, entry)
                if try_add(item, entry):
                    linked_ids.add(entry["id"])

    def primaries() -> list[Mapping[str, Any]]:
        # One hop: an entry that came in through a link brings no links of its own.
        return [source for source in sources if source["id"] not in linked_ids]

    def after_confident() -> None:
        place_scope_rules()
        # What a confident match links to comes before the weak matches: placed after every
        # ranked hit, the links were crowded out by weak matches (relevance 0.0 among them) in
        # most answers, so include_related changed almost nothing.
        if include_related and rules_after >= 0:
            place_related(primaries(), rules_after + 0.5)

    confident = [i for i, hit in enumerate(hits) if threshold is None or hit.relevance >= threshold]
    rules_after = confident[-1] if confident else -1
    tried: set[str] = set()
    if rules_after < 0:
        place_scope_rules()

    def pack(position: int, hit: Any) -> None:
        nonlocal omitted, place
        if hit.entry["id"] in seen or (position > rules_after and hit.entry["id"] in rule_hits):
            return
        tried.add(hit.entry["id"])
        if results and _surely_refused(budget - used, _entry_chars(hit.entry), per_entry, hit.kind):
            # Most hits of a full answer end here, without an item built for them.
            if not is_weak(hit):
                omitted += 1
            return
        item = hit_item(hit)
        annotate(item, hit.kind, hit.entry)
        place = position
        if not try_add(item, hit.entry) and not item.get("weak_match"):
            omitted += 1

    # A weak match ranked above a confident one (its words matched only through related terms,
    # say) gets what room the confident matches leave, not room they need.
    outranking_weak = [(position, hit) for position, hit in enumerate(hits[:rules_after]) if is_weak(hit)]
    for position, hit in enumerate(hits):
        if position > rules_after or not is_weak(hit):
            pack(position, hit)
        if position == rules_after:
            after_confident()
            for earlier, weak in outranking_weak:
                pack(earlier, weak)

    if include_related:
        place_related(primaries(), len(hits))  # the weak matches' links, and those that did not fit before
    for item in results:
        successor = item.get("replaced_by")
        if isinstance(successor, dict) and "why" in successor and successor.get("id") in seen:
            # The successor's own entry is in the answer, with its reasoning. Left out once all is
            # packed, not before, so that what is packed stays as it was: freed earlier, the room
            # let a weak match take whole what two shortened ones had shared.
            before = chars_to_tokens(json_chars(item))
            item["replaced_by"] = _summed_up(successor, per_entry, True)
            used -= before - chars_to_tokens(json_chars(item))
    ranked = sorted(range(len(results)), key=places.__getitem__)
    results[:], sources[:] = [results[i] for i in ranked], [sources[i] for i in ranked]
    if unlisted and threshold is None:
        # A listing by filters stops where nothing more could fit: the rest did not fit either,
        # except those that came in as links of the entries listed (they pass the filters too).
        listed = {hit.entry["id"] for hit in hits}
        omitted += max(0, unlisted - len(linked_ids - listed))
    answer = {
        "results": results,
        "tokens_used": used,
        "token_budget": asked,
        "entries_returned": len(results),
    }
    if omitted:
        answer["omitted"] = omitted
        if not squeezed:
            answer["budget_note"] = _budget_note(omitted, asked, beyond)
    return answer


def _summed_up(replacement: dict[str, Any], per_entry: int, shown: bool) -> dict[str, Any]:
    """``replaced_by`` as a ranked answer gives it: the successor's reasoning within half of
    what one entry may take (a 5,760-character why_chosen made the replaced entry's item five
    times max_entry_tokens), and none when the successor is itself in the answer (``shown``)."""
    why = replacement.get("why")
    if not why:
        return replacement
    rest = {key: value for key, value in replacement.items() if key != "why"}
    room = per_entry // 2 * CHARS_PER_TOKEN - json_chars({**rest, "why": ""})
    if shown or room < MIN_REASON_CHARS:
        return rest
    return {**rest, "why": shorten(why, room)} if len(why) > room else replacement


def _budget_note(omitted: int, budget: int, at_least: bool = False) -> str:
    count = f"At least {omitted}" if at_least else str(omitted)
    return (f"{count} more matching entr{'y' if omitted == 1 else 'ies'} did not fit in "
            f"token_budget {budget}; ask again with a larger token_budget, or by id.")
