"""Pasted file paths that no entry is about: how many get a confident answer.

    python evals/path_sweep.py

For each bundled store (evals/stores/*, examples/demo-project), up to three directories its
constraints' scopes name. For each one, two pasted paths are tried. "Beside" is a file under a
sibling directory that no scope covers, where neither the directory nor the file name is a word
the store uses: no entry is about it, so a confident answer is a wrong one. "Inside" is the same
file inside the recorded directory: the constraint scoped there is about it. Prints how many of
each were answered confidently (no ``no_confident_match``), and a few of the wrong ones.
Read-only: the stores are searched where they are.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from context_keeper.scope import is_glob, is_global, scope_overlaps  # noqa: E402
from context_keeper.search.tokenize import terms  # noqa: E402
from context_keeper.service import Service  # noqa: E402

FILE_NAMES = ["healthcheck.py", "daily_digest.py", "color_palette.ts", "qr_render.go", "emoji_picker.tsx",
              "zip_bundle.rs", "lint_rules.rb", "font_loader.js", "dice_roll.kt", "yaml_lint.sh"]
DIRECTORIES = ["admin", "metrics", "theming", "telemetry", "avatars", "widgets", "i18n"]


def _store_facts(root: Path) -> tuple[set[str], list[str], list[str]]:
    """The store's words, the directories its scopes name (in order) and its non-global scopes."""
    words: set[str] = set()
    directories: list[str] = []
    scopes: list[str] = []
    for path in sorted((root / ".context").glob("*.json")):
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for entry in items if isinstance(items, list) else []:
            if not isinstance(entry, dict):
                continue
            words.update(terms(json.dumps(entry, ensure_ascii=False)))
            scope = entry.get("scope")
            if not isinstance(scope, str) or is_global(scope):
                continue
            scopes.append(scope)
            for part in re.split(r"[,;\s]+", scope):
                if "/" in part and not is_glob(part):
                    directory = part.rstrip("/") if part.endswith("/") else part.rsplit("/", 1)[0]
                    if directory and directory not in directories:
                        directories.append(directory)
    return words, directories, scopes


def main() -> int:
    stores = sorted(p for p in (REPO / "evals" / "stores").iterdir() if (p / ".context").is_dir())
    counts = {"beside": [0, 0], "inside": [0, 0]}
    wrong: list[tuple[str, str, float]] = []
    for root in [*stores, REPO / "examples" / "demo-project"]:
        words, directories, scopes = _store_facts(root)
        name = next((n for n in FILE_NAMES if not set(terms(n.rsplit(".", 1)[0])) & words), None)
        sibling = next((d for d in DIRECTORIES if not set(terms(d)) & words), None)
        if name is None or sibling is None:
            continue
        svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root), hook_cache_delay=None)
        for directory in directories[:3]:
            parent = directory.rsplit("/", 1)[0] if "/" in directory else ""
            beside = f"{parent}/{sibling}/{name}" if parent else f"{sibling}/{name}"
            for where, query in (("inside", f"{directory}/{name}"), ("beside", beside)):
                if where == "beside" and any(scope_overlaps(s, query, str(root)) for s in scopes):
                    continue
                answer = svc.get_context(query=query)
                counts[where][1] += 1
                if not answer.get("no_confident_match"):
                    counts[where][0] += 1
                    if where == "beside":
                        wrong.append((root.name, query, answer["top_relevance"]))
    for where, (confident, asked) in counts.items():
        print(f"{where}: {confident} of {asked} confident")
    for store, query, relevance in wrong[:8]:
        print(f"  wrongly confident: {store}: {query} (top relevance {relevance})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
