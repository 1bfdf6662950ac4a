"""Semantic-blend and config defects found in round 21's hunt, each test failing before its fix."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from context_keeper import config, embeddings
from tests.test_semantic import SHUTDOWN_POLL, Scripted, fake_vector, scripted  # noqa: F401


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
