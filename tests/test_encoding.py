"""UTF-8 end to end: files, the stdio protocol whatever the locale, and hand-written escapes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from mcp import Client, StdioServerParameters

from context_keeper.model import DECISION
from context_keeper.service import Service
from context_keeper.store import Store
from tests.conftest import REPO

pytestmark = pytest.mark.anyio

SAMPLES = {
    "summary": "Étiquettes en 203 dpi — Zürich, Kraków, São Paulo, 東京, Ελλάδα",
    "problem": "Ünïcödé everywhere: emoji 📦🚚 (astral plane), RTL עברית and العربية, combining e\u0301, "
               "a zero-width joiner 👩\u200d💻 and a tab\tin the middle.",
    "why_chosen": "Label text must print exactly as the carrier's address database spells it; "
                  "transliteration produced wrong street names — «guillemets», “quotes”, ½ and ∞.",
    "tags": ["étiquettes", "東京", "📦"],
}


def _server(project, extra_env: dict[str, str]) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "LANG", "LC_ALL")}
    env.update({"CONTEXT_KEEPER_PROJECT": str(project), **extra_env})
    return StdioServerParameters(command=sys.executable, args=["-m", "context_keeper"], env=env, cwd=str(REPO))


@pytest.mark.parametrize("locale_env", [
    {"LC_ALL": "C", "LANG": "C"},
    {"PYTHONIOENCODING": "latin-1"},
    {"PYTHONIOENCODING": "ascii", "PYTHONUTF8": "0", "LC_ALL": "C"},
], ids=["c-locale", "latin1-stdio", "ascii-stdio"])
async def test_non_ascii_text_round_trips_exactly_through_the_stdio_server(project, locale_env):
    async with Client(_server(project, locale_env), mode="legacy") as client:
        recorded = await client.call_tool("record_decision", SAMPLES)
        assert not recorded.is_error, recorded.content[0].text
        new_id = json.loads(recorded.content[0].text)["id"]
        fetched = await client.call_tool("get_context", {"id": new_id})
        entry = json.loads(fetched.content[0].text)["entry"]
        found = await client.call_tool("get_context", {"query": "Étiquettes Kraków 東京"})
        assert new_id in [r["entry"]["id"] for r in json.loads(found.content[0].text)["results"]]
    for field, value in SAMPLES.items():
        assert entry[field] == value
    raw = (project / ".context" / "decisions.json").read_bytes().decode("utf-8")
    assert SAMPLES["summary"] in raw  # stored as UTF-8 text, not \\u escapes
    stored = [e for e in json.loads(raw) if e["id"] == new_id][0]
    assert {k: stored[k] for k in SAMPLES} == SAMPLES


def test_files_are_written_as_utf8_whatever_the_locale(tmp_path):
    Service(env={}).init_project(str(tmp_path))
    values = json.dumps(SAMPLES)  # ASCII escapes: argv itself is decoded with the C locale here
    code = ("import json, sys; from context_keeper.service import Service; "
            f"Service(env={{'CONTEXT_KEEPER_PROJECT': {str(tmp_path)!r}}}).record('decision', json.loads(sys.argv[1]))")
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "ascii", "PYTHONUTF8": "0"}
    subprocess.run([sys.executable, "-c", code, values], check=True, env=env, cwd=str(REPO), timeout=60)
    stored = json.loads((tmp_path / ".context" / "decisions.json").read_bytes().decode("utf-8"))
    assert stored[0]["summary"] == SAMPLES["summary"]


def test_hand_written_unicode_escapes_are_read_and_kept(tmp_path):
    (tmp_path / ".context").mkdir()
    path = tmp_path / ".context" / "decisions.json"
    path.write_text('[{"id": "dec-001", "summary": "Caf\\u00e9 \\ud83d\\udce6 d\\u00e9p\\u00f4t"}]', encoding="ascii")
    store = Store(tmp_path)
    assert store.state(DECISION).entries[0]["summary"] == "Café 📦 dépôt"
    assert not store.state(DECISION).problems


def test_a_lone_surrogate_escape_in_a_hand_edit_is_shown_replaced_and_kept_on_disk(tmp_path):
    Service(env={}).init_project(str(tmp_path))
    path = tmp_path / ".context" / "decisions.json"
    path.write_text('[{"id": "dec-001", "summary": "broken \\ud800 half", "tags": ["x"]}]', encoding="utf-8")
    svc = Service(env={"CONTEXT_KEEPER_PROJECT": str(tmp_path)})
    entry = svc.store().state(DECISION).entries[0]
    assert entry["summary"] == "broken \ufffd half"
    assert any("lone surrogate" in p for p in svc.store().state(DECISION).problems)
    json.dumps(svc.get_context(id="dec-001"), ensure_ascii=False).encode("utf-8")
    svc.record("decision", {k: SAMPLES[k] for k in ("summary", "problem", "why_chosen")})
    assert "\\ud800" in path.read_text(encoding="utf-8")  # the original escape survived the rewrite


def test_a_lone_surrogate_in_a_call_is_refused_and_nothing_is_written(service, project):
    from context_keeper.errors import InvalidInput

    before = (project / ".context" / "decisions.json").read_bytes()
    with pytest.raises(InvalidInput, match="surrogate"):
        service.record("decision", {**{k: SAMPLES[k] for k in ("problem", "why_chosen")}, "summary": "half \ud800 char"})
    with pytest.raises(InvalidInput, match="surrogate"):
        service.update_entry("dec-001", {"tags": ["ok", "bad \udfff"]})
    assert (project / ".context" / "decisions.json").read_bytes() == before


def test_doctor_output_survives_a_console_that_cannot_show_the_text(tmp_path):
    project = tmp_path / "projé 東京"
    project.mkdir()
    Service(env={}).init_project(str(project))
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run([sys.executable, "-m", "context_keeper", "doctor", "--project", str(project)],
                          capture_output=True, env=env, cwd=str(REPO), timeout=60)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert b"proj\\xe9" in proc.stdout


def test_cli_get_survives_a_console_that_cannot_show_the_text(project):
    Service(env={"CONTEXT_KEEPER_PROJECT": str(project)}).record(
        "decision", {k: SAMPLES[k] for k in ("summary", "problem", "why_chosen")})
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "CONTEXT_KEEPER_PROJECT": str(project)}
    proc = subprocess.run([sys.executable, "-m", "context_keeper", "get", "Étiquettes Kraków"],
                          capture_output=True, env=env, cwd=str(REPO), timeout=60)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")


def test_a_byte_order_mark_in_config_json_is_read_past(tmp_path):
    from context_keeper.config import read_config_file

    path = tmp_path / "config.json"
    path.write_bytes(b'\xef\xbb\xbf{"project_name": "Bommed", "min_relevance": 0.4}\r\n')
    config, warnings = read_config_file(path)
    assert warnings == []
    assert config["project_name"] == "Bommed" and config["min_relevance"] == 0.4


def test_config_json_that_is_not_utf8_falls_back_with_a_warning(tmp_path):
    from context_keeper.config import read_config_file

    path = tmp_path / "config.json"
    path.write_bytes(b'{"project_name": "Caf\xe9"}')
    config, warnings = read_config_file(path)
    assert config["project_name"] is None
    assert len(warnings) == 1 and "not valid UTF-8" in warnings[0] and "save it as UTF-8" in warnings[0]
