"""Writers at the same moment, forced into the order that went wrong (no sleeps, no luck): a
DECISIONS.md refresh overtaken by another writer's, the temp files a killed export leaves beside
it, and two `init` runs at once."""

from __future__ import annotations

import errno
import json
import os
import re
import time
from pathlib import Path

import filelock
import pytest

from context_keeper import doctor, fsio, render
from context_keeper.errors import StoreError
from context_keeper.service import Service
from context_keeper.store import Store


def _decision(n: int) -> dict:
    return {"summary": f"Worker {n} decision",
            "problem": f"Problem text for worker {n} that is long enough to pass the minimum.",
            "why_chosen": f"Because worker {n} needs a reason that is more than sixty characters long, ok."}


@pytest.fixture
def exporting(empty_project: Path) -> Path:
    (empty_project / ".context" / "config.json").write_text(
        json.dumps({"project_name": "x", "markdown_export": {"enabled": True}}), encoding="utf-8")
    return empty_project


def _svc(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, hook_cache_delay=None)


def _ids_in_markdown(root: Path) -> set[str]:
    return set(re.findall(r"dec-\d{3}", (root / "DECISIONS.md").read_text(encoding="utf-8")))


def _ids_stored(root: Path) -> set[str]:
    return {e["id"] for e in json.loads((root / ".context" / "decisions.json").read_text(encoding="utf-8"))}


# What the first writer does; each refreshes DECISIONS.md afterwards (the last, explicitly).
WRITES = {
    "record": lambda svc: svc.record("decision", _decision(1)),
    "update": lambda svc: svc.update_entry("dec-001", {"tags": ["wave"]}),
    "deprecate": lambda svc: svc.deprecate_entry("dec-001", "no longer how picking works"),
    "supersede": lambda svc: svc.record("decision", _decision(1), supersedes=["dec-001"]),
    "merge": lambda svc: svc.deprecate_entry("dec-002", merge_into="dec-001"),
    "export_markdown": lambda svc: svc.export_markdown(),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_decision_recorded_while_another_writer_exports_stays_in_decisions_md(exporting, monkeypatch, write):
    """The rival records between the first writer's read of the decisions and its write of the
    file, whenever the store lock lets it: the file must not end without the rival's decision."""
    first, rival = _svc(exporting), _svc(exporting)
    first.record("decision", _decision(0))
    first.record("decision", _decision(2))
    rendered = render.decisions_markdown
    rival_id: list[str] = []
    interleaved = False

    def rival_records_mid_export(*args, **kwargs):
        nonlocal interleaved
        text = rendered(*args, **kwargs)  # from the decisions as the first writer read them
        if interleaved:  # the rival's own export comes through here too
            return text
        interleaved = True
        try:
            with rival.store().locked(timeout=0):  # only if it could commit now (it would wait otherwise)
                rival_id.append(rival.record("decision", _decision(3))["id"])
            assert rival_id[0] in _ids_in_markdown(exporting)  # its own refresh wrote it
        except StoreError:
            pass  # the lock is held through this export: the rival's turn comes after it
        return text

    monkeypatch.setattr(render, "decisions_markdown", rival_records_mid_export)
    WRITES[write](first)
    assert interleaved
    if not rival_id:
        rival_id.append(rival.record("decision", _decision(3))["id"])
    assert rival_id[0] in _ids_in_markdown(exporting)
    assert _ids_in_markdown(exporting) == _ids_stored(exporting)


def test_export_markdown_still_works_when_the_store_lock_file_cannot_be_opened(exporting, monkeypatch):
    """Exporting only reads the store: a read-only checkout, where no writer can take the lock
    either, is exported without it."""
    svc = _svc(exporting)
    svc.record("decision", _decision(1))
    (exporting / "DECISIONS.md").unlink()

    def refuse(self, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", self.lock_file)

    monkeypatch.setattr(filelock.FileLock, "acquire", refuse)
    assert svc.export_markdown()["decisions"] == 1
    assert _ids_in_markdown(exporting) == {"dec-001"}


def _leftover_temp(target: Path) -> Path:
    """A temp file named as the atomic write of ``target`` names it, as a writer killed before
    its rename leaves it, aged past doctor's threshold."""
    fd, name = fsio._create_temp(target)
    os.write(fd, b"# Decisions (partial")
    os.close(fd)
    old = time.time() - doctor.STALE_TEMP_S - 60
    os.utime(name, (old, old))
    return Path(name)


def test_doctor_fix_removes_the_temp_files_a_killed_export_left_and_nothing_else(exporting):
    (exporting / ".context" / "config.json").write_text(json.dumps(
        {"project_name": "x", "markdown_export": {"enabled": True, "path": "docs/decisions.md"}}), encoding="utf-8")
    (exporting / "docs").mkdir()
    left = [_leftover_temp(exporting / "DECISIONS.md"), _leftover_temp(exporting / "docs" / "decisions.md")]
    fresh = _leftover_temp(exporting / "DECISIONS.md")
    os.utime(fresh)  # a writer may be exporting right now
    look_alikes = [exporting / ".DECISIONS.md.notes.tmp", exporting / ".DECISIONS.md.0123456789ab.tmp.bak",
                   exporting / ".README.md.0123456789ab.tmp", exporting / "docs" / ".decisions.md.0123456789abc.tmp"]
    for path in look_alikes:
        path.write_text("someone's file", encoding="utf-8")
        os.utime(path, (0, 0))
    report = doctor.diagnose(exporting)
    assert sorted(f.file for f in report.findings if f.code == "stale_temp") == sorted(str(p) for p in left)
    doctor.repair(report)
    assert not any(p.exists() for p in left)
    assert fresh.exists() and all(p.exists() for p in look_alikes)
    assert not [f for f in doctor.diagnose(exporting).findings if f.code == "stale_temp"]


def test_of_two_inits_at_once_only_the_one_that_wrote_the_files_says_created(tmp_path, monkeypatch):
    """Both find no .context/ yet; the second to get the lock finds the first one's files."""
    root = tmp_path / "proj"
    root.mkdir()
    transaction = Store.transaction
    first_answers = []

    def after_the_other_init_ran(self):
        monkeypatch.setattr(Store, "transaction", transaction)
        first_answers.append(Service(env={}).init_project(str(root), "Alpha"))
        return transaction(self)

    monkeypatch.setattr(Store, "transaction", after_the_other_init_ran)
    waited = Service(env={}).init_project(str(root), "Beta")
    assert first_answers[0]["created"] is True
    assert waited["created"] is False
    assert "the name 'Beta' was not written" in waited["warnings"][0]
