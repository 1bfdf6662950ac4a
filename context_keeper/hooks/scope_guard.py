"""PreToolUse / PostToolUse on Edit|Write|MultiEdit|NotebookEdit: the rules for this file.

Injects, once per session, the active constraints whose ``scope`` covers the file and the
active decisions tied to its area (a ``scope``/path-like tag covering it, or a tag naming one
of its directories, e.g. ``labels`` for ``src/packwise/labels/printer.py``): of those tied by a
tag, at most five, the closest to the file (``_closest``), the rest counted. Global constraints
are left to the session-start summary.

Fast path: the scope index (``scope_index.py``; rebuilt from the two source files when they
changed), a literal-prefix pre-filter, the session's seen-set (keyed by id and content, so a
rule that changed, or an id that now names another rule, is shown again). Candidates are confirmed with
``context_keeper.scope`` — the matcher ``get_context`` uses (``scope_covers``; for a glob-free
scope its whole-component test ``covers_literally``, which needs no import of ``re``).
"""

from __future__ import annotations

import os

from context_keeper.hookio import frame, frame_room, js_len

TYPE_CHECKING = False
if TYPE_CHECKING:
    from context_keeper.hookio import HookContext

MAX_CONSTRAINTS = 15
MAX_TAGGED_DECISIONS = 5
MAX_REASON_CHARS = 1500  # the confirmation question quotes the rules, within reason


def target_path(tool_input: object) -> str:
    if not isinstance(tool_input, dict):
        return ""
    for key in ("file_path", "notebook_path", "path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def relative_path(path: str, root: str, cwd: str | None) -> str | None:
    """``path`` relative to ``root`` in POSIX form, or None when it lies outside the project."""
    paths = relative_paths(path, root, cwd)
    return paths[0] if paths else None


def relative_paths(path: str, root: str, cwd: str | None) -> list[str]:
    """Every project-relative POSIX form of ``path``: as written, and with symlinks resolved
    when that differs ("qlink/streams.py" writes "src/queue/streams.py": both scopes apply)."""
    if not os.path.isabs(path):
        path = os.path.join(cwd or root, path)
    out: list[str] = []
    prefix = root.rstrip(os.sep) + os.sep
    for candidate in (os.path.normpath(path), os.path.realpath(path)):
        if candidate == root:
            rel = ""
        elif candidate.startswith(prefix):
            rel = "/".join(p for p in candidate[len(prefix):].replace(os.sep, "/").split("/") if p not in ("", "."))
        else:
            continue
        if rel not in out:
            out.append(rel)
    return out


def handle(ctx: HookContext) -> str | None:
    path = target_path(ctx.payload.get("tool_input"))
    if not path or not ctx.locate():
        return None
    rels = relative_paths(path, ctx.root, ctx.cwd)
    if not rels or any(not r or r == ".context" or r.startswith(".context/") for r in rels):
        return None
    rel = rels[0]
    from context_keeper.hooks import scope_index

    data = scope_index.load(ctx.root)

    candidates: dict[str, tuple[str, list]] = {}  # id -> (kind, [(scope, is_glob, literal prefix)])
    for entry_id, scope, prefix, is_glob, kind in data.get("scoped", ()):
        if any(r.startswith(prefix) for r in rels):
            candidates.setdefault(entry_id, (kind, []))[1].append((scope, is_glob, prefix))
    depth: dict[str, int] = {}  # an area decision -> how deep the directory its tag names lies
    area_tags: dict[str, int] = {}
    tags = data.get("tags") or {}
    for r in rels:
        for level, component in enumerate(r.lower().split("/")[:-1]):
            for entry_id in tags.get(component, ()):
                if entry_id not in candidates:
                    depth[entry_id] = max(depth.get(entry_id, level), level)
                    area_tags[component] = max(area_tags.get(component, level), level)
    tagged = list(depth)
    broken = data.get("broken") or {}  # a store file that does not parse: said once per session
    if not candidates and not tagged and not broken:
        return None

    # The confirmation is about this edit, not about what was shown: every edit of a file an
    # absolute constraint covers asks (a denied edit retried, or a rule the prompt hook already
    # showed, asks again).
    specificity = {i: _specificity(scopes, rels, ctx.root) for i, (_, scopes) in candidates.items()}
    covered = {i: kind for i, (kind, _) in candidates.items() if specificity[i] is not None}
    asking = ctx.text("hook_event_name") == "PreToolUse" and _confirm_absolute(ctx.context_dir)
    absolute_ids = set(data.get("absolute") or ())

    def rank(entry_id: str) -> tuple:
        # What must not be broken first; then the rule written for this place over one for every
        # file of a kind (src/billing/ before **/*.py), the longer literal part of its scope
        # being the narrower place; then the older rule.
        return entry_id not in absolute_ids, -(specificity[entry_id] or 0), _id_number(entry_id)

    must_ask = sorted((i for i in covered if asking and i in absolute_ids), key=rank)[:MAX_CONSTRAINTS]
    state = ctx.state()
    keys = data.get("keys") or {}
    unseen = set(state.unseen([*(keys.get(i, i) for i in (*candidates, *tagged)),
                               *(f"!broken:{name}" for name in broken)]))
    fresh = {i for i in (*candidates, *tagged) if keys.get(i, i) in unseen}
    fresh.update(f"!broken:{name}" for name in broken if f"!broken:{name}" in unseen)
    if not fresh and not must_ask:
        return None
    constraints = [i for i, kind in covered.items() if kind == "constraint" and i in fresh]
    decisions = [i for i, kind in covered.items() if kind != "constraint" and i in fresh]
    scoped_decisions = sum(kind != "constraint" for kind in covered.values())
    # The area's decisions closest to this file minus those already shown: editing the same file
    # again must not bring the next five, and the next five after that (the rest is for get_context).
    room_for_area = max(0, MAX_TAGGED_DECISIONS - scoped_decisions)
    read = {}
    if len(tagged) > room_for_area:
        tagged, read = _closest(tagged, depth, rel, lambda ids: scope_index.read_back(ctx.root, data, ids))
    area_more = len(tagged) - room_for_area
    tagged = tagged[:room_for_area]
    decisions += [i for i in tagged if i in fresh]
    constraints = sorted(constraints, key=rank)
    beyond = constraints[MAX_CONSTRAINTS:]  # left unseen, so the next edit shows them
    constraints = constraints[:MAX_CONSTRAINTS]
    shown = list(dict.fromkeys(constraints + decisions + must_ask))
    unread = [i for i in shown if i not in read]
    read = {**read, **(scope_index.read_back(ctx.root, data, unread) if unread else {})}
    text = {i: line for i, (line, _) in read.items()}
    constraints = [i for i in constraints if i in text]  # an entry that could not be read back
    decisions = [i for i in decisions if i in text]  # stays unseen: the next edit shows it
    must_ask = [i for i in must_ask if i in text]
    notes = [name for name in broken if f"!broken:{name}" in fresh]
    if not constraints and not decisions and not notes and not must_ask:
        return None
    wanted = len(constraints) + len(decisions) + len(beyond)
    header = f"Recorded project memory for {_clean(rel)} (from .context/; each entry is shown once per session):"
    tail = []  # room is kept for these first: a broken store file matters more than one more rule
    # Only what this session was shown: one fresh here but left out for room is counted below.
    earlier = [i for i in must_ask if i not in fresh]
    if earlier:
        tail.append(f"Absolute constraints covering this file, shown earlier in this session: {', '.join(earlier)}.")
    from context_keeper.lines import neutralize

    for name in notes:
        problem = (data.get("problems") or {}).get(name) or f".context/{name} does not parse"
        tail.append(f"Store health: {neutralize(problem)} "
                    + ("The entries above from it come from its last good copy (.context/.last-good/)."
                       if broken[name] else "Its entries cannot be shown until it is fixed.")
                    + " `context-keeper doctor` has the details.")
    if area_more > 0:
        named = ", ".join(f'"{_clean(t)}"' for t in sorted(area_tags, key=lambda t: -area_tags[t]))
        tail.append(f"{area_more} more decision{'s' if area_more != 1 else ''} recorded for this area "
                    f"{'is' if area_more == 1 else 'are'} not shown here (get_context with tags [{named}] and "
                    'types ["decisions"] lists them).')
    # Only what fits is shown and marked: the frame would cut the rest, and a cut entry marked as
    # shown would never reach this session.
    room = frame_room() - js_len(header) - sum(js_len(line) + 1 for line in tail) - len(_left_out(wanted, rel)) - 1
    constraints, room = _fitting(constraints, text, CONSTRAINTS_HEADING, room)
    decisions, room = _fitting(decisions, text, DECISIONS_HEADING, room)
    left_out = wanted - len(constraints) - len(decisions)
    lines = [header]
    if constraints:
        lines += [CONSTRAINTS_HEADING, *(text[i] for i in constraints)]
    if decisions:
        lines += [DECISIONS_HEADING, *(text[i] for i in decisions)]
    lines += tail
    if left_out:
        lines.append(_left_out(left_out, rel))
    state.mark([read[i][1] for i in constraints + decisions] + [f"!broken:{name}" for name in notes])
    if must_ask:
        ctx.decision = {"permissionDecision": "ask", "permissionDecisionReason": _question(rel, must_ask, text)}
    return frame("\n".join(lines))


CONSTRAINTS_HEADING = "Constraints whose scope covers this file:"
DECISIONS_HEADING = "Decisions recorded for this area:"


def _fitting(ids: list[str], text: dict[str, str], heading: str, room: int) -> tuple[list[str], int]:
    """Those of ``ids`` whose lines (under ``heading``) fit in ``room`` characters, in order,
    skipping any too long to fit; and the room left."""
    kept: list[str] = []
    for entry_id in ids:
        need = js_len(text[entry_id]) + 1 + (0 if kept else len(heading) + 1)
        if need <= room:
            kept.append(entry_id)
            room -= need
    return kept, room


def _question(rel: str, ids: list[str], text: dict[str, str]) -> str:
    """The confirmation question: the person asked sees the rules themselves, not only their
    ids, each whole on its own line. Rules past ``MAX_REASON_CHARS`` are named by id; the
    question itself always ends it."""
    head = f"{_clean(rel)} is covered by absolute constraint(s):"
    ask = "Confirm the edit respects them."

    def more(rest: list[str]) -> list[str]:
        return [f"and {len(rest)} more: {', '.join(rest)} (get_context has them in full)."] if rest else []

    for count in range(len(ids), -1, -1):  # the most whole rules that fit, the rest named
        question = "\n".join([head, *(text[i] for i in ids[:count]), *more(ids[count:]), ask])
        if len(question) <= MAX_REASON_CHARS:
            return question
    # Not reached with MAX_CONSTRAINTS ids of at most 40 characters; the question still ends it.
    return question[:MAX_REASON_CHARS - len(ask) - 1].rstrip() + "\n" + ask


def _left_out(count: int, rel: str) -> str:
    return (f"{count} more entr{'y' if count == 1 else 'ies'} for this file did not fit here; the next edit "
            f'shows them (query_entries with scope "{_clean(rel)}" lists every constraint covering it, '
            "get_context has them all).")


def _confirm_absolute(context_dir: str) -> bool:
    """``scope_guard.confirm_absolute`` in config.json (default false): an edit to a file an
    absolute constraint covers pauses for the user's confirmation (on scope, not on a detected
    violation: the guard does not read the edit). Asked only under PreToolUse — after the edit
    it would be theatre — and on every such edit, however often the rule was shown."""
    from context_keeper.bounded_read import CONFIG_LIMIT, read_regular
    from context_keeper.hooks import leanjson

    try:
        config = leanjson.loads(read_regular(os.path.join(context_dir, "config.json"), CONFIG_LIMIT))
    except (OSError, ValueError):  # UnicodeDecodeError and nesting too deep are ValueErrors
        return False
    section = config.get("scope_guard") if isinstance(config, dict) else None
    return isinstance(section, dict) and section.get("confirm_absolute") is True


def _specificity(scopes: list, rels: list[str], root: str) -> int | None:
    """The length of the longest literal part among ``scopes`` that cover one of ``rels``; None
    when none covers them."""
    from context_keeper.scope import covers_literally, scope_covers

    best = None
    for scope, is_glob, prefix in scopes:
        if best is not None and len(prefix) <= best:
            continue
        if any(covers_literally(scope, r) if not is_glob else scope_covers(scope, r, root) for r in rels):
            best = len(prefix)
    return best


AREA_POOL = 40  # the area decisions read back to be ranked by their text: the deepest, newest ones


def _closest(ids: list[str], depth: dict[str, int], rel: str, read_back) -> tuple[list[str], dict]:
    """``ids`` (area decisions), those closest to the file ``rel`` first: the tag naming its
    deepest directory, then the more words of the file's name in the decision's text
    ("Journal.kt", a scan-journal decision), then the newer. Returns them and the lines read
    back (``read_back(ids)``: id -> (line, seen-key)) to rank them, for reuse."""
    ids = sorted(ids, key=lambda i: (-depth[i], -_id_number(i)))
    words = _name_words(rel)
    if not words:  # ".env": no name to match, nothing worth reading back
        return ids, {}
    pool, rest = ids[:AREA_POOL], ids[AREA_POOL:]
    read = read_back(pool)

    def matched(entry_id: str) -> int:
        line = read[entry_id][0].lower() if entry_id in read else ""
        return sum(w in line for w in words)

    return sorted(pool, key=lambda i: (-depth[i], -matched(i), -_id_number(i))) + rest, read


def _name_words(rel: str) -> list[str]:
    """The words of a file's name, lower-cased: ``ScanJournal.kt`` and ``scan_journal.py`` both
    give scan and journal. Words under three letters say little."""
    stem = rel.rsplit("/", 1)[-1].split(".")[0]
    words, word = [], ""
    for ch in stem:
        if ch.isalnum() and not (ch.isupper() and word and not word[-1].isupper()):
            word += ch
        else:
            words.append(word)
            word = ch if ch.isalnum() else ""
    words.append(word)
    return list(dict.fromkeys(w.lower() for w in words if len(w) >= 3))


def _id_number(entry_id: str) -> int:
    parts = entry_id.split("-")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def _clean(text: str) -> str:
    """A path is caller data too: keep it from closing the frame."""
    return text.replace("<", "‹").replace("`", "'")[:300]
