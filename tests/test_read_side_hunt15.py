"""Read-side defects found in round 15's hunt: get_context, query_entries, the summary and the
CLI's get/summary, on odd but valid stores and arguments."""

from __future__ import annotations

import json


def test_the_summary_follows_every_config_change(service, project):
    # The cached summary was keyed on id() of the config dict: a later config read that got a
    # freed dict's address back was served the summary of that older config (another name).
    path = project / ".context" / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    for n in range(30):
        path.write_text(json.dumps({**config, "project_name": f"name-{n}"}), encoding="utf-8")
        assert service.get_project_summary()["summary"].startswith(f"Project memory for name-{n}:"), n
