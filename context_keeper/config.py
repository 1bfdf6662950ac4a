"""Project configuration: ``.context/config.json`` shallow-merged over the defaults."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

from context_keeper.bounded_read import CONFIG_LIMIT, FileTooLarge, NotRegularFile, read_regular

TYPE_CHECKING = False  # typing costs ~5 ms to import on the hooks' cold path
if TYPE_CHECKING:
    from collections.abc import Mapping
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
    "id_suffix": False,
}


NOT_AN_OBJECT = "config.json is not a JSON object; using defaults"


def merge_config(user: Any) -> tuple[dict[str, Any], list[str]]:
    """Defaults with the user's values on top; nested sections merge key by key."""
    config = copy.deepcopy(DEFAULTS)
    warnings: list[str] = []
    if not isinstance(user, dict):
        warnings.append(NOT_AN_OBJECT)
        return config, warnings
    for key, value in user.items():
        if isinstance(config.get(key), dict) and isinstance(value, dict):
            config[key].update(value)
        else:
            config[key] = value
    return config, warnings


def read_user_config(path: Path) -> tuple[Any, list[str]]:
    """The parsed content of ``path`` as written (None when missing or unusable), and warnings."""
    try:
        # utf-8-sig: editors on Windows start the file with a byte-order mark, as the store accepts
        text = read_regular(path, CONFIG_LIMIT).decode("utf-8-sig")
    except FileNotFoundError:
        return None, []
    except (NotRegularFile, FileTooLarge) as exc:
        return None, [f"{path} {exc.strerror}; replace it with a JSON object of settings; using defaults"]
    except OSError as exc:
        return None, [f"{path} could not be read ({exc}); using defaults"]
    except UnicodeDecodeError as exc:
        return None, [f"{path} is not valid UTF-8 (byte {exc.start + 1}: save it as UTF-8); using defaults"]
    try:
        user = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, [f"{path} does not parse ({_parse_problem(text, exc)}); using defaults"]
    except RecursionError:
        return None, [f"{path} does not parse (nested too deeply); using defaults"]
    # null is no object either, as [] is: read as a missing file, it changed every setting unsaid.
    return user, [NOT_AN_OBJECT] if user is None else []


def _parse_problem(text: str, exc: json.JSONDecodeError) -> str:
    """What is wrong and where: a hand-edit slip by its name (the parser's words point at the
    ``}`` after a trailing comma), and what to do about it; else the parser's words."""
    from context_keeper import json_slips  # the error path only
    from context_keeper.errors import json_mistake

    slip = json_slips.find(text, exc, entries=False)
    if slip is None:
        return json_mistake(exc)
    line, column = json_slips.position(text, slip.offset)
    return f"{slip.detail} at line {line}, column {column}: {slip.remedy}"


def read_config_file(path: Path) -> tuple[dict[str, Any], list[str]]:
    user, warnings = read_user_config(path)
    if user is None:
        return copy.deepcopy(DEFAULTS), warnings
    return merge_config(user)


def _number(value: Any) -> bool:
    # finite: json.loads reads Infinity and NaN, which no setting can use. An int is finite
    # however long (math.isfinite raises OverflowError on one too big for a float).
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or isinstance(value, float) and math.isfinite(value)


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _at_least(low: float) -> Any:
    return lambda value: _number(value) and value >= low


def _fraction(value: Any) -> bool:
    return _number(value) and 0 <= value <= 1


def _url(value: Any) -> bool:
    from urllib.parse import urlsplit  # already imported by pathlib

    if not _text(value):
        return False
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number up to 65535
    except ValueError:  # "http://[::1" too
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def loopback(host: str) -> bool:
    import ipaddress  # only when a key is configured

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to any machine
        return False


SEMANTIC_HOSTS_ENV = "CONTEXT_KEEPER_SEMANTIC_HOSTS"


def _allowed_hosts(env: Mapping[str, str]) -> set[str]:
    return {name.strip().lower() for name in (env.get(SEMANTIC_HOSTS_ENV) or "").split(",") if name.strip()}


def unapproved_host(semantic: Any, env: Mapping[str, str]) -> str | None:
    """The host name of ``semantic.url`` when the blend would send text (and the key) to another
    machine the user has not allowed; None for a loopback endpoint, an allowed one, or a URL no
    request can go to (``checked`` names that one). config.json is committed, so whoever can
    change it could otherwise have every teammate's questions, entries and a key of their choice
    sent to a host of theirs. Consent lives outside the repository: ``CONTEXT_KEEPER_SEMANTIC_HOSTS``
    in ``env``, comma-separated host names (any port) or ``host:port``, matched exactly, in any case."""
    if not isinstance(semantic, dict):
        return None
    url = semantic.get("url") or DEFAULTS["semantic"]["url"]
    if not _url(url):
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if loopback(host):
        return None
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    spellings = {host, f"{host}:{port}", f"[{host}]", f"[{host}]:{port}"}
    return None if spellings & _allowed_hosts(env) else host


def unapproved_host_problem(semantic: Any, env: Mapping[str, str], consequence: str) -> str | None:
    """``unapproved_host`` as a sentence: the host, ``consequence``, and how to allow it."""
    host = unapproved_host(semantic, env)
    if host is None:
        return None
    variable = semantic.get("api_key_env")
    key = (f" and the value of the environment variable {variable} (semantic.api_key_env)"
           if _text(variable) and variable.strip() else "")
    allow = f"[{host}]" if ":" in host else host
    return (f"semantic.url names the host {host}, another machine, to which the semantic blend would send the text "
            f"of questions and entries{key}; a project's config.json alone cannot send them off this machine, so "
            f"{consequence}. If you trust that host, allow it in your own environment, outside the repository: "
            f"{SEMANTIC_HOSTS_ENV}={allow} (comma-separated host names, or host:port)")


def cleartext_key(semantic: Any) -> tuple[str, str] | None:
    """``(url, variable)`` when the ``semantic`` section names an API key (``api_key_env``) and
    a plain http:// URL on another machine: config.json is committed, so anyone who can change
    it could otherwise have each teammate's key sent across the network unencrypted. None when
    no key is named or the URL is https:// or loopback (an Ollama on this machine). Judged on the
    config alone, whether or not the variable is set here, so it acts alike on every machine."""
    if not isinstance(semantic, dict):
        return None
    variable = semantic.get("api_key_env")
    url = semantic.get("url") or DEFAULTS["semantic"]["url"]
    if not _text(variable) or not variable.strip() or not _url(url):
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme.lower() != "http" or loopback(parts.hostname or ""):
        return None
    return url, variable


def key_destination(semantic: Any) -> tuple[str, str] | None:
    """``(variable, host)`` when the ``semantic`` section has requests carry the value of the
    variable ``api_key_env`` names to ``host`` (``name:port`` as in the URL); None when it names
    none, the URL is unusable, or the key is withheld (``cleartext_key``)."""
    if not isinstance(semantic, dict) or cleartext_key(semantic) is not None:
        return None
    variable = semantic.get("api_key_env")
    url = semantic.get("url") or DEFAULTS["semantic"]["url"]
    if not _text(variable) or not variable.strip() or not _url(url):
        return None
    from urllib.parse import urlsplit

    return variable, urlsplit(url).netloc


def cleartext_key_problem(semantic: Any, consequence: str) -> str | None:
    """``cleartext_key`` as a sentence naming both settings, ``consequence`` and the fix; or None."""
    found = cleartext_key(semantic)
    if found is None:
        return None
    url, variable = found
    return (f"semantic.url is {_show(url)}, plain http to another machine, and semantic.api_key_env names "
            f"{variable}: that key is never sent unencrypted across the network, so {consequence}. Use an "
            "https:// URL, or remove semantic.api_key_env if the endpoint needs no key")


MAX_DAYS = 100_000  # the most days prune_stale takes, from its argument or from stale_threshold_days

# What each setting must be, for ``config_problems``: (test, what a valid value is). A value that
# fails is read as the default or ignored, so it changes behaviour without a word.
_RULES: dict[str, Any] = {
    "project_name": (lambda v: v is None or (_text(v) and bool(v.strip())), "a non-empty string"),
    "token_budget": (_at_least(50), "a number of tokens, at least 50"),
    "max_entry_tokens": (_at_least(1), "a number of tokens, at least 1"),
    # prune_stale's own bound on ``days``: 1e9 days overflowed the date arithmetic.
    "stale_threshold_days": (lambda v: _at_least(0)(v) and v <= MAX_DAYS, f"a number of days from 0 to {MAX_DAYS}"),
    "min_relevance": (lambda v: v is None or _fraction(v), "a number from 0 to 1, or null for the calibrated default"),
    "similar_threshold": (_fraction, "a number from 0 to 1"),
    "markdown_export": {"enabled": (_flag, "true or false"), "path": (_text, "a path inside the project")},
    "semantic": {
        "enabled": (_flag, "true or false"),
        "weight": (_at_least(0), "a number, 0 or more"),
        "model": (_text, "a model name"),
        "url": (_url, "an http:// or https:// URL with a host (and a numeric port, if any), such as http://localhost:11434"),
        # Any case, as embeddings reads it ("OpenAI" works).
        "api": (lambda v: isinstance(v, str) and v.lower() in ("ollama", "openai"), '"ollama" or "openai"'),
        "api_key_env": (_text, "the name of an environment variable"),
    },
    "mmr": {"enabled": (_flag, "true or false"), "lambda": (_fraction, "a number from 0 to 1")},
    "scope_guard": {"confirm_absolute": (_flag, "true or false")},
    "id_suffix": (_flag, "true or false"),
}


def _unknown(key: str, known: Any) -> str:
    import difflib  # doctor only: the hooks never call this

    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.7)
    hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(known)}"
    return f"{key!r} is not a setting context-keeper knows, so it has no effect{hint}"


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"


def _default(value: Any) -> str:
    return "" if value is None else f" (default {json.dumps(value)})"


def config_problems(user: Any) -> list[str]:
    """Every value of a parsed config.json that is of the wrong type, out of range or unknown,
    each as a sentence saying what the value should be."""
    if not isinstance(user, dict):
        return []  # merge_config already reports a non-object
    problems = []
    for key, value in user.items():
        rule = _RULES.get(key)
        if rule is None:
            problems.append(_unknown(key, _RULES))
        elif isinstance(rule, dict):
            if not isinstance(value, dict):
                problems.append(f"{key} is {_show(value)}, but it must be an object with the keys "
                                f"{', '.join(rule)}; until then the defaults apply")
                continue
            for name, item in value.items():
                if name not in rule:
                    problems.append(_unknown(f"{key}.{name}", [f"{key}.{n}" for n in rule]))
                elif not rule[name][0](item):
                    problems.append(f"{key}.{name} is {_show(item)}, but it must be {rule[name][1]}"
                                    f"{_default(DEFAULTS[key][name])}")
        elif not rule[0](value):
            problems.append(f"{key} is {_show(value)}, but it must be {rule[1]}{_default(DEFAULTS[key])}")
    semantic = user.get("semantic")
    if isinstance(semantic, dict) and semantic.get("enabled") is True:
        problem = cleartext_key_problem(semantic, "no embeddings are asked for and answers are ranked lexically")
        problems += [problem] if problem else []
    return problems


def checked(config: dict[str, Any], key: str, instead: str | None = None) -> tuple[Any, str | None]:
    """A setting of the merged ``config`` (``"token_budget"``, or ``"semantic.weight"`` inside a
    section), or, when its value breaks the rule doctor checks it against, the default and a
    sentence saying so (for an answer's warnings). ``instead`` says what the answer does in that
    case when it is not to use the default."""
    section, _, name = key.rpartition(".")
    values = config.get(section) if section else config
    value = values.get(name) if isinstance(values, dict) else None
    test, valid = _RULES[section][name] if section else _RULES[key]
    fallback = DEFAULTS[section][name] if section else DEFAULTS[key]
    if section and values is not None and not isinstance(values, dict):
        # "mmr": true read as the defaults without a word: the re-ranking stayed off.
        return fallback, (f".context/config.json: \"{section}\" is {_show(values)}, but it must be an object with "
                          f"the keys {', '.join(_RULES[section])} (such as {{\"{name}\": ...}}); the defaults apply. "
                          "Fix or remove that key in config.json.")
    if key == "semantic.url" and (value is None or test(value)):
        # Valid on its own, refused with the key it would carry in cleartext (cleartext_key).
        problem = cleartext_key_problem(values, instead or "no embeddings are asked for")
        if problem is not None:
            return fallback, f".context/config.json: {problem}."
    if value is None or test(value):
        return (fallback if value is None else value), None
    if instead is None:
        instead = "used " + ("the calibrated default" if fallback is None else f"the default {json.dumps(fallback)}")
    return fallback, (f".context/config.json: \"{key}\" is {_show(value)}, but it must be {valid}; {instead}. "
                      "Fix or remove that key in config.json.")
