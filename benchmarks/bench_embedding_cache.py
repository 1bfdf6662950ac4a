"""The semantic blend's cache (``.context/embeddings.json``) on a large store, against a local
fake embedding server: its size, a blended query with every vector cached, and the first query
after an entry changed (one vector embedded again, the cache file rewritten).

    python benchmarks/bench_embedding_cache.py [--entries 3000] [--dim 768]

No network: the endpoint is an HTTP server in this process that answers /api/embed with random
vectors of ``--dim`` numbers (768 is nomic-embed-text's, the default model's, size).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def fake_endpoint(dim: int) -> str:
    class Embed(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server API
            texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
            data = json.dumps({"embeddings": [[random.random() for _ in range(dim)] for _ in texts]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Embed)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=3000)
    parser.add_argument("--dim", type=int, default=768)
    args = parser.parse_args()

    from context_keeper import embeddings
    from context_keeper.service import Service

    semantic = {"enabled": True, "url": fake_endpoint(args.dim)}
    decisions = [{"id": f"dec-{i:03d}", "summary": f"Use the carrier quote cache for shard {i}",
                  "problem": f"Entry {i}: the carrier API throttled us when every cart asked again.",
                  "why_chosen": f"Entry {i}: caching carrier quotes keeps us under the rate limit for a week.",
                  "status": "active", "origin": "agent", "created_at": "2026-01-01T00:00:00+00:00"}
                 for i in range(1, args.entries + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp) / ".context"
        context.mkdir()
        (context / "decisions.json").write_text(json.dumps(decisions), encoding="utf-8")
        (context / "config.json").write_text(json.dumps({"semantic": semantic}), encoding="utf-8")
        svc = Service(env={"CONTEXT_KEEPER_PROJECT": tmp})
        svc.get_context(query="warm up the index")
        # The cache as it is once every entry has been a candidate (over a few hundred queries).
        embeddings.entry_vectors(svc.store(), decisions, semantic, deadline=time.monotonic() + 900, timeout=120)
        size = (context / "embeddings.json").stat().st_size
        print(f"{args.entries} entries x {args.dim} numbers: embeddings.json {size / 2**20:.0f} MB")
        svc.get_context(query="carrier quote cache")
        started = time.monotonic()
        svc.get_context(query="carrier quote cache")
        print(f"blended query, every vector cached: {time.monotonic() - started:.2f} s")
        svc.update_entry("dec-007", {"summary": "Use the carrier quote cache for every shard now"})
        started = time.monotonic()
        svc.get_context(query="carrier quote cache")
        print(f"first blended query after one entry changed: {time.monotonic() - started:.2f} s")


if __name__ == "__main__":
    main()
