"""Optional semantic blend against a local fake embedding server started by the test."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

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

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"]
        FakeEmbeddings.requests.append((self.path, len(texts)))
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


@pytest.fixture
def fake_server():
    FakeEmbeddings.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeEmbeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
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
