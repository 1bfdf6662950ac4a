"""A store file that is a symbolic link to a real file (a shared or dotfiles copy): writes go
through the link to that file, the link stays a link, and doctor says where writes land."""

from __future__ import annotations

import json
from pathlib import Path

from context_keeper import doctor
from context_keeper.fsio import atomic_write_text
from context_keeper.service import Service

DECISION = {
    "summary": "Zone batches for stock take",
    "problem": "A full stop for stock take cost a day of shipping every year at every site.",
    "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs.",
}


def _link_decisions(project: Path, target: Path) -> Path:
    live = project / ".context" / "decisions.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    live.rename(target)
    live.symlink_to(target)
    return live


def _service(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root))


def test_a_record_goes_through_the_link_and_the_link_stays(project, monkeypatch):
    from context_keeper import fsio

    target = project / "shared" / "decisions.json"
    live = _link_decisions(project, target)
    before = len(json.loads(target.read_text(encoding="utf-8")))
    temps: list[str] = []
    create_temp = fsio._create_temp

    def recorded(path):
        fd, name = create_temp(path)
        temps.append(name)
        return fd, name

    monkeypatch.setattr(fsio, "_create_temp", recorded)
    new_id = _service(project).record("decision", DECISION)["id"]
    assert live.is_symlink() and live.resolve() == target.resolve()
    ids = [e["id"] for e in json.loads(target.read_text(encoding="utf-8"))]
    assert len(ids) == before + 1 and new_id in ids
    # The temp file was made beside the target (one file system for the rename), then renamed.
    beside = [name for name in temps if Path(name).name.startswith(".decisions.json.")
              and Path(name).parent == target.parent.resolve()]
    assert beside and not any(Path(name).exists() for name in beside)


def test_a_second_server_sees_a_write_made_through_the_link(project):
    _link_decisions(project, project / "shared" / "decisions.json")
    reader, writer = _service(project), _service(project)
    assert not any(h["entry"]["id"].startswith("dec-") and "Zone batches" in h["entry"].get("summary", "")
                   for h in reader.get_context(query="stock take zone batches")["results"])
    writer.record("decision", DECISION)
    found = reader.get_context(query="stock take zone batches")["results"]
    assert any("Zone batches" in h["entry"].get("summary", "") for h in found)


def test_an_atomic_write_follows_a_chain_of_links(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old", encoding="utf-8")
    (tmp_path / "middle.txt").symlink_to(real)
    (tmp_path / "front.txt").symlink_to(tmp_path / "middle.txt")
    atomic_write_text(tmp_path / "front.txt", "new", follow_symlinks=True)
    assert real.read_text(encoding="utf-8") == "new"
    assert (tmp_path / "front.txt").is_symlink() and (tmp_path / "middle.txt").is_symlink()


def test_doctor_tells_where_writes_land(project, tmp_path):
    _link_decisions(project, project / "shared" / "decisions.json")
    inside = [f for f in doctor.diagnose(project).findings if f.code == "file_symlink"]
    assert [f.severity for f in inside] == [doctor.INFO] and "writes go to that file" in inside[0].message

    other = tmp_path / "elsewhere"
    other.mkdir()
    live = project / ".context" / "decisions.json"
    live.unlink()
    (project / "shared" / "decisions.json").rename(other / "decisions.json")
    live.symlink_to(other / "decisions.json")
    outside = [f for f in doctor.diagnose(project).findings if f.code == "file_symlink"]
    assert [f.severity for f in outside] == [doctor.WARNING] and "outside the project" in outside[0].message


def test_a_derived_file_linked_out_of_the_project_is_replaced_not_written_through(project, tmp_path):
    # Only the store files are written through their links. A last-good copy, a sidecar or the
    # commit token that is a link (a cloned repository can commit one) is replaced as before:
    # writing through it would overwrite a file anywhere the link leads, on every record.
    victim = tmp_path / "outside" / "precious.txt"
    victim.parent.mkdir()
    victim.write_text("precious\n", encoding="utf-8")
    backup = project / ".context" / ".last-good" / "decisions.json"
    backup.parent.mkdir(exist_ok=True)
    backup.unlink(missing_ok=True)
    backup.symlink_to(victim)
    service = _service(project)
    service.record("decision", DECISION)
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert not backup.is_symlink() and "Zone batches" in backup.read_text(encoding="utf-8")

    sidecar = project / ".context" / "notes.json"
    sidecar.symlink_to(victim)
    service.store(str(project)).write_sidecar("notes.json", {"a": 1})
    assert victim.read_text(encoding="utf-8") == "precious\n" and not sidecar.is_symlink()


def test_a_link_to_nothing_creates_nothing_where_it_leads(tmp_path):
    link = tmp_path / "cache.json"
    link.symlink_to(tmp_path / "elsewhere" / "deep" / "cache.json")
    atomic_write_text(link, "{}")
    assert not (tmp_path / "elsewhere").exists()
    assert not link.is_symlink() and link.read_text(encoding="utf-8") == "{}"


def test_doctor_removes_an_old_temp_file_left_beside_a_linked_target_and_only_that_file_s(project, tmp_path):
    import os
    import time

    shared = tmp_path / "shared"
    _link_decisions(project, shared / "decisions.json")
    mine = shared / ".decisions.json.abc123.tmp"
    someone_elses = shared / ".notes.txt.abc123.tmp"
    for path in (mine, someone_elses):
        path.write_text("[partial", encoding="utf-8")
        an_hour_ago = time.time() - 3600
        os.utime(path, (an_hour_ago, an_hour_ago))
    report = doctor.diagnose(project)
    assert [f.file for f in report.findings if f.code == "stale_temp"] == [str(mine)]
    doctor.repair(report)
    assert not mine.exists() and someone_elses.exists()
