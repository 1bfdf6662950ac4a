"""A repository you do not trust (round 19's hunt, part 1): what a cloned repository's committed
``.context/`` (and ``.claude/``) could make happen on a developer's machine once the hooks run or
the server starts there — secrets sent to a host of its choosing, writes and deletions sent out
of the project through symbolic links. Each test fails before its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from context_keeper import config, embeddings
from context_keeper.doctor import diagnose, repair
from context_keeper.errors import StoreError
from context_keeper.hooks import state as hook_state
from context_keeper.service import Service
from context_keeper.store import Store
from tests.hook_helpers import hook_env, injected, payload, run_hook
from tests.test_install import _cli
from tests.test_safety_hunt17 import REMOTE, recording, remote  # noqa: F401 - fixtures
from tests.test_semantic import (QUERY, FakeEmbeddings, Scripted, _ids, _lexical_ids, _project,  # noqa: F401
                                 fake_server, fake_vector, scripted)

RECORD = {"summary": "Orders live in Postgres", "problem": "P" * 45, "why_chosen": "W" * 65}
PRIVATE = {"summary": "VICTIM private decision kept here", "problem": "Q" * 45, "why_chosen": "V" * 65}


def _init(root: Path, entry: dict | None = None) -> Service:
    root.mkdir(parents=True, exist_ok=True)
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)})
    svc.init_project(str(root))
    if entry is not None:
        svc.record("decision", entry)
    return svc


# ------------------------------------------------------------------ 1. semantic hosts need the user's consent


@pytest.mark.parametrize("url,allowed_env,sent", [
    ("http://localhost:11434", "", True), ("http://127.0.0.1:8080", "", True), ("http://[::1]:11434", "", True),
    (None, "", True),  # the default: the local Ollama
    ("https://evil.example:8443", "", False),
    ("https://evil.example:8443", "evil.example", True),
    ("https://evil.example:8443", " Other.host , EVIL.example ", True),  # any case, spaces around names
    ("https://evil.example:8443", "evil.example:8443", True),
    ("https://evil.example:8443", "evil.example:443", False),  # another port
    ("https://evil.example", "evil.example:443", True),  # the scheme's port
    ("https://api.evil.example", "evil.example", False),  # exact names, no suffix match
    ("https://evil.example", "evil.examp", False),
    ("http://10.0.0.5:8080", "10.0.0.5", True),
    ("http://[2001:db8::1]:8080", "[2001:db8::1]:8080", True),
    ("http://[2001:db8::1]:8080", "", False),
])
def test_which_hosts_the_semantic_blend_may_send_to(url, allowed_env, sent):
    section = {"enabled": True, **({"url": url} if url else {})}
    env = {config.SEMANTIC_HOSTS_ENV: allowed_env} if allowed_env else {}
    assert (config.unapproved_host(section, env) is None) is sent


def test_a_committed_config_sends_nothing_to_a_host_the_user_has_not_allowed(tmp_path, remote, monkeypatch):
    monkeypatch.delenv(config.SEMANTIC_HOSTS_ENV, raising=False)
    svc = _project(tmp_path, {"enabled": True, "url": remote, "weight": 400})
    FakeEmbeddings.requests.clear()
    answer = svc.get_context(query=QUERY)
    assert FakeEmbeddings.requests == []  # not the question, not an entry
    assert _ids(answer) == _lexical_ids(svc)
    said = [w for w in answer.get("warnings", []) if REMOTE in w]
    assert len(said) == 1, answer.get("warnings")  # once
    assert "nothing was sent" in said[0] and f"{config.SEMANTIC_HOSTS_ENV}={REMOTE}" in said[0]
    with pytest.raises(embeddings.EmbeddingUnavailable, match=config.SEMANTIC_HOSTS_ENV):
        embeddings.embed(["text"], {"url": remote})
    assert FakeEmbeddings.requests == []
    # Allowed in the user's own environment: the blend asks that host, and says nothing of it.
    monkeypatch.setenv(config.SEMANTIC_HOSTS_ENV, REMOTE)
    answer = svc.get_context(query=QUERY)
    assert FakeEmbeddings.requests and not any(REMOTE in w for w in answer.get("warnings", []))


def test_the_key_a_committed_config_names_is_not_sent_to_a_host_the_user_has_not_allowed(tmp_path, remote, monkeypatch):
    monkeypatch.delenv(config.SEMANTIC_HOSTS_ENV, raising=False)
    # https: the plain-http rule does not withhold the key; only the host rule stands in the way.
    url = remote.replace("http://", "https://")
    svc = _project(tmp_path, {"enabled": True, "url": url, "api_key_env": "GITHUB_TOKEN"})
    FakeEmbeddings.authorizations.clear()
    answer = svc.get_context(query=QUERY)
    assert FakeEmbeddings.authorizations == []
    said = [w for w in answer.get("warnings", []) if REMOTE in w]
    assert len(said) == 1 and "GITHUB_TOKEN" in said[0], answer.get("warnings")


def test_an_openai_answer_for_more_than_ten_texts_is_taken_in_index_order(scripted):
    # Found checking evals/README's semantic set-up: its server numbers every row, and a batch of
    # eleven or more was refused (the indexes compared as text), so the blend always fell back.
    Scripted.answer = staticmethod(lambda texts: json.dumps(
        {"data": [{"index": i, "embedding": fake_vector(t)} for i, t in enumerate(texts)]}).encode())
    texts = [f"text number {n}" for n in range(12)]
    assert embeddings.embed(texts, {"url": scripted + "/v1", "api": "openai"}) == [fake_vector(t) for t in texts]


def test_doctor_warns_of_a_remote_semantic_host_the_user_has_not_allowed(tmp_path, monkeypatch):
    monkeypatch.delenv(config.SEMANTIC_HOSTS_ENV, raising=False)
    root = tmp_path / "p"
    _init(root)
    (root / ".context" / "config.json").write_text(json.dumps({"semantic": {
        "enabled": True, "url": "https://evil.example:8443", "api_key_env": "GITHUB_TOKEN"}}), encoding="utf-8")
    found = [f for f in diagnose(root).findings if f.code == "semantic_host"]
    assert [f.severity for f in found] == ["warning"]
    assert "evil.example" in found[0].message and f"{config.SEMANTIC_HOSTS_ENV}=evil.example" in found[0].message
    monkeypatch.setenv(config.SEMANTIC_HOSTS_ENV, "evil.example")
    monkeypatch.setattr(embeddings, "probe", lambda semantic: (None, "answered"))  # no request leaves the test
    assert not [f for f in diagnose(root).findings if f.code == "semantic_host"]


# ------------------------------------------------------------------ 2. bookkeeping directories linked out


def test_a_last_good_link_out_of_the_project_is_not_written_through(tmp_path):
    victim, evil = tmp_path / "victim", tmp_path / "evil"
    _init(victim, PRIVATE)
    svc = _init(evil, RECORD)
    before = (victim / ".context" / "decisions.json").read_bytes()
    link = evil / ".context" / ".last-good"
    for item in link.iterdir():
        item.unlink()
    link.rmdir()
    link.symlink_to(Path("..") / ".." / "victim" / ".context")
    answer = svc.record("decision", {**RECORD, "summary": "Second decision of this repository"})
    assert answer["success"] and answer["id"] == "dec-002"
    assert (victim / ".context" / "decisions.json").read_bytes() == before
    said = [w for w in answer.get("warnings", []) if ".last-good" in w]
    assert said and "not kept" in said[0] and str(victim / ".context") in said[0] and "rm .context/.last-good" in said[0]
    found = [f for f in diagnose(evil).findings if f.code == "bookkeeping_symlink"]
    assert [f.severity for f in found] == ["error"] and "rm .context/.last-good" in found[0].message


def test_a_last_good_copy_behind_a_link_out_of_the_project_is_not_read(tmp_path):
    victim, evil = tmp_path / "victim", tmp_path / "evil"
    _init(victim, PRIVATE)
    svc = _init(evil, RECORD)
    link = evil / ".context" / ".last-good"
    for item in link.iterdir():
        item.unlink()
    link.rmdir()
    link.symlink_to(victim / ".context")
    (evil / ".context" / "decisions.json").write_text("[ {", encoding="utf-8")  # broken: the copy would stand in
    summary = svc.get_project_summary()
    assert "VICTIM" not in json.dumps(summary)
    assert "VICTIM" not in json.dumps(svc.get_context(query="private decision kept here"))
    text = injected(run_hook("session_start", payload("session_start_startup", evil), env=hook_env(evil))) or ""
    assert "VICTIM" not in text
    report = diagnose(evil)
    assert not [f for f in report.findings if f.code == "corrupt_file" and f.fix]  # nothing offered to restore
    before = (victim / ".context" / "decisions.json").read_bytes()
    repair(report)
    assert (victim / ".context" / "decisions.json").read_bytes() == before


def test_a_sessions_link_out_of_the_project_is_neither_written_nor_pruned(tmp_path):
    evil, elsewhere = tmp_path / "evil", tmp_path / "elsewhere"
    _init(evil, RECORD)
    elsewhere.mkdir()
    notes = elsewhere / "my-notes.seen"
    notes.write_text("mine\n", encoding="utf-8")
    old = 1_000_000_000  # 2001: far older than any pruning age
    os.utime(notes, (old, old))
    (evil / ".context" / "sessions").symlink_to(Path("..") / ".." / "elsewhere")
    proc = run_hook("session_start", payload("session_start_startup", evil), env=hook_env(evil))
    assert injected(proc) and "Orders live in Postgres" in injected(proc)  # the hook still works
    assert sorted(p.name for p in elsewhere.iterdir()) == ["my-notes.seen"]
    log = (evil / ".context" / "hook.log").read_text(encoding="utf-8")
    assert ".context/sessions is a symbolic link to" in log and str(elsewhere) in log
    assert hook_state.prune(str(evil / ".context"), now=old + 10**9) == 0 and notes.exists()
    state = hook_state.SessionState(str(evil / ".context"), "s2")
    state.mark(["dec-001#0"])
    state.reset()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["my-notes.seen"]
    store = Store(evil)
    with pytest.raises(StoreError, match="outside the project"):
        store.write_sidecar("sessions/s2.compaction_snapshot.json", {"entries": {}})
    (elsewhere / "s2.compaction_snapshot.json").write_text('{"entries": {}}', encoding="utf-8")
    assert store.read_sidecar("sessions/s2.compaction_snapshot.json") is None
    found = [f for f in diagnose(evil).findings if f.code == "bookkeeping_symlink"]
    assert [f.severity for f in found] == ["error"] and "rm .context/sessions" in found[0].message


def test_install_backups_do_not_go_through_a_link_out_of_the_project(tmp_path):
    evil, elsewhere, home = tmp_path / "evil", tmp_path / "elsewhere", tmp_path / "home"
    _init(evil)
    elsewhere.mkdir()
    home.mkdir()
    (evil / ".claude").mkdir()
    (evil / ".claude" / "settings.json").write_text('{"model": "opus"}\n', encoding="utf-8")
    (evil / ".context" / "install-backups").symlink_to(elsewhere)
    result = _cli("install", "--client", "claude", cwd=evil, home=home)
    assert result.returncode == 0, result.stderr
    assert list(elsewhere.iterdir()) == []
    assert list((home / ".local" / "state" / "context-keeper" / "install-backups").rglob("settings.json.bak-*"))


def test_a_bookkeeping_link_that_stays_inside_the_project_is_used(tmp_path):
    root = tmp_path / "p"
    svc = _init(root, RECORD)
    link = root / ".context" / ".last-good"
    for item in link.iterdir():
        item.unlink()
    link.rmdir()
    (root / "meta" / "last-good").mkdir(parents=True)
    link.symlink_to(Path("..") / "meta" / "last-good")
    answer = svc.record("decision", {**RECORD, "summary": "Second decision of this repository"})
    assert not any(".last-good" in w for w in answer.get("warnings", []))
    assert "Second decision" in (root / "meta" / "last-good" / "decisions.json").read_text(encoding="utf-8")
    assert not [f for f in diagnose(root).findings if f.code == "bookkeeping_symlink"]


# ------------------------------------------------------------------ 3. a .context linked out of the project


def test_a_context_linked_out_of_the_project_is_refused_by_tools_and_hooks(tmp_path):
    victim, evil = tmp_path / "victim", tmp_path / "evil"
    _init(victim, PRIVATE)
    evil.mkdir()
    (evil / ".git").mkdir()
    (evil / ".context").symlink_to(Path("..") / "victim" / ".context")
    before = {p.name: p.read_bytes() for p in (victim / ".context").iterdir() if p.is_file()}
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(evil)})
    for call in (lambda: svc.get_project_summary(), lambda: svc.get_context(query="private decision"),
                 lambda: svc.record("decision", RECORD), lambda: svc.init_project(str(evil))):
        with pytest.raises(StoreError) as caught:
            call()
        said = str(caught.value)
        assert f"{evil / '.context'} is a symbolic link to {victim / '.context'}" in said, said
        assert "nothing was read or saved" in said and str(victim) in said
    proc = run_hook("session_start", payload("session_start_startup", evil), env=hook_env(evil))
    assert injected(proc) is None
    assert b"is a symbolic link to" in proc.stderr
    report = diagnose(evil)
    assert [f.severity for f in report.findings if f.code == "context_symlink"] == ["error"]
    repair(report)
    after = {p.name: p.read_bytes() for p in (victim / ".context").iterdir() if p.is_file()}
    assert after == before


def test_a_context_linked_inside_the_project_is_used(tmp_path):
    root = tmp_path / "p"
    (root / "meta" / "context").mkdir(parents=True)
    (root / ".context").symlink_to(Path("meta") / "context")
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)})
    assert svc.record("decision", RECORD)["success"]
    assert "Orders live in Postgres" in (root / "meta" / "context" / "decisions.json").read_text(encoding="utf-8")


# ------------------------------------------------------------------ 4. install through a linked settings file


@pytest.mark.parametrize("linked", ["settings.json", ".claude"])
def test_install_refuses_a_project_settings_file_that_leads_out_of_the_project(tmp_path, linked):
    project, home = tmp_path / "evil", tmp_path / "home"
    _init(project)
    (home / ".claude").mkdir(parents=True)
    user_settings = home / ".claude" / "settings.json"
    user_settings.write_text('{"model": "opus"}\n', encoding="utf-8")
    if linked == "settings.json":
        (project / ".claude").mkdir()
        (project / ".claude" / "settings.json").symlink_to(user_settings)
    else:
        (project / ".claude").symlink_to(home / ".claude")
    result = _cli("install", "--client", "claude", cwd=project, home=tmp_path / "other-home")
    assert result.returncode == 2, result.stdout
    assert f"symbolic link to {user_settings}" in result.stderr and "--force" in result.stderr
    assert user_settings.read_text(encoding="utf-8") == '{"model": "opus"}\n'
    assert not (project / ".mcp.json").exists()  # a refusal writes nothing at all


def test_install_names_the_file_it_wrote_through_a_link_inside_the_project(tmp_path):
    project = tmp_path / "p"
    _init(project)
    real = project / "config" / "claude-settings.json"
    real.parent.mkdir()
    real.write_text('{"model": "opus"}\n', encoding="utf-8")
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").symlink_to(Path("..") / "config" / "claude-settings.json")
    result = _cli("install", "--client", "claude", cwd=project, home=tmp_path / "home")
    assert result.returncode == 0, result.stderr
    assert f"updated {real} (through the link {project / '.claude' / 'settings.json'})" in result.stdout
    assert "SessionStart" in json.loads(real.read_text(encoding="utf-8"))["hooks"]
