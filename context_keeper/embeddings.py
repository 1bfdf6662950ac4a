"""Optional semantic blend: embeddings from Ollama or any OpenAI-compatible endpoint.

Off by default (``semantic.enabled``). Entry vectors are cached in ``.context/embeddings.json``
as ``{id: {"hash", "vec"}}`` keyed by a hash of the model and the entry text, so only new or
changed entries are embedded, in batches. Any failure — endpoint down, slow, malformed answer —
falls back silently to the lexical ranking: retrieval must never depend on a network service.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import math
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger("context_keeper.embeddings")

CACHE_FILE = "embeddings.json"
TIMEOUT_S = 2.0  # the most one request may take, from connecting to the last byte
QUERY_TIMEOUT_S = 5.0  # the most one get_context waits for embeddings, over all its requests
BATCH = 32
_CHUNK = 65536
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


def _source(settings: Mapping[str, Any]) -> tuple[str, str, str]:
    """The api, base URL and model ``settings`` name, as requests use them."""
    return (str(settings.get("api") or "ollama").lower(), str(settings.get("url") or "http://localhost:11434").rstrip("/"),
            str(settings.get("model") or "nomic-embed-text"))


def _left(deadline: float, url: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise EmbeddingUnavailable(f"{url}: no complete answer in the time allowed")
    return left


def _post(url: str, payload: dict[str, Any], headers: dict[str, str], deadline: float) -> Any:
    """The JSON answer to one POST, received in full by ``deadline`` (``time.monotonic()``).
    A socket timeout bounds only each read, so a server trickling its answer byte by byte
    would never trip it: the body is read in chunks against the deadline instead."""
    try:
        request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"),
                                         headers={"Content-Type": "application/json", **headers}, method="POST")
        with urllib.request.urlopen(request, timeout=_left(deadline, url)) as response:  # noqa: S310 - user-configured URL
            body = bytearray()
            while chunk := response.read1(_CHUNK):
                body += chunk
                _left(deadline, url)
        return json.loads(body.decode("utf-8"))
    # HTTPException: a bad status line, a body cut short (IncompleteRead), an invalid URL;
    # RecursionError: JSON nested deeper than the parser goes.
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError, RecursionError) as exc:
        raise EmbeddingUnavailable(f"{url}: {exc!r}") from exc


def _vector(value: Any) -> list[float] | None:
    """``value`` as a vector: a non-empty list of finite real numbers, else None."""
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        return None
    try:
        vec = [float(x) for x in value]
    except OverflowError:  # an int too big for a float
        return None
    return vec if all(map(math.isfinite, vec)) else None


def embed(texts: Sequence[str], settings: Mapping[str, Any], timeout: float = TIMEOUT_S, *,
          deadline: float | None = None, dim: int | None = None) -> list[list[float]]:
    """Vectors for ``texts`` (batched), each a non-empty list of finite floats, all of one
    length (``dim`` when given). Raises EmbeddingUnavailable on any failure: a bad
    ``semantic.url``, a request not answered in full within ``timeout`` seconds, the batches
    not all answered by ``deadline`` (``time.monotonic()``), an answer of any other shape."""
    api, base, model = _source(settings)
    headers = {}
    key_env = settings.get("api_key_env")
    if key_env and os.environ.get(str(key_env)):
        headers["Authorization"] = f"Bearer {os.environ[str(key_env)]}"
    vectors: list[list[float]] = []
    for start in range(0, len(texts), BATCH):
        batch = list(texts[start : start + BATCH])
        stop = time.monotonic() + timeout
        stop = stop if deadline is None else min(stop, deadline)
        if api == "openai":
            url = base + ("/embeddings" if base.endswith("/v1") else "/v1/embeddings")
            answer = _post(url, {"model": model, "input": batch}, headers, stop)
            rows = answer.get("data") if isinstance(answer, dict) else None
            if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
                raise EmbeddingUnavailable(f"unexpected answer from {url}: \"data\" is not a list of objects")
            try:
                rows = sorted(rows, key=lambda row: row.get("index", 0))
            except TypeError as exc:  # indexes that do not compare, such as 1 and "2"
                raise EmbeddingUnavailable(f"unexpected answer from {url}: {exc}") from exc
            got = [row.get("embedding") for row in rows]
        else:
            url = base + "/api/embed"
            answer = _post(url, {"model": model, "input": batch}, headers, stop)
            got = answer.get("embeddings") if isinstance(answer, dict) else None
        if not isinstance(got, list) or len(got) != len(batch):
            raise EmbeddingUnavailable(f"{url} returned {len(got) if isinstance(got, list) else 'no'} vectors for {len(batch)} texts")
        for value in got:
            vec = _vector(value)
            if vec is None:
                raise EmbeddingUnavailable(f"{url} returned a vector that is not a list of finite numbers")
            dim = len(vec) if dim is None else dim
            if len(vec) != dim:
                raise EmbeddingUnavailable(f"{url} returned vectors of {len(vec)} numbers where {dim} were expected")
            vectors.append(vec)
    return vectors


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def entry_vectors(store: Any, entries: Sequence[Mapping[str, Any]], settings: Mapping[str, Any], *,
                  deadline: float | None = None, timeout: float = TIMEOUT_S) -> dict[str, list[float]]:
    """Cached vectors for ``entries``, embedding (and caching) only what is new or changed
    (``embed``'s ``timeout`` and ``deadline``)."""
    model = str(settings.get("model") or "")
    with _cache_lock:
        cache = store.read_sidecar(CACHE_FILE)
        cache = cache if isinstance(cache, dict) else {}
        wanted = {e["id"]: _hash(model, entry_text(e)) for e in entries}
        missing = [e for e in entries if not isinstance(cache.get(e["id"]), dict) or cache[e["id"]].get("hash") != wanted[e["id"]]]
        if missing:
            vectors = embed([entry_text(e) for e in missing], settings, timeout, deadline=deadline)
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
