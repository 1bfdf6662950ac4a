"""Refuse to store text that looks like a credential.

Memory is committed to git and injected into model context, so a leaked key would spread.
The patterns favour precision: well-known key formats, explicit ``password=`` style
assignments, bearer tokens, and long random-looking tokens (entropy check that skips hex ids
such as git SHAs and UUIDs).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from context_keeper.errors import InvalidInput

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z ]+ )?PRIVATE KEY-----")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("an API secret key", re.compile(r"\b(?:sk|rk)[-_](?:live|test|proj)?[-_]?[A-Za-z0-9]{20,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a bearer token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{20,}", re.IGNORECASE)),
    (
        "a password or secret assignment",
        re.compile(
            r"\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)"
            r"\s*[:=]\s*[\"']?(?![\"']?\s*(?:<|\$\{|\$[A-Z_]|\*{3}|x{3}|\.\.\.|none\b|null\b|env\b|os\.environ))[^\s\"']{6,}",
            re.IGNORECASE,
        ),
    ),
)
_TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
_HEXISH = re.compile(r"^[0-9a-fA-F-]+$")


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _looks_random(token: str) -> bool:
    if _HEXISH.match(token) or "/" in token.strip("/") and token.count("/") > 2:
        return False
    classes = sum(bool(re.search(p, token)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return classes == 3 and _entropy(token) > 4.3


def find_secret(text: str) -> str | None:
    """What kind of credential ``text`` seems to contain, or None."""
    for label, pattern in _PATTERNS:
        if pattern.search(text):
            return label
    for token in _TOKEN.findall(text):
        if _looks_random(token):
            return "a high-entropy token"
    return None


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")


def check_secrets(values: Mapping[str, Any]) -> None:
    """Raise InvalidInput naming the field when any text looks like a credential."""
    for path, text in _strings(values, ""):
        label = find_secret(text)
        if label:
            field = path.split(".")[0].split("[")[0]
            raise InvalidInput(
                f"{path} looks like it contains {label}. Entries are committed to git and shown to "
                "models, so credentials must not be stored: describe where the secret lives "
                "instead (e.g. 'the key is in the CI secret store'). If this is not a real "
                "secret, repeat the call with allow_secrets=true.",
                field=field,
            )
