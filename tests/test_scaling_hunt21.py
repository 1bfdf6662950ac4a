"""Work that grew faster than its input on hostile or unusual input, found in round 21's hunt.

No test here measures time. Each pins the answers of the rewritten code on small inputs of the
adversarial shape, and checks the mechanism that keeps it near-linear (where a scan starts, how
often a file is read) so the old behaviour fails deterministically. Tests that run an adversarial
input at the size limit would make the suite visibly hang if the fix regressed: that is their
failure signal. Credentials are assembled at runtime so this file never trips a secret scanner.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from context_keeper import doctor, model, scope, secrets
from context_keeper.errors import NotFound
from context_keeper.model import DECISION, MAX_TEXT
from context_keeper.secrets import find_secret
from context_keeper.service import Service

PASSWORD = "Zx9mQ2pLr7" + "Kd4fQw"


def _dna(size: int) -> str:
    rng = random.Random(21)
    return "".join(rng.choice("ACGT") for _ in range(size))


# ------------------------------------------------------------------ secrets: a long run of capitals

def test_a_keyword_glued_to_its_prefix_is_tried_only_where_the_capitals_start():
    """``[A-Z]+TOKEN`` tried at every capital of a run rescans the rest of the run each time."""
    keyword = re.compile(secrets._KEYWORD, re.IGNORECASE)
    assert keyword.match("PGPASSWORD", 0)
    assert keyword.match("PGPASSWORD", 1) is None


def test_glued_keywords_are_still_found_inside_and_after_runs_of_capitals():
    found = [
        f"PGPASSWORD={PASSWORD}",
        f"{_dna(300)}TOKEN={PASSWORD}",
        f"{_dna(300)} NPMTOKEN={PASSWORD}",
        f"x_PGPASSWORD={PASSWORD}",
        f"lowerPGPASSWORD={PASSWORD}",
        f'password="{PASSWORD}"APPSECRET={PASSWORD}',
    ]
    for text in found:
        assert find_secret(text) == "a password or secret assignment", text[-40:]
    for text in (_dna(300), "DEADBEEF" * 40, f"{_dna(300)}TOKENS={PASSWORD}", "the PGPASSWORD variable"):
        assert find_secret(text) is None, text[-40:]


def test_a_field_of_capitals_at_the_size_limit_is_scanned_without_hanging():
    """Before the fix this took seconds per field; a regression shows as a visibly hung test."""
    assert find_secret(_dna(MAX_TEXT)) is None
    assert find_secret(("DEADBEEF" * MAX_TEXT)[:MAX_TEXT]) is None
    assert find_secret(_dna(MAX_TEXT - 40) + f" PGPASSWORD={PASSWORD}") == "a password or secret assignment"



# ------------------------------------------------------------------ secrets: long hyphen- or dot-joined words

_URL_PASSWORD = dict(secrets._PATTERNS)["a URL with an embedded password"]
# The pattern as it was, tried at every word boundary: what the new one must still find.
_URL_PASSWORD_BEFORE = re.compile(r"\b[a-z][a-z0-9+.-]*://" + _URL_PASSWORD.pattern.split("://", 1)[1], re.IGNORECASE)


def test_a_url_scheme_is_tried_only_where_a_run_of_scheme_characters_starts():
    text = f"a.b://user:{PASSWORD}@host"
    assert _URL_PASSWORD.match(text, 0)
    assert _URL_PASSWORD.match(text, 2) is None


def test_urls_with_a_password_are_found_wherever_their_scheme_starts_in_a_run():
    rng = random.Random(21)
    lead = ["a", "b", "Z", "1", "+", ".", "-", "_", "é", " ", "/"]
    texts = ["".join(rng.choice(lead) for _ in range(rng.randint(0, 10))) + "://"
             + rng.choice(["", "u", "a"]) + ":" + rng.choice([PASSWORD[:6], "xx", "pass", "u", "a"]) + "@h"
             for _ in range(4000)]
    pieces = [*lead, "://", ":", "@", "u", PASSWORD[:6]]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(4000)]
    texts += [f"{lead}redis://:{PASSWORD}@cache:6379" for lead in ("", "x", "-", ".", "1-", "9.", "a1-", "_", "é", "+.")]
    for text in texts:
        assert (_URL_PASSWORD.search(text) is None) == (_URL_PASSWORD_BEFORE.search(text) is None), text


def test_a_field_of_dot_joined_words_at_the_size_limit_is_scanned_without_hanging():
    """Before the fix this took seconds per field; a regression shows as a visibly hung test."""
    for text in (("a." * MAX_TEXT)[:MAX_TEXT], ("alpha-beta-gamma-delta-" * MAX_TEXT)[:MAX_TEXT]):
        assert find_secret(text) is None
    assert find_secret(("a." * MAX_TEXT)[: MAX_TEXT - 40] + f" redis://:{PASSWORD}@cache") == \
        "a URL with an embedded password"

# ------------------------------------------------------------------ store: many entries with a repeated key

def _merged_decisions(root: Path, count: int) -> None:
    """``count`` entries that each kept both sides of a merge conflict, one entry a line."""
    Service(env={}).init_project(str(root))
    items = [f'  {{"id": "dec-{i:03d}", "summary": "Side A", "summary": "Side B", "problem": "p",\n'
             f'   "why_chosen": "w", "problem": "q"}}' for i in range(1, count + 1)]
    (root / ".context" / "decisions.json").write_text("[\n" + ",\n".join(items) + "\n]\n", encoding="utf-8")


def test_every_repeated_key_of_many_entries_is_reported_at_its_own_lines(tmp_path):
    _merged_decisions(tmp_path, 40)
    state = Service(env={"CONTEXT_KEEPER_PROJECT": str(tmp_path)}).store().state(DECISION)
    assert state.entries_by_id == {}
    problems = list(state.problems)
    assert len(problems) == 40
    for i, problem in enumerate(problems):
        first = 2 + 2 * i  # "[" is line 1, and each entry takes two lines
        assert problem.startswith(f"decisions.json item {i + 1}: dec-{i + 1:03d} has keys written twice")
        assert f"'summary' (lines {first} and {first}), 'problem' (lines {first} and {first + 1})" in problem



def test_an_answer_that_finds_nothing_says_the_entries_skipped_as_malformed(tmp_path):
    """With every entry skipped, "Nothing recorded matches" alone would have the agent record
    them again; the answer names the file and the count, and doctor as the way to fix them."""
    _merged_decisions(tmp_path, 40)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(tmp_path)})
    answer = svc.get_context(query="merge side")
    assert answer["no_confident_match"] is True
    (warning,) = answer["warnings"]
    assert warning.startswith("decisions.json has 40 entries that every tool skips as malformed")
    assert "context-keeper doctor" in warning


def test_an_answer_with_a_confident_match_does_not_repeat_the_skipped_entries(tmp_path):
    _merged_decisions(tmp_path, 3)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(tmp_path)})
    svc.record("decision", {"summary": "Use one merge queue for all repositories",
                            "problem": "Merges raced each other and broke the main branch twice a week.",
                            "why_chosen": "One queue tests each merge on top of the previous one, so main stays green."})
    answer = svc.get_context(query="merge queue for repositories")
    assert "no_confident_match" not in answer
    assert "warnings" not in answer

# ------------------------------------------------------------------ doctor: many items that are not objects

_DECISION = {"id": "dec-001", "summary": "Use PostgreSQL for the main store",
             "problem": "We need a relational store with transactional guarantees for orders.",
             "why_chosen": "Postgres has mature tooling and the team knows it well."}


def _non_objects(root: Path, count: int) -> Path:
    root.mkdir(exist_ok=True)
    Service(env={}).init_project(str(root))
    items = [_DECISION] + [[0, None, "TODO", [1, {"a": 2}], 3.5][i % 5] for i in range(count)]
    path = root / ".context" / "decisions.json"
    path.write_text(json.dumps(items, indent=2), encoding="utf-8")
    return path


def test_each_item_that_is_not_an_object_is_reported_at_its_line(tmp_path):
    path = _non_objects(tmp_path, 10)
    text = path.read_text(encoding="utf-8")
    starts = [i for i, line in enumerate(text.splitlines(), 1) if line.rstrip(",") in ("  0", "  null", '  "TODO"', "  [", "  3.5")]
    messages = [f.message for f in doctor.diagnose(tmp_path).findings if f.code == "malformed_entry"]
    assert len(messages) == len(starts) == 10
    for item, (message, line) in enumerate(zip(messages, starts), 2):
        assert message.startswith(f"decisions.json item {item}: item is "), message
        assert f"not an object (line {line})." in message, message


def test_the_file_is_walked_once_for_all_its_items_that_are_not_objects(tmp_path, monkeypatch):
    reads: list[Path] = []
    read_text = Path.read_text

    def counted(self, *args, **kwargs):
        reads.append(self)
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    counts = []
    for size in (2, 8):
        path = _non_objects(tmp_path / str(size), size)
        reads.clear()
        doctor.diagnose(tmp_path / str(size))
        counts.append(reads.count(path))
    assert counts[0] == counts[1], counts


# ------------------------------------------------------------------ get_context: many scopes, many paths

SCOPES = [
    "src/packwise/carriers/", "src/packwise/carriers/client.py", "src/packwise", "src", "src/**/*.py", "*.sql",
    "migrations/*.sql", "migrations/**/*.sql", "docs/readme.md", "docs/[a,b].md", "src/{api,web}/*.py",
    "services/trip/, services/billing/", "Dockerfile, deploy/helm/", "**/x.py", "src/*/views.py", "src/a?c/",
    "lib//x0/", "./lib/x0", "{root}/lib/x1/", "/etc/nginx/", "global", "", "../other/", "scanner-app",
]
AREAS = [
    "src/packwise/carriers/client.py", "src/packwise/", "src/", "src", "src/**/*.py", "**/*.py", "*.sql",
    "migrations", "migrations/001.sql", "migrations/2025/001.sql", "docs/", "docs/a.md", "docs/readme.md",
    "src/api/x.py", "src/web/", "services/billing/invoice.py", "deploy/helm/values.yaml", "Dockerfile",
    "lib/x0/f.py", "lib/x1/f.py", "lib/x2/", "lib", "etc/nginx/", "/etc/nginx/site", "src/abc/d.py",
    "scanner-app/main.go", "deep/down/x.py", "src/b/views.py", "", "/", "lib/x0/f.py, docs/", "other/",
]


def test_the_scope_index_finds_exactly_the_scopes_that_overlap_each_area(tmp_path):
    """Candidates come from the scopes' literal starts; each is settled by scope_overlaps, so
    the index must never drop one that overlaps."""
    root = str(tmp_path)
    (tmp_path / "src" / "packwise").mkdir(parents=True)
    (tmp_path / "migrations").mkdir()
    scopes = [s.replace("{root}", root) for s in SCOPES]
    index = scope.ScopeIndex(scopes, root)
    for area in AREAS:
        expected = [s for s in scopes if scope.scope_overlaps(s, area, root)]
        assert index.overlapping(area) == expected, area


def _scoped_constraints(root: Path, count: int) -> Service:
    Service(env={}).init_project(str(root))
    rules = [{"id": f"con-{i:03d}", "rule": f"Rule number {i} for its module", "reason": "r" * 60,
              "scope": f"src/mod{i}/", "hardness": "absolute"} for i in range(1, count + 1)]
    rules.append({"id": f"con-{count + 1:03d}", "rule": "Library modules keep a stable public surface",
                  "reason": "Other teams import them by path.", "scope": "lib/", "hardness": "absolute"})
    (root / ".context" / "constraints.json").write_text(json.dumps(rules, indent=2), encoding="utf-8")
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root))


def test_a_query_naming_many_paths_tries_only_the_scopes_that_share_their_start(tmp_path, monkeypatch):
    svc = _scoped_constraints(tmp_path, 60)
    svc.get_context(query="warm up")
    tried: list[tuple[str, str]] = []
    part_overlaps = scope._part_overlaps

    def counted(part, area, project_root):
        tried.append((part, area))
        return part_overlaps(part, area, project_root)

    monkeypatch.setattr(scope, "_part_overlaps", counted)
    paths = [f"lib/x{i}/f.py" for i in range(10)]
    answer = svc.get_context(query="Review these changed files: " + " ".join(paths))
    assert {part for part, _ in tried} == {"lib/"}
    assert len(tried) == len(paths)
    assert [r["entry"]["id"] for r in answer["results"]][:1] == ["con-061"]


# ------------------------------------------------------------------ get_context: many ids no entry has

def _decisions(root: Path, count: int) -> Service:
    Service(env={}).init_project(str(root))
    decisions = [{"id": f"dec-{i:03d}", "summary": f"Decision {i} on the queue", "problem": "p" * 60,
                  "why_chosen": "w" * 80} for i in range(1, count + 1)]
    decisions.append({"id": "dec-413-A7F3", "summary": "Another clone's decision", "problem": "p" * 60,
                      "why_chosen": "w" * 80})
    (root / ".context" / "decisions.json").write_text(json.dumps(decisions, indent=2), encoding="utf-8")
    misfiled = {"id": "dec-450", "rule": "A decision pasted into the wrong file", "reason": "r" * 40}
    (root / ".context" / "constraints.json").write_text(json.dumps([misfiled], indent=2), encoding="utf-8")
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root))


def test_ids_spelled_otherwise_misfiled_or_unknown_are_answered_as_before(tmp_path):
    svc = _decisions(tmp_path, 12)
    answer = svc.get_context(query="why DEC-7 and dec-413-a7f3 but not dec-413, dec-450 or dec-999 on the queue")
    assert [r["entry"]["id"] for r in answer["results"]][:2] == ["dec-007", "dec-413-A7F3"]
    warnings = "\n".join(answer["warnings"])
    assert "constraints.json holds dec-450, which belongs in decisions.json" in warnings
    for entry_id, hint in (("dec-413", " (did you mean dec-413-A7F3?)"), ("dec-450", ""), ("dec-999", "")):
        assert f"No entry has the id {entry_id} (nor had it before a renumbering){hint}: the rest" in warnings
    with pytest.raises(NotFound, match=r"dec-450 is in \.context/constraints\.json"):
        svc.store().find("dec-450")
    with pytest.raises(NotFound, match=r"no entry with id 'dec-7' \(did you mean dec-007\?\)"):
        svc.store().find("dec-7")
    assert svc.store().find("DEC-413-a7f3")[1]["id"] == "dec-413-A7F3"


def test_each_unknown_id_in_a_query_costs_the_same_whatever_the_store_size(tmp_path, monkeypatch):
    """An id no entry has was compared with every entry's id, twice: each id scanned the store."""
    svc = _decisions(tmp_path, 300)
    svc.get_context(query="warm up")
    parsed: list[object] = []
    id_key = model.id_key

    def counted(entry_id):
        parsed.append(entry_id)
        return id_key(entry_id)

    monkeypatch.setattr(model, "id_key", counted)
    calls = []
    for ids in (20, 40):
        parsed.clear()
        svc.get_context(query=" ".join(f"dec-{9000 + ids + i}" for i in range(ids)))
        calls.append(len(parsed))
    assert (calls[1] - calls[0]) / 20 < 10, calls


# ------------------------------------------------------------------ doctor: many copies of one entry

_ORIGINAL = {**_DECISION, "created_at": "2025-01-02T03:04:05Z", "updated_at": "2025-01-02T03:04:05Z"}


def _copies_of_dec_001(root: Path, count: int) -> None:
    """dec-001 and ``count`` copies of it used as templates; con-001 and con-002 link to dec-001,
    and some copies link back to them (so that link may be meant for the copy)."""
    root.mkdir(exist_ok=True)
    Service(env={}).init_project(str(root))
    copies = [{**_ORIGINAL, "summary": f"Template copy number {i}"} for i in range(1, count + 1)]
    copies[1]["related_to"] = ["con-002"]
    copies[2]["related_to"] = ["con-002", "con-001"]
    (root / ".context" / "decisions.json").write_text(json.dumps([_ORIGINAL, *copies], indent=2), encoding="utf-8")
    rules = [{"id": f"con-00{i}", "rule": f"Orders rule {i}", "reason": "r" * 40, "related_to": ["dec-001"]}
             for i in (1, 2)]
    (root / ".context" / "constraints.json").write_text(json.dumps(rules, indent=2), encoding="utf-8")


def test_copies_of_an_entry_are_left_for_a_person_only_when_they_link_back(tmp_path):
    _copies_of_dec_001(tmp_path, 4)
    report = doctor.diagnose(tmp_path)
    messages = [f.message for f in report.findings if f.code == "duplicate_id"]
    assert len(messages) == 4
    linked = "`doctor --fix` leaves it, as {}.related_to names dec-001 and the copy links back to it"
    assert "or let `doctor --fix` do that" in messages[0] and "or let `doctor --fix` do that" in messages[3]
    assert linked.format("con-002") in messages[1]
    assert linked.format("con-001") in messages[2]  # the first holder in file order that it links back to
    doctor.repair(report)
    ids = [item["id"] for item in json.loads((tmp_path / ".context" / "decisions.json").read_text(encoding="utf-8"))]
    assert ids == ["dec-001", "dec-002", "dec-001", "dec-001", "dec-003"]


def test_the_link_holders_are_walked_once_for_all_copies_of_an_entry(tmp_path, monkeypatch):
    walks: list[int] = []

    class Walked(list):
        def __iter__(self):
            walks.append(len(self))
            return super().__iter__()

    link_holders = doctor._link_holders

    def counted(*args):
        holders, unreadable = link_holders(*args)
        return Walked(holders), unreadable

    monkeypatch.setattr(doctor, "_link_holders", counted)
    counts = []
    for size in (4, 12):
        _copies_of_dec_001(tmp_path / str(size), size)
        walks.clear()
        doctor.diagnose(tmp_path / str(size))
        counts.append(len(walks))
    assert counts[0] == counts[1], counts


def test_a_history_link_to_an_id_held_twice_is_named_as_a_duplicate_and_others_as_before(tmp_path):
    Service(env={}).init_project(str(tmp_path))
    entry = {"problem": "p" * 40, "why_chosen": "w" * 60}
    decisions = [{**entry, "id": "dec-001", "summary": "Use PostgreSQL"}, {**entry, "id": "dec-001", "summary": "Other"},
                 {**entry, "id": "dec-002", "summary": "Use CockroachDB", "supersedes": ["dec-001"]},
                 {**entry, "id": "dec-003", "summary": "Use Redis for sessions", "supersedes": ["dec-004"]},
                 {**entry, "id": "dec-004", "summary": "Use memcached for sessions"}]
    (tmp_path / ".context" / "decisions.json").write_text(json.dumps(decisions, indent=2), encoding="utf-8")
    messages = [f.message for f in doctor.diagnose(tmp_path).findings if f.code == "history_link"]
    assert len(messages) == 2
    assert "dec-002.supersedes names dec-001" in messages[0] and "dec-001 is a duplicate id" in messages[0]
    assert "dec-003.supersedes names dec-004, but dec-004 is active" in messages[1]
