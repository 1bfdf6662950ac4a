"""Semantic-blend and config defects found in round 21's hunt: each defect's test failed before its fix;
the others guard what must keep working beside it (a remote https proxy, a name that resolves)."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from context_keeper import config, embeddings
from context_keeper.doctor import diagnose
from context_keeper.service import Service
from tests.test_semantic import (  # noqa: F401 - scripted is a fixture
    QUERY, SHUTDOWN_POLL, Scripted, _ids, _lexical_ids, _project, fake_vector, scripted)


class Proxy(BaseHTTPRequestHandler):
    """A proxy that records what reaches it and forwards nothing."""

    seen: list[tuple[str, str, str | None]] = []

    def _refuse(self):
        Proxy.seen.append((self.command, self.path, self.headers.get("Authorization")))
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_CONNECT = _refuse  # noqa: N815 - http.server API

    def log_message(self, *args):
        pass


@pytest.fixture
def proxy(monkeypatch):
    Proxy.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    # The user's shell has a proxy set for everything, with no exception for this machine.
    for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", url)
    monkeypatch.setenv("https_proxy", url)
    yield url
    server.shutdown()
    server.server_close()


# ------------------------------------------------------------------ 1. proxies


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_endpoint_is_asked_directly_not_through_a_proxy(scripted, proxy, monkeypatch, host):
    monkeypatch.setenv("CK_TEST_KEY", "sk-secret")
    url = scripted.replace("127.0.0.1", host)
    assert embeddings.embed(["alpha"], {"url": url, "api_key_env": "CK_TEST_KEY"}) == [fake_vector("alpha")]
    assert Proxy.seen == []  # neither the text nor the key went through it
    assert Scripted.requests == [1]


def test_a_remote_https_endpoint_still_goes_through_the_https_proxy(proxy, monkeypatch):
    monkeypatch.setenv(config.SEMANTIC_HOSTS_ENV, "embed.corp.example")
    monkeypatch.setenv("CK_TEST_KEY", "sk-secret")
    with pytest.raises(embeddings.EmbeddingUnavailable):  # this proxy forwards nothing
        embeddings.embed(["alpha"], {"url": "https://embed.corp.example", "api_key_env": "CK_TEST_KEY"})
    # A tunnel: the key and the text travel inside TLS, the proxy sees only where to.
    assert Proxy.seen == [("CONNECT", "embed.corp.example:443", None)]


# ------------------------------------------------------------------ 2. a failing blend is named


class Failing(BaseHTTPRequestHandler):
    """An embedding endpoint that fails as ``mode`` says, counting the requests it gets."""

    mode = "ok"
    requests: list[str] = []
    refuse = staticmethod(lambda text: False)  # a text the model will not take: 400, as OpenAI answers

    def do_POST(self):  # noqa: N802 - http.server API
        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        Failing.requests.append(self.path)
        status, body = 200, json.dumps({"embeddings": [fake_vector(t) for t in texts]}).encode()
        if any(Failing.refuse(t) for t in texts):
            status, body = 400, (b'{"error": {"message": "This model\'s maximum context length is 8192 tokens", '
                                 b'"type": "invalid_request_error"}}')
        elif Failing.mode == "not-found":
            status, body = 404, b'{"error":"model \\"nomic-embed-text\\" not found, try pulling it first"}'
        elif Failing.mode == "error":
            status, body = 500, b'{"error":"boom"}'
        elif Failing.mode == "slow":
            time.sleep(1.0)
        elif Failing.mode == "not-json":
            body = b'{"embeddings": [[1,2,'
        elif Failing.mode == "dimensions":
            body = json.dumps({"embeddings": [[0.5] * (3 + i) for i in range(len(texts))]}).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client gave up
            self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def failing(monkeypatch):
    Failing.mode, Failing.requests = "ok", []
    Failing.refuse = staticmethod(lambda text: False)
    monkeypatch.setattr(embeddings, "_failing", {}, raising=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _endpoint_findings(root, semantic):
    (root / ".context" / "config.json").write_text(json.dumps({"semantic": semantic}), encoding="utf-8")
    return [f for f in diagnose(root).findings if f.code == "semantic_endpoint"]


@pytest.mark.parametrize(("mode", "words"), [
    ("not-found", ["404", "not found, try pulling it first", "ollama pull nomic-embed-text", "semantic.url"]),
    ("error", ["500", "boom"]),
    ("slow", ["no complete answer within"]),
    ("not-json", ["not JSON"]),
    ("dimensions", ["4 numbers where 3 were expected"]),
])
def test_doctor_probes_the_endpoint_and_says_what_is_wrong(tmp_path, failing, monkeypatch, mode, words):
    monkeypatch.setattr(embeddings, "TIMEOUT_S", 0.3)
    root = tmp_path / "p"
    root.mkdir()
    Service(env={}).init_project(str(root))
    Failing.mode = mode
    found = _endpoint_findings(root, {"enabled": True, "url": failing})
    assert [f.severity for f in found] == ["warning"], found
    assert all(word in found[0].message for word in words), found[0].message
    assert "ranked lexically" in found[0].message
    assert len(Failing.requests) == 1  # one small request


def test_doctor_says_when_nothing_listens_at_the_endpoint(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    root = tmp_path / "p"
    root.mkdir()
    Service(env={}).init_project(str(root))
    found = _endpoint_findings(root, {"enabled": True, "url": f"http://127.0.0.1:{closed}"})
    assert [f.severity for f in found] == ["warning"]
    assert f"127.0.0.1:{closed}" in found[0].message and "ollama serve" in found[0].message


def test_doctor_probes_only_when_the_blend_is_on_and_is_quiet_when_it_answers(tmp_path, failing):
    root = tmp_path / "p"
    root.mkdir()
    Service(env={}).init_project(str(root))
    assert _endpoint_findings(root, {"enabled": False, "url": failing}) == []
    assert Failing.requests == []
    found = _endpoint_findings(root, {"enabled": True, "url": failing})
    assert [f.severity for f in found] == ["info"] and "3 numbers" in found[0].message
    assert diagnose(root).exit_code == 0


def test_a_failing_endpoint_is_left_alone_for_a_while_and_the_answer_says_the_blend_was_skipped(
        tmp_path, failing, caplog):
    Failing.mode = "error"
    svc = _project(tmp_path, {"enabled": True, "url": failing, "weight": 400})
    with caplog.at_level(logging.WARNING, logger="context_keeper.embeddings"):
        answers = [svc.get_context(query=QUERY) for _ in range(5)]
    assert len(Failing.requests) == 3  # three failures in a row, then not asked again meanwhile
    assert all(_ids(a) == _lexical_ids(svc) for a in answers)
    notes = [[w for w in a.get("warnings", []) if "semantic blend" in w] for a in answers]
    assert all(len(n) == 1 and "ranked lexically" in n[0] for n in notes), notes
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_an_endpoint_left_alone_is_asked_again_once_the_pause_is_over(tmp_path, failing, monkeypatch):
    monkeypatch.setattr(embeddings, "BACKOFF_S", 0.0, raising=False)
    Failing.mode = "error"
    svc = _project(tmp_path, {"enabled": True, "url": failing, "weight": 400})
    for _ in range(4):
        svc.get_context(query=QUERY)
    Failing.mode = "ok"
    answer = svc.get_context(query=QUERY, include_related=False)
    assert _ids(answer)[0] == "dec-002" and "warnings" not in answer  # blended again, nothing to say


# ------------------------------------------------------------------ 3. one long entry


LONG = {"summary": "Excise duty is computed per packaged barrel at removal",
        "problem": ("The excise report for packaged beer disagreed with the filing; the reconciliation log follows. "
                    * 220)[:20000],
        "why_chosen": ("Computing duty at removal from the bonded area matches how packaged beer is counted. "
                       * 240)[:20000]}


def test_the_text_sent_for_an_entry_is_capped_and_starts_with_its_title():
    text = embeddings.entry_text(LONG)
    assert len(text) <= embeddings.MAX_TEXT_CHARS < 8191  # under OpenAI's limit even at a token a character
    assert text.startswith(LONG["summary"] + "\n" + LONG["problem"][:100])
    short = {"summary": "Label printers get raw ZPL", "problem": "The spooler dropped jobs.", "tags": ["printing"]}
    assert embeddings.entry_text(short) == "Label printers get raw ZPL\nThe spooler dropped jobs.\nprinting"


def test_one_long_entry_no_longer_fails_every_batch(tmp_path, failing):
    Failing.refuse = staticmethod(lambda text: len(text) > 8191)  # a model's input limit, in characters here
    svc = _project(tmp_path, {"enabled": True, "url": failing, "weight": 400})
    svc.record("decision", LONG)
    answer = svc.get_context(query=QUERY, include_related=False)
    assert _ids(answer)[0] == "dec-002" and "warnings" not in answer  # blended
    cache = json.loads((svc.store().dir / "embeddings.json").read_text(encoding="utf-8"))
    assert {"dec-001", "dec-002", "dec-004"} <= set(cache)  # the long one (dec-004) too, by its first part


def test_an_entry_the_endpoint_refuses_costs_only_its_own_vector(tmp_path, failing):
    Failing.refuse = staticmethod(lambda text: "penny" in text)  # dec-001's text, whatever its length
    svc = _project(tmp_path, {"enabled": True, "url": failing, "weight": 400})
    answer = svc.get_context(query=QUERY, include_related=False)
    assert _ids(answer)[:2] == ["dec-002", "dec-001"]  # blended: dec-001 is lexically first
    cache = json.loads((svc.store().dir / "embeddings.json").read_text(encoding="utf-8"))
    assert set(cache) == {"dec-002"}
    asked = len(Failing.requests)
    svc.get_context(query=QUERY, include_related=False)
    assert len(Failing.requests) - asked == 2  # the query, and the refused entry once more: the others are cached


# ------------------------------------------------------------------ 4. a slow endpoint, a process per prompt


def test_a_slow_endpoint_fills_the_cache_though_each_prompt_is_a_fresh_process(tmp_path, scripted, monkeypatch):
    # 0.3 s a text: a batch of 8 takes 2.4 s against the 2 s a request may take. The halved
    # batch size lived in the process, so a hook (a process per prompt) began at 8 every time
    # and never cached a vector.
    monkeypatch.setattr(embeddings, "BATCH", 8)
    monkeypatch.setattr(embeddings, "_failing", {}, raising=False)
    Scripted.answer = staticmethod(lambda texts: (time.sleep(0.3 * len(texts)), json.dumps(
        {"embeddings": [fake_vector(t) for t in texts]}).encode())[1])
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    path = svc.store().dir / "decisions.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    entries += [{**entries[0], "id": f"dec-{10 + i}", "summary": f"Save files of kind {i} are checked after a kill"}
                for i in range(10)]
    path.write_text(json.dumps(entries), encoding="utf-8")
    cache = svc.store().dir / "embeddings.json"
    answers = []
    for _ in range(3):
        monkeypatch.setattr(embeddings, "_batch_size", {}, raising=False)  # what a new process starts with
        answers.append(svc.get_context(query=QUERY))
        if len(answers) == 1:  # what arrived in the first prompt's time is kept
            assert cache.exists() and len(json.loads(cache.read_text(encoding="utf-8"))) >= 4
    assert "warnings" not in answers[-1]  # blended: every candidate's vector is cached


# ------------------------------------------------------------------ 5. a resolver that hangs


def test_a_host_name_lookup_cannot_hold_a_request_past_its_time(monkeypatch):
    # A resolver that is down: glibc waits its timeout for each attempt and address family
    # (12 s here), and the lookup happened before any limit of ours applied.
    real, release, finished = socket.getaddrinfo, threading.Event(), []

    def hanging(host, *args, **kwargs):
        if host == "embed.corp.example":
            release.wait(5)
            finished.append(host)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    monkeypatch.setenv(config.SEMANTIC_HOSTS_ENV, "embed.corp.example")
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    try:
        with pytest.raises(embeddings.EmbeddingUnavailable, match="time allowed"):
            embeddings.embed(["alpha"], {"url": "http://embed.corp.example:11434"}, timeout=0.3)
        assert finished == []  # given up on while the lookup still hung
    finally:
        release.set()


def test_a_host_name_that_resolves_is_still_connected_to(scripted, monkeypatch):
    monkeypatch.setenv(config.SEMANTIC_HOSTS_ENV, "embed.corp.example")
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, *args, **kwargs: real(
        "127.0.0.1" if host == "embed.corp.example" else host, *args, **kwargs))
    url = scripted.replace("127.0.0.1", "embed.corp.example")
    assert embeddings.embed(["alpha"], {"url": url}) == [fake_vector("alpha")]


# ------------------------------------------------------------------ 6. and 7. config.json


@pytest.mark.parametrize("days", ["1e9", "1e300", "100001"])
def test_a_stale_threshold_past_the_tools_own_bound_is_the_default_with_a_warning(tmp_path, days):
    svc = _project(tmp_path, {"enabled": False})
    (svc.store().dir / "config.json").write_text('{"stale_threshold_days": %s}' % days, encoding="utf-8")
    answer = svc.prune_stale()  # raised OverflowError
    assert answer["stale_count"] == svc.prune_stale(30)["stale_count"]
    assert any('"stale_threshold_days"' in w and "100000" in w and "the default 30" in w
               for w in answer["warnings"]), answer.get("warnings")
    found = [f for f in diagnose(svc.store().root).findings if f.code == "config"]
    assert any("stale_threshold_days" in f.message for f in found)  # doctor said Healthy


def test_the_largest_stale_threshold_the_tool_takes_is_taken_from_config_too(tmp_path):
    svc = _project(tmp_path, {"enabled": False})
    (svc.store().dir / "config.json").write_text('{"stale_threshold_days": 100000}', encoding="utf-8")
    assert "warnings" not in svc.prune_stale()


@pytest.mark.parametrize("text", ["null", " null\n", "[]"])
def test_a_config_json_that_is_not_an_object_is_warned_about_null_too(tmp_path, text):
    svc = _project(tmp_path, {"enabled": False})
    (svc.store().dir / "config.json").write_text(text, encoding="utf-8")
    answer = svc.get_context(query=QUERY)
    assert any("not a JSON object" in w for w in answer.get("warnings", [])), answer.get("warnings")
    assert any("not a JSON object" in f.message for f in diagnose(svc.store().root).findings)
    assert (svc.store().dir / "config.json").read_text(encoding="utf-8") == text  # left as written
