"""Safety and wording defects found in round 17's hunt, each test failing before its fix."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from context_keeper import config, embeddings
from context_keeper.doctor import diagnose
from context_keeper.errors import NoProject, StoreError, UnsafePath
from context_keeper.project import resolve_project
from context_keeper.service import Service
from tests.test_install import _cli
from tests.test_semantic import QUERY, FakeEmbeddings, _ids, _lexical_ids, _project, fake_server  # noqa: F401

# ------------------------------------------------------------------ a committed config choosing a key


@pytest.fixture
def recording(fake_server):
    """The port of the fake Ollama endpoint, whose ``FakeEmbeddings.authorizations`` records
    the Authorization header of every request."""
    return int(fake_server.rsplit(":", 1)[1])


REMOTE = "embeddings.example"


@pytest.fixture
def remote(recording, monkeypatch):
    """``http://embeddings.example:PORT``: a host name that is not this machine's, which this
    test's resolver sends to the local recording server (so a leak would be seen, not lost)."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    real = socket.getaddrinfo

    def resolve(host, *args, **kwargs):
        return real("127.0.0.1" if host == REMOTE else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-not-for-embeddings")
    return f"http://{REMOTE}:{recording}"


def test_a_key_is_never_sent_over_plain_http_to_another_machine(tmp_path, remote, monkeypatch):
    monkeypatch.setenv(config.SEMANTIC_HOSTS_ENV, REMOTE)  # even to a host the user allowed
    svc = _project(tmp_path, {"enabled": True, "url": remote, "api_key_env": "GITHUB_TOKEN", "weight": 400})
    answer = svc.get_context(query=QUERY)
    assert FakeEmbeddings.authorizations == []  # neither the key nor the entries' text went out
    assert _ids(answer) == _lexical_ids(svc)
    said = [w for w in answer.get("warnings", []) if "semantic.api_key_env" in w]
    assert said and "GITHUB_TOKEN" in said[0] and remote in said[0] and "https://" in said[0], answer.get("warnings")
    with pytest.raises(embeddings.EmbeddingUnavailable, match="plain http"):
        embeddings.embed(["text"], {"url": remote, "api_key_env": "GITHUB_TOKEN"})
    assert FakeEmbeddings.authorizations == []
    # the same endpoint asked for no key is used as before: only the key is withheld
    (svc.store().dir / "config.json").write_text(json.dumps({"semantic": {"enabled": True, "url": remote}}),
                                                encoding="utf-8")
    svc.get_context(query=QUERY)
    assert FakeEmbeddings.authorizations and set(FakeEmbeddings.authorizations) == {None}


@pytest.mark.parametrize("url,withheld", [
    ("http://10.0.0.5:8080", True), ("http://gpu-box:11434", True), ("HTTP://EMBED.EXAMPLE", True),
    ("https://api.openai.com/v1", False), ("http://localhost:11434", False), ("http://127.0.0.1:8080", False),
    ("http://127.8.0.1", False), ("http://[::1]:11434", False), (None, False),  # None: the default, localhost
])
def test_which_urls_a_key_is_withheld_from(url, withheld):
    section = {"api_key_env": "OPENAI_API_KEY", **({"url": url} if url else {})}
    assert (config.cleartext_key(section) is not None) is withheld
    assert config.cleartext_key({k: v for k, v in section.items() if k != "api_key_env"}) is None


def test_doctor_names_the_variable_sent_as_a_key_and_the_host(tmp_path, recording, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-x")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv(config.SEMANTIC_HOSTS_ENV, "api.openai.com,10.0.0.5")  # hosts this user allowed
    monkeypatch.setattr(embeddings, "probe", lambda semantic: (None, "answered"))  # no request leaves the test
    root = tmp_path / "p"
    root.mkdir()
    Service(env={}).init_project(str(root))
    host = f"127.0.0.1:{recording}"

    def findings(semantic):
        (root / ".context" / "config.json").write_text(json.dumps({"semantic": semantic}), encoding="utf-8")
        return [f for f in diagnose(root).findings if f.code in ("semantic_key", "config")]

    odd = findings({"enabled": True, "url": f"http://{host}", "api": "openai", "api_key_env": "GITHUB_TOKEN"})
    assert [f.severity for f in odd] == ["warning"]
    assert "GITHUB_TOKEN" in odd[0].message and host in odd[0].message and "set here" in odd[0].message
    meant = findings({"enabled": True, "url": "https://api.openai.com/v1", "api_key_env": "OPENAI_API_KEY"})
    assert [f.severity for f in meant] == ["info"]
    assert "OPENAI_API_KEY" in meant[0].message and "api.openai.com" in meant[0].message
    assert "not set in this environment" in meant[0].message
    cleartext = findings({"enabled": True, "url": "http://10.0.0.5:8080", "api_key_env": "OPENAI_API_KEY"})
    assert [f.severity for f in cleartext] == ["warning"] and cleartext[0].code == "config"
    assert "plain http" in cleartext[0].message and "OPENAI_API_KEY" in cleartext[0].message
    assert findings({"enabled": False, "url": f"http://{host}", "api_key_env": "GITHUB_TOKEN"}) == []


# ------------------------------------------------------------------ a project at / or in the home directory


def test_the_file_system_root_is_refused_as_a_project(tmp_path):
    existed = os.path.lexists("/.context")
    for args in ({"project_dir": "/", "env": {}}, {"env": {"CONTEXT_KEEPER_PROJECT": "/"}}):
        with pytest.raises(UnsafePath, match="root of the file system"):
            resolve_project(**args)
    with pytest.raises(UnsafePath, match="root of the file system"):
        Service(env={}).record("decision", {"summary": "Orders live in Postgres", "problem": "P" * 45,
                                            "why_chosen": "W" * 65}, project_dir="/")
    assert os.path.lexists("/.context") == existed


def test_a_walk_up_never_reaches_the_root_nor_above_the_home_directory(tmp_path):
    from context_keeper.store_owner import walk_up

    sep = os.sep
    start = sep.join(["", "srv", "app", "src"])
    assert list(walk_up(start, sep.join(["", "home", "dev"]))) == [start, os.path.dirname(start),
                                                                    sep.join(["", "srv"])]
    home = tmp_path / "home"
    (home / "src" / "tool").mkdir(parents=True)
    assert list(walk_up(str(home / "src" / "tool"), str(home))) == [str(home / "src" / "tool"), str(home / "src")]
    assert list(walk_up(str(home), str(home))) == [str(home)]  # the home directory itself, when it is the start


def test_a_store_in_a_home_directory_that_is_no_repository_serves_no_directory_below_it(tmp_path):
    home = tmp_path / "home"
    (home / "src" / "tool").mkdir(parents=True)
    # what a first record through project_dir=~ made
    Service(env={"HOME": str(home)}).record("decision", {"summary": "Orders live in Postgres", "problem": "P" * 45,
                                                         "why_chosen": "W" * 65}, project_dir=str(home))
    assert (home / ".context").is_dir()
    env = {"HOME": str(home)}
    with pytest.raises(NoProject, match="serves only the home directory itself"):
        resolve_project(env=env, cwd=str(home / "src" / "tool"))
    with pytest.raises(NoProject):
        resolve_project(env={**env, "CLAUDE_PROJECT_DIR": str(home / "src")}, cwd=str(home / "src" / "tool"))
    assert resolve_project(env=env, cwd=str(home)) == home.resolve()  # in home itself it is the project
    assert resolve_project(str(home), env=env) == home.resolve()
    (home / ".git").mkdir()  # a home directory kept in git is a repository like any other
    assert resolve_project(env=env, cwd=str(home / "src" / "tool")) == home.resolve()


def test_the_hooks_fast_path_does_not_revive_a_home_store_an_older_version_resolved_to(tmp_path):
    from context_keeper.hooks import cache

    home = tmp_path / "home"
    (home / "src" / "tool").mkdir(parents=True)
    (home / ".context").mkdir()
    env, cwd = {"HOME": str(home)}, str((home / "src" / "tool").resolve())
    # an older version resolved this directory to the home directory, and remembered so
    roots = {"root": str(home.resolve()), "resolved": [cache.resolution_key(env, cwd)]}
    (home / ".context" / cache.ROOTS_FILE).write_text(json.dumps(roots), encoding="utf-8")
    assert cache.locate(env, cwd) is None


# ------------------------------------------------------------------ .context that is not a directory


RECORD = {"summary": "Orders live in Postgres", "problem": "P" * 45, "why_chosen": "W" * 65}


@pytest.mark.parametrize("shape", ["file", "link to a file"])
def test_a_context_that_is_not_a_directory_is_named_with_what_to_do(tmp_path, shape):
    root = tmp_path / "p"
    root.mkdir()
    if shape == "file":
        (root / ".context").write_text("notes\n", encoding="utf-8")
        what = "is a file, not a directory"
    else:
        (tmp_path / "elsewhere").write_text("notes\n", encoding="utf-8")
        (root / ".context").symlink_to(tmp_path / "elsewhere")
        what = f"is a symbolic link to {tmp_path / 'elsewhere'}, not to a directory"
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)})
    for call in (lambda: svc.record("decision", RECORD), lambda: svc.get_context(query="database for orders"),
                 lambda: svc.init_project(str(root))):
        with pytest.raises(StoreError) as caught:
            call()
        said = str(caught.value)
        assert said.startswith("nothing was") and f"{root / '.context'} {what}" in said, said
        assert f"mv {root / '.context'} {root / '.context'}.aside" in said
        assert "the first record_* call also creates it" not in said
    assert (root / ".context").read_text(encoding="utf-8") == "notes\n"


def test_a_lock_file_that_is_a_link_is_named_not_the_directory_it_leads_to(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)})
    svc.init_project(str(root))
    victim = tmp_path / "victim" / "file"
    victim.parent.mkdir()
    victim.write_text("mine\n", encoding="utf-8")
    lock = root / ".context" / ".lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(victim)
    with pytest.raises(StoreError) as caught:
        svc.record("decision", RECORD)
    said = str(caught.value)
    assert said.startswith("nothing was saved") and f"{lock} is a symbolic link to {victim}" in said, said
    assert f"rm {lock}" in said and f"Check that {victim.parent}" not in said
    assert victim.read_text(encoding="utf-8") == "mine\n"


# ------------------------------------------------------------------ install / uninstall say what they did


def test_install_says_created_and_uninstall_says_deleted(tmp_path: Path):
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    Service(env={}).init_project(str(project))
    settings, mcp = project / ".claude" / "settings.json", project / ".mcp.json"
    installed = _cli("install", cwd=project, home=home)
    assert installed.returncode == 0, installed.stderr
    assert f"created {settings}" in installed.stdout and f"created {mcp}" in installed.stdout
    assert "updated" not in installed.stdout
    settings.write_text(json.dumps({**json.loads(settings.read_text(encoding="utf-8")), "env": {"A": "1"}}),
                        encoding="utf-8")
    removed = _cli("uninstall", cwd=project, home=home)
    assert removed.returncode == 0, removed.stderr
    assert f"removed context-keeper from {settings} (backup: " in removed.stdout  # it still holds "env"
    assert f"removed {mcp} (file deleted: nothing else was in it; backup: " in removed.stdout
    assert settings.exists() and not mcp.exists()
