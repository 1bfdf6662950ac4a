"""Which copy of a duplicated id git already shares, for ``doctor --fix``.

Two clones recording in parallel hand out the same id; once a merge keeps both entries, one
of them has to be renumbered, and it should be the one nobody else has yet: the other may be
cited in pushed commits, notes and links. The upstream branch's version of the store file is
what others have. Without an upstream, or when it holds neither copy, the file as committed in
``HEAD`` and then in ``ORIG_HEAD`` (the branch before the last merge, pull or reset) stands in
for it. Git is optional: when it is missing, fails, or the project is not in a repository,
nothing is decided and the caller keeps its own rule, with the reason to say why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GIT_TIMEOUT_S = 10


def run_git(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess | None:
    """``git args`` in ``cwd`` (text output); None when git is not installed or could not run."""
    git = shutil.which("git")
    if git is None:
        return None
    # Read-only questions: no index refresh (GIT_OPTIONAL_LOCKS) and never a credential prompt.
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    try:
        return subprocess.run([git, *args], cwd=cwd, input=stdin, capture_output=True, text=True,
                              encoding="utf-8", errors="replace", timeout=GIT_TIMEOUT_S, env=env)
    except (OSError, subprocess.SubprocessError):
        return None


@dataclass
class Version:
    label: str  # how a message names it: "the upstream branch origin/main", "HEAD", ...
    items: list[Any]  # the file's items in that version ([] when the file was not in it)
    upstream: bool = False


class CommittedVersions:
    """The committed versions of one store file, read from git once and only when asked."""

    def __init__(self, root: Path, relpath: str) -> None:
        self.root, self.relpath = root, relpath
        self._loaded: tuple[list[Version], str | None] | None = None

    def _load(self) -> tuple[list[Version], str | None]:
        """(versions to consult in order, why there are none)."""
        if self._loaded is None:
            self._loaded = self._read()
        return self._loaded

    def _read(self) -> tuple[list[Version], str | None]:
        probe = run_git(self.root, "rev-parse", "--is-inside-work-tree")
        if probe is None:
            return [], "git is not installed or could not run"
        if probe.returncode != 0 or probe.stdout.strip() != "true":
            return [], "the project is not in a git work tree"
        refs: list[tuple[str, str, bool]] = []
        upstream = run_git(self.root, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}")
        if upstream is not None and upstream.returncode == 0 and upstream.stdout.strip():
            name = upstream.stdout.strip()
            refs.append((name, f"the upstream branch {name}", True))
        refs += [("HEAD", "HEAD", False), ("ORIG_HEAD", "ORIG_HEAD (the branch before the last merge or pull)", False)]
        versions = []
        for ref, label, is_upstream in refs:
            commit = run_git(self.root, "rev-parse", "--verify", "--quiet", ref + "^{commit}")
            if commit is not None and commit.returncode != 0:
                continue  # no such ref here (no merge yet, no commit yet)
            shown = run_git(self.root, "show", f"{ref}:./{self.relpath}") if commit is not None else None
            if shown is None:
                break  # git stopped working: decide with what was read
            if shown.returncode != 0:
                versions.append(Version(label, [], is_upstream))  # the file is not in it: neither copy is
                continue
            try:
                items = json.loads(shown.stdout.removeprefix("\ufeff"))
            except ValueError:
                continue  # committed with conflict markers, say: it tells nothing
            versions.append(Version(label, items if isinstance(items, list) else [], is_upstream))
        return versions, None if versions else "the file has no committed version"

    def keeper(self, contenders: list[dict]) -> tuple[int | None, str]:
        """Index of the one of ``contenders`` (items sharing one id) that git shows is already
        shared, and the reason as a phrase; (None, why not) when git cannot tell."""
        versions, unavailable = self._load()
        if unavailable and not versions:
            return None, unavailable
        for version in versions:
            present = [i for i, item in enumerate(contenders) if any(_same(item, old) for old in version.items)]
            if len(present) == 1:
                return present[0], f"{version.label} has it and not the other"
            if present and version.upstream:
                return None, f"{version.label} already has both"
        return None, f"neither {' nor '.join(v.label for v in versions)} tells them apart"


def _same(item: Any, old: Any) -> bool:
    """Whether ``old`` (an item of a committed version) is ``item``: the same id and either the
    same object or the same ``created_at`` (it may have been edited since)."""
    if not isinstance(item, dict) or not isinstance(old, dict):
        return False
    if not isinstance(old.get("id"), str) or old["id"].strip() != str(item.get("id", "")).strip():
        return False
    created = item.get("created_at")
    return old == item or (isinstance(created, str) and bool(created) and old.get("created_at") == created)
