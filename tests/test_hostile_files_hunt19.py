"""Files a cloned repository can commit (or craft) under ``.context/`` to hang, exhaust or crash
the readers that run automatically: a FIFO or ``/dev/zero`` in place of a store file, a store
file too large to read in a hook's time, JSON nested past the parser's depth, a derived cache
holding numbers no index can use. Each is refused with a store-health message or treated as a
stale cache; the healthy files keep working and nothing is written over the strange one."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from context_keeper import bounded_read, doctor
from context_keeper.oneshot import OneShotService
from context_keeper.search import snapshot
from context_keeper.search import state as search_state
from context_keeper.service import Service
from tests.conftest import REPO
from tests.hook_helpers import hook_env, injected, payload, run_hook

posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs and /dev/zero are POSIX")
NESTED = "[" * 100_000 + "]" * 100_000
# A reader that slurps /dev/zero fails inside this instead of taking the machine's memory.
MEMORY_CAP = 2 * 1024**3
DECISION = "dec-008"  # in examples/demo-project: "Carrier API calls use capped exponential backoff with jitter"


def _service(root: Path) -> Service:
    return Service(env={"CONTEXT_KEEPER_PROJECT": str(root)}, cwd=str(root))


def _keep_last_good(project: Path, name: str) -> None:
    backup = project / ".context" / ".last-good"
    backup.mkdir(exist_ok=True)
    shutil.copyfile(project / ".context" / name, backup / name)


def _capped() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _hook(event_file: str, data: dict, project: Path) -> subprocess.CompletedProcess:
    """A hook run that neither waits forever (a FIFO) nor takes the machine's memory."""
    args = [sys.executable, "-S", str(REPO / "hooks" / f"{event_file}.py")]
    return subprocess.run(args, input=json.dumps(data).encode("utf-8"), capture_output=True, env=hook_env(project),
                          timeout=60, preexec_fn=_capped)


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**hook_env(), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "context_keeper", *args], capture_output=True, env=env,
                          cwd=project, timeout=60, preexec_fn=_capped if os.name == "posix" else None)


def _hook_log(project: Path) -> str:
    log = project / ".context" / "hook.log"
    return log.read_text(encoding="utf-8") if log.exists() else ""


# ------------------------------------------------------------ not a regular file


def _fifo(path: Path) -> str:
    path.unlink()
    os.mkfifo(path)
    return "is not a regular file (a FIFO)"


def _dev_zero(path: Path) -> str:
    path.unlink()
    os.symlink("/dev/zero", path)
    return "is not a regular file (a character device)"


@posix_only
@pytest.mark.parametrize("breakage", [_fifo, _dev_zero])
def test_session_start_refuses_a_store_file_that_is_not_a_regular_file(project, breakage):
    _keep_last_good(project, "decisions.json")
    said = breakage(project / ".context" / "decisions.json")
    text = injected(_hook("session_start", payload("session_start_startup", project), project))
    assert text is not None, _hook_log(project)
    assert said in text and "replace it with the JSON file" in text
    assert f"{DECISION}:" in text  # from the last good copy
    assert stat_kind(project / ".context" / "decisions.json") != "regular"


def stat_kind(path: Path) -> str:
    import stat

    mode = os.stat(path).st_mode
    return "regular" if stat.S_ISREG(mode) else "special"


@posix_only
@pytest.mark.parametrize("breakage", [_fifo, _dev_zero])
def test_edit_guard_still_shows_the_constraints_of_a_last_good_copy(project, breakage):
    _keep_last_good(project, "constraints.json")
    breakage(project / ".context" / "constraints.json")
    text = injected(_hook("scope_guard", payload("pre_tool_use_edit", project), project))
    assert text is not None, _hook_log(project)
    assert "con-" in text


@posix_only
@pytest.mark.parametrize("breakage", [_fifo, _dev_zero])
def test_doctor_reports_a_store_file_that_is_not_a_regular_file(project, breakage):
    said = breakage(project / ".context" / "decisions.json")
    proc = _cli(project, "doctor")
    out = proc.stdout.decode("utf-8")
    assert proc.returncode == 5 and "Traceback" not in proc.stderr.decode("utf-8"), proc.stderr
    assert f"decisions.json {said}" in out


@posix_only
def test_a_fifo_as_the_last_good_copy_of_a_broken_file_is_not_waited_for(project):
    path = project / ".context" / "decisions.json"
    (project / ".context" / ".last-good").mkdir()
    os.mkfifo(project / ".context" / ".last-good" / "decisions.json")
    path.write_text(path.read_text(encoding="utf-8").replace('"id":', '"id"', 1), encoding="utf-8")
    for args in (["doctor"], ["summary"]):
        proc = _cli(project, *args)
        assert "Traceback" not in proc.stderr.decode("utf-8"), (args, proc.stderr)
        assert "decisions.json does not parse" in (proc.stdout + proc.stderr).decode("utf-8"), args


@posix_only
def test_a_write_to_a_fifo_store_file_is_refused_and_leaves_it(project):
    _fifo(project / ".context" / "decisions.json")
    script = (
        "import sys\nfrom context_keeper.service import Service\nfrom context_keeper.errors import StoreError\n"
        f"svc = Service(env={{'CONTEXT_KEEPER_PROJECT': {str(project)!r}}})\n"
        "try:\n    svc.record('decision', {'summary': 'Zone batches for stock take', 'problem': 'A full stop for "
        "stock take cost a day of shipping every year.', 'why_chosen': 'Counting one zone at a time keeps the other "
        "zones shipping while the count runs.'})\nexcept StoreError as exc:\n    print(exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, cwd=REPO,
                          env={**hook_env(), "PYTHONPATH": str(REPO)})
    assert "is not a regular file (a FIFO)" in proc.stdout.decode("utf-8"), proc.stderr
    assert stat_kind(project / ".context" / "decisions.json") == "special"


@posix_only
def test_config_that_is_not_a_regular_file_means_defaults_with_a_warning(project):
    config = project / ".context" / "config.json"
    config.unlink()
    os.symlink("/dev/zero", config)
    proc = _cli(project, "summary")
    assert proc.returncode == 0, proc.stderr
    assert "config.json is not a regular file (a character device)" in proc.stderr.decode("utf-8")


# ------------------------------------------------------------ too large


def _sparse(path: Path, size: int) -> None:
    """A file of ``size`` bytes that costs no disk and no time to make (and would to read)."""
    with open(path, "r+b") as handle:
        handle.truncate(size)


def test_a_store_file_above_the_cap_reads_as_its_last_good_copy_and_is_never_written(project):
    _keep_last_good(project, "decisions.json")
    path = project / ".context" / "decisions.json"
    _sparse(path, bounded_read.STORE_FILE_LIMIT + 1)
    before = os.stat(path)
    svc = _service(project)
    answer = svc.get_context(query="carrier API retries and backoff")
    warned = " ".join(answer.get("warnings", []))
    assert "above the 128 MiB this tool reads" in warned and "134 MB" in warned, warned
    assert DECISION in [hit["entry"]["id"] for hit in answer["results"]]
    with pytest.raises(Exception, match="above the 128 MiB this tool reads"):
        svc.record("decision", {
            "summary": "Zone batches for stock take",
            "problem": "A full stop for stock take cost a day of shipping every year at every site.",
            "why_chosen": "Counting one zone at a time keeps the other zones shipping while the count runs."})
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    report = doctor.diagnose(project)
    assert any(f.code == "not_a_file" and "above the 128 MiB" in f.message for f in report.findings)


def test_session_start_shows_the_last_good_copy_of_a_store_file_above_the_cap(project):
    _keep_last_good(project, "decisions.json")
    _sparse(project / ".context" / "decisions.json", 2_100_000_000)
    text = injected(run_hook("session_start", payload("session_start_startup", project), env=hook_env(project)))
    assert text is not None, _hook_log(project)
    assert "decisions.json is 2.1 GB, above the 128 MiB this tool reads" in text
    assert f"{DECISION}:" in text


def test_config_above_its_cap_means_defaults_with_a_warning(project):
    config = project / ".context" / "config.json"
    _sparse(config, bounded_read.CONFIG_LIMIT + 1)
    svc = _service(project)
    assert any("config.json is 1.0 MB, above the 1 MiB this tool reads" in w
               for w in svc.get_project_summary()["warnings"])


@pytest.mark.parametrize("size, shown", [(2_100_000_000, "2.1 GB"), (43_000_000, "43 MB"), (128 * 2**20, "128 MiB"),
                                         (1500, "1.5 kB"), (12, "12 bytes")])
def test_sizes_are_shown_the_way_people_read_them(size, shown):
    assert bounded_read.shown_size(size) == shown


# ------------------------------------------------------------ nested too deeply


def test_one_store_file_nested_too_deeply_leaves_the_others_readable(project):
    (project / ".context" / "pipelines.json").write_text(NESTED, encoding="utf-8")
    svc = _service(project)
    summary = svc.get_project_summary()
    assert summary["counts"]["decisions"] == 27 and summary["counts"]["constraints"] == 16
    assert any("pipelines.json does not parse (nested too deeply" in w for w in summary["warnings"])
    answer = svc.get_context(query="carrier API retries and backoff")
    assert DECISION in [hit["entry"]["id"] for hit in answer["results"]]
    report = doctor.diagnose(project)
    assert any(f.code == "corrupt_file" and "nested too deeply" in f.message for f in report.findings)


def test_session_start_and_cli_survive_a_store_file_nested_too_deeply(project):
    (project / ".context" / "pipelines.json").write_text(NESTED, encoding="utf-8")
    text = injected(run_hook("session_start", payload("session_start_startup", project), env=hook_env(project)))
    assert text is not None, _hook_log(project)
    assert "nested too deeply" in text and f"{DECISION}:" in text and "con-" in text
    for args in (["summary"], ["get", "carrier retries"], ["doctor"]):
        proc = _cli(project, *args)
        assert "Traceback" not in proc.stderr.decode("utf-8"), (args, proc.stderr)
        assert proc.returncode in (0, 5), (args, proc.returncode)


@pytest.mark.parametrize("cache", ["hook_roots_state.json", "hook_scope_state.json", "search_index_state.json"])
def test_a_cache_nested_too_deeply_is_stale_and_rebuilt(project, cache):
    env = hook_env(project)
    assert injected(run_hook("user_prompt_submit", payload("user_prompt_submit", project), env=env))
    assert injected(run_hook("scope_guard", payload("pre_tool_use_edit", project), env=env))
    path = project / ".context" / cache
    path.write_text(NESTED, encoding="utf-8")
    session = {"session_id": "9f1c2d3e-0000-4000-8000-0000000000ff"}
    assert injected(run_hook("user_prompt_submit", payload("user_prompt_submit", project, **session), env=env)), \
        _hook_log(project)
    assert injected(run_hook("scope_guard", payload("pre_tool_use_edit", project, **session), env=env)), \
        _hook_log(project)
    assert "RecursionError" not in _hook_log(project)


# ------------------------------------------------------------ crafted numbers in the search caches

BIG = 10**400


def _crafted_search_state(project: Path) -> None:
    """search_state.json with 10**400 added to one count and its length in every record: the
    counts still add up, and the fingerprint and entry hashes are anyone's to compute."""
    path = project / ".context" / search_state.FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    for key, (lens, terms, counts) in data["entries"].items():
        lengths, numbers = [int(n) for n in lens.split(",")], [int(n) for n in counts.split(",")]
        lengths[0] += BIG
        numbers[0] += BIG
        data["entries"][key] = [",".join(map(str, lengths)), terms, ",".join(map(str, numbers))]
    path.write_text(json.dumps(data), encoding="utf-8")


def test_search_state_with_numbers_beyond_a_float_costs_only_a_reanalysis(project):
    env = hook_env(project)
    assert injected(run_hook("user_prompt_submit", payload("user_prompt_submit", project), env=env))
    (project / ".context" / snapshot.FILE).unlink()
    _crafted_search_state(project)
    for n in range(2):
        session = {"session_id": f"9f1c2d3e-0000-4000-8000-00000000010{n}"}
        text = injected(run_hook("user_prompt_submit", payload("user_prompt_submit", project, **session), env=env))
        assert text is not None and DECISION in text, _hook_log(project)
    assert "OverflowError" not in _hook_log(project)
    proc = _cli(project, "get", "carrier API retries and backoff")
    assert proc.returncode == 0 and DECISION in proc.stdout.decode("utf-8"), proc.stderr


@pytest.mark.parametrize("record", [
    ["1,0,0,0", "a", "1,0,0,0"],  # a fair one, for contrast
    [f"{BIG + 1},0,0,0", "a", f"{BIG + 1},0,0,0"],
    [f"{2**31},0,0,0", "a", f"{2**31},0,0,0"],
])
def test_a_record_counts_only_up_to_what_a_store_file_can_hold(record):
    groups = len(search_state.F.GROUPS)
    record = [",".join((record[0].split(",") + ["0"] * groups)[:groups]), record[1],
              ",".join((record[2].split(",") + ["0"] * groups)[:groups])]
    decoded = search_state._decode(record)
    assert (decoded is not None) == (record[0].startswith("1,")), decoded


def _restorable(project: Path) -> tuple[dict, Service]:
    svc = OneShotService(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project))
    svc.get_context(query="carrier API retries and backoff")
    svc.save_search_state()
    return json.loads((project / ".context" / snapshot.FILE).read_text(encoding="utf-8")), svc


@pytest.mark.parametrize("field, value", [("avg_used", BIG), ("len_sums", BIG), ("avg_used", -1.0)])
def test_a_snapshot_with_numbers_beyond_range_is_not_restored(project, field, value):
    data, _ = _restorable(project)
    data[field] = [value] * len(data[field])
    (project / ".context" / snapshot.FILE).write_text(json.dumps(data), encoding="utf-8")
    svc = OneShotService(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project))
    answer = svc.get_context(query="carrier API retries and backoff")
    assert DECISION in [hit["entry"]["id"] for hit in answer["results"]]
    assert not isinstance(svc.index(svc.store()).index, snapshot.SnapshotIndex)


def test_any_failure_of_a_restored_index_means_a_fresh_build_and_a_log_line(project, monkeypatch, caplog):
    _restorable(project)

    def broken(*_args, **_kwargs):
        raise ZeroDivisionError("a case the checks did not foresee")

    monkeypatch.setattr(snapshot.SnapshotIndex, "search", broken)
    svc = OneShotService(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project))
    with caplog.at_level(logging.WARNING, logger="context_keeper.oneshot"):
        answer = svc.get_context(query="carrier API retries and backoff")
    assert DECISION in [hit["entry"]["id"] for hit in answer["results"]]
    assert any(snapshot.FILE in r.getMessage() and "ZeroDivisionError" in r.getMessage() for r in caplog.records)


def test_any_failure_of_a_build_from_cached_analyses_means_a_fresh_analysis(project, monkeypatch, caplog):
    _restorable(project)
    (project / ".context" / snapshot.FILE).unlink()
    groups = len(search_state.F.GROUPS)
    # An analysis the record checks let through by mistake: the build fails on it.
    monkeypatch.setattr(search_state, "_decode", lambda record: ({"carrier": (BIG,) + (0,) * (groups - 1)},
                                                                 (BIG,) + (0,) * (groups - 1)))
    svc = OneShotService(env={"CONTEXT_KEEPER_PROJECT": str(project)}, cwd=str(project))
    with caplog.at_level(logging.WARNING, logger="context_keeper.oneshot"):
        answer = svc.get_context(query="carrier API retries and backoff")
    assert DECISION in [hit["entry"]["id"] for hit in answer["results"]]
    assert any(search_state.FILE in r.getMessage() and "OverflowError" in r.getMessage() for r in caplog.records)
