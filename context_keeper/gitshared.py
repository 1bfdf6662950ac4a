"""Which copy of a duplicated id git already shares, for ``doctor --fix``.

Two clones recording in parallel hand out the same id; once a merge keeps both entries, one
of them has to be renumbered, and it should be the one nobody else has yet: the other may be
cited in pushed commits, notes and links. What others have is what the remote-tracking branches
hold (``refs/remotes/*``, every one of them: the upstream, the trunk a feature branch merges,
a teammate's branch), so a copy in any of their versions of the store file is shared. ``HEAD``
and ``ORIG_HEAD`` are never evidence: they are the local side, which during a pull is the
unpushed one. Git is optional: when it is missing, fails, or the project is not in a
repository, nothing is decided and the caller keeps its own rule, with the reason to say why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from context_keeper.lines import counted

GIT_TIMEOUT_S = 10


def run_git(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess | None:
    """``git args`` in ``cwd`` (text output); None when git is not installed or could not run."""
    return _git(cwd, *args, stdin=stdin)[0]


def _git(cwd: Path, *args: str, stdin: str | bytes | None = None,
         binary: bool = False) -> tuple[subprocess.CompletedProcess | None, str]:
    """``run_git``, with what went wrong as a phrase when the result is None. ``binary`` keeps
    stdin and stdout as bytes (stderr is text either way, for the message)."""
    git = shutil.which("git")
    if git is None:
        return None, "git is not installed"
    # Read-only questions: no index refresh (GIT_OPTIONAL_LOCKS) and never a credential prompt;
    # untranslated messages (LC_ALL), as a missing file is told apart from a failure by its text.
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    text = {} if binary else {"text": True, "encoding": "utf-8", "errors": "replace"}
    try:
        proc = subprocess.run([git, *args], cwd=cwd, input=stdin, capture_output=True, timeout=GIT_TIMEOUT_S,
                              env=env, **text)
    except subprocess.TimeoutExpired:
        return None, f"`git {args[0]}` took longer than {GIT_TIMEOUT_S} s and was stopped"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"`git {args[0]}` could not run ({exc})"
    if binary:
        proc.stderr = proc.stderr.decode("utf-8", errors="replace")
    return proc, ""


def _failed(proc: subprocess.CompletedProcess, what: str) -> str:
    said = next((line.strip() for line in proc.stderr.splitlines() if line.strip()), f"exit code {proc.returncode}")
    return f"`git {what}` failed: {said}"


def _batch_answers(out: bytes, asked: list[bytes]) -> list[tuple[str, bytes]]:
    """The answers of ``git cat-file --batch`` to ``asked`` (one object name each), in order, as
    (the object's type, its content), or ("missing" / "ambiguous", b""). Raises ValueError when
    ``out`` is not one answer per name framed as git documents it. Sizes count bytes, which is
    why ``out`` is never decoded as a whole: one multi-byte character would shift every answer
    after it."""
    answers, at = [], 0
    for name in asked:
        end = out.find(b"\n", at)
        if end < 0:
            raise ValueError(f"no answer for {name.decode(errors='replace')}")
        header, at = out[at:end], end + 1
        if header in (name + b" missing", name + b" ambiguous"):
            answers.append((header.rpartition(b" ")[2].decode(), b""))
            continue
        fields = header.split(b" ")
        if len(fields) != 3 or not fields[2].isdigit():
            raise ValueError(f"an answer begins {header[:80].decode(errors='replace')!r}")
        size = int(fields[2])
        if out[at + size:at + size + 1] != b"\n":
            raise ValueError(f"the {fields[1].decode(errors='replace')} for {name.decode(errors='replace')} "
                             f"is not {counted(size, 'byte')} long")
        answers.append((fields[1].decode(errors="replace"), out[at:at + size]))
        at += size + 1
    left = len(out) - at
    if left:
        raise ValueError(f"{counted(left, 'byte')} {'follows' if left == 1 else 'follow'} the last answer")
    return answers


@dataclass
class Version:
    ref: str  # the remote-tracking branch, as a message names it: "origin/main"
    items: list[Any]  # the file's items in that version ([] when the file was not in it)


class CommittedVersions:
    """The versions of one store file on the remote-tracking branches, read from git once and
    only when asked."""

    def __init__(self, root: Path, relpath: str) -> None:
        self.root, self.relpath = root, relpath
        self._loaded: tuple[list[Version], str | None] | None = None

    def _load(self) -> tuple[list[Version], str | None]:
        """(the versions, why git cannot tell when it cannot)."""
        if self._loaded is None:
            self._loaded = self._read()
        return self._loaded

    def _read(self) -> tuple[list[Version], str | None]:
        prefix, why = self._prefix()
        if prefix is None:
            return [], why
        branches, why = self._branches()
        if not branches:
            return [], why
        return self._versions(branches, prefix + self.relpath.encode())

    def _prefix(self) -> tuple[bytes | None, str | None]:
        """(where the project is inside its work tree, as git names paths from the top-level:
        b"" or b"sub/dir/"; why not when it is not in one). Kept as bytes, as git gives it: the
        path goes back to git as is, and a name decoded with replacement characters would not be
        found on any branch, which would read as "no branch has the file"."""
        probe, why = _git(self.root, "rev-parse", "--is-inside-work-tree", "--show-prefix", binary=True)
        if probe is None:
            return None, why
        if probe.returncode != 0 and "not a git repository" not in probe.stderr:
            return None, _failed(probe, "rev-parse")  # e.g. a repository git refuses as of dubious ownership
        inside, _, prefix = probe.stdout.partition(b"\n")
        if probe.returncode != 0 or inside.strip() != b"true":
            return None, "the project is not in a git work tree"
        prefix = prefix.removesuffix(b"\n")
        if b"\n" in prefix:
            # cat-file reads one object name a line.
            return None, "the project's path in the repository has a line break, which `git cat-file` cannot read"
        return prefix, None

    def _branches(self) -> tuple[list[tuple[str, bytes]], str | None]:
        """((the branch as a message names it, its commit id) for each remote-tracking branch,
        why there are none). Git is asked by commit id, not by name: a branch name that did not
        survive decoding would come back "missing", as if the file were not on it."""
        listed, why = _git(self.root, "for-each-ref", "--format=%(objectname)%00%(refname)%00%(symref)",
                           "refs/remotes")
        if listed is None:
            return [], why
        if listed.returncode != 0:
            return [], _failed(listed, "for-each-ref")
        # A symbolic origin/HEAD only repeats the branch it points at.
        branches = []
        for line in listed.stdout.split("\n"):
            oid, _, rest = line.partition("\0")
            ref, _, symref = rest.partition("\0")
            if ref.startswith("refs/remotes/") and not symref:
                branches.append((ref.removeprefix("refs/remotes/"), oid.encode()))
        if not branches:
            return [], "there is no remote-tracking branch, so nothing shows what is pushed"
        return branches, None

    def _versions(self, branches: list[tuple[str, bytes]], path: bytes) -> tuple[list[Version], str | None]:
        """The file at ``path`` (from the top-level) on each of ``branches``, read in one
        ``git cat-file --batch``: one git per branch is slow with hundreds of them."""
        asked = [oid + b":" + path for _, oid in branches]
        batch, why = _git(self.root, "cat-file", "--batch", stdin=b"".join(name + b"\n" for name in asked),
                          binary=True)
        if batch is None:
            return [], why
        if batch.returncode != 0:
            return [], _failed(batch, "cat-file --batch")
        try:
            answers = _batch_answers(batch.stdout, asked)
        except ValueError as exc:
            return [], f"`git cat-file --batch` answered in a form not understood ({exc})"
        versions = []
        # Most branches hold one of a few versions of the file: each is parsed once.
        parsed: dict[bytes, Any] = {}
        for (name, _), (kind, content) in zip(branches, answers):
            if kind == "missing":
                versions.append(Version(name, []))  # the file is not in it: neither copy is
                continue
            if kind == "ambiguous":
                return [], f"git cannot tell which object {name}:{self.relpath} is (the name is ambiguous)"
            if kind != "blob":
                return [], f"on {name}, {self.relpath} is a {kind}, not a file"
            if content not in parsed:
                parsed[content] = _parsed(content)
            items = parsed[content]
            if not isinstance(items, list):
                # Committed with conflict markers, say. What others have is unknown then, and no
                # other version may stand in for it: a copy missing elsewhere may be in this one.
                return [], f"the version of the file on {name} does not parse"
            versions.append(Version(name, items))
        return versions, None

    def keeper(self, contenders: list[dict]) -> tuple[int | None, str]:
        """Which of ``contenders`` (items sharing one id, in file order) keeps the id, and why, as
        a phrase; (None, why not) when git cannot tell. Each copy is decided on its own: a copy in
        some remote-tracking version is shared, the others are not and are all renumbered. Among
        several shared copies (or none) git cannot say which one others cite: the first keeps it."""
        versions, unavailable = self._load()
        if unavailable:
            return None, unavailable
        where: dict[int, list[str]] = {}
        for version in versions:
            for i, item in enumerate(contenders):
                if any(_same(item, old) for old in version.items):
                    where.setdefault(i, []).append(version.ref)
        others = "not the other" if len(contenders) == 2 else f"none of the other {len(contenders) - 1}"
        if len(where) == 1:
            (index, refs), = where.items()
            return index, f"{_refs(refs)} {'has' if len(refs) == 1 else 'have'} it and {others}"
        if where:
            refs = _refs(list(dict.fromkeys(ref for found in where.values() for ref in found)))
            shared = "both copies are" if len(where) == len(contenders) == 2 else \
                f"{len(where)} of the {len(contenders)} copies are"
            return min(where), (f"{shared} already on remote-tracking branches ({refs}), so git cannot tell which "
                                "one others cite, and it comes first in the file among them")
        return 0, (f"no remote-tracking branch ({_refs([v.ref for v in versions])}) has any of them, so none is "
                   "pushed yet, and it comes first in the file")


def _parsed(blob: bytes) -> Any:
    """A committed version of the file, as JSON; None when it does not parse."""
    try:
        return json.loads(blob.decode("utf-8", errors="replace").removeprefix("\ufeff"))
    except ValueError:
        return None


def _refs(refs: list[str]) -> str:
    return ", ".join(refs[:-1]) + " and " + refs[-1] if len(refs) > 1 else refs[0]


def _same(item: Any, old: Any) -> bool:
    """Whether ``old`` (an item of a committed version) is ``item``: the same id and either the
    same object or the same ``created_at`` (it may have been edited since)."""
    if not isinstance(item, dict) or not isinstance(old, dict):
        return False
    if not isinstance(old.get("id"), str) or old["id"].strip() != str(item.get("id", "")).strip():
        return False
    created = item.get("created_at")
    return old == item or (isinstance(created, str) and bool(created) and old.get("created_at") == created)
