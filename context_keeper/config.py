"""Project configuration: ``.context/config.json`` shallow-merged over the defaults."""

from __future__ import annotations

import copy
import json
from pathlib import Path

TYPE_CHECKING = False  # typing costs ~5 ms to import on the hooks' cold path
if TYPE_CHECKING:
    from typing import Any

DEFAULTS: dict[str, Any] = {
    "project_name": None,  # the folder name when unset
    "token_budget": 4000,
    "max_entry_tokens": 1000,
    "stale_threshold_days": 30,
    "min_relevance": None,  # None: the retrieval engine's calibrated threshold
    "similar_threshold": 0.30,
    "markdown_export": {"enabled": False, "path": "DECISIONS.md"},
    "semantic": {
        "enabled": False,
        "weight": 150,
        "model": "nomic-embed-text",
        "url": "http://localhost:11434",
        "api": "ollama",
        "api_key_env": "",
    },
    "mmr": {"enabled": False, "lambda": 0.7},
    "scope_guard": {"confirm_absolute": False},
}


def merge_config(user: Any) -> tuple[dict[str, Any], list[str]]:
    """Defaults with the user's values on top; nested sections merge key by key."""
    config = copy.deepcopy(DEFAULTS)
    warnings: list[str] = []
    if not isinstance(user, dict):
        warnings.append("config.json is not a JSON object; using defaults")
        return config, warnings
    for key, value in user.items():
        if isinstance(config.get(key), dict) and isinstance(value, dict):
            config[key].update(value)
        else:
            config[key] = value
    return config, warnings


def read_config_file(path: Path) -> tuple[dict[str, Any], list[str]]:
    try:
        # utf-8-sig: editors on Windows start the file with a byte-order mark, as the store accepts
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return copy.deepcopy(DEFAULTS), []
    except OSError as exc:
        return copy.deepcopy(DEFAULTS), [f"{path} could not be read ({exc}); using defaults"]
    except UnicodeDecodeError as exc:
        return copy.deepcopy(DEFAULTS), [
            f"{path} is not valid UTF-8 (byte {exc.start + 1}: save it as UTF-8); using defaults"
        ]
    try:
        user = json.loads(text)
    except json.JSONDecodeError as exc:
        return copy.deepcopy(DEFAULTS), [
            f"{path} does not parse ({exc.msg} at line {exc.lineno}, column {exc.colno}); using defaults"
        ]
    return merge_config(user)


def number(config: dict[str, Any], key: str, fallback: float) -> float:
    """A numeric setting, falling back when a hand edit left something unusable."""
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return fallback
    return value
