"""evals/run_retrieval.py, imported for the tests that use it (it is a script, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_retrieval():
    spec = importlib.util.spec_from_file_location("run_retrieval", ROOT / "evals" / "run_retrieval.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
