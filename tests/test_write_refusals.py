"""Write-side refusals (successor loops, merges, field rules, ids): each leaves the store byte-identical."""

from __future__ import annotations

import pytest

from context_keeper.errors import InvalidInput
from context_keeper.service import Service
from tests.conftest import snapshot_files

FIELDS = {"problem": "Background jobs in billing need a queue that survives restarts of the workers.",
          "why_chosen": "It is simple to operate and the team has run it in production before, so on-call knows it."}


@pytest.fixture
def svc(empty_project):
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(empty_project)}, hook_cache_delay=None)


@pytest.mark.parametrize("how", ["deprecate", "update"])
def test_a_superseded_by_loop_through_three_entries_is_refused(svc, empty_project, how):
    # a → b → c was accepted and then c → a too: every entry superseded, the summary empty.
    a, b, c = (svc.record("decision", {"summary": f"Jobs go through the {n} queue", **FIELDS})["id"]
               for n in ("alpha", "beta", "gamma"))
    svc.deprecate_entry(a, "beta replaced it", superseded_by=b)
    svc.deprecate_entry(b, "gamma replaced it", superseded_by=c)
    before = snapshot_files(empty_project)
    with pytest.raises(InvalidInput, match=f"{a} → {b} → {c}") as refused:
        if how == "deprecate":
            svc.deprecate_entry(c, "alpha is back", superseded_by=a)
        else:
            svc.update_entry(c, {"status": "superseded", "superseded_by": a})
    assert refused.value.field == "superseded_by"
    assert snapshot_files(empty_project) == before
    assert svc.get_project_summary()["counts"]["decisions"] == 1


DECISION = {"summary": "Jobs go through the alpha queue", **FIELDS}


@pytest.mark.parametrize("updates,message", [
    ({"rationale": "short"}, "rationale: needs at least 60 characters"),
    ({"rationale": 42}, "rationale: must be a string"),
    ({"verified_sha": {"a": [1]}}, "verified_sha: must be a string"),
    ({"verified_sha": "f" * 501}, "verified_sha: is 501 characters"),
    ({"status": "deprecated", "deprecated_reason": "z" * 20_001}, "deprecated_reason: is 20001 characters"),
])
def test_update_holds_the_fields_no_kind_declares_to_a_shape(svc, empty_project, updates, message):
    # Taken as given: why_chosen became "short" or the number 42 (a malformed entry written by
    # the tool itself), a verified_sha an object, a deprecated_reason megabytes long.
    entry_id = svc.record("decision", DECISION)["id"]
    before = snapshot_files(empty_project)
    with pytest.raises(InvalidInput, match=message) as refused:
        svc.update_entry(entry_id, updates)
    assert refused.value.field == message.split(":")[0]
    assert snapshot_files(empty_project) == before


def test_update_still_takes_a_verified_sha_and_clears_it_with_null(svc):
    entry_id = svc.record("decision", DECISION)["id"]
    assert svc.update_entry(entry_id, {"verified_sha": " 3f2a9c1 "})["entry"]["verified_sha"] == "3f2a9c1"
    assert svc.update_entry(entry_id, {"verified_sha": None})["entry"]["verified_sha"] is None


def test_rationale_is_a_decision_alias_only(svc, empty_project):
    entry_id = svc.record("pipeline", {"name": "Drain the queue", "purpose": FIELDS["problem"], "steps": ["stop"]})["id"]
    before = snapshot_files(empty_project)
    with pytest.raises(InvalidInput, match="rationale is not a field of a pipeline"):
        svc.update_entry(entry_id, {"rationale": FIELDS["why_chosen"]})
    assert snapshot_files(empty_project) == before


def test_an_unknown_id_in_a_parameter_is_named_with_the_parameter_and_the_fix(svc, empty_project):
    from context_keeper.errors import NotFound

    entry_id = svc.record("decision", DECISION)["id"]
    before = snapshot_files(empty_project)
    with pytest.raises(NotFound, match=r"^supersedes: no decision with id 'dec-099'.*query_entries"):
        svc.record("decision", {**DECISION, "summary": "Jobs go through the beta queue"}, supersedes=["dec-099"])
    with pytest.raises(NotFound, match=r"^merge_into: no decision with id 'dec-099'.*query_entries"):
        svc.deprecate_entry(entry_id, "folded into another", merge_into="dec-099")
    with pytest.raises(NotFound, match=r"^no decision with id 'dec-098'.*query_entries"):
        svc.update_entry("dec-098", {"tags": ["jobs"]})
    assert snapshot_files(empty_project) == before


@pytest.mark.anyio
async def test_an_empty_scope_is_stored_as_global_whichever_tool_records_it(svc):
    from tests.mcp_helpers import connect, ok

    rule = {"rule": "Jobs are idempotent", "reason": "A worker restart replays the last batch, and billing must not charge twice."}
    async with connect(svc, "legacy") as client:
        one = await ok(client, "record_constraint", {**rule, "scope": ""})
        two = await ok(client, "record_entry", {"kind": "constraint", **rule, "scope": "  "})
        three = await ok(client, "update_entry", {"id": two["id"], "updates": {"scope": ""}})
    assert one["entry"]["scope"] == two["entry"]["scope"] == three["entry"]["scope"] == "global"


@pytest.mark.parametrize("retire", ["supersede", "deprecate"])
def test_merge_into_a_survivor_that_is_not_active_is_refused(svc, empty_project, retire):
    # Merged into its own predecessor, the two named each other as successor; merged into a
    # deprecated entry, the content left every answer. Either way the summary showed none.
    old = svc.record("decision", {"summary": "Jobs go through the alpha queue", **FIELDS})["id"]
    if retire == "supersede":
        new = svc.record("decision", {"summary": "Jobs go through the beta queue", **FIELDS}, supersedes=[old])["id"]
    else:
        new = svc.record("decision", {"summary": "Jobs go through the beta queue", **FIELDS})["id"]
        svc.deprecate_entry(old, "we stopped running alpha")
    before = snapshot_files(empty_project)
    with pytest.raises(InvalidInput, match=f"merge_into: {old} is (superseded by {new}|deprecated)") as refused:
        svc.deprecate_entry(new, "fold it back", merge_into=old)
    assert refused.value.field == "merge_into"
    assert snapshot_files(empty_project) == before
    assert svc.get_project_summary()["counts"]["decisions"] == 1


def test_update_refuses_a_supersedes_id_that_no_entry_has(svc, empty_project):
    # related_to added by an update must name an entry; supersedes took any id (doctor then
    # warned about the link the tool had just written).
    from context_keeper.errors import NotFound

    old = svc.record("decision", DECISION)["id"]
    new = svc.record("decision", {**DECISION, "summary": "Jobs go through the beta queue"}, supersedes=[old])["id"]
    before = snapshot_files(empty_project)
    with pytest.raises(NotFound, match=r"^supersedes: no decision with id 'dec-077'"):
        svc.update_entry(new, {"supersedes": [old, "dec-077"]})
    assert snapshot_files(empty_project) == before
    # The ids already stored pass as they are.
    assert svc.update_entry(new, {"supersedes": [old]})["entry"]["supersedes"] == [old]


@pytest.mark.parametrize("write", [
    lambda s, d: s.update_entry("dec-001", {"tags": ["jobs"]}, project_dir=d),
    lambda s, d: s.deprecate_entry("dec-001", "we stopped running it", project_dir=d),
    lambda s, d: s.record("decision", DECISION, supersedes=["dec-001"], project_dir=d),
], ids=["update", "deprecate", "record-supersedes"])
def test_a_write_that_names_an_entry_does_not_create_context_in_a_directory_without_one(tmp_path, write):
    # Refused with "no decision with id ...", yet .context/ (with .lock and .gitignore) was left
    # behind, so the directory read as a project from then on.
    from context_keeper.errors import NoProject

    bare = tmp_path / "not-a-project"
    bare.mkdir()
    with pytest.raises(NoProject, match="has no .context/ directory"):
        write(Service(env={}), str(bare))
    assert list(bare.iterdir()) == []


@pytest.mark.anyio
async def test_record_entry_names_a_field_of_another_kind_and_the_kinds_own_fields(svc):
    from tests.mcp_helpers import connect, err

    async with connect(svc, "legacy") as client:
        text = await err(client, "record_entry", {"kind": "constraint", "rule": "Jobs are idempotent",
                                                  "reason": FIELDS["problem"], "summary": "Jobs are idempotent"})
    assert "summary does not belong to a constraint; remove it" in text and "rule, scope, tags" in text


def test_a_record_after_the_largest_possible_id_is_refused_not_written_unusable(svc, empty_project):
    # The next id was dec-1000000000, which is not an id: the record was acknowledged, and the
    # entry skipped by every tool from then on.
    import json

    from context_keeper.errors import StoreError

    store_file = empty_project / ".context" / "decisions.json"
    store_file.write_text(json.dumps([{"id": "dec-999999999", "summary": "A typo in a hand edit"}]), encoding="utf-8")
    before = snapshot_files(empty_project)
    with pytest.raises(StoreError, match="dec-999999999 in decisions.json has the highest number"):
        svc.record("decision", DECISION)
    assert snapshot_files(empty_project) == before


@pytest.mark.parametrize("name", [["Packwise"], 123, {"x": 1}, "   "])
def test_a_project_name_that_is_not_text_falls_back_to_the_folder_name(svc, empty_project, name):
    import json

    (empty_project / ".context" / "config.json").write_text(json.dumps({"project_name": name}), encoding="utf-8")
    svc.record("decision", DECISION)
    assert svc.get_project_summary()["summary"].startswith(f"Project memory for {empty_project.name}:")
    svc.export_markdown()
    assert (empty_project / "DECISIONS.md").read_text(encoding="utf-8").startswith(f"# Decisions — {empty_project.name}\n")


def test_a_record_whose_related_to_names_its_own_new_id_is_refused(svc, empty_project):
    first = svc.record("decision", DECISION)["id"]
    before = snapshot_files(empty_project)
    with pytest.raises(InvalidInput, match="related_to: dec-002 is the id this decision gets") as refused:
        svc.record("decision", {**DECISION, "summary": "Jobs go through the beta queue", "related_to": ["dec-002"]})
    assert refused.value.field == "related_to"
    assert first == "dec-001" and snapshot_files(empty_project) == before


def test_decisions_md_keeps_a_summary_with_line_breaks_on_its_heading_line(svc, empty_project):
    svc.record("decision", {**DECISION, "summary": "Jobs go through alpha\n\n### dec-999: A decision nobody made",
                            "alternatives": [{"option": "beta\n## Deprecated", "reason_rejected": "slow\n\n# x"}]})
    text = svc.export_markdown()["path"]
    lines = (empty_project / "DECISIONS.md").read_text(encoding="utf-8").splitlines()
    assert "### dec-001: Jobs go through alpha ### dec-999: A decision nobody made" in lines
    assert not any(line.startswith("### dec-999") for line in lines)
    assert "- Rejected *beta ## Deprecated*: slow # x" in lines and text


def test_a_record_linked_into_an_unreadable_file_is_answered_as_saved(svc, empty_project):
    # The entry was written, then the dangling-link check raised the other file's parse error:
    # the client saw a failure for a saved write, and a retry recorded it twice.
    (empty_project / ".context" / "constraints.json").write_text('[{"id": "con-001", "rule": "x"', encoding="utf-8")
    answer = svc.record("decision", {**DECISION, "related_to": ["con-001"]})
    assert answer["success"] and answer["id"] == "dec-001"
    assert any("con-001 could not be checked" in w and "constraints.json" in w for w in answer["warnings"])
    assert [r["entry"]["id"] for r in svc.query_entries(types=["decisions"])["results"]] == ["dec-001"]


@pytest.mark.parametrize("parameter", ["superseded_by", "merge_into"])
@pytest.mark.parametrize("value", ["garbage", "dec-two"])  # "DEC-002" is dec-002 in upper case (test_compat_hunt19)
def test_deprecate_names_the_parameter_that_holds_a_malformed_id(svc, empty_project, parameter, value):
    # It said "'garbage' is not an entry id" with field "id", as if the entry's own id were wrong.
    entry_id = svc.record("decision", DECISION)["id"]
    before = snapshot_files(empty_project)
    with pytest.raises(InvalidInput, match=f"^{parameter}: '{value}' is not an entry id") as refused:
        svc.deprecate_entry(entry_id, "replaced by another", **{parameter: value})
    assert refused.value.field == parameter
    assert snapshot_files(empty_project) == before


def test_a_credential_used_as_a_key_inside_a_step_is_refused(svc, empty_project):
    before = snapshot_files(empty_project)
    step = {"action": "log in to the registry", "ghp_abcdefghijklmnopqrstuvwxyz0123456789": 1}
    with pytest.raises(InvalidInput, match=r"^steps\[0\] \(a key in it\) looks like it contains a GitHub token") as refused:
        svc.record("pipeline", {"name": "Publish", "purpose": FIELDS["problem"], "steps": [step]})
    assert refused.value.field == "steps" and "ghp_" not in str(refused.value)
    assert snapshot_files(empty_project) == before


def test_an_alternative_keeps_its_other_keys_when_an_update_sends_it_back(svc, empty_project):
    # Steps kept their extra keys; alternatives dropped them, so appending an alternative to a
    # hand-written list through update_entry silently lost the keys a person had added.
    entry_id = svc.record("decision", {**DECISION, "alternatives": [
        {"option": "beta queue", "reason_rejected": "no retries", "adr": "ADR-12"}]})["id"]
    stored = svc.get_context(id=entry_id)["entry"]["alternatives"]
    assert stored == [{"option": "beta queue", "reason_rejected": "no retries", "adr": "ADR-12"}]
    updated = svc.update_entry(entry_id, {"alternatives": [*stored, {"option": "cron", "reason_rejected": "no queue"}]})
    assert updated["entry"]["alternatives"][0]["adr"] == "ADR-12"


def test_a_merge_into_an_older_entry_adds_only_the_fields_it_fills(svc, empty_project):
    # Every list field was written into the survivor, empty ones included: a legacy entry's
    # diff grew by alternatives: [], constraints_created: [], retrieval_hints: [] ...
    import json

    store_file = empty_project / ".context" / "decisions.json"
    store_file.write_text(json.dumps([{"id": "dec-001", "summary": "Jobs go through the alpha queue",
                                       "problem": FIELDS["problem"], "why_chosen": FIELDS["why_chosen"]}]),
                          encoding="utf-8")
    svc.record("decision", {**DECISION, "summary": "Jobs go through the alpha queue, always", "tags": ["jobs"]})
    svc.deprecate_entry("dec-002", "says the same as dec-001", merge_into="dec-001")
    survivor = json.loads(store_file.read_text(encoding="utf-8"))[0]
    assert survivor["tags"] == ["jobs"]
    assert set(survivor) == {"id", "summary", "problem", "why_chosen", "tags", "updated_at"}


def test_an_id_missing_its_suffix_or_padding_is_answered_with_the_stored_spelling(svc, empty_project):
    import json

    from context_keeper.errors import NotFound

    (empty_project / ".context" / "decisions.json").write_text(json.dumps([
        {"id": "dec-013-a7f3", "summary": "Services talk gRPC"}, {"id": "dec-5", "summary": "Unpadded"}]), encoding="utf-8")
    with pytest.raises(NotFound, match=r"no decision with id 'dec-013' in decisions.json \(did you mean dec-013-a7f3\?\)"):
        svc.update_entry("dec-013", {"tags": ["api"]})
    with pytest.raises(NotFound, match=r"^supersedes: .*\(did you mean dec-5\?\)"):
        svc.record("decision", DECISION, supersedes=["dec-005"])
    with pytest.raises(NotFound, match=r"\(did you mean dec-013-a7f3\?\)"):
        svc.get_context(id="dec-013")
