"""Claude Code hook handlers, one module per event, over a lean shared layer.

Every hook runs as a fresh process on every edit, prompt or session start, so the modules in
this package keep their *fast path* free of the core's heavy imports (the store, the search
engine, pydantic, mcp — and even ``re``/``json``, which cost ~10 ms each on a slow machine):

- ``leanjson``  JSON in and out through the ``_json`` C accelerator only
- ``cache``     ``.context/hook_cache.json``: texts and scope data derived from the store,
                keyed on the store files' stamps; rebuilt by the slow path when stale
- ``state``     per-session de-duplication files under ``.context/sessions/``
- one module per event (``session_start``, ``scope_guard``, ...) exposing ``handle(ctx)``

``context_keeper.hookio`` is the process boundary: stdin, stdout, fail-open, logging.
Nothing is imported here on purpose.
"""
