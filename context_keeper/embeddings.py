"""Optional semantic blend: embeddings from Ollama or any OpenAI-compatible endpoint.

Off by default (``semantic.enabled``). Entry vectors are cached in ``.context/embeddings.json``
as ``{id: {"hash", "vec"}}`` keyed by a hash of the model and the entry text, so only new or
changed entries are embedded, in batches. Any failure — endpoint down, slow, malformed answer —
falls back silently to the lexical ranking: retrieval must never depend on a network service.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger("context_keeper.embeddings")

CACHE_FILE = "embeddings.json"
TIMEOUT_S = 2.0
BATCH = 32
_TEXT_FIELDS = ("summary", "name", "rule", "problem", "why_chosen", "purpose", "reason", "when_to_invoke")
_cache_lock = threading.Lock()


class EmbeddingUnavailable(Exception):
    """The endpoint could not produce embeddings; callers fall back to lexical ranking."""


def entry_text(entry: Mapping[str, Any]) -> str:
    parts = [str(entry.get(f) or "") for f in _TEXT_FIELDS]
    parts += [str(t) for t in entry.get("tags") or []]
    return "\n".join(p for p in parts if p)


def _hash(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\n{text}".encode("utf-8")).hexdigest()[:16]


def _post(url: str, payload: dict[str, Any], headers: dict[str, str], timeout: float) -> Any:
    request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"),
                                     headers={"Content-Type": "application/json", **headers}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - user-configured URL
            return json.loads(response.read().decode("utf-8"))
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        raise EmbeddingUnavailable(f"{url}: {exc}") from exc


def embed(texts: Sequence[str], settings: Mapping[str, Any], timeout: float = TIMEOUT_S) -> list[list[float]]:
    """Vectors for ``texts`` (batched); raises EmbeddingUnavailable on any failure."""
    api = str(settings.get("api") or "ollama").lower()
    base = str(settings.get("url") or "http://localhost:11434").rstrip("/")
    model = str(settings.get("model") or "nomic-embed-text")
    headers = {}
    key_env = settings.get("api_key_env")
    if key_env and os.environ.get(str(key_env)):
        headers["Authorization"] = f"Bearer {os.environ[str(key_env)]}"
    vectors: list[list[float]] = []
    for start in range(0, len(texts), BATCH):
        batch = list(texts[start : start + BATCH])
        if api == "openai":
            url = base + ("/embeddings" if base.endswith("/v1") else "/v1/embeddings")
            answer = _post(url, {"model": model, "input": batch}, headers, timeout)
            try:
                rows = sorted(answer["data"], key=lambda row: row.get("index", 0))
                got = [row["embedding"] for row in rows]
            except (KeyError, TypeError) as exc:
                raise EmbeddingUnavailable(f"unexpected answer from {url}") from exc
        else:
            url = base + "/api/embed"
            answer = _post(url, {"model": model, "input": batch}, headers, timeout)
            got = answer.get("embeddings") if isinstance(answer, dict) else None
        if not isinstance(got, list) or len(got) != len(batch):
            raise EmbeddingUnavailable(f"{url} returned {len(got) if isinstance(got, list) else 'no'} vectors for {len(batch)} texts")
        vectors.extend([float(x) for x in vec] for vec in got)
    return vectors


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def entry_vectors(store: Any, entries: Sequence[Mapping[str, Any]], settings: Mapping[str, Any]) -> dict[str, list[float]]:
    """Cached vectors for ``entries``, embedding (and caching) only what is new or changed."""
    model = str(settings.get("model") or "")
    with _cache_lock:
        cache = store.read_sidecar(CACHE_FILE)
        cache = cache if isinstance(cache, dict) else {}
        wanted = {e["id"]: _hash(model, entry_text(e)) for e in entries}
        missing = [e for e in entries if not isinstance(cache.get(e["id"]), dict) or cache[e["id"]].get("hash") != wanted[e["id"]]]
        if missing:
            vectors = embed([entry_text(e) for e in missing], settings)
            for entry, vec in zip(missing, vectors):
                cache[entry["id"]] = {"hash": wanted[entry["id"]], "vec": vec}
            store.write_sidecar(CACHE_FILE, cache)
        return {i: cache[i]["vec"] for i in wanted if i in cache}


def blend_weight(settings: Mapping[str, Any]) -> float:
    """Share of the semantic signal in the blended relevance: weight/(weight+100) (150 → 0.6)."""
    try:
        weight = float(settings.get("weight", 150))
    except (TypeError, ValueError):
        weight = 150.0
    weight = max(weight, 0.0)
    return weight / (weight + 100.0)
