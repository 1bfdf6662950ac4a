"""The README documents every tool, every config key and both set-up commands."""

from __future__ import annotations

import re

from context_keeper.config import DEFAULTS
from tests.conftest import REPO
from tests.test_contract import EXPECTED

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_documents_every_tool():
    missing = [name for name in EXPECTED if f"`{name}`" not in README]
    assert not missing, f"README lacks: {missing}"


def test_readme_documents_every_config_key():
    missing = [key for key in DEFAULTS if f"`{key}`" not in README]
    assert not missing, f"README lacks config keys: {missing}"


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```(?:bash|sh)\n(.*?)```", README, re.S)
    test_command = next(c.strip() for c in commands if "pytest" in c)
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command.splitlines()[-1].strip() in ci
