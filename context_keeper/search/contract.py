"""The public value types of the search contract (re-exported by ``context_keeper.search``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Doc:
    kind: str
    entry: Mapping[str, Any]


@dataclass(frozen=True)
class SearchOptions:
    kinds: frozenset[str] | None = None
    tags: frozenset[str] | None = None
    scope: str | None = None
    include_deprecated: bool = False
    since: datetime | None = None
    before: datetime | None = None
    now: datetime | None = None
    limit: int = 20
    # The project root: a stored scope written as an absolute path inside it is matched as
    # the project-relative one (the edit guard reads it that way).
    root: str | None = None
    # Other spellings of that root the caller used (a symbolic link to it, unresolved): an
    # absolute path pasted into the query may start with any of them.
    root_spellings: tuple[str, ...] = ()


@dataclass
class Hit:
    kind: str
    entry: Mapping[str, Any]
    score: float
    relevance: float
    history: bool = False


@dataclass
class SearchResult:
    hits: list[Hit]
    top_relevance: float
    # The kind of value the question asks for ("duration", ...) when the most relevant entry
    # states none near the question's words (answer_type.py); relevance is lowered then.
    unstated: str | None = None
    relevance_scale: float = 1.0  # what every hit's relevance was multiplied by then (1.0: not lowered)
    # Listed without a searchable word (filters alone): how many entries pass the filters, of
    # which ``hits`` are the first ``limit`` by prior. None for a ranked search.
    matched: int | None = None
