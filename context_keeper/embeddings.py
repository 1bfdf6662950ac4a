"""Optional semantic blend: embeddings from Ollama or any OpenAI-compatible endpoint.

Off by default (``semantic.enabled``). Entry vectors are cached in ``.context/embeddings.json``
as ``{id: {"hash", "vec"}}`` keyed by a hash of the api, URL, model and entry text, so only new
or changed entries are embedded, in batches. Any failure — endpoint down, slow, malformed answer —
falls back to the lexical ranking (the answer's warnings say so): retrieval must never depend on a
network service. ``probe`` is doctor's check of the endpoint.
The key ``semantic.api_key_env`` names is never sent over plain http to another machine, and
nothing at all (no text, no key) goes to a host other than this machine unless the user allows it
in ``CONTEXT_KEEPER_SEMANTIC_HOSTS`` (``config.unapproved_host``): config.json is committed.
An endpoint on this machine is asked directly, never through a proxy of the environment.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import logging
import math
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from context_keeper import config
from context_keeper.errors import StoreError
from context_keeper.lines import counted

log = logging.getLogger("context_keeper.embeddings")

CACHE_FILE = "embeddings.json"
TIMEOUT_S = 2.0  # the most one request may take, from connecting to the last byte
QUERY_TIMEOUT_S = 5.0  # the most one get_context waits for embeddings, over all its requests
BATCH = 32
_CHUNK = 65536
# An answer of 32 vectors of a few thousand numbers is a few MB; one far larger is no
# embedding answer (or a body that never ends) and would only fill memory until the deadline.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
MAX_DIM = 16_384  # numbers per vector: the largest embedding models give a few thousand
# The most text sent for one entry. OpenAI's embedding models take at most 8,191 tokens an
# input and refuse a longer one (400), failing its whole batch; a token is rarely under one
# character and almost never under half of one, so 4,000 characters fit with room to spare. The
# title and the start of the problem, which lead the text, carry what an embedding captures.
MAX_TEXT_CHARS = 4000
# Statuses for an input the endpoint will not take (too long for the model, say): the rest of
# its batch is asked again without it (entry_vectors).
REFUSED_INPUT = (400, 413, 422)
_TEXT_FIELDS = ("summary", "name", "rule", "problem", "why_chosen", "purpose", "reason", "when_to_invoke")


class EmbeddingUnavailable(Exception):
    """The endpoint could not produce embeddings; callers fall back to lexical ranking."""

    timed_out = False  # no complete answer in the time allowed (else an error or a bad answer)
    status: int | None = None  # the HTTP status of an error answer
    said = ""  # the start of an error answer's body: the server's own words


class _TimedOut(EmbeddingUnavailable):
    timed_out = True


def entry_text(entry: Mapping[str, Any]) -> str:
    parts = [str(entry.get(f) or "") for f in _TEXT_FIELDS]
    parts += [str(t) for t in entry.get("tags") or []]
    return "\n".join(p for p in parts if p)[:MAX_TEXT_CHARS]


def _hash(source: str, text: str) -> str:
    return hashlib.sha256(f"{source}\n{text}".encode("utf-8")).hexdigest()[:16]


def _source(settings: Mapping[str, Any]) -> tuple[str, str, str]:
    """The api, base URL and model ``settings`` name, as requests use them."""
    default = config.DEFAULTS["semantic"]
    return (str(settings.get("api") or default["api"]).lower(), str(settings.get("url") or default["url"]).rstrip("/"),
            str(settings.get("model") or default["model"]))


def _left(deadline: float, url: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise EmbeddingUnavailable(f"{url}: no complete answer in the time allowed")
    return left


def _resolve(host: str, port: int, deadline: float) -> list[Any]:
    """``getaddrinfo`` for a connection, given up on at ``deadline``: a resolver that is down
    holds the lookup in the C library for its timeout per attempt and address family (12 s was
    seen), which neither a socket timeout nor the watchdog reaches, so it runs in a thread of
    its own, left to finish unwaited for."""
    found: list[Any] = []

    def look_up() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)

    lookup = threading.Thread(target=look_up, daemon=True)
    lookup.start()
    lookup.join(max(0.0, deadline - time.monotonic()))
    if not found:
        raise _TimedOut(f"{host}: the host name was not looked up in the time allowed")
    if isinstance(found[0], OSError):
        raise found[0]
    return found[0]


def _connect(address: tuple[str, int], timeout: float, deadline: float) -> socket.socket:
    """``socket.create_connection`` with the name lookup bounded by ``deadline`` (``_resolve``)."""
    failure: OSError = OSError(f"no address for {address[0]}")
    for family, kind, proto, _, where in _resolve(*address, deadline):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(min(timeout, max(0.001, deadline - time.monotonic())))
            sock.connect(where)
            return sock
        except OSError as exc:
            sock.close()
            failure = exc
    raise failure


class _Watched:
    """An HTTP(S) handler that keeps the socket of each connection it opens, so a watchdog can
    cut it (the response holds it on, once the connection object has let it go), and that looks
    up the host name within the request's time (``_connect``)."""

    def __init__(self, sockets: list[socket.socket], deadline: float, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sockets, self.deadline = sockets, deadline

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        def connection(*args: Any, **kw: Any) -> http.client.HTTPConnection:
            conn = http_class(*args, **kw)
            conn._create_connection = lambda address, timeout, source=None: _connect(address, timeout, self.deadline)
            connect = conn.connect

            def connect_and_keep() -> None:
                connect()
                self.sockets.append(conn.sock)
                if time.monotonic() >= self.deadline:  # the watchdog fired while connecting
                    _cut([conn.sock])

            conn.connect = connect_and_keep
            return conn

        return super().do_open(connection, req, **kwargs)  # type: ignore[misc]


class _WatchedHTTP(_Watched, urllib.request.HTTPHandler):
    pass


class _WatchedHTTPS(_Watched, urllib.request.HTTPSHandler):
    pass


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an error, not followed: urllib would send the Authorization header to the
    other host (over plain HTTP too), and turn the POST into a GET whose answer it would then
    take for the vectors of texts never sent."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[override]
        raise urllib.error.HTTPError(req.full_url, code, f"redirected to {newurl}: not followed", headers, fp)


def _proxies(url: str) -> dict[str, str]:
    """The proxies a request to ``url`` goes through: those of the environment (``https_proxy``,
    ``no_proxy``, ...), as urllib reads them, except for an endpoint on this machine, asked
    directly as curl and requests ask ``localhost``: through a proxy, the text and key meant for a
    local Ollama went to another machine, the key in cleartext. (A key never goes over plain http
    to another machine at all, ``_key_header``; to an https one through a proxy, it goes inside
    the TLS tunnel.)"""
    from urllib.parse import urlsplit

    return {} if config.loopback(urlsplit(url).hostname or "") else urllib.request.getproxies()


def _cut(sockets: Sequence[socket.socket]) -> None:
    # shutdown, not close: it wakes a read blocked in another thread (close does not).
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _post(url: str, payload: dict[str, Any], headers: dict[str, str], deadline: float) -> Any:
    """The JSON answer to one POST, received in full by ``deadline`` (``time.monotonic()``).
    A socket timeout bounds only each read, so a server trickling its status line, headers or
    body byte by byte would never trip it: a watchdog cuts the connection at the deadline."""
    sockets: list[socket.socket] = []
    watchdog = threading.Timer(_left(deadline, url), _cut, (sockets,))
    watchdog.daemon = True
    try:
        request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"),
                                         headers={"Content-Type": "application/json", **headers}, method="POST")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler(_proxies(url)),
                                             _WatchedHTTP(sockets, deadline), _WatchedHTTPS(sockets, deadline),
                                             _NoRedirects())
        watchdog.start()
        with opener.open(request, timeout=_left(deadline, url)) as response:
            body = bytearray()
            while chunk := response.read1(_CHUNK):
                body += chunk
                if len(body) > MAX_ANSWER_BYTES:
                    raise EmbeddingUnavailable(f"{url}: the answer is over {MAX_ANSWER_BYTES} bytes")
            _left(deadline, url)  # a cut connection reads as the end of the answer
            if response.length:
                raise EmbeddingUnavailable(f"{url}: the answer ended {counted(response.length, 'byte')} short")
        return json.loads(body.decode("utf-8"))
    # HTTPException: a bad status line, a body cut short (IncompleteRead), an invalid URL;
    # RecursionError: JSON nested deeper than the parser goes.
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError, RecursionError) as exc:
        if time.monotonic() >= deadline:
            raise _TimedOut(f"{url}: no complete answer in the time allowed") from exc
        failure = EmbeddingUnavailable(f"{url}: {exc!r}")
        if isinstance(exc, urllib.error.HTTPError):
            failure.status = exc.code
            # Read while the watchdog still runs: "model not found, try pulling it first" is the fix.
            with contextlib.suppress(OSError, http.client.HTTPException):
                failure.said = " ".join(exc.read(300).decode("utf-8", "replace").split())
        raise failure from exc
    finally:
        watchdog.cancel()


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


def _key_header(settings: Mapping[str, Any]) -> dict[str, str]:
    """The Authorization header for the key ``api_key_env`` names (none when it names none or an
    unset variable). Refuses any request to a host the user has not allowed (config.unapproved_host),
    and to carry the key over plain http to another machine (config.cleartext_key): retrieval's
    warnings say so, and this is the one place a key leaves the process."""
    refused = config.unapproved_host_problem(dict(settings), os.environ, "no request was sent")
    if refused is not None:
        raise EmbeddingUnavailable(refused)
    if config.cleartext_key(dict(settings)) is not None:
        raise EmbeddingUnavailable(config.cleartext_key_problem(dict(settings), "no request was sent"))
    key_env = settings.get("api_key_env")
    if key_env and os.environ.get(str(key_env)):
        return {"Authorization": f"Bearer {os.environ[str(key_env)]}"}
    return {}


def embed(texts: Sequence[str], settings: Mapping[str, Any], timeout: float = TIMEOUT_S, *,
          deadline: float | None = None, dim: int | None = None) -> list[list[float]]:
    """Vectors for ``texts`` (batched), each a non-empty list of finite floats, all of one
    length (``dim`` when given). Raises EmbeddingUnavailable on any failure: a bad
    ``semantic.url``, a request not answered in full within ``timeout`` seconds, the batches
    not all answered by ``deadline`` (``time.monotonic()``), an answer of any other shape."""
    api, base, model = _source(settings)
    headers = _key_header(settings)
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
            indexes = [row.get("index") for row in rows]
            if all(i is None for i in indexes):
                pass  # no index at all: in the order of the input, as the API returns them
            # Numbers sorted as numbers (as text, 10 came before 2: every batch over ten texts
            # was refused); anything else after them, where it fails the comparison.
            elif sorted(indexes, key=lambda i: (0, i, "") if type(i) is int else (1, 0, str(i))) != list(range(len(rows))):
                # Each input exactly once, by its position: a row paired with another text
                # would rank by the wrong vector and never fall back.
                raise EmbeddingUnavailable(f"unexpected answer from {url}: \"index\" is not each input's position once")
            else:
                rows = sorted(rows, key=lambda row: row["index"])
            got = [row.get("embedding") for row in rows]
        else:
            url = base + "/api/embed"
            answer = _post(url, {"model": model, "input": batch}, headers, stop)
            got = answer.get("embeddings") if isinstance(answer, dict) else None
        if not isinstance(got, list) or len(got) != len(batch):
            returned = counted(len(got), "vector") if isinstance(got, list) else "no vectors"
            raise EmbeddingUnavailable(f"{url} returned {returned} for {counted(len(batch), 'text')}")
        for value in got:
            vec = _vector(value)
            if vec is not None and len(vec) > MAX_DIM:
                raise EmbeddingUnavailable(f"{url} returned a vector of {len(vec)} numbers (at most {MAX_DIM} taken)")
            if vec is None:
                raise EmbeddingUnavailable(f"{url} returned a vector that is not a list of finite numbers")
            dim = len(vec) if dim is None else dim
            if len(vec) != dim:
                raise EmbeddingUnavailable(f"{url} returned vectors of {counted(len(vec), 'number')} where {dim} were expected")
            vectors.append(vec)
    return vectors


FAILURES_BEFORE_BACKOFF = 3  # queries in a row whose embedding failed, before the endpoint is left alone
BACKOFF_S = 60.0  # how long it is then left alone: a down endpoint cost every query up to 2 s

# Per endpoint and model: queries in a row whose embedding failed, and until when (monotonic) it is
# not asked. A long-running server's state; a hook's process starts afresh.
_failing: dict[str, tuple[int, float]] = {}


def query_vector(text: str, settings: Mapping[str, Any], deadline: float) -> list[float]:
    """The vector of a question (``embed``), unless the endpoint failed FAILURES_BEFORE_BACKOFF
    queries in a row: then it is not asked for BACKOFF_S seconds (EmbeddingUnavailable at once),
    and asked again after that; one answer ends the pause. Said once, at WARNING, when a pause
    begins after an answer."""
    source = "\n".join(_source(settings))
    failures, until = _failing.get(source, (0, 0.0))
    if time.monotonic() < until:
        raise EmbeddingUnavailable(f"{_source(settings)[1]} failed {failures} queries in a row, so it is not asked "
                                   f"for {until - time.monotonic():.0f} s more")
    try:
        vec = embed([text], settings, deadline=deadline)[0]
    except EmbeddingUnavailable as exc:
        failures += 1
        if failures >= FAILURES_BEFORE_BACKOFF:
            if failures == FAILURES_BEFORE_BACKOFF:
                log.warning("semantic blend: %s failed %d queries in a row (last: %s); it is asked again in %g s, "
                            "and answers are ranked lexically meanwhile. `context-keeper doctor` says what to fix",
                            _source(settings)[1], failures, exc, BACKOFF_S)
            until = time.monotonic() + BACKOFF_S
        _failing[source] = (failures, until)
        raise
    _failing.pop(source, None)
    return vec


def probe(settings: Mapping[str, Any]) -> tuple[str | None, str]:
    """Ask the endpoint for two short texts' vectors, in one request within TIMEOUT_S, for doctor:
    ``(None, what answered)`` when it gives embeddings, else ``(what is wrong and what to fix, "")``."""
    api, base, model = _source(settings)
    try:
        vectors = embed(["context-keeper doctor", "a probe of the embedding endpoint"], settings, TIMEOUT_S)
    except EmbeddingUnavailable as exc:
        return _what_failed(exc, api, base, model), ""
    return None, f"{base} answered with vectors of {len(vectors[0])} numbers ({api} API, model {model})"


def _what_failed(exc: EmbeddingUnavailable, api: str, base: str, model: str) -> str:
    """``exc`` in words that say what to fix."""
    from urllib.parse import urlsplit

    said = f" (the server said: {exc.said})" if exc.said else ""
    if exc.timed_out:
        return (f"{base} gave no complete answer within {TIMEOUT_S:g} s, the most one request may take: the server "
                "is overloaded, or the model is still loading or too slow on this machine")
    if exc.status == 404:
        pull = f" (Ollama: `ollama pull {model}`)" if api != "openai" else ""
        return (f"{base} answered 404 Not Found{said}: the model {model} (semantic.model) is not there{pull}, or "
                f"semantic.url or semantic.api does not fit the server (semantic.url is its base, such as "
                "http://localhost:11434 for Ollama or https://api.openai.com/v1 for the OpenAI API)")
    if exc.status in (401, 403):
        return (f"{base} refused the request with {exc.status}{said}: the key is missing or wrong "
                "(semantic.api_key_env names the environment variable that holds it)")
    if exc.status is not None:
        return f"{base} answered HTTP {exc.status}{said}: see the embedding server's log"
    cause = exc.__cause__
    reason = cause.reason if isinstance(cause, urllib.error.URLError) else cause
    where = urlsplit(base).netloc
    if isinstance(reason, ConnectionRefusedError):
        return (f"nothing accepts connections at {where}: start the embedding server (Ollama: `ollama serve`), or set "
                "semantic.url to where it listens")
    if isinstance(reason, socket.gaierror):
        return f"the host name in {base} does not resolve ({reason.strerror}): check semantic.url"
    if isinstance(reason, OSError):
        return f"{where} could not be reached ({reason}): check semantic.url and the network"
    if isinstance(cause, (ValueError, RecursionError, http.client.HTTPException)):
        return (f"{base} answered with something that is not JSON embeddings ({cause.__class__.__name__}): "
                "semantic.url may name another service, or semantic.api the other API")
    return f"{base} answered, but not with usable embeddings: {exc}"


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        # zip would compare the first numbers of two different models' vectors
        raise ValueError(f"vectors of {len(a)} and {len(b)} numbers cannot be compared")
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _cached(record: Any, digest: str, dim: int | None) -> list[float] | None:
    """The vector of a cache record made from the same text and source, or None. A record is
    hand-editable JSON from an older version or another model: anything but a finite vector of
    the query's length counts as missing, and is embedded again."""
    if not isinstance(record, dict) or record.get("hash") != digest:
        return None
    vec = _vector(record.get("vec"))
    return vec if vec is not None and (dim is None or len(vec) == dim) else None


def entry_vectors(store: Any, entries: Sequence[Mapping[str, Any]], settings: Mapping[str, Any], *,
                  dim: int | None = None, deadline: float | None = None,
                  timeout: float = TIMEOUT_S) -> dict[str, list[float]]:
    """Vectors for ``entries`` by id, of ``dim`` numbers when given: cached ones where the
    entry's text and the api, URL and model are unchanged, the rest embedded (``embed``'s
    ``timeout`` and ``deadline``) and cached. An entry the endpoint refuses on its own (a
    REFUSED_INPUT status) gets no vector. Raises EmbeddingUnavailable when not all the others can
    be had; the batches embedded before the failure are cached all the same, so a cold cache that
    takes longer than one query allows fills over the next ones."""
    api, base, model = _source(settings)
    source = f"{api}\n{base}\n{model}"
    cache = _read_cache(store)
    wanted = {e["id"]: _hash(source, entry_text(e)) for e in entries}
    found = {}
    for entry_id, digest in wanted.items():
        vec = _cached(cache.get(entry_id), digest, dim)
        if vec is not None:
            found[entry_id] = vec
    missing = [e for e in entries if e["id"] not in found]
    fresh: dict[str, dict[str, Any]] = {}
    size = _batch_size_for(store, source)
    batches = [missing[start : start + size] for start in range(0, len(missing), size)]
    try:
        while batches:
            batch = batches.pop(0)
            try:
                vectors = embed([entry_text(e) for e in batch], settings, timeout, deadline=deadline, dim=dim)
            except EmbeddingUnavailable as exc:
                if exc.status in REFUSED_INPUT:
                    # One text the endpoint will not take failed its whole batch on every query,
                    # and nothing was cached: halves are asked until it stands alone, without a
                    # vector. (The query's own vector came first: the endpoint takes requests.)
                    if len(batch) > 1:
                        batches[:0] = [batch[: len(batch) // 2], batch[len(batch) // 2 :]]
                    else:
                        log.info("entry %s not embedded, the endpoint refused its text: %s", batch[0]["id"], exc)
                    continue
                if exc.timed_out and len(batch) > 1 and (deadline is None or time.monotonic() < deadline):
                    # Too slow for one request (not cut short by the query's limit): smaller
                    # batches from here on, this query's included, so a slow endpoint (a CPU-only
                    # model at ~70 ms a text) still fills the cache, what arrives kept.
                    size = max(1, len(batch) // 2)
                    rest = batch + [e for b in batches for e in b]
                    batches = [rest[start : start + size] for start in range(0, len(rest), size)]
                    _remember_batch_size(store, source, size)
                    continue
                raise
            dim = len(vectors[0])
            fresh.update((e["id"], {"hash": wanted[e["id"]], "vec": vec}) for e, vec in zip(batch, vectors))
    finally:
        _save(store, fresh, deadline)
    return {**found, **{entry_id: record["vec"] for entry_id, record in fresh.items()}}


def _save(store: Any, fresh: Mapping[str, Any], deadline: float | None = None) -> None:
    """Merge ``fresh`` records into the cache file. Under the store lock, re-read first: two
    processes filling the cache at once would otherwise each write back only their own
    vectors. The lock is waited for only until ``deadline`` (a query's time limit; a writer can
    hold it for seconds): a cache that cannot be written, because the lock is busy or
    ``.context/`` is read-only, costs only the next query an embedding, so it is logged, not
    raised."""
    if not fresh:
        return
    try:
        wait = TIMEOUT_S if deadline is None else max(0.0, deadline - time.monotonic())
        with store.locked(timeout=wait):
            cache = dict(_read_cache(store))
            cache.update(fresh)
            # Compact, by the C encoder: indented, each number took a line of its own, the file
            # was several times larger and written in pure Python while the store lock was held.
            _remember(store.write_sidecar(CACHE_FILE, cache, compact=True), cache)
    except (OSError, StoreError) as exc:
        log.warning("embedding cache %s not written, so these vectors will be asked for again: %s",
                    CACHE_FILE, exc)


# Batch size per endpoint and model, halved after a batch timed out (see entry_vectors); kept in
# STATE_FILE too, as a hook's process lives for one prompt: starting at BATCH each time, it asked a
# batch the endpoint could never answer in time on every prompt, and never cached a vector.
_batch_size: dict[str, int] = {}
STATE_FILE = "embeddings_state.json"  # {"batch_size": {"<api> <url> <model>": n}}; git-ignored (*_state.json)


def _state_key(source: str) -> str:
    return " ".join(source.split("\n"))


def _batch_size_for(store: Any, source: str) -> int:
    if source not in _batch_size:
        state = store.read_sidecar(STATE_FILE)
        sizes = state.get("batch_size") if isinstance(state, dict) else None
        size = sizes.get(_state_key(source)) if isinstance(sizes, dict) else None
        # Hand-editable: anything but a positive whole number is no size.
        _batch_size[source] = size if type(size) is int and size >= 1 else BATCH
    return min(BATCH, _batch_size[source])


def _remember_batch_size(store: Any, source: str, size: int) -> None:
    _batch_size[source] = size
    state = store.read_sidecar(STATE_FILE)
    state = state if isinstance(state, dict) else {}
    sizes = state.get("batch_size") if isinstance(state.get("batch_size"), dict) else {}
    try:
        store.write_sidecar(STATE_FILE, {**state, "batch_size": {**sizes, _state_key(source): size}})
    except (OSError, StoreError) as exc:  # a read-only .context/: only this process's batches shrink
        log.warning("%s not written, so the next process asks batches of %d again: %s", STATE_FILE, BATCH, exc)

# Parsed cache files by path, with the stamp they were read at: a warm server reads the file
# again only when it changed (at 10,000 entries of 768 numbers, reading it took seconds a query).
_READ: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _read_cache(store: Any) -> dict[str, Any]:
    """The cache file's records (empty when missing or unreadable); treat as read-only."""
    path = store.dir / CACHE_FILE
    stamp = _stamp(path)
    held = _READ.get(str(path))
    if stamp is not None and held is not None and held[0] == stamp:
        return held[1]
    cache = store.read_sidecar(CACHE_FILE)
    cache = cache if isinstance(cache, dict) else {}
    _remember(path, cache, stamp)
    return cache


def _remember(path: Path, cache: dict[str, Any], stamp: tuple[int, int, int] | None = None) -> None:
    stamp = stamp or _stamp(path)
    if stamp is not None:
        _READ.clear()  # one project's cache at a time is what a server asks for
        _READ[str(path)] = (stamp, cache)


def blend_weight(settings: Mapping[str, Any]) -> float:
    """Share of the semantic signal in the blended relevance: weight/(weight+100) (150 → 0.6).
    A weight doctor would refuse (a string, true, NaN, a negative number) is the default."""
    weight = config.checked({"semantic": dict(settings)}, "semantic.weight")[0]
    return weight / (weight + 100)  # int + int: a weight too big for a float still divides
