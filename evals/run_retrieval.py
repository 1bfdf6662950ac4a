"""Retrieval eval: one command, deterministic.

    python evals/run_retrieval.py [--split dev|test|all] [--json OUT] [--write-baseline]
                                  [--ablate synonyms,prf,...] [--cases]

Loads every store (``examples/demo-project`` and ``evals/stores/*``), runs each case of
``evals/golden.jsonl`` and prints, per split: hit@5, recall@5 and MRR on positives; the share
of negatives flagged ``no_confident_match``; the share of positives wrongly flagged; history
hit@5. Rows: the system as shipped (through ``context_keeper.service`` when available), the
engine called directly, and two references (a shared-word count and textbook BM25) whose
abstention threshold is fitted on dev (the best they can do).

Golden line: ``{"id", "split": "dev"|"test", "store": "<store dir name>", "kind":
"positive"|"negative"|"history", "query", "expected": [entry ids]}`` (``type`` is accepted for
``kind``). The service row is the shipped path; to time or debug the engine alone, use
``--engine-only`` (and ``--set knob=value`` to ablate a technique, see search/tuning.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evals"))

from baselines import BM25Scorer, NaiveScorer  # noqa: E402

from context_keeper.search import DEFAULT_MIN_RELEVANCE, Doc, SearchIndex, SearchOptions  # noqa: E402
from context_keeper.search.tuning import DEFAULT_TUNING, Tuning  # noqa: E402

GOLDEN = ROOT / "evals" / "golden.jsonl"
STORE_DIRS = [ROOT / "examples" / "demo-project", *sorted((ROOT / "evals" / "stores").glob("*"))]
FILES = {"decision": "decisions.json", "pipeline": "pipelines.json", "constraint": "constraints.json"}
K = 5
# A fixed clock keeps recency priors, hence the figures, reproducible.
EVAL_NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


# ----------------------------------------------------------------------------- data


@dataclass
class Case:
    id: str
    split: str
    store: str
    type: str          # positive | negative | history
    query: str
    expected: list[str]
    note: str = ""     # what the writer says the case tests ("value question: ...")


@dataclass
class Store:
    name: str
    path: Path
    entries: list[tuple[str, dict[str, Any]]]
    drop: frozenset[str] = frozenset()  # entry ids left out of the service's copy (ablation)


def store_dirs(paths: Iterable[Path]) -> list[Path]:
    """Projects named on the command line: a directory holding ``.context/`` is one, any
    other directory is searched one level down (a folder of projects, like evals/stores)."""
    out = []
    for path in paths:
        path = Path(path)
        if (path / ".context").is_dir():
            out.append(path)
        elif path.is_dir():
            out.extend(p for p in sorted(path.iterdir()) if (p / ".context").is_dir())
        else:
            raise SystemExit(f"--stores {path}: not a directory")
    return out


def load_stores(dirs: Iterable[Path] | None = None) -> dict[str, Store]:
    stores = {}
    for path in STORE_DIRS if dirs is None else dirs:
        ctx = path / ".context"
        if not ctx.is_dir():
            continue
        entries = []
        for kind, fname in FILES.items():
            f = ctx / fname
            if f.exists():
                data = json.loads(f.read_text(encoding="utf-8"))
                entries.extend((kind, e) for e in data if isinstance(e, dict))
        stores[path.name] = Store(path.name, path, entries)
    return stores


def _first(raw: Mapping[str, Any], *names: str, default: Any = None) -> Any:
    for n in names:
        if n in raw and raw[n] is not None:
            return raw[n]
    return default


def load_cases(path: Path = GOLDEN) -> list[Case]:
    cases = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        raw = json.loads(line)
        expected = _first(raw, "expected", "expected_ids", "relevant", "answers", "gold", default=[])
        if isinstance(expected, str):
            expected = [expected]
        ctype = str(_first(raw, "type", "kind", "category", default="positive")).lower()
        ctype = {"pos": "positive", "neg": "negative", "hist": "history", "no_answer": "negative"}.get(ctype, ctype)
        cases.append(
            Case(
                id=str(_first(raw, "id", default=f"line-{n}")),
                split=str(_first(raw, "split", default="dev")).lower(),
                store=str(_first(raw, "store", "project", default="demo-project")),
                type=ctype,
                query=str(_first(raw, "query", "question", "q")),
                expected=list(expected),
                note=str(raw.get("note") or ""),
            )
        )
    return cases


def asks_for_value(case: Case) -> bool:
    """An answerable question asking for one recorded value ("how long…", "which…"), as its
    writer's note says (every store's brief asks for a few and for the note to say so)."""
    return case.type == "positive" and "value" in case.note.lower()


# ----------------------------------------------------------------------------- systems


@dataclass
class Answer:
    ids: list[str]
    top_relevance: float
    flagged: bool


class System:
    name = "?"

    def answer(self, store: Store, query: str) -> Answer:
        raise NotImplementedError


_ACTIVE: list[Any] = []  # the ServiceSystem answering now (for the blend watcher)


class ServiceSystem(System):
    """The shipped path: ``Service().get_context`` with the default configuration.

    ``config`` (optional) is written as ``.context/config.json`` into every store copy, e.g. the
    ``semantic`` section for the optional embedding blend (``semantic_config``). The copies live
    in a temporary directory, so the embedding cache (``.context/embeddings.json``) never lands
    in the repository's stores. With the blend on, any fallback to the lexical ranking (endpoint
    down, timeout) is counted in ``blend_failures``: a run with failures does not measure the
    blend and ``main`` refuses to report it.
    """

    name = "context-keeper (service.get_context)"

    def __init__(self, config: Mapping[str, Any] | None = None, name: str | None = None) -> None:
        from context_keeper.service import Service

        self.service = Service(clock=lambda: EVAL_NOW, env={}) if _accepts(Service, "clock") else Service()
        self._tmp = tempfile.TemporaryDirectory()
        self._copies: dict[str, str] = {}
        self.config = dict(config or {})
        if name:
            self.name = name
        self.blend_calls = 0
        self.blend_failures = 0
        self._last_blended: float | None = None
        self.last_features: dict[str, float] = {}
        if isinstance(self.config.get("semantic"), Mapping) and self.config["semantic"].get("enabled"):
            self._watch_blend()

    def _watch_blend(self) -> None:
        """Count blends and fallbacks; keep the blended top relevance unrounded (the answer
        rounds it to 3 decimals, which only matters for threshold fitting)."""
        import logging

        from context_keeper import retrieval

        from context_keeper.embeddings import blend_weight as embeddings_blend_weight

        if getattr(retrieval._semantic_blend, "_eval_watched", False):
            return
        original = retrieval._semantic_blend

        class _Fallbacks(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if "semantic blend skipped" in record.getMessage() and _ACTIVE:
                    _ACTIVE[0].blend_failures += 1

        def watched(store: Any, text: str, result: Any, settings: Mapping[str, Any], *rest: Any) -> Any:
            out = original(store, text, result, settings, *rest)  # rest: how many hits to keep
            if _ACTIVE:
                system = _ACTIVE[0]
                system.blend_calls += 1
                system._last_blended = out.top_relevance
                # For calibrate.py's feature study: the lexical top relevance before the blend
                # and the best cosine among the candidates (recovered from the blended relevance).
                w = embeddings_blend_weight(settings)
                lexical = {h.entry["id"]: h.relevance for h in result.hits}
                cosines = [(h.relevance - (1 - w) * lexical.get(h.entry["id"], 0.0)) / w for h in out.hits] if w > 0 else []
                system.last_features = {"lexical": result.top_relevance, "max_cos": max(cosines, default=0.0)}
            return out

        watched._eval_watched = True  # type: ignore[attr-defined]
        retrieval._semantic_blend = watched
        logger = logging.getLogger("context_keeper")
        logger.setLevel(logging.INFO)
        logger.addHandler(_Fallbacks())

    def _project(self, store: Store) -> str:
        # A copy, with config.json reduced to defaults (plus ``self.config``), so a store's own
        # settings (or a sidecar file the service writes) never leak into the figures.
        if store.name not in self._copies:
            dest = Path(self._tmp.name) / store.name / ".context"
            dest.mkdir(parents=True)
            for fname in FILES.values():
                src = store.path / ".context" / fname
                if src.exists() and store.drop:
                    data = [e for e in json.loads(src.read_text(encoding="utf-8")) if not (isinstance(e, dict) and e.get("id") in store.drop)]
                    (dest / fname).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
                elif src.exists():
                    (dest / fname).write_bytes(src.read_bytes())
            if self.config:
                (dest / "config.json").write_text(json.dumps(self.config, indent=2) + "\n", encoding="utf-8")
            self._copies[store.name] = str(dest.parent)
            if isinstance(self.config.get("semantic"), Mapping) and self.config["semantic"].get("enabled"):
                self._warm(store, self._copies[store.name])
        return self._copies[store.name]

    def _warm(self, store: Store, project_dir: str) -> None:
        """Fill the copy's embedding cache once, as a first query would, but with a generous
        timeout: embedding a whole store on a busy CPU can exceed the 2 s request timeout the
        service allows per batch, and a timed-out first query would measure the fallback."""
        from context_keeper import embeddings

        kept = [e for _, e in store.entries if e.get("id") and e.get("id") not in store.drop]
        embeddings.entry_vectors(self.service.store(project_dir), kept, self.config["semantic"], timeout=120.0)

    def answer(self, store: Store, query: str) -> Answer:
        self._last_blended = None
        _ACTIVE[:] = [self]
        out = self.service.get_context(project_dir=self._project(store), query=query, include_related=False)
        ids = [r["entry"]["id"] for r in out.get("results", []) if not r.get("related")]
        top = self._last_blended if self._last_blended is not None else float(out.get("top_relevance") or 0.0)
        return Answer(ids, top, bool(out.get("no_confident_match")))


def semantic_config(url: str, weight: float, model: str = "all-MiniLM-L6-v2", api: str = "openai") -> dict[str, Any]:
    """The ``semantic`` config section for a blend share ``weight`` in [0, 1).

    ``semantic.weight`` is not the share itself: ``embeddings.blend_weight`` maps it to
    weight/(weight+100), so the share w needs weight = 100·w/(1−w) (0.6 ↔ 150, the default).
    """
    if not 0.0 <= weight < 1.0:
        raise ValueError("--semantic-weight is the blend share, in [0, 1)")
    return {"enabled": True, "api": api, "url": url, "model": model, "weight": 100.0 * weight / (1.0 - weight)}


def _accepts(cls: type, name: str) -> bool:
    import inspect

    try:
        return name in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False


def engine_index(store: Store, tuning: Tuning = DEFAULT_TUNING) -> SearchIndex:
    """``store``'s entries in a ``SearchIndex``, scored as the service scores a loaded store
    (with the field lengths' exact averages)."""
    ix = SearchIndex(tuning)
    for kind, e in store.entries:
        ix.upsert(Doc(kind, e))
    ix.settle()
    return ix


class EngineSystem(System):
    """``SearchIndex`` directly, with a chosen tuning and threshold."""

    def __init__(self, tuning: Tuning = DEFAULT_TUNING, threshold: float = DEFAULT_MIN_RELEVANCE, name: str = "engine (SearchIndex)") -> None:
        self.tuning, self.threshold, self.name = tuning, threshold, name
        self._indexes: dict[str, SearchIndex] = {}

    def answer(self, store: Store, query: str) -> Answer:
        ix = self._indexes.get(store.name)
        if ix is None:
            ix = self._indexes[store.name] = engine_index(store, self.tuning)
        res = ix.search(query, SearchOptions(now=EVAL_NOW, limit=20))
        return Answer([h.entry["id"] for h in res.hits], res.top_relevance, res.top_relevance < self.threshold)


class ReferenceSystem(System):
    """A baseline scorer; ``threshold`` is fitted on dev by ``fit_threshold``."""

    def __init__(self, factory: Callable[[Sequence[tuple[str, Mapping[str, Any]]]], Any], name: str) -> None:
        self.factory, self.name, self.threshold = factory, name, 0.0
        self._scorers: dict[str, Any] = {}

    def answer(self, store: Store, query: str) -> Answer:
        sc = self._scorers.get(store.name)
        if sc is None:
            sc = self._scorers[store.name] = self.factory(store.entries)
        ids, top = sc.search(query)
        return Answer(ids, top, top < self.threshold)


# ----------------------------------------------------------------------------- metrics


@dataclass
class Row:
    system: str
    split: str
    n_pos: int = 0
    n_neg: int = 0
    n_hist: int = 0
    hit5: float = 0.0
    recall5: float = 0.0
    mrr: float = 0.0
    neg_flagged: float = 0.0
    pos_flagged: float = 0.0
    hist_hit5: float = 0.0
    failures: list[str] = field(default_factory=list)
    # Per metric, (store, value) of every case it averages: for the bootstrap interval (--ci).
    values: dict[str, list[tuple[str, float]]] = field(default_factory=dict)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def evaluate(system: System, cases: Iterable[Case], stores: Mapping[str, Store], split: str) -> tuple[Row, list[tuple[Case, Answer]]]:
    runs = [(c, system.answer(stores[c.store], c.query)) for c in cases]
    pos = [(c, a) for c, a in runs if c.type == "positive"]
    neg = [(c, a) for c, a in runs if c.type == "negative"]
    hist = [(c, a) for c, a in runs if c.type == "history"]
    row = Row(system.name, split, len(pos), len(neg), len(hist))
    hits, recalls, rrs = [], [], []
    for c, a in pos:
        top = a.ids[:K]
        hits.append(float(any(i in top for i in c.expected)))
        recalls.append(sum(i in top for i in c.expected) / max(1, len(c.expected)))
        rank = next((r for r, i in enumerate(a.ids, 1) if i in c.expected), None)
        rrs.append(1.0 / rank if rank else 0.0)
        if not hits[-1] or a.flagged:
            row.failures.append(f"{c.id} {'FLAGGED ' if a.flagged else ''}rank={rank} top={top[:3]} rel={a.top_relevance:.2f} :: {c.query}")
    row.hit5, row.recall5, row.mrr = _mean(hits), _mean(recalls), _mean(rrs)
    row.pos_flagged = _mean([float(a.flagged) for _, a in pos])
    row.neg_flagged = _mean([float(a.flagged) for _, a in neg])
    for c, a in neg:
        if not a.flagged:
            row.failures.append(f"{c.id} NEG-NOT-FLAGGED rel={a.top_relevance:.2f} top={a.ids[:2]} :: {c.query}")
    hh = []
    for c, a in hist:
        hh.append(float(any(i in a.ids[:K] for i in c.expected)))
        if not hh[-1]:
            row.failures.append(f"{c.id} HISTORY-MISS top={a.ids[:3]} :: {c.query}")
    row.hist_hit5 = _mean(hh)
    row.values = {
        "hit@5": [(c.store, v) for (c, _), v in zip(pos, hits)],
        "recall@5": [(c.store, v) for (c, _), v in zip(pos, recalls)],
        "MRR": [(c.store, v) for (c, _), v in zip(pos, rrs)],
        "neg flagged": [(c.store, float(a.flagged)) for c, a in neg],
        "pos flagged": [(c.store, float(a.flagged)) for c, a in pos],
        "history hit@5": [(c.store, v) for (c, _), v in zip(hist, hh)],
    }
    return row, runs


def bootstrap(row: Row, resamples: int = 2000, seed: int = 20261202) -> dict[str, tuple[float, float] | None]:
    """A 95% percentile interval per metric, resampling whole stores with replacement: cases of
    one store share its vocabulary and writer, so the store is the unit a new store varies by.
    None for a metric whose cases come from one store (every resample is that store)."""
    rng = random.Random(seed)
    out: dict[str, tuple[float, float] | None] = {}
    for metric, pairs in row.values.items():
        sums: dict[str, list[float]] = {}
        for store, v in pairs:
            acc = sums.setdefault(store, [0.0, 0.0])
            acc[0] += v
            acc[1] += 1
        names = sorted(sums)
        if not names:
            out[metric] = (0.0, 0.0)
            continue
        if len(names) < 2:
            out[metric] = None
            continue
        means = []
        for _ in range(resamples):
            total = count = 0.0
            for name in rng.choices(names, k=len(names)):
                total += sums[name][0]
                count += sums[name][1]
            means.append(total / count)
        means.sort()
        out[metric] = (means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1])
    return out


def markdown_ci(rows: Sequence[Row]) -> str:
    head = "| system | split | " + " | ".join(COLUMNS) + " |"
    lines = [head, "|" + "---|" * (2 + len(COLUMNS))]
    for r in rows:
        ci = bootstrap(r)
        vals = " | ".join("n/a (1 store)" if (i := ci[c]) is None else f"{i[0]:.3f}–{i[1]:.3f}" for c in COLUMNS)
        lines.append(f"| {r.system} | {r.split} | {vals} |")
    return "\n".join(lines)


def fit_threshold(system: ReferenceSystem, dev: Sequence[Case], stores: Mapping[str, Store], max_pos_flagged: float = 0.05) -> None:
    """The threshold flagging the most dev negatives while flagging ≤ 5% of dev positives."""
    runs = [(c, system.answer(stores[c.store], c.query)) for c in dev if c.type in ("positive", "negative")]
    pos = sorted(a.top_relevance for c, a in runs if c.type == "positive")
    neg = [a.top_relevance for c, a in runs if c.type == "negative"]
    allowed = int(max_pos_flagged * len(pos))
    # Flag everything strictly below the (allowed+1)-th smallest positive relevance.
    system.threshold = pos[allowed] if pos else 0.0
    if not neg:
        system.threshold = 0.0


# ----------------------------------------------------------------------------- report


COLUMNS = ("hit@5", "recall@5", "MRR", "neg flagged", "pos flagged", "history hit@5")


def row_values(row: Row) -> tuple[float, ...]:
    return (row.hit5, row.recall5, row.mrr, row.neg_flagged, row.pos_flagged, row.hist_hit5)


def markdown(rows: Sequence[Row]) -> str:
    head = "| system | split | n (pos/neg/hist) | " + " | ".join(COLUMNS) + " |"
    sep = "|" + "---|" * (3 + len(COLUMNS))
    lines = [head, sep]
    for r in rows:
        # A figure over no cases is no figure: 0.000 there read as a total failure.
        counts = (r.n_pos, r.n_pos, r.n_pos, r.n_neg, r.n_pos, r.n_hist)
        vals = " | ".join(f"{v:.3f}" if n else "n/a" for v, n in zip(row_values(r), counts))
        lines.append(f"| {r.system} | {r.split} | {r.n_pos}/{r.n_neg}/{r.n_hist} | {vals} |")
    return "\n".join(lines)


def tuning_overrides(items: Iterable[str]) -> dict[str, Any]:
    """``--set KNOB=VALUE`` items as Tuning fields of their own types (a tuple as JSON)."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, _, value = item.partition("=")
        current = getattr(DEFAULT_TUNING, key)
        if isinstance(current, bool):
            overrides[key] = value.lower() == "true"
        elif isinstance(current, tuple):
            overrides[key] = type(current)(json.loads(value))
        else:
            overrides[key] = type(current)(value)
    return overrides


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="retrieval eval over evals/golden.jsonl")
    parser.add_argument("--golden", type=Path, default=GOLDEN, help="cases, one JSON object a line (default evals/golden.jsonl)")
    parser.add_argument("--stores", type=Path, action="append", metavar="DIR", help="evaluate on these stores instead of the bundled "
                        "ones: a project directory (with .context/) or a folder of them; a case's \"store\" is the directory name")
    parser.add_argument("--split", default="all", choices=["dev", "test", "all"])
    parser.add_argument("--only", metavar="STORE[,STORE]", help="figures over these stores' cases only, e.g. "
                        "thermoslate,riverbank,carebook (the stores added in round 4); references are still fitted on all dev")
    parser.add_argument("--engine-only", action="store_true", help="skip the service row")
    parser.add_argument("--no-references", action="store_true", help="skip naive/BM25 rows")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="override a Tuning knob (engine row), e.g. --set synonyms=False")
    parser.add_argument("--threshold", type=float, default=DEFAULT_MIN_RELEVANCE)
    parser.add_argument("--cases", action="store_true", help="print failing cases")
    parser.add_argument("--ci", action="store_true", help="also print 95%% intervals per figure (bootstrap over stores, "
                        "2,000 resamples, fixed seed)")
    parser.add_argument("--json", type=Path, help="write the figures as JSON")
    parser.add_argument("--write-baseline", action="store_true", help="write evals/baseline.json")
    parser.add_argument("--semantic-url", help="turn the optional semantic blend on (service row only) with this OpenAI-compatible "
                        "embeddings endpoint, e.g. http://127.0.0.1:8765 (see evals/embedding_server.py); only the service row runs")
    parser.add_argument("--semantic-weight", type=float, default=0.6, help="blend share w in relevance = (1-w)*lexical + w*cosine "
                        "(default 0.6 = semantic.weight 150, the shipped default)")
    parser.add_argument("--semantic-model", default="all-MiniLM-L6-v2", help="model name sent to the endpoint")
    parser.add_argument("--min-relevance", type=float, help="service row: config min_relevance (abstention threshold) in every store copy")
    args = parser.parse_args(argv)
    if args.write_baseline and (args.semantic_url or args.min_relevance is not None or args.only):
        parser.error("--write-baseline records the default configuration only")

    stores = load_stores(store_dirs(args.stores) if args.stores else None)
    cases = [c for c in load_cases(args.golden) if c.store in stores]
    if not cases:
        parser.error(f"no case of {args.golden} names one of the stores ({', '.join(sorted(stores)) or 'none found'})")
    splits = ["dev", "test"] if args.split == "all" else [args.split]
    selected = cases
    if args.only:
        names = {n.strip() for n in args.only.split(",") if n.strip()}
        unknown = names - set(stores)
        if unknown:
            parser.error(f"--only: no store named {', '.join(sorted(unknown))} (stores: {', '.join(sorted(stores))})")
        selected = [c for c in cases if c.store in names]
    by_split = {s: [c for c in selected if c.split == s] for s in splits}
    if args.split == "all":  # a case file without a test split (cases default to dev) shows its one table
        splits = [s for s in splits if by_split[s]]

    overrides = tuning_overrides(args.set)
    systems: list[System] = []
    if args.semantic_url:
        config: dict[str, Any] = {"semantic": semantic_config(args.semantic_url, args.semantic_weight, args.semantic_model)}
        if args.min_relevance is not None:
            config["min_relevance"] = args.min_relevance
        threshold = args.min_relevance if args.min_relevance is not None else DEFAULT_MIN_RELEVANCE
        name = f"context-keeper + semantic w={args.semantic_weight:g} ({args.semantic_model}), threshold {threshold:g}"
        systems.append(ServiceSystem(config, name))
        args.engine_only, args.no_references = False, True
    elif args.min_relevance is not None and not args.engine_only and not overrides:
        systems.append(ServiceSystem({"min_relevance": args.min_relevance}, f"context-keeper (service.get_context), threshold {args.min_relevance:g}"))
    elif not args.engine_only and not overrides:
        try:
            systems.append(ServiceSystem())
        except ImportError:
            pass
    if not args.semantic_url:
        systems.append(EngineSystem(dataclasses.replace(DEFAULT_TUNING, **overrides), args.threshold))
    if not args.no_references:
        dev = [c for c in cases if c.split == "dev"]
        for factory, name in ((NaiveScorer, NaiveScorer.name), (BM25Scorer, BM25Scorer.name)):
            ref = ReferenceSystem(factory, name)
            fit_threshold(ref, dev, stores)
            systems.append(ref)

    rows = []
    for split in splits:
        for system in systems:
            row, _ = evaluate(system, by_split[split], stores, split)
            rows.append(row)
    for system in systems:
        if isinstance(system, ServiceSystem) and system.blend_calls:
            print(f"semantic blend: {system.blend_calls} queries blended, {system.blend_failures} fell back to lexical")
            if system.blend_failures:
                print("ERROR: the embedding endpoint failed for some queries; these figures do not measure the blend", file=sys.stderr)
                return 2
    shown = f"threshold {args.threshold}" if not args.semantic_url else f"service threshold {threshold:g}"
    values = sum(map(asks_for_value, cases))
    print(f"stores: {', '.join(sorted(stores))}; cases: {len(cases)}; {shown}"
          + (f"; {values} answerable ones ask for a recorded value" if values else ""))
    print(markdown(rows))
    if args.ci:
        print("\n95% intervals, resampling whole stores (what another set of stores could give):")
        print(markdown_ci(rows))
    if args.cases:
        for r in rows:
            if r.system == systems[0].name:
                print(f"\n## failures: {r.system} / {r.split}")
                print("\n".join(r.failures) or "(none)")
    figures = {f"{r.system}|{r.split}": dict(zip(COLUMNS, (round(v, 4) for v in row_values(r)))) for r in rows}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    if args.write_baseline:
        main_rows = [r for r in rows if r.system == systems[0].name]
        baseline = {r.split: dict(zip(COLUMNS, (round(v, 4) for v in row_values(r)))) for r in main_rows}
        baseline["system"] = systems[0].name
        (ROOT / "evals" / "baseline.json").write_text(json.dumps(baseline, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
