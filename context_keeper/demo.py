"""``context-keeper demo``: a short walk-through over the real server and a real MCP client.

It copies the bundled example project (Packwise, a warehouse fulfilment service) to a
temporary directory, starts ``python -m context_keeper`` over stdio, and shows recording and
retrieving as an agent would see it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

EXAMPLE = Path("examples") / "demo-project"


def find_example() -> Path | None:
    candidates = [Path.cwd() / EXAMPLE, Path(__file__).resolve().parent.parent / EXAMPLE]
    return next((c for c in candidates if (c / ".context" / "decisions.json").is_file()), None)


def _say(text: str = "") -> None:
    print(text, flush=True)


async def _answer(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    text, _is_error = await client.call(tool, arguments)
    return json.loads(text)


def _show_hits(answer: dict[str, Any], limit: int = 3) -> None:
    if answer.get("no_confident_match"):
        _say(f"  → no_confident_match (top relevance {answer['top_relevance']:.2f}): nothing recorded answers this,")
        _say("    so the agent is told not to treat the weak matches as project facts.")
        return
    for item in answer["results"][:limit]:
        entry = item["entry"]
        title = entry.get("summary") or entry.get("rule") or entry.get("name")
        flag = " [superseded]" if item.get("history") else ""
        _say(f"  → {entry['id']}{flag} {title}  (relevance {item.get('relevance', 0):.2f})")
        if item.get("replaced_by"):
            _say(f"      replaced by {item['replaced_by']['id']}: {item['replaced_by']['summary']}")


async def _walkthrough(project: Path) -> None:
    from context_keeper.server import stdio_client  # the protocol lives in the server adapter

    env = {**os.environ, "CONTEXT_KEEPER_PROJECT": str(project), "PYTHONIOENCODING": "utf-8"}
    async with stdio_client(env) as client:
        tools = await client.tool_names()
        _say(f"Started the server over stdio: {len(tools)} tools ({', '.join(tools[:4])}, …)\n")

        _say("1. Session start — the agent asks for the project briefing (get_project_summary):")
        summary = await _answer(client, "get_project_summary", {"token_budget": 400})
        for line in summary["summary"].splitlines()[:12]:
            _say("    " + line[:110])
        _say("    …\n")

        questions = [
            ("2. A question asked from the symptom, not in the entry's words (get_context):",
             "the handheld lost half its queued scans after the battery died mid-save"),
            ("3. A question about what used to be true:",
             "we used to send a shared key header from the handhelds — what happened to that?"),
            ("4. A question nobody recorded an answer to:",
             "which GraphQL pagination style should the admin API use?"),
        ]
        for title, query in questions:
            _say(title)
            _say(f'  "{query}"')
            _show_hits(await _answer(client, "get_context", {"query": query, "token_budget": 1500}))
            _say()

        _say("5. The agent records a decision it just made (record_decision):")
        recorded = await _answer(client, "record_decision", {
            "summary": "Retry failed label prints once on the paired printer before alerting a supervisor",
            "problem": "Printers at the packing stations jam a few times per shift and the packer waits for a "
                       "supervisor even when the paired printer next to them is free.",
            "why_chosen": "A single automatic retry on the paired printer clears most jams without a human, and the "
                          "idempotent label key means a retry can never buy or print a second label.",
            "tags": ["labels", "printers"],
            "related_to": ["dec-027"],
        })
        _say(f"  → stored as {recorded['id']} in .context/decisions.json")
        for similar in recorded.get("similar_entries", [])[:2]:
            _say(f"  → similar existing entry {similar['id']} ({similar['relation']}): {similar['summary']}")
        _say()

        _say("6. Bad input is an error the agent can act on (isError):")
        failed, _is_error = await client.call("record_decision", {"summary": "Use tabs", "problem": "style", "why_chosen": "looks nicer"})
        _say(textwrap.fill(failed, width=96, initial_indent="  → ", subsequent_indent="    "))
        _say()

        _say("7. Retrieval finds the new decision right away:")
        _show_hits(await _answer(client, "get_context", {"query": "printer jammed, packer stuck waiting", "token_budget": 1500}), 2)


def run_demo(keep: bool = False) -> int:
    import anyio

    example = find_example()
    if example is None:
        print("context-keeper demo: run it from the repository root (examples/demo-project/ was not found).",
              file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="context-keeper-demo-"))
    project = workdir / "packwise"
    shutil.copytree(example, project)
    _say(f"context-keeper demo — example project copied to {project}\n")
    try:
        anyio.run(_walkthrough, project)
    finally:
        if keep:
            _say(f"\nKept the project at {project}; try: context-keeper get \"carrier timeouts\" --project {project}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    _say("\nNext: register the server with your agent (README → Set up with your client).")
    return 0
