"""Optional semantic blend against a local fake embedding server started by the test."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from context_keeper import embeddings
from context_keeper.service import Service

# The fake model maps words to a few "concepts", so texts about the same thing in different
# words get similar vectors, as a real embedding model would.
CONCEPTS = {
    "crash": ("crash", "died", "killed", "power", "battery", "atomic", "interrupted", "torn"),
    "money": ("invoice", "currency", "rounding", "pence", "tax", "billing"),
    "print": ("printer", "label", "zpl", "jam", "print"),
}


def fake_vector(text: str) -> list[float]:
    words = text.lower().replace(".", " ").replace(",", " ").split()
    return [float(sum(w.startswith(stem) for w in words for stem in stems)) + 0.01 for stems in CONCEPTS.values()]


class FakeEmbeddings(BaseHTTPRequestHandler):
    requests: list[tuple[str, int]] = []
    authorizations: list[str | None] = []  # the Authorization header of each request

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"]
        FakeEmbeddings.requests.append((self.path, len(texts)))
        FakeEmbeddings.authorizations.append(self.headers.get("Authorization"))
        if self.path == "/api/embed":
            answer = {"embeddings": [fake_vector(t) for t in texts]}
        elif self.path == "/v1/embeddings":
            assert self.headers.get("Authorization") == "Bearer test-key"
            answer = {"data": [{"index": i, "embedding": fake_vector(t)} for i, t in enumerate(texts)]}
        else:
            self.send_error(404)
            return
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


# How often serve_forever looks for shutdown(): at its default of 0.5 s every test's teardown
# waited up to half a second for the server thread to notice (about 18 s over this file).
SHUTDOWN_POLL = 0.01


@pytest.fixture
def fake_server():
    FakeEmbeddings.requests, FakeEmbeddings.authorizations = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeEmbeddings)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _project(tmp_path, semantic: dict) -> Service:
    root = tmp_path / "p"
    root.mkdir()
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)})
    svc.init_project(str(root))
    (root / ".context" / "config.json").write_text(json.dumps({"semantic": semantic}), encoding="utf-8")
    svc.record("decision", {"summary": "Invoice totals use banker's rounding on the line sum",
                            "problem": "Save files for invoices differed by a penny between the web and the PDF renderer.",
                            "why_chosen": "Rounding once on the line sum with banker's rounding matches the tax authority examples exactly."})
    svc.record("decision", {"summary": "Write the journal to a temp file and rename it into place",
                            "problem": "When the battery died during a save the file on the device was torn and unreadable.",
                            "why_chosen": "An atomic rename means a reader sees the old or the new journal, never a torn one, even if power is cut."})
    svc.record("decision", {"summary": "Label printers get raw ZPL over port 9100",
                            "problem": "The vendor print spooler dropped jobs when a printer jammed and nobody noticed for hours.",
                            "why_chosen": "Sending ZPL directly lets the worker see a failed print at once and retry on the paired printer."})
    return svc


# Lexically closest to dec-001 (shared words), but about a killed save, like dec-002.
QUERY = "save files differed between web and PDF after it was killed"


def _ids(answer):
    return [r["entry"]["id"] for r in answer["results"]]


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_semantic_blend_reranks_towards_the_meaning(tmp_path, fake_server, api, monkeypatch):
    monkeypatch.setenv("FAKE_EMBED_KEY", "test-key")
    svc = _project(tmp_path, {"enabled": True, "url": fake_server + ("/v1" if api == "openai" else ""),
                              "api": api, "api_key_env": "FAKE_EMBED_KEY", "weight": 400})
    lexical = Service(env={"CONTEXT_KEEPER_PROJECT": str(svc.store().root)})
    lexical.config = lambda store: {**store.config()[0], "semantic": {"enabled": False}}
    plain = lexical.get_context(query=QUERY, include_related=False)
    assert _ids(plain)[0] == "dec-001"
    fresh = Service(env={"CONTEXT_KEEPER_PROJECT": str(svc.store().root)})  # index built like lexical's
    answer = fresh.get_context(query=QUERY, include_related=False)
    assert _ids(answer)[0] == "dec-002"
    # the order follows the meaning; the confidence stays the calibrated lexical signal
    assert answer["top_relevance"] == plain["top_relevance"]
    assert answer.get("no_confident_match") == plain.get("no_confident_match")
    relevance = {r["entry"]["id"]: (r["relevance"], r.get("weak_match")) for r in plain["results"]}
    assert {r["entry"]["id"]: (r["relevance"], r.get("weak_match")) for r in answer["results"]} == relevance
    paths = {p for p, _ in FakeEmbeddings.requests}
    assert paths == {"/api/embed" if api == "ollama" else "/v1/embeddings"}


def test_entry_vectors_are_cached_by_content_hash(tmp_path, fake_server):
    svc = _project(tmp_path, {"enabled": True, "url": fake_server, "api": "ollama"})
    svc.get_context(query=QUERY)
    first = list(FakeEmbeddings.requests)
    svc.get_context(query=QUERY)
    second = FakeEmbeddings.requests[len(first):]
    assert second == [("/api/embed", 1)]  # only the query is embedded again
    cache = json.loads((svc.store().dir / "embeddings.json").read_text(encoding="utf-8"))
    assert {"hash", "vec"} <= set(cache["dec-002"])
    svc.update_entry("dec-002", {"summary": "Journal writes go through a temp file and an atomic rename"})
    svc.get_context(query=QUERY)
    assert ("/api/embed", 1) in FakeEmbeddings.requests[len(first) + 1:]


def test_unreachable_endpoint_falls_back_to_lexical_silently(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    svc = _project(tmp_path, {"enabled": True, "url": f"http://127.0.0.1:{closed_port}", "api": "ollama"})
    lexical = Service(env={"CONTEXT_KEEPER_PROJECT": str(svc.store().root)})
    (svc.store().dir / "config.json").write_text("{}", encoding="utf-8")
    expected = _ids(lexical.get_context(query=QUERY))
    (svc.store().dir / "config.json").write_text(json.dumps({"semantic": {
        "enabled": True, "url": f"http://127.0.0.1:{closed_port}", "api": "ollama"}}), encoding="utf-8")
    answer = svc.get_context(query=QUERY)
    assert _ids(answer) == expected
    assert "top_relevance" in answer


def test_mmr_moves_a_near_duplicate_below_a_different_answer(tmp_path):
    from context_keeper import diversity
    from context_keeper.search import Hit

    same = {"summary": "Carrier calls retry with capped exponential backoff and jitter"}
    hits = [
        Hit("decision", {"id": "dec-001", **same}, score=1.0, relevance=1.0),
        Hit("decision", {"id": "dec-002", **same}, score=0.95, relevance=0.95),
        Hit("decision", {"id": "dec-003", "summary": "Rate shopping has a 2.5 second budget per carrier"}, score=0.9, relevance=0.9),
    ]
    assert [h.entry["id"] for h in diversity.mmr(hits, 0.5)] == ["dec-001", "dec-003", "dec-002"]
    assert [h.entry["id"] for h in diversity.mmr(hits, 1.0)] == ["dec-001", "dec-002", "dec-003"]


def test_mmr_setting_is_applied_by_get_context(service, project):
    (project / ".context" / "config.json").write_text(json.dumps({"mmr": {"enabled": True, "lambda": 0.3}}), encoding="utf-8")
    diverse = service.get_context(query="carrier quotes cache", include_related=False)
    plain = Service(env={"CONTEXT_KEEPER_PROJECT": str(project)})
    plain.config = lambda store: {**store.config()[0], "mmr": {"enabled": False}}
    ranked = plain.get_context(query="carrier quotes cache", include_related=False)
    assert _ids(diverse)[0] == _ids(ranked)[0] == "dec-024"
    assert _ids(diverse)[:5] != _ids(ranked)[:5]
    assert "dec-011" in _ids(ranked)[:2] and "dec-011" not in _ids(diverse)[:2]  # the older twin of dec-024


# ---------------------------------------------------------------- an endpoint that misbehaves


class Scripted(BaseHTTPRequestHandler):
    """An /api/embed whose answer body (and delay) each test sets, for the N texts asked."""

    answer = staticmethod(lambda texts: json.dumps({"embeddings": [fake_vector(t) for t in texts]}).encode())
    delay = 0.0
    requests: list[int] = []

    def do_POST(self):  # noqa: N802 - http.server API
        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        Scripted.requests.append(len(texts))
        time.sleep(Scripted.delay)  # the server's thread, not the test's
        data = Scripted.answer(texts)
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client gave up
            self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted():
    Scripted.answer = staticmethod(lambda texts: json.dumps({"embeddings": [fake_vector(t) for t in texts]}).encode())
    Scripted.delay = 0.0
    Scripted.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _raw_server(reply: list[bytes], pause: float = 0.0) -> str:
    """A server that sends ``reply`` as it is, chunk by chunk, ``pause`` seconds apart."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve():
        while True:
            conn, _ = listener.accept()
            with conn, contextlib.suppress(OSError):
                conn.recv(65536)
                for chunk in reply:
                    conn.sendall(chunk)
                    time.sleep(pause)

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}"


def _lexical_ids(svc: Service) -> list[str]:
    lexical = Service(env={"CONTEXT_KEEPER_PROJECT": str(svc.store().root)})
    lexical.config = lambda store: {**store.config()[0], "semantic": {"enabled": False}}
    return _ids(lexical.get_context(query=QUERY))


def _finite_scores(answer) -> bool:
    return all(math.isfinite(r["score"]) for r in answer["results"])


def _vectors(make):
    return lambda texts: json.dumps({"embeddings": [make(i) for i in range(len(texts))]}).encode()


@pytest.mark.parametrize("answer", [
    _vectors(lambda i: "abc"),
    _vectors(lambda i: [None, 1.0, 1.0]),
    _vectors(lambda i: [True, 1.0, 1.0]),
    _vectors(lambda i: []),
    _vectors(lambda i: [1.0, 2.0] if i else [1.0, 2.0, 3.0]),  # two dimensions in one batch
    lambda texts: b'{"embeddings": [' + b",".join([b"[1" + b"0" * 400 + b", 1, 1]"] * len(texts)) + b"]}",
    lambda texts: b'{"embeddings": [' + b",".join([b"[NaN, 1, 1]"] * len(texts)) + b"]}",
    lambda texts: b'{"embeddings": [' + b",".join([b"[Infinity, 1, 1]"] * len(texts)) + b"]}",
    lambda texts: b'{"embeddings": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
], ids=["string", "null", "bool", "empty", "mixed-dimensions", "huge-int", "nan", "infinity", "deep-nesting"])
def test_a_malformed_vector_falls_back_to_lexical(tmp_path, scripted, answer):
    Scripted.answer = staticmethod(answer)
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    got = svc.get_context(query=QUERY)
    assert _ids(got) == _lexical_ids(svc) and _finite_scores(got)
    assert Scripted.requests  # it was asked, and its answer refused
    assert not (svc.store().dir / "embeddings.json").exists()


@pytest.mark.parametrize("rows", [["abc"], [[0.1, 0.2, 0.3]], [None], [{"index": "0", "embedding": [1.0]}, {"index": 1}]])
def test_an_openai_answer_whose_rows_are_not_objects_falls_back_to_lexical(tmp_path, scripted, rows):
    Scripted.answer = staticmethod(lambda texts: json.dumps({"data": rows * len(texts)}).encode())
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "api": "openai", "weight": 400})
    # The fake serves /v1/embeddings with the same handler.
    assert _ids(svc.get_context(query=QUERY)) == _lexical_ids(svc)


@pytest.mark.parametrize("reply", [
    [b"GARBAGE\r\n\r\n"],  # http.client.BadStatusLine
    [b"HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\n{}"],  # IncompleteRead
], ids=["bad-status-line", "short-body"])
def test_a_broken_http_answer_falls_back_to_lexical(tmp_path, reply):
    svc = _project(tmp_path, {"enabled": True, "url": _raw_server(reply), "weight": 400})
    assert _ids(svc.get_context(query=QUERY)) == _lexical_ids(svc)


def test_a_server_trickling_its_answer_cannot_hold_a_query(tmp_path, monkeypatch):
    # A byte every 0.1 s never trips a per-read timeout: the whole answer took 6 s here.
    body = json.dumps({"embeddings": [[1.0, 1.0, 1.0]]}).encode() + b" " * 40
    reply = [b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body), *(body[i:i + 1] for i in range(len(body)))]
    monkeypatch.setattr(embeddings, "QUERY_TIMEOUT_S", 0.5, raising=False)
    svc = _project(tmp_path, {"enabled": True, "url": _raw_server(reply, pause=0.1), "weight": 400})
    expected = _lexical_ids(svc)
    start = time.monotonic()
    answer = svc.get_context(query=QUERY)
    assert time.monotonic() - start < 2.0
    assert _ids(answer) == expected


def test_a_read_begun_just_before_the_deadline_waits_only_for_the_time_left():
    # A byte arrives just inside the request's 2 s, then the next one 1.8 s later: a socket
    # timeout set once at connect would let that read run to 3.6 s.
    url = _raw_server([b"HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\n{", b" ", b" "], pause=1.8)
    start = time.monotonic()
    with pytest.raises(embeddings.EmbeddingUnavailable):
        embeddings.embed(["x"], {"url": url}, timeout=2.0)
    assert time.monotonic() - start < 3.0


def test_a_server_trickling_its_headers_cannot_hold_a_request():
    # The status line and headers are read before any body: a byte every 0.2 s would keep a
    # per-read timeout from ever firing (this reply takes 8 s to send).
    header = b"X-Slow: " + b"a" * 32 + b"\r\n\r\n"
    url = _raw_server([b"HTTP/1.0 200 OK\r\n", *(header[i:i + 1] for i in range(len(header)))], pause=0.2)
    start = time.monotonic()
    with pytest.raises(embeddings.EmbeddingUnavailable, match="time allowed"):
        embeddings.embed(["x"], {"url": url}, timeout=1.0)
    assert time.monotonic() - start < 2.5


def test_one_query_waits_for_all_its_batches_together_at_most_the_query_timeout(tmp_path, scripted, monkeypatch):
    # Each request is quick enough on its own; four of them in a row are not.
    Scripted.delay = 0.3
    monkeypatch.setattr(embeddings, "BATCH", 1)
    monkeypatch.setattr(embeddings, "QUERY_TIMEOUT_S", 0.5, raising=False)
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    expected = _lexical_ids(svc)
    start = time.monotonic()
    answer = svc.get_context(query=QUERY)
    assert time.monotonic() - start < 1.0
    assert _ids(answer) == expected


@pytest.mark.parametrize("url", ["localhost", "192.168.1.5", 5, "http://[::1", "http://localhost:abc", "localhost:11434"])
def test_a_url_no_request_can_go_to_is_a_warning_and_a_lexical_answer(tmp_path, url):
    svc = _project(tmp_path, {"enabled": True, "url": url})
    answer = svc.get_context(query=QUERY)
    assert _ids(answer) == _lexical_ids(svc)
    assert any('"semantic.url"' in w and "http://" in w and "without the semantic blend" in w
               for w in answer.get("warnings", [])), answer.get("warnings")


@pytest.mark.parametrize("weight", ['"1e999"', "true", '"150"', "NaN", "-1"])
def test_an_unusable_weight_is_the_default_with_a_warning(tmp_path, scripted, weight):
    svc = _project(tmp_path, {"enabled": True, "url": scripted})
    default = svc.get_context(query=QUERY)
    (svc.store().dir / "config.json").write_text(
        '{"semantic": {"enabled": true, "url": "%s", "weight": %s}}' % (scripted, weight), encoding="utf-8")
    answer = svc.get_context(query=QUERY)
    assert [(r["entry"]["id"], r["score"]) for r in answer["results"]] == [
        (r["entry"]["id"], r["score"]) for r in default["results"]]
    assert any('"semantic.weight"' in w and "used the default 150" in w for w in answer["warnings"])


def test_a_non_finite_vector_in_the_cache_is_embedded_again(tmp_path, scripted):
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    first = svc.get_context(query=QUERY)
    path = svc.store().dir / "embeddings.json"
    cache = json.loads(path.read_text(encoding="utf-8"))
    for record in cache.values():
        record["vec"] = [float("nan")] * len(record["vec"])
    path.write_text(json.dumps(cache), encoding="utf-8")  # NaN, as json.dumps writes it
    asked = len(Scripted.requests)
    again = svc.get_context(query=QUERY)
    assert [(r["entry"]["id"], r["score"]) for r in again["results"]] == [(r["entry"]["id"], r["score"]) for r in first["results"]]
    assert sum(Scripted.requests[asked:]) == 1 + len(cache)  # the query and every entry again


def test_vectors_whose_cosine_overflows_keep_the_lexical_score(tmp_path, scripted):
    # Finite, but 1e200 squared is inf, and inf/inf is NaN.
    Scripted.answer = staticmethod(_vectors(lambda i: [1e200, 1e200, 1e200]))
    svc = _project(tmp_path, {"enabled": True, "url": scripted})
    assert _finite_scores(svc.get_context(query=QUERY))


def test_cached_vectors_of_another_dimension_are_embedded_again(tmp_path, scripted):
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    svc.get_context(query=QUERY)
    # Another model behind the same name: four numbers, not three. zip() compared only three.
    Scripted.answer = staticmethod(lambda texts: json.dumps({"embeddings": [[*fake_vector(t), 5.0] for t in texts]}).encode())
    asked = len(Scripted.requests)
    svc.get_context(query=QUERY)
    cache = json.loads((svc.store().dir / "embeddings.json").read_text(encoding="utf-8"))
    assert {len(record["vec"]) for record in cache.values()} == {4}
    assert sum(Scripted.requests[asked:]) == 1 + len(cache)


def test_cosine_refuses_vectors_of_different_lengths():
    assert embeddings.cosine([1.0, 0.0], [1.0, 0.0]) == 1.0
    with pytest.raises(ValueError, match="2 and 3 numbers"):
        embeddings.cosine([1.0, 0.0], [1.0, 0.0, 0.0])


def test_another_endpoint_serving_a_model_of_the_same_name_is_embedded_again(tmp_path, scripted, fake_server):
    svc = _project(tmp_path, {"enabled": True, "url": scripted})
    svc.get_context(query=QUERY)
    (svc.store().dir / "config.json").write_text(json.dumps({"semantic": {"enabled": True, "url": fake_server}}),
                                                 encoding="utf-8")
    svc.get_context(query=QUERY)
    assert sum(n for _, n in FakeEmbeddings.requests) > 1  # not only the query


def test_an_embeddings_json_of_the_earlier_format_still_loads(tmp_path, scripted):
    # {id: {"hash", "vec"}} with the hash of the model and text only: its vectors are replaced.
    svc = _project(tmp_path, {"enabled": True, "url": scripted})
    old = {f"dec-00{n}": {"hash": "0123456789abcdef", "vec": [0.1, 0.2, 0.3]} for n in (1, 2, 3)}
    path = svc.store().dir / "embeddings.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    answer = svc.get_context(query=QUERY, include_related=False)
    assert _ids(answer)[0] == "dec-002"  # blended, with the vectors embedded again
    assert json.loads(path.read_text(encoding="utf-8"))["dec-002"]["vec"] != [0.1, 0.2, 0.3]


def test_an_unwritable_cache_still_blends_this_query(tmp_path, scripted, monkeypatch, caplog):
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    store_type = type(svc.store())

    def read_only(self, name, data, **options):
        raise PermissionError(30, "Read-only file system", str(self.dir / name))

    monkeypatch.setattr(store_type, "write_sidecar", read_only)
    with caplog.at_level(logging.WARNING, logger="context_keeper.embeddings"):
        answer = svc.get_context(query=QUERY, include_related=False)
    assert _ids(answer)[0] == "dec-002"  # the blend, with the vectors just embedded
    assert "not written" in caplog.text


def test_a_store_lock_held_elsewhere_cannot_hold_a_query(tmp_path, scripted, monkeypatch, caplog):
    # A writer in another process may hold the lock for seconds (30 s before giving up): the
    # cache is only a cache, so the query does not wait for it past its own time limit.
    from filelock import FileLock

    monkeypatch.setattr(embeddings, "QUERY_TIMEOUT_S", 0.5, raising=False)
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "weight": 400})
    with FileLock(str(svc.store().dir / ".lock")), caplog.at_level(logging.WARNING, logger="context_keeper.embeddings"):
        start = time.monotonic()
        answer = svc.get_context(query=QUERY, include_related=False)
        assert time.monotonic() - start < 2.0
    assert _ids(answer)[0] == "dec-002"  # blended, with the vectors just embedded
    assert "not written" in caplog.text and not (svc.store().dir / "embeddings.json").exists()


def test_vectors_another_process_cached_meanwhile_are_kept(tmp_path, scripted, monkeypatch):
    svc = _project(tmp_path, {"enabled": True, "url": scripted})
    path = svc.store().dir / "embeddings.json"
    original = embeddings.embed

    def and_another_process_writes(texts, *args, **kwargs):
        if len(texts) > 1:  # the entries: another process caches its own meanwhile
            path.write_text(json.dumps({"dec-999": {"hash": "0123456789abcdef", "vec": [1.0, 2.0, 3.0]}}),
                            encoding="utf-8")
        return original(texts, *args, **kwargs)

    monkeypatch.setattr(embeddings, "embed", and_another_process_writes)
    svc.get_context(query=QUERY)
    assert {"dec-999", "dec-001", "dec-002"} <= set(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("value", ['"false"', '"no"', "1"])
def test_only_true_turns_the_semantic_blend_on(tmp_path, scripted, value):
    svc = _project(tmp_path, {"enabled": True, "url": scripted})
    (svc.store().dir / "config.json").write_text('{"semantic": {"enabled": %s, "url": "%s"}}' % (value, scripted),
                                                 encoding="utf-8")
    answer = svc.get_context(query=QUERY)
    assert Scripted.requests == []
    assert any('"semantic.enabled"' in w for w in answer["warnings"])


def test_only_true_turns_mmr_on(service, project):
    plain = service.get_context(query="carrier quotes cache", include_related=False, token_budget=50_000)
    (project / ".context" / "config.json").write_text(json.dumps({"mmr": {"enabled": "false", "lambda": 0.3}}),
                                                      encoding="utf-8")
    answer = service.get_context(query="carrier quotes cache", include_related=False, token_budget=50_000)
    assert _ids(answer) == _ids(plain)
    assert any('"mmr.enabled"' in w for w in answer["warnings"])


@pytest.mark.parametrize("value", [7, -1, '"x"'])
def test_an_mmr_lambda_out_of_range_is_warned_about_and_read_as_the_default(service, project, value):
    # 7 was clamped to 1 (no diversity at all) and "x" read as 0.7, both without a word, where
    # every other setting that breaks its rule is named in the answer's warnings.
    (project / ".context" / "config.json").write_text('{"mmr": {"enabled": true, "lambda": 0.7}}', encoding="utf-8")
    # A budget the matches do not fill: the warning takes its room from the budget too.
    default = service.get_context(query="carrier quotes cache", include_related=False, token_budget=50_000)
    (project / ".context" / "config.json").write_text('{"mmr": {"enabled": true, "lambda": %s}}' % value, encoding="utf-8")
    answer = service.get_context(query="carrier quotes cache", include_related=False, token_budget=50_000)
    assert _ids(answer) == _ids(default)
    assert any('"mmr.lambda"' in w and "used the default 0.7" in w for w in answer["warnings"]), answer.get("warnings")


def test_an_mmr_lambda_is_not_warned_about_while_mmr_is_off(service, project):
    (project / ".context" / "config.json").write_text('{"mmr": {"enabled": false, "lambda": 7}}', encoding="utf-8")
    assert "warnings" not in service.get_context(query="carrier quotes cache")


@pytest.mark.parametrize("api", ["opneai", "", 3])
def test_a_semantic_api_neither_ollama_nor_openai_is_named_in_the_warnings(tmp_path, scripted, api):
    # A typo sent every query to the Ollama path, to fail there and fall back without a word.
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "api": api})
    answer = svc.get_context(query=QUERY)
    assert any('"semantic.api"' in w and "Ollama" in w for w in answer["warnings"]), answer.get("warnings")


@pytest.mark.parametrize("api", ["ollama", "OpenAI"])
def test_a_semantic_api_the_requests_understand_is_not_warned_about(tmp_path, scripted, api):
    if api.lower() == "openai":  # answered in its shape: a failing blend is said in the warnings
        Scripted.answer = staticmethod(lambda texts: json.dumps(
            {"data": [{"index": i, "embedding": fake_vector(t)} for i, t in enumerate(texts)]}).encode())
    svc = _project(tmp_path, {"enabled": True, "url": scripted, "api": api})
    assert "warnings" not in svc.get_context(query=QUERY)
