"""Semantic-blend defects found in round 16's hunt, each test failing before its fix."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from context_keeper import embeddings
from tests.test_semantic import QUERY, Scripted, _lexical_ids, _project, _ids, fake_vector, scripted  # noqa: F401


def _serve(handler: type[BaseHTTPRequestHandler]) -> str:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_a_redirect_is_not_followed_so_the_key_stays_with_the_endpoint(monkeypatch):
    seen: list[tuple[str, str | None]] = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server API
            seen.append(("GET", self.headers.get("Authorization")))
            data = json.dumps({"embeddings": [[1.0, 2.0, 3.0]]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        do_POST = do_GET  # noqa: N815

        def log_message(self, *args):
            pass

    other = _serve(Elsewhere)

    class Redirecting(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(302)
            self.send_header("Location", other + "/x")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    monkeypatch.setenv("CK_TEST_KEY", "sk-secret")
    with pytest.raises(embeddings.EmbeddingUnavailable, match="not followed"):
        embeddings.embed(["text A"], {"url": _serve(Redirecting), "api_key_env": "CK_TEST_KEY"})
    assert seen == []


@pytest.mark.parametrize("indexes", [[0, 0, 1], [2, 1, 5], [0, 1]])
def test_openai_rows_must_name_each_input_once(scripted, indexes):
    Scripted.answer = staticmethod(lambda texts: json.dumps(
        {"data": [{"index": i, "embedding": fake_vector(str(i))} for i in indexes]}).encode())
    with pytest.raises(embeddings.EmbeddingUnavailable):
        embeddings.embed(["alpha", "beta", "gamma"], {"url": scripted + "/v1", "api": "openai"})


def test_openai_rows_out_of_order_are_put_back_by_index(scripted):
    Scripted.answer = staticmethod(lambda texts: json.dumps(
        {"data": [{"index": i, "embedding": fake_vector(t)} for i, t in reversed(list(enumerate(texts)))]}).encode())
    texts = ["alpha", "beta", "gamma"]
    assert embeddings.embed(texts, {"url": scripted + "/v1", "api": "openai"}) == [fake_vector(t) for t in texts]


def test_an_answer_past_the_size_cap_falls_back(tmp_path, scripted, monkeypatch):
    monkeypatch.setattr(embeddings, "MAX_ANSWER_BYTES", 10_000)
    Scripted.answer = staticmethod(lambda texts: json.dumps(
        {"embeddings": [[0.5] * 4000 for _ in texts]}).encode())
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    assert _ids(svc.get_context(query=QUERY)) == _lexical_ids(svc)


def test_a_vector_longer_than_any_model_gives_is_refused(scripted):
    Scripted.answer = staticmethod(lambda texts: json.dumps(
        {"embeddings": [[0.5] * (embeddings.MAX_DIM + 1) for _ in texts]}).encode())
    with pytest.raises(embeddings.EmbeddingUnavailable, match="at most"):
        embeddings.embed(["alpha"], {"url": scripted})


def test_a_cache_file_nested_too_deep_counts_as_empty(tmp_path, scripted):
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    (svc.store().dir / "embeddings.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    answer = svc.get_context(query=QUERY)
    assert answer["results"]


def _zebra_project(tmp_path, semantic: dict):
    svc = _project(tmp_path, semantic)
    path = svc.store().dir / "decisions.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    entries += [{"id": f"dec-{300 + i}", "summary": f"Zebra crossing rule {i} for the yard",
                 "problem": "zebra crossing yard " * 5, "why_chosen": f"zebra crossings variant {i} " * 5,
                 "tags": ["zebra"], "created_at": "2025-01-01T00:00:00+00:00"} for i in range(120)]
    path.write_text(json.dumps(entries), encoding="utf-8")
    return svc


@pytest.mark.parametrize("up", [True, False], ids=["endpoint-up", "endpoint-down"])
def test_the_blend_keeps_the_confident_matches_past_fifty_as_the_lexical_answer_does(tmp_path, scripted, up):
    url = scripted if up else "http://127.0.0.1:9"
    svc = _zebra_project(tmp_path, {"enabled": True, "url": url, "weight": 400})
    answer = svc.get_context(query="zebra crossing", token_budget=100_000)
    zebras = [r for r in answer["results"] if r["entry"]["summary"].startswith("Zebra")]
    assert len(zebras) == 120 and "omitted" not in answer


def test_a_listing_by_filters_is_not_reordered_by_the_blend(tmp_path, scripted):
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    lexical = type(svc)(env={"CONTEXT_KEEPER_PROJECT": str(svc.store().root)})
    lexical.config = lambda store: {**store.config()[0], "semantic": {"enabled": False}}
    blended = svc.get_context(query="the", types=["decisions"])
    assert _ids(blended) == _ids(lexical.get_context(query="the", types=["decisions"]))
    assert Scripted.requests == []  # nothing was embedded for a listing


def test_a_warm_server_reads_the_cache_again_only_when_it_changed(tmp_path, scripted, monkeypatch):
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    svc.get_context(query=QUERY)  # fills the cache
    path = svc.store().dir / "embeddings.json"
    assert "\n " not in path.read_text(encoding="utf-8")  # compact: no number on a line of its own
    reads: list[str] = []
    real = type(svc.store()).read_sidecar
    monkeypatch.setattr(type(svc.store()), "read_sidecar", lambda self, name: reads.append(name) or real(self, name))
    first = svc.get_context(query=QUERY)
    assert reads == [] and first["results"]
    cache = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({k: v for k, v in list(cache.items())[1:]}), encoding="utf-8")  # one record gone
    svc.get_context(query=QUERY)
    assert "embeddings.json" in reads  # a changed file is read again


def test_an_endpoint_too_slow_for_a_whole_batch_still_fills_the_cache(tmp_path, scripted, monkeypatch):
    import time

    # 0.3 s a text: a batch of 8 takes 2.4 s against the 2 s a request may take, so with a fixed
    # batch no vector was ever cached and every query paid the wait for nothing. Halved, a batch
    # of 4 takes 1.2 s.
    monkeypatch.setattr(embeddings, "BATCH", 8)
    monkeypatch.setattr(embeddings, "QUERY_TIMEOUT_S", 3.0)
    monkeypatch.setattr(embeddings, "_batch_size", {}, raising=False)
    Scripted.answer = staticmethod(lambda texts: (time.sleep(0.3 * len(texts)), json.dumps(
        {"embeddings": [fake_vector(t) for t in texts]}).encode())[1])
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    path = svc.store().dir / "decisions.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    entries += [{**entries[0], "id": f"dec-{10 + i}", "summary": f"Save files of kind {i} are checked after a kill"}
                for i in range(12)]
    path.write_text(json.dumps(entries), encoding="utf-8")
    cache = svc.store().dir / "embeddings.json"
    for _ in range(3):
        svc.get_context(query=QUERY)
    assert cache.exists() and len(json.loads(cache.read_text(encoding="utf-8"))) >= 4
