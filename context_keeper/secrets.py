"""Refuse to store text that looks like a credential.

Memory is committed to git and injected into model context, so a leaked key would spread.
The patterns favour precision, because a false alarm blocks an agent from recording ordinary
engineering text: well-known key formats, private key blocks, credentials in URLs and HTTP
auth headers, webhook URLs, ``password=`` style assignments whose value looks like a literal (not
a placeholder, an environment lookup or a plain word in prose), and long random-looking tokens
(an entropy check that skips hex ids such as git SHAs and UUIDs, paths and digests).
OpenSSH public key lines are public by design and are not scanned.
``tests/test_secrets.py`` pins both sides with tables.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from context_keeper.errors import InvalidInput

_KEY_KINDS = r"(?:secret|signing|encryption|master|hmac|api|access|private)[_-]?key"
# A generic ``*_key`` is left out on purpose: sort_key, cache_key, public_key name no secret.
_KEYWORD = (
    r"(?:(?<![A-Za-z])(?:password|passwd|passphrase|pwd|secret|" + _KEY_KINDS + r"|apikey|access[_-]?token|"
    r"auth[_-]?token|client[_-]?secret|token)"
    # An environment variable may glue its prefix on (PGPASSWORD); only in capitals, so prose
    # words that end in "token" stay words. Tried only where the capitals start: from every
    # capital of a long run (a DNA sequence, a hex dump) it would rescan the rest each time.
    r"|(?-i:(?<![A-Z])[A-Z]+(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN)))(?![A-Za-z])"
)
# Values that only point at where a secret lives: $VAR, ${VAR}, <token>, ***, os.environ[...], ...
_PLACEHOLDER = re.compile(
    r"^(?:\$|<|\{\{|\*{3}|x{3,}|\.\.\.|%\(|none$|null$|nil$|true$|false$|env\b|os\.|process\.env|"
    r"getenv|settings\.|config\.|secrets\.|vault:|kms:|arn:|changeme$|redacted$|example$)",
    re.IGNORECASE,
)
_ASSIGNMENT = re.compile(
    _KEYWORD + r"[\"']?(?P<before>[ \t]*)(?P<op>:=|=>|=|:)(?P<after>[ \t]*)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;]+)",
    re.IGNORECASE,
)

# Passwords in a URL that only show its shape (user:password@host) or a container's default
# (guest:guest@localhost); the URL pattern also skips any password equal to its user name.
_SAMPLE_PASSWORD = r"(?:password|passwd|pass|pwd|secret|changeme|example|admin|root|guest|test|postgres|mysql)"

# A URL scheme: a letter at a word boundary, then letters, digits, "+", "." or "-". Tried only
# where a run of those characters starts, and settled once there: from every word of a long
# dot- or hyphen-joined name it would rescan the rest of the run each time. The scheme may start
# inside the run (".redis://", "1-redis://": after its first "+", "." or "-" and a letter), but
# it ends where the run does, so the first place it can start is as good as any. The lookahead
# and the back reference make that choice final, as an atomic group would (Python 3.11 has them;
# 3.10 is supported).
_SCHEME = r"(?<![a-z0-9+.-])(?=(?P<scheme>(?:\b[a-z]|[a-z0-9+.-]*?[+.-][a-z])[a-z0-9+.-]*))(?P=scheme)"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("an npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("a Slack token", re.compile(r"\bxox[abprse]-[A-Za-z0-9-]{10,}")),
    ("an API secret key", re.compile(r"\b(?:sk|rk)[-_](?:live|test|proj|ant-api\d\d|ant)?[-_]?[A-Za-z0-9_-]{20,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a bearer token", re.compile(r"\bBearer\s+(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{20,}", re.IGNORECASE)),
    ("a basic-auth header",
     re.compile(r"\bBasic\s+(?=[A-Za-z0-9+/]*[0-9+/])[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/])")),
    ("a URL with an embedded password",
     re.compile(_SCHEME + r"://(?P<user>[^\s:/@]*):(?!(?P=user)@|" + _SAMPLE_PASSWORD + r"@)"
                r"(?![$<{*]|x{3})[^\s/@]{3,}@", re.IGNORECASE)),
    # The path of a webhook URL is its credential: whoever has it can post.
    ("a webhook URL", re.compile(r"\bhooks\.slack\.com/(?:services|workflows|triggers)/(?:[A-Za-z0-9_-]+/)+"
                                 r"(?![Xx]+\b)[A-Za-z0-9]{20,}")),
    ("a webhook URL",
     re.compile(r"\bdiscord(?:app)?\.com/api/webhooks/\d+/(?![Xx]+\b)[A-Za-z0-9_-]{40,}", re.IGNORECASE)),
)

_PUBLIC_KEY = re.compile(
    r"\b(?P<kind>ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp(?:256|384|521)|"
    r"sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
    r"[ \t]+(?P<blob>AAAA[A-Za-z0-9+/]+={0,2})(?![A-Za-z0-9+/=])"
)
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_=-]{32,}")
_HEXISH = re.compile(r"^[0-9a-fA-F-]+$")
_DIGEST_PREFIX = re.compile(r"^(?:sha(?:1|224|256|384|512)|md5|blake2[bs]?)[-:]", re.IGNORECASE)
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _looks_random(token: str) -> bool:
    core = token.strip("=")
    if _HEXISH.match(core) or core.count("/") > 2:
        return False
    words = _WORD.findall(core)
    if words and sum(map(len, words)) / len(words) >= 4:
        return False  # an identifier made of words (getUserNameV2, AbstractFactoryBean): not random
    return _mixed_classes(core) and _entropy(core) > 4.0


def _literal_value(op: str, value: str) -> bool:
    """Does the right-hand side of ``password=...`` look like an actual credential?"""
    quoted = value[:1] in "\"'" and value[-1:] == value[:1] and len(value) >= 2
    inner = value[1:-1] if quoted else value
    if len(inner) < 6 or _PLACEHOLDER.match(inner) or not inner.strip():
        return False
    if quoted:
        return True
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(.*)?|[A-Za-z_]\w*\(.*", inner):
        return False  # settings.DB_PASSWORD, get_password(): code, not a literal
    if op == ":" and re.fullmatch(r"[A-Za-z]+[.,]?", inner):
        return False  # "Password: required" is prose
    if re.fullmatch(r"[A-Z][A-Z0-9_]+", inner) and "_" in inner:
        return False  # the name of an environment variable
    if re.fullmatch(r"(?:/|~/|\.\.?/|[A-Za-z]:[\\/])[\w.@+/\\-]*", inner) and not any(
            _mixed_classes(part) for part in re.split(r"[\\/]", inner)):
        return False  # PWD=/srv/app, PASSWORD_FILE=/run/secrets/db: where a value lives, not the value
    return True


def _mixed_classes(text: str) -> bool:
    """Lower case, upper case and digits together, as in a generated password."""
    return all(re.search(p, text) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))


def _names_a_parameter(match: re.Match[str]) -> bool:
    """``the token= parameter is sent``: the keyword ends at ``=`` and a plain word follows.

    Code and config space ``=`` on both sides or neither, so a space after it alone, before a
    word of letters, is prose naming the parameter (``password= hunter2hunter2`` is still caught).
    """
    spaced_after_only = bool(match["after"]) and not match["before"]
    return spaced_after_only and re.fullmatch(r"[A-Za-z]+[.,]?", match["value"]) is not None


def _is_public_key(match: re.Match[str]) -> bool:
    """An OpenSSH public key line names its algorithm, and the key blob starts with that name again."""
    try:
        blob = base64.b64decode(match["blob"], validate=True)
    except binascii.Error:
        return False
    size = int.from_bytes(blob[:4], "big")
    return blob[4 : 4 + size] == match["kind"].encode("ascii")


def _without_public_keys(text: str) -> str:
    # A public key is published by design, and its blob is as random as any secret.
    return _PUBLIC_KEY.sub(lambda match: " " if _is_public_key(match) else match.group(), text)


def find_secret(text: str) -> str | None:
    """What kind of credential ``text`` seems to contain, or None."""
    text = _without_public_keys(text)
    for label, pattern in _PATTERNS:
        if pattern.search(text):
            return label
    for match in _ASSIGNMENT.finditer(text):
        if _names_a_parameter(match):
            continue
        if _literal_value(match["op"], match["value"]):
            return "a password or secret assignment"
    for match in _TOKEN.finditer(text):
        token = match.group()
        if _DIGEST_PREFIX.match(token) or _DIGEST_PREFIX.match(text[max(0, match.start() - 7) : match.start()]):
            continue  # a content digest (sha512-..., sha256:...) is public by design
        if _looks_random(token):
            return "a high-entropy token"
    return None


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if path and isinstance(key, str):  # a key is stored text too (a step's extra keys are kept)
                yield f"{path} (a key in it)", key
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
