"""The MCP adapter: tool signatures (the input schemas) over ``service.Service``.

Only this module knows the protocol. Every tool is a few lines: typed parameters in, one
service call, the answer dict out; ``ContextKeeperError`` becomes ``ToolError`` (``isError``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import TextContent, ToolAnnotations
from pydantic import BeforeValidator, Field, ValidationError

from context_keeper import __version__
from context_keeper.config import MAX_DAYS
from context_keeper.errors import ContextKeeperError
from context_keeper.model import MAX_TEXT
from context_keeper.service import Service

log = logging.getLogger("context_keeper")

INSTRUCTIONS = """\
context-keeper is this project's durable memory: decisions (what was chosen and why), \
constraints (rules that must hold) and pipelines (ordered workflows), stored in .context/.

- At the start of a session, or after the conversation was compacted, call \
get_project_summary once.
- Before changing code, config or a workflow, call get_context with what you are about to do \
(and scope=<file path> when editing a file). If it answers no_confident_match, nothing recorded \
applies: do not present the weak results as project facts.
- When a decision is made (an option chosen over others, a bug's root cause fixed a certain \
way, a convention agreed), record it right away with record_decision; rules that must always \
hold go to record_constraint; repeatable multi-step procedures to record_pipeline. Write the \
problem and the why in full sentences: a later session will only have this text. If the \
answer lists similar_entries, update or supersede the existing entry instead of duplicating it.
- When something recorded stops being true, use record_decision(supersedes=[old id]), \
update_entry or deprecate_entry; never leave contradicting entries side by side.
- Never store secrets (keys, tokens, passwords).
"""

# Text lengths, id formats and list items are checked by the service (model.clean_value) with
# messages that say what to fix, so the schema (a per-session token cost) stays small.
ProjectDir = Annotated[str, Field(description="Absolute project root")]
Text = str
Short = str
EntryId = Annotated[str, Field(max_length=40)]
Strs = list[str]
Ids = list[str]
Origin = Literal["user", "agent", "import"]
Types = Annotated[list[str], Field(description="decisions|pipelines|constraints")]


def _refuse_booleans(value: Any) -> Any:
    # Lax mode takes JSON true as 1 (limit: true listed one entry, min_relevance: true abstained
    # on everything); "20" or "0.3", which agents send, stays accepted.
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")  # noqa: TRY004 -- pydantic reports only ValueError
    return value


# For every integer and number parameter. Placed after the Field with the bounds: before them, pydantic cannot carry ge/le into the
# schema's minimum/maximum (nor enforce them).
NotBoolean = BeforeValidator(_refuse_booleans)
# 0 (or left out) means the config's token_budget, as it always has; 1-49 is refused by the
# service with a message naming the minimum (a schema cannot say "0 or at least 50").
ContextBudget = Annotated[int, Field(ge=0, le=200_000, description="Max tokens in the answer, at least 50 (0 = config token_budget)"),
                          NotBoolean]
QueryBudget = Annotated[int, Field(ge=0, le=200_000, description="Max tokens in the answer (0 = no limit)"), NotBoolean]
IsoDate = Annotated[str, Field(description="ISO date, e.g. 2026-01-31")]
Alternatives = Annotated[list[dict[str, Any] | str], Field(description="[{option, reason_rejected}]")]
Steps = Annotated[list[dict[str, Any] | str], Field(description="Ordered steps: strings or {action, output}")]
AllowSecrets = Annotated[bool, Field(description="Store credential-like text anyway")]

READ = ToolAnnotations(read_only_hint=True)
# Recording only adds an entry (a superseded one keeps its text and gains a link), so a client
# may allow it without asking; changing or deprecating an entry, or writing over the exported
# Markdown, replaces what was there.
WRITE = ToolAnnotations(destructive_hint=False)
REPLACE = ToolAnnotations(destructive_hint=True, idempotent_hint=True)

F = TypeVar("F", bound=Callable[..., Any])


def sendable(text: str) -> str:
    """``text`` as UTF-8 can carry it. A path whose bytes are not UTF-8 (a folder named in
    Latin-1) reaches Python as surrogate escapes, and a split emoji in a hand-written file as a
    lone surrogate: either in an answer made the SDK's writer raise, and the server died with no
    reply to anyone. Undecodable bytes are shown as \\xNN, a lone surrogate as U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    except UnicodeError:
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)


def _why(why_chosen: str, rationale: str) -> str:
    """why_chosen, or its legacy name rationale: one text, never one of two dropped unsaid."""
    if why_chosen.strip() and rationale.strip() and why_chosen.strip() != rationale.strip():
        raise ToolError("why_chosen and rationale (its old name) were both given, with different texts: only one "
                        "would be kept. Give why_chosen alone (put everything the reason says in it)")
    return why_chosen if why_chosen.strip() else rationale


def _sendable_strings(value: Any) -> Any:
    if isinstance(value, str):
        return sendable(value)
    if isinstance(value, dict):
        return {sendable(k) if isinstance(k, str) else k: _sendable_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_sendable_strings(v) for v in value]
    return value


def _errors_as_tool_errors(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except ContextKeeperError as exc:
            raise ToolError(sendable(str(exc))) from exc
        if isinstance(result, (dict, list)):
            # Compact JSON, the form every token estimate here is taken from: the SDK's own
            # rendering is indented, which made answers about 30% longer than token_budget.
            text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
            if sendable(text) is not text:  # rare: mend the strings, not the JSON text around them
                text = json.dumps(_sendable_strings(result), ensure_ascii=False, separators=(",", ":"))
            return [TextContent(type="text", text=text)]
        return sendable(result) if isinstance(result, str) else result

    return wrapper  # type: ignore[return-value]


class _Server(MCPServer):
    """MCPServer whose argument-validation failures read as one sentence per field instead of
    pydantic's dump (model name, error codes, documentation URLs), which refuses arguments the
    tool does not declare, and whose crashes say what failed.

    ``call_tool`` is the documented top-level boundary: an exception that is not one of ours (a
    bug, a file system failure) is logged with its traceback and answered as an ``isError`` that
    names the tool, the exception and what to do, instead of the SDK's bare "Error executing tool".
    """

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        registered = self._tool_manager.get_tool(name)
        if registered is not None and isinstance(arguments, dict):
            # The SDK's argument model drops keys it does not know, so a misspelled parameter
            # ("supercedes") would otherwise turn into a successful call that did something else.
            unknown_parameters(name, arguments, registered.parameters)
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            log.error("%s failed unexpectedly", name, exc_info=exc.__cause__ or exc)
            read_only = bool(registered and registered.annotations and registered.annotations.read_only_hint)
            raise ToolError(sendable(unexpected_failure(name, exc.__cause__ or exc, read_only))) from exc
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            schema = registered.parameters if registered is not None else {}
            raise ToolError(sendable(argument_errors(name, cause, schema))) from cause


def unexpected_failure(tool: str, exc: BaseException, read_only: bool) -> str:
    """What an agent is told when a tool raised something other than a ContextKeeperError."""
    detail = " ".join(str(exc).split())
    detail = f"{type(exc).__name__}: {detail[:200]}" if detail else type(exc).__name__
    if isinstance(exc, OSError):
        cause = (f"{tool} failed: the file system refused an operation ({detail}). Check that the project "
                 "and its .context/ directory are writable and the disk has room.")
    else:
        cause = (f"{tool} failed with an unexpected internal error ({detail}). This is a bug in context-keeper, "
                 "not a problem with the arguments; the server's log (stderr) has the traceback.")
    if read_only:
        return cause + " It only reads, so nothing in the store was changed."
    return (cause + " The change may or may not have been saved: check with get_context (by id) or "
            "query_entries before repeating the call.")


def unknown_parameters(tool: str, arguments: dict[str, Any], schema: dict[str, Any]) -> None:
    """Raise ToolError naming every argument the tool's input schema does not declare."""
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    unknown = [key for key in arguments if key not in props]
    if not unknown:
        return
    import difflib

    named = []
    for key in unknown:
        # A family name first ("tags" -> tags_any, tags_all); short names only match closely,
        # or "kind" would be offered "id".
        close = [p for p in props if p.startswith(f"{key}_")] or difflib.get_close_matches(
            str(key), list(props), n=1, cutoff=0.75)
        hint = " or ".join(repr(p) for p in close)
        named.append(f"{key!r} (did you mean {hint}?)" if close else repr(key))
    noun = "parameter" if len(unknown) == 1 else "parameters"
    raise ToolError(
        f"{tool}: unknown {noun} {', '.join(named)}; nothing was done. "
        f"Valid parameters: {', '.join(props) or 'none'}."
    )


def argument_errors(tool: str, exc: ValidationError, schema: dict[str, Any]) -> str:
    """``"get_context: token_budget: got 0; allowed: an integer from 50 to 200000."`` per field."""
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    sentences = []
    seen = set()
    for error in exc.errors(include_url=False):
        loc = [str(part) for part in error.get("loc", ())]
        if not loc:
            continue
        field = loc[0]
        # Union members show up in the location ("dict[str,str]", "str"): not part of the path.
        path = [p for p in loc[1:] if "[" not in p and "(" not in p and p not in _TYPE_NAMES]
        where = field + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path)
        element = field + (f"[{path[0]}]" if path and path[0].isdigit() else "")
        if element in seen:
            continue  # a union reports one error per member; one sentence per field or item is enough
        seen.add(element)
        if error.get("type") == "missing":
            sentences.append(f"{where} is required ({_allowed(props.get(field))}).")
            continue
        given = _show(error.get("input"))
        allowed = _allowed(props.get(field)) if len(loc) == 1 else str(error.get("msg", "")).lower()
        sentences.append(f"{where}: got {given}; allowed: {allowed}.")
    return f"{tool}: invalid arguments. " + " ".join(sentences or [str(exc.errors(include_url=False))])


_TYPE_NAMES = frozenset({"str", "int", "float", "bool", "dict", "list", "none", "null", "json-or-python",
                         "function-after", "function-before", "function-wrap", "union", "tagged-union"})


def _show(value: Any) -> str:
    # As the caller wrote it: JSON's true/false/null, not Python's True/False/None.
    text = json.dumps(value) if value is None or isinstance(value, bool) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _allowed(prop: Any) -> str:
    """What the input schema accepts for one parameter, in words."""
    if not isinstance(prop, dict):
        return "see the tool's input schema"
    options = prop.get("anyOf") or [prop]
    words = []
    for option in options:
        if not isinstance(option, dict):
            continue
        if "enum" in option:
            words.append("one of " + ", ".join(repr(v) for v in option["enum"]))
            continue
        kind = {"integer": "an integer", "number": "a number", "string": "a string", "boolean": "true or false",
                "array": "a list", "object": "an object", "null": "null"}.get(option.get("type"), "a value")
        low, high = option.get("minimum"), option.get("maximum")
        if low is not None and high is not None:
            kind += f" from {low} to {high}"
        elif low is not None:
            kind += f" of at least {low}"
        elif high is not None:
            kind += f" of at most {high}"
        if "maxLength" in option:
            kind += f" of at most {option['maxLength']} characters"
        if option.get("type") == "array" and isinstance(option.get("items"), dict) and option["items"].get("type"):
            kind += f" of {option['items']['type']}s"
        words.append(kind)
    return " or ".join(words) or "see the tool's input schema"


def _none_if_empty(value: Any) -> Any:
    return value if value not in ("", [], 0) else None


def build_server(service: Service | None = None) -> MCPServer:
    svc = service or Service()
    mcp = _Server("context-keeper", instructions=INSTRUCTIONS, version=__version__)

    def tool(annotations: ToolAnnotations) -> Callable[[F], F]:
        def register(fn: F) -> F:
            mcp.tool(annotations=annotations, structured_output=False)(_errors_as_tool_errors(fn))
            return fn

        return register

    @tool(WRITE)
    def record_decision(
        summary: Annotated[Short, Field(description="One line: what was decided (>=5 chars)")],
        problem: Annotated[Text, Field(description="The situation that forced a choice (>=40 chars)")] = "",
        why_chosen: Annotated[Text, Field(description="Why this option won (>=60 chars)")] = "",
        what_we_tried: Text = "",
        tradeoffs: Text = "",
        alternatives: Alternatives = [],
        constraints_created: Strs = [],
        supersedes: Annotated[Ids, Field(description="Decision ids this replaces")] = [],
        related_to: Ids = [],
        tags: Strs = [],
        retrieval_hints: Annotated[Strs, Field(description="Phrases someone might search with")] = [],
        origin: Origin = "agent",
        rationale: Annotated[Text, Field(description="Legacy alias of why_chosen")] = "",
        allow_secrets: AllowSecrets = False,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """Record a decision: what was chosen, the problem, and why. Answers similar_entries (possible duplicates)."""
        values = dict(summary=summary, problem=problem, why_chosen=_why(why_chosen, rationale), what_we_tried=what_we_tried,
                      tradeoffs=tradeoffs, alternatives=alternatives, constraints_created=constraints_created,
                      related_to=related_to, tags=tags, retrieval_hints=retrieval_hints, origin=origin)
        return svc.record("decision", values, supersedes=supersedes, project_dir=project_dir or None,
                          allow_secrets=allow_secrets)

    @tool(WRITE)
    def record_pipeline(
        name: Annotated[Short, Field(description="Short name (>=3 chars)")],
        purpose: Annotated[Text, Field(description="What it achieves (>=40 chars)")] = "",
        steps: Steps = [],
        when_to_invoke: Text = "",
        constraints: Strs = [],
        related_to: Ids = [],
        tags: Strs = [],
        retrieval_hints: Strs = [],
        origin: Origin = "agent",
        allow_secrets: AllowSecrets = False,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """Record a pipeline: an ordered workflow to follow (at least 1 step)."""
        values = dict(name=name, purpose=purpose, steps=steps, when_to_invoke=when_to_invoke, constraints=constraints,
                      related_to=related_to, tags=tags, retrieval_hints=retrieval_hints, origin=origin)
        return svc.record("pipeline", values, project_dir=project_dir or None, allow_secrets=allow_secrets)

    @tool(WRITE)
    def record_constraint(
        rule: Annotated[Short, Field(description="The rule (>=5 chars)")],
        reason: Annotated[Text, Field(description="Why it exists (>=40 chars)")] = "",
        triggering_incident: Text = "",
        enforced_by: Text = "",
        scope: Annotated[Short, Field(description="'global', a dir ('hooks/'), a file, a glob ('src/**/*.py'), "
                                                  "or several, comma-separated ('hooks/, server.py')")] = "global",
        hardness: Literal["absolute", "advisory"] = "absolute",
        related_to: Ids = [],
        tags: Strs = [],
        retrieval_hints: Strs = [],
        origin: Origin = "agent",
        allow_secrets: AllowSecrets = False,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """Record a constraint: a rule that must hold, and where (scope)."""
        values = dict(rule=rule, reason=reason, triggering_incident=triggering_incident, enforced_by=enforced_by,
                      scope=scope, hardness=hardness, related_to=related_to, tags=tags,
                      retrieval_hints=retrieval_hints, origin=origin)
        return svc.record("constraint", values, project_dir=project_dir or None, allow_secrets=allow_secrets)

    @tool(WRITE)
    def record_entry(
        kind: Literal["decision", "pipeline", "constraint"],
        summary: Short = "", problem: Text = "", why_chosen: Text = "", what_we_tried: Text = "",
        tradeoffs: Text = "", alternatives: Alternatives = [], constraints_created: Strs = [],
        supersedes: Ids = [],
        name: Short = "", purpose: Text = "", steps: Steps = [], when_to_invoke: Text = "", constraints: Strs = [],
        rule: Short = "", reason: Text = "", triggering_incident: Text = "", enforced_by: Text = "",
        scope: Short = "", hardness: Literal["absolute", "advisory", ""] = "",
        related_to: Ids = [], tags: Strs = [], retrieval_hints: Strs = [], origin: Origin = "agent",
        rationale: Annotated[Text, Field(description="Legacy alias of why_chosen")] = "",
        allow_secrets: AllowSecrets = False,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """Record any kind with that kind's fields (rules as in record_decision/pipeline/constraint)."""
        if kind == "decision":
            why_chosen, rationale = _why(why_chosen, rationale), ""
        given = dict(summary=summary, problem=problem, why_chosen=why_chosen, what_we_tried=what_we_tried,
                     tradeoffs=tradeoffs, alternatives=alternatives, constraints_created=constraints_created,
                     name=name, purpose=purpose, steps=steps, when_to_invoke=when_to_invoke, constraints=constraints,
                     rule=rule, reason=reason, triggering_incident=triggering_incident, enforced_by=enforced_by,
                     scope=scope, hardness=hardness, related_to=related_to, tags=tags,
                     retrieval_hints=retrieval_hints, origin=origin, rationale=rationale)
        from context_keeper.model import kind_named

        fields = {f.name for f in kind_named(kind).fields}
        values = {k: v for k, v in given.items() if k in fields and v not in ("", [])}
        stray = sorted(k for k, v in given.items() if k not in fields and v not in ("", [], "agent"))
        if stray:
            verb, them = ("does", "it") if len(stray) == 1 else ("do", "them")
            raise ToolError(f"record_entry: {', '.join(stray)} {verb} not belong to a {kind}; remove {them} or change "
                            f"kind. A {kind}'s fields: {', '.join(sorted(fields - {'status', 'superseded_by'}))}")
        if supersedes and kind != "decision":
            raise ToolError("supersedes applies to decisions only")
        return svc.record(kind, values, supersedes=supersedes, project_dir=project_dir or None,
                          allow_secrets=allow_secrets)

    @tool(READ)
    def get_context(
        query: Annotated[str, Field(description="What you are about to do or ask, in your own words")] = "",
        id: Annotated[str, Field(description="Fetch one entry by id instead")] = "",
        tags: Annotated[Strs, Field(description="Only entries with any of these tags")] = [],
        scope: Annotated[Short, Field(description="File or dir being worked on (or several, comma-separated); "
                                                  "a dir not created yet ends in /. Narrows constraints only")] = "",
        types: Types = [],
        since: IsoDate = "",
        before: IsoDate = "",
        token_budget: ContextBudget = 0,
        include_related: bool = True,
        # None, not 0, for "unset": a threshold of 0 is a real choice (never abstain), as on the CLI.
        min_relevance: Annotated[float | None, Field(ge=0, le=1, description="Abstention threshold; omit for the configured one"),
                                 NotBoolean] = None,
        include_deprecated: bool = False,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """Relevant decisions, constraints and pipelines for a task, ranked and packed into a token budget. Flags no_confident_match when nothing recorded applies."""
        return svc.get_context(
            project_dir=project_dir or None, id=id or None, query=query or None, tags=tags, scope=scope or None,
            types=types, since=since or None, before=before or None, token_budget=_none_if_empty(token_budget),
            include_related=include_related, min_relevance=min_relevance, include_deprecated=include_deprecated,
        )

    @tool(READ)
    def query_entries(
        types: Types = [],
        kind: Literal["decision", "pipeline", "constraint", ""] = "",
        text: Annotated[str, Field(description="Every word must appear")] = "",
        status: Literal["active", "superseded", "deprecated", ""] = "",
        origin: Literal["user", "agent", "import", ""] = "",
        hardness: Literal["absolute", "advisory", ""] = "",
        tags_any: Strs = [],
        tags_all: Strs = [],
        scope: Short = "",
        supersedes: str = "",
        superseded_by: str = "",
        since: IsoDate = "",
        before: IsoDate = "",
        limit: Annotated[int, Field(ge=1, le=1000), NotBoolean] = 50,
        token_budget: QueryBudget = 0,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """Exact filtering (no ranking), in id order. Deprecated entries only with status='deprecated'."""
        return svc.query_entries(
            project_dir=project_dir or None, types=types, kind=kind or None, text=text or None, status=status or None,
            origin=origin or None, hardness=hardness or None, tags_any=tags_any, tags_all=tags_all, scope=scope or None,
            supersedes=supersedes or None, superseded_by=superseded_by or None, since=since or None,
            before=before or None, limit=limit, token_budget=_none_if_empty(token_budget),
        )

    @tool(READ)
    def get_project_summary(
        token_budget: Annotated[int, Field(ge=100, le=50_000), NotBoolean] = 2000,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """Session-start briefing: absolute constraints, active decisions by topic, pipelines."""
        return svc.get_project_summary(token_budget, project_dir=project_dir or None)

    @tool(REPLACE)
    def update_entry(
        id: EntryId,
        updates: Annotated[dict[str, Any], Field(description="{field: new value}; same minimums as record_*")],
        allow_secrets: AllowSecrets = False,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """Change fields of an entry (id and created_at are fixed). Also refreshes verified_at."""
        return svc.update_entry(id, updates, project_dir=project_dir or None, allow_secrets=allow_secrets)

    @tool(REPLACE)
    def deprecate_entry(
        id: EntryId,
        reason: Annotated[str, Field(max_length=MAX_TEXT)] = "",
        superseded_by: Annotated[str, Field(max_length=40, description="Successor id: entry becomes superseded (kept as history)")] = "",
        merge_into: Annotated[str, Field(max_length=40, description="Fold into this same-kind entry (lists unioned, empty text filled)")] = "",
        allow_secrets: AllowSecrets = False,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """Retire an entry: deprecated (hidden from retrieval), superseded, or merged into a survivor."""
        return svc.deprecate_entry(id, reason, superseded_by=superseded_by or None, merge_into=merge_into or None,
                                   project_dir=project_dir or None, allow_secrets=allow_secrets)

    @tool(READ)
    def prune_stale(
        days: Annotated[int, Field(ge=0, le=MAX_DAYS, description="Default: config stale_threshold_days"), NotBoolean] | None = None,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """List active entries not verified within `days`, or dated in the future (changes nothing)."""
        return svc.prune_stale(days, project_dir=project_dir or None)

    @tool(READ)
    def verify_quality(
        min_reason_chars: Annotated[int, Field(ge=0, le=10_000), NotBoolean] = 80,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """Find thin reasoning, missing tags, isolated entries (with suggested links), legacy and malformed entries."""
        return svc.verify_quality(min_reason_chars, project_dir=project_dir or None)

    @tool(READ)
    def get_compaction_report(project_dir: ProjectDir = "") -> dict[str, Any]:
        """Entries lost or changed across the last context compaction."""
        return svc.get_compaction_report(project_dir=project_dir or None)

    @tool(REPLACE)
    def export_markdown(
        path: Annotated[str, Field(max_length=1024, description="Relative to the project root. Default: config "
                                   "markdown_export.path, else DECISIONS.md")] | None = None,
        project_dir: ProjectDir = "",
    ) -> dict[str, Any]:
        """Write decisions as Markdown inside the project."""
        return svc.export_markdown(path or None, project_dir=project_dir or None)

    @tool(READ)
    def reload_constraints(project_dir: ProjectDir = "") -> dict[str, Any]:
        """All active constraints again, e.g. mid-session or after compaction."""
        return svc.reload_constraints(project_dir=project_dir or None)

    _slim_schemas(mcp)
    return mcp


def _slim_schemas(mcp: MCPServer) -> None:
    """Drop auto-generated titles and empty defaults: tools/list is a per-session token cost
    for every user, and those only repeat the parameter names ("required" says what is optional)."""

    def strip(node: Any) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                for prop in props.values():
                    if isinstance(prop, dict):
                        prop.pop("title", None)
                        if "default" in prop and prop["default"] in ("", [], None, False, 0):
                            prop.pop("default", None)
            node.pop("title", None)
            for value in node.values():
                strip(value)
        elif isinstance(node, list):
            for value in node:
                strip(value)

    for registered in mcp._tool_manager.list_tools():
        strip(registered.parameters)
        if registered.output_schema:
            strip(registered.output_schema)


WARM_UP_DELAY_S = 0.5


def _warm_up(svc: Service) -> None:
    """Parse the store and build the search index before the first query needs them (a few
    seconds on a 10,000-entry store). Started after a short delay so it does not compete with
    the client's handshake for the interpreter."""
    try:
        svc.index(svc.store())
    except ContextKeeperError:
        pass  # no project yet, or a corrupt file: the first tool call reports it properly


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from context_keeper.project import working_directory

    # Noted now: a project directory replaced before the first tool call is still found by its path.
    with contextlib.suppress(ContextKeeperError):
        working_directory(os.environ)
    if _typed_at():
        # Someone ran it in a terminal, where a silent wait looks like a hang. Never on stdout:
        # that is the protocol's channel.
        sys.stderr.write("context-keeper: serving MCP on stdio, for an MCP client to start (`context-keeper --help` "
                         "lists the commands for people); Ctrl-D stops it.\n")
        sys.stderr.flush()
    svc = Service()
    timer = threading.Timer(WARM_UP_DELAY_S, _warm_up, args=(svc,))
    timer.daemon = True
    timer.start()
    anyio.run(serve_stdio, build_server(svc))


def _typed_at() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (OSError, ValueError):  # a closed stream
        return False


async def serve_stdio(mcp: MCPServer) -> None:
    """``MCPServer.run_stdio_async`` but for stdin, read through ``stdin_lines`` so a request
    with a lone surrogate escape is answered instead of dropped without a reply. stdout is still
    the SDK's to claim (stray prints go to stderr while serving)."""
    from mcp.server.stdio import stdio_server

    from context_keeper.stdin_lines import claimed_stdin

    # What run_stdio_async serves; 2.x has no public accessor. Should a later 2.x release rename
    # it, the server still runs, only without the repair.
    lowlevel = getattr(mcp, "_lowlevel_server", None)
    if lowlevel is None or not hasattr(lowlevel, "create_initialization_options"):
        await mcp.run_stdio_async()
        return
    with claimed_stdin() as lines:
        async with stdio_server(stdin=anyio.wrap_file(lines)) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


class StdioClient:
    """A real MCP client session with ``python -m context_keeper`` over stdio, reduced to what
    the demo shows (tool names; a call's text and error flag), so the protocol stays here."""

    def __init__(self, session: Any) -> None:
        self._session = session

    async def tool_names(self) -> list[str]:
        return [t.name for t in (await self._session.list_tools()).tools]

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        result = await self._session.call_tool(name, arguments)
        return result.content[0].text, bool(result.is_error)


@contextlib.asynccontextmanager
async def stdio_client(env: dict[str, str]) -> AsyncIterator[StdioClient]:
    """Start the server as a subprocess with ``env`` and yield a client connected to it."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "context_keeper"], env=env)
    async with Client(params) as session:
        yield StdioClient(session)

