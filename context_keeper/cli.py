"""The ``context-keeper`` command: serves MCP over stdio by default; subcommands for people.

Exit codes: 0 ok · 1 unexpected failure, or stdout closed (early, as by ``| head``, or before the
start), and doctor's warnings only · 2 bad input · 3 unknown id · 4 no project · 5 a file that
cannot be used (a corrupt store file, a client config install cannot edit, a read-only or full
disk) · 6 the output could not be written (``> file`` on a full disk).
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from context_keeper import __version__, render
from context_keeper.errors import ContextKeeperError

# Service parameters that the CLI spells differently: errors name the flag the person typed.
try:
    _ExceptionGroup = BaseExceptionGroup  # Python 3.11 and later
except NameError:  # 3.10: anyio, which the demo's client runs on, raises the backport's class
    from exceptiongroup import BaseExceptionGroup as _ExceptionGroup

CLI_FLAGS = {"token_budget": "--budget", "types": "--type", "scope": "--scope", "project_dir": "--project",
             "since": "--since", "before": "--before", "min_relevance": "--min-relevance"}


def _service():
    from context_keeper.service import Service

    return Service(dense_scoring=False)  # one command, one search: see Service


def _print(text: str) -> None:
    """Human output: stored text may hold terminal escapes (a hand edit), shown escaped here."""
    text = render.console_text(text)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _print_json(value: Any) -> None:
    """``--json`` output, exact: console_json escapes the control characters as JSON does (a
    ``\\x1b`` added inside a string would no longer parse)."""
    sys.stdout.write(render.console_json(value) + "\n")


def _warn(text: str) -> None:
    print(render.console_text(text), file=sys.stderr)


def cmd_serve(args: argparse.Namespace) -> int:
    from context_keeper.server import main as serve

    serve()
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    from context_keeper.project import default_project
    from context_keeper.store_owner import store_owner

    here = os.path.realpath(os.getcwd())
    # From inside a .context/ the directory itself goes to init_project, which refuses it and
    # names the project holding it.
    chosen = args.directory or (here if store_owner(here) != here else str(default_project(cwd=here)))
    result = _service().init_project(chosen, args.name)
    verb = "Created" if result["created"] else "Already initialised:"
    _print(f"{verb} {result['context_dir']}\nNext: register the server with your client (see README) "
           "or try `context-keeper summary`.")
    if not args.directory and result["project_dir"] != here:
        root = result["project_dir"]
        from context_keeper.project import ENV_CLIENT_PROJECT, ENV_PROJECT

        named_by = next((name for name in (ENV_PROJECT, ENV_CLIENT_PROJECT)
                         if os.environ.get(name, "").strip()
                         and os.path.realpath(os.path.expanduser(os.environ[name].strip())) == os.path.realpath(root)), None)
        where = (f"{named_by} names the project {root}, so init acted there" if named_by else
                 f"{root} is the root of the git repository holding the current directory: the memory is kept "
                 "there, where Claude Code opened on the repository and the server started anywhere in it find it"
                 if os.path.exists(os.path.join(root, ".git")) else
                 f"the current directory belongs to the project {root}, whose memory tools and hooks started here use")
        _print(f"Note: {where}. To give {here} a separate memory of its own instead, run "
               f"`context-keeper init {here}`.")
    for warning in result.get("warnings", []):
        _print(f"Warning: {warning}")
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    result = _service().get_project_summary(args.budget, project_dir=args.project)
    if args.json:
        _print_json(result)
    else:
        _print(result["summary"])
        for warning in result.get("warnings", []):
            _warn(f"warning: {warning}")
    return 0


def _format_hit(item: dict[str, Any], ranked: bool = True) -> str:
    from context_keeper.model import KINDS, entry_title

    entry = item["entry"]
    kind = KINDS[item["type"]]
    marks = []
    if item.get("related"):
        marks.append(f"related to {item['via']}")
    if item.get("history"):
        marks.append("superseded")
    if item.get("deprecated"):  # retired without a successor, shown for --include-deprecated
        marks.append("deprecated")
    if item.get("scope_rule"):
        marks.append("rule for the scope")
    if item.get("weak_match"):
        marks.append("weak match")
    if item.get("shortened"):
        marks.append("shortened to fit the budget")
    head = f"{entry['id']}  {entry_title(kind, entry)}"
    if "relevance" in item and ranked:  # a listing by filters alone has no relevance to show (all 0.00)
        head += f"  (relevance {item['relevance']:.2f}{', ' + ', '.join(marks) if marks else ''})"
    elif marks:
        head += f"  ({', '.join(marks)})"
    detail = entry.get("why_chosen") or entry.get("reason") or entry.get("purpose") or ""
    lines = [head]
    if detail:
        lines.append("    " + render.shorten(" ".join(detail.split()), 300))
    replaced = item.get("replaced_by")
    if replaced:
        via = f" (via {render.via_phrase(replaced)})" if replaced.get("via") else ""
        retired = f" [itself {replaced['status']}]" if replaced.get("status") else ""
        lines.append(f"    replaced by {replaced['id']}{via}: {replaced.get('summary', '')}{retired}")
    elif isinstance(entry.get("superseded_by"), str) and entry["superseded_by"].strip():
        # A small budget keeps the link but not what it leads to: the id still says where to look.
        lines.append(f"    replaced by {entry['superseded_by'].strip()}")
    return "\n".join(lines)


def cmd_get(args: argparse.Namespace) -> int:
    if not (args.query or "").strip() and not (args.scope or args.type or args.tag or args.since or args.before):
        from context_keeper.errors import InvalidInput

        # The service's wording names the MCP parameters (an id, tags, types), which get has not.
        raise InvalidInput("give a QUESTION (what you are about to work on), or an empty one with at least one "
                           "filter: --tag, --scope, --type, --since or --before", field="query")
    from context_keeper.oneshot import OneShotService

    # One search: the index comes from the snapshot the hooks and the server keep, not rebuilt.
    svc = OneShotService()
    scope = _scope_from_here(args.scope, svc.project_root(args.project)) if args.scope else args.scope
    result = svc.get_context(project_dir=args.project, query=args.query, scope=scope,
                             types=args.type or None, tags=args.tag or None, since=args.since,
                             before=args.before, token_budget=args.budget,
                             min_relevance=args.min_relevance, include_deprecated=args.include_deprecated,
                             include_related=not args.no_related)
    svc.save_search_state()
    if args.json:
        _print_json(result)
        return 0
    for warning in result.get("warnings", []):  # a broken store file hides its entries: say so
        _warn(f"warning: {warning}")
    if not result["results"]:
        _print(_nothing_found(result, args))
        return 0
    from context_keeper.retrieval import GUIDANCE_LISTED, GUIDANCE_NO_ID

    guidance = result.get("guidance") or ""
    listed = guidance == GUIDANCE_LISTED
    left_out = _id_left_out(guidance, args)
    if listed:
        _print("The question has no word that can be searched for, so these are the entries the filters pass, "
               "most recent and most trusted first:")
    elif result.get("no_confident_match"):
        rules = ", and the rules for the scope" if any(i.get("scope_rule") for i in result["results"]) else ""
        if left_out:
            _print(f"{left_out}. Entries that only share its words{rules}:")
        elif guidance.startswith(GUIDANCE_NO_ID.split("{", 1)[0]):
            # "dec-999" listed as weak matches would read as "dec-999 is one of these".
            _print(guidance.split(": the results below", 1)[0] + f". Entries that only share its words{rules}:")
        else:
            _print(f"No confident match (top relevance {result['top_relevance']:.2f}). Weak matches{rules}:")
    for item in result["results"]:
        _print(_format_hit(item, ranked=bool((args.query or "").strip()) and not listed))
    if result.get("omitted"):
        at_least = "at least " if (result.get("budget_note") or "").startswith("At least") else ""
        _print(f"({at_least}{result['omitted']} more did not fit in the budget; --budget N shows more.)")
    return 0


def _nothing_found(result: dict[str, Any], args: argparse.Namespace) -> str:
    """What an empty answer means, as get_context's guidance says it. "Nothing recorded" would
    send the person off to record it again: with a file unreadable, a question with no word to
    search for (nothing was searched), or filters that may hide what is recorded."""
    from context_keeper.retrieval import (GUIDANCE_FILTERED, GUIDANCE_NO_ID, GUIDANCE_NO_WORDS, GUIDANCE_RETIRED,
                                          GUIDANCE_UNREADABLE)

    guidance = result.get("guidance") or ""
    if _says(guidance, GUIDANCE_NO_WORDS):
        return ("The question has no word that can be searched for (punctuation, one-letter words and common words "
                "such as 'the' are left out), so nothing was searched: ask again in words that name the task or "
                "the problem.")
    left_out = _id_left_out(guidance, args)
    if left_out:
        return left_out + "."
    if guidance.startswith(GUIDANCE_NO_ID.split("{", 1)[0]):
        # "Nothing recorded matches" would not say that the id itself is unknown.
        said = guidance.split(": the results below", 1)[0].split(", and nothing recorded", 1)[0]
        return said + ", and nothing recorded shares its words. To search by topic, ask in words."
    # Only a file that could not be read can hide what is recorded; a config warning cannot.
    if _says(guidance, GUIDANCE_UNREADABLE):
        return "Nothing matches in what could be read (see the warnings above)."
    if _says(guidance, GUIDANCE_RETIRED):
        within = f" within the filters given ({', '.join(_filters_given(args))})" if _filters_given(args) else ""
        return (f"Nothing in force matches{within}, but a retired entry does: --include-deprecated shows it (read "
                "why it was retired before recording anything anew).")
    if _filters_given(args) and _says(guidance, GUIDANCE_FILTERED):
        return (f"Nothing matches within the filters given ({', '.join(_filters_given(args))}): ask again without "
                "them before concluding that nothing is recorded.")
    return "Nothing recorded matches."


def _says(guidance: str, template: str) -> bool:
    """Whether ``guidance`` is ``template``'s, whole or, in an answer with no result and a small
    budget, cut short ("…") before its first blank."""
    head = template.split("{", 1)[0]
    return guidance.startswith(head) or guidance.endswith("…") and head.startswith(guidance[:-1].rstrip())


def _filters_given(args: argparse.Namespace) -> list[str]:
    return [flag for flag, value in (("--type", args.type), ("--tag", args.tag), ("--scope", args.scope),
                                     ("--since", args.since), ("--before", args.before)) if value]


def _id_left_out(guidance: str, args: argparse.Namespace) -> str | None:
    """GUIDANCE_ID_FILTERED in the flags of get: the id asked for is recorded, but what was given
    leaves it out. Said otherwise ("Nothing recorded matches", weak matches alone), the person
    would record the entry again. None for any other guidance."""
    from context_keeper.retrieval import GUIDANCE_ID_FILTERED

    head = re.escape(GUIDANCE_ID_FILTERED.split("{why}", 1)[0]).replace(re.escape("{id}"), r"(?P<id>\S+)")
    match = re.match(head, guidance)
    if match is None:
        return None
    entry_id = match["id"]
    if guidance[match.end():].startswith("it is deprecated"):
        return (f"{entry_id} is recorded, but it is deprecated, which an answer leaves out: "
                f"`context-keeper get {entry_id} --include-deprecated` reads it")
    filters = _filters_given(args)
    if not filters:
        return f"{entry_id} is recorded, but this answer leaves it out"
    return (f"{entry_id} is recorded, but the filters given ({', '.join(filters)}) leave it out: "
            f"`context-keeper get {entry_id}` without them reads it")


def _scope_from_here(scope: str, root: Any) -> str:
    """A relative ``--scope`` as typed at the terminal: from the current directory, as any path
    on the command line is, made relative to the project root (what get_context takes). From a
    directory outside the project nothing relates the two, so it stays relative to the root.
    A list (``--scope "src/jobs/, src/import/"``) is read path by path, as get_context reads it."""
    from context_keeper.scope import scope_parts, split_scope

    if len(split_scope(scope)) == 1:
        return _path_from_here(scope, scope, root)
    return ", ".join(_path_from_here(part, scope, root) for part in scope_parts(scope))


def _path_from_here(path: str, scope: str, root: Any) -> str:
    """One path of ``--scope`` (``scope`` as typed, for the error), as ``_scope_from_here``."""
    from context_keeper.errors import InvalidInput
    from context_keeper.scope import is_global, project_relative

    text = path.strip()
    if is_global(text) or os.path.isabs(text) or text.startswith("~"):
        return path  # get_context says what is wrong with a home-relative path
    here = os.getcwd()
    if project_relative(here, str(root)) is None:
        return path
    # From the real directory, not from the project-relative one: "../../../proj/src" climbs out
    # of the project and back in, which only the absolute path shows.
    joined = project_relative(os.path.join(here, text), str(root))
    if joined is None:
        which = f" (its path {text!r})" if text != scope.strip() else ""
        raise InvalidInput(f"--scope {scope!r}{which} leads outside the project ({root}) from the current directory "
                           f"({os.getcwd()}): give a file or directory of the project, relative to the current "
                           "directory or absolute", field="scope")
    if not joined:
        return "."
    return joined + "/" if text.endswith(("/", os.sep)) else joined


def cmd_demo(args: argparse.Namespace) -> int:
    from context_keeper.demo import run_demo

    return run_demo(keep=args.keep)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="context-keeper",
        description="Durable project memory for coding agents. With no command, serves MCP over stdio.",
    )
    parser.add_argument("--version", action="version", version=f"context-keeper {__version__}")
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("serve", help="run the MCP server over stdio (the default)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("init", help="create .context/ with a config in a project")
    p.add_argument("directory", nargs="?", help="project root (default: the project the current directory belongs to, else the root of its git repository, else the current directory)")
    p.add_argument("--name", help="project name (default: folder name)")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("summary", help="print the session-start project summary")
    p.add_argument("--budget", type=int, default=2000, help="token budget (default 2000)")
    p.add_argument("--project", help="project root (default: resolved from the current directory)")
    p.add_argument("--json", action="store_true", help="print the full JSON answer")
    p.set_defaults(func=cmd_summary)

    p = sub.add_parser("get", help="retrieve the entries relevant to a question")
    p.add_argument("query", help="the question or task, in your own words")
    p.add_argument("--scope", help="file or directory you are working on (or several, comma-separated), relative to "
                                    "the current directory (to the project root when run from outside the project), "
                                    "or absolute")
    p.add_argument("--type", action="append", choices=["decisions", "pipelines", "constraints"])
    p.add_argument("--tag", action="append", help="only entries with this tag (repeat for any of several)")
    p.add_argument("--since", help="only entries created on or after this date (YYYY-MM-DD)")
    p.add_argument("--before", help="only entries created before this date (YYYY-MM-DD)")
    p.add_argument("--budget", type=int, help="token budget")
    p.add_argument("--min-relevance", type=float, metavar="R",
                   help="abstention threshold from 0 (flag nothing) to 1 (default: the config's, else the calibrated 0.5)")
    p.add_argument("--include-deprecated", action="store_true", help="bring retired entries back, marked as such")
    p.add_argument("--no-related", action="store_true", help="leave out the entries the results link to")
    p.add_argument("--project", help="project root")
    p.add_argument("--json", action="store_true", help="print the full JSON answer")
    p.set_defaults(func=cmd_get)

    p = sub.add_parser("demo", help="walk through recording and retrieving on the bundled example project")
    p.add_argument("--keep", action="store_true", help="keep the temporary copy of the example project")
    p.set_defaults(func=cmd_demo)

    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands():
    """Subcommands that live in their own modules (doctor, install, hook)."""
    registrars = []
    for module_name in ("context_keeper.doctor", "context_keeper.install", "context_keeper.hookio"):
        try:
            module = __import__(module_name, fromlist=["register_cli"])
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        registrars.append(module.register_cli)
    return registrars


def _tolerant_console() -> None:
    """Entries hold any Unicode; a console that cannot show a character gets an escape, not a
    crash. (The stdio server path is untouched: the SDK owns those streams.)"""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


# What an MCP client passes to name the project, as a person at the terminal does it (a relative
# --project is taken from the current directory, so the CLI never asks for an absolute one).
_PROJECT_DIR_ADVICE = (("project_dir (an absolute path)", "--project DIR"), ("pass project_dir", "pass --project DIR"))


def cli_message(exc: ContextKeeperError) -> str:
    """An error as the person at the terminal reads it: in the flags they type, not the MCP
    parameters (doctor and install report through it too)."""
    message = str(exc)
    for service_words, cli_words in _PROJECT_DIR_ADVICE:
        message = message.replace(service_words, cli_words)
    # The CLI has no project_dir, whichever error names it ("project_dir '/x' is not a directory").
    message = re.sub(r"(?<!-)\bproject_dir\b", "--project", message)
    field = getattr(exc, "field", None)  # InvalidInput, and a NoProject for --project
    # A date range names both ends ("since (...) must be earlier than before (...)").
    for name in ({"since", "before"} if field in ("since", "before") else {field}):
        if name in CLI_FLAGS:
            message = re.sub(rf"(?<!-)\b{re.escape(name)}\b", CLI_FLAGS[name], message)
    return message


EXIT_OUTPUT_FAILED = 6


class _OutputFailed(Exception):
    """Writing the command's output failed (``> file`` on a full disk, an I/O error): not an
    OSError, so ``main`` does not blame the store for it."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _GuardedStdout:
    """``sys.stdout`` while a subcommand runs. A failed write is an OSError as a failed store
    write is; this tells them apart where the write happens. A closed pipe stays a
    BrokenPipeError (``| head``)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _OutputFailed(exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _OutputFailed(exc) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _silence_stdout() -> None:
    """Point fd 1 at devnull so the interpreter's final flush of what is still buffered does not
    raise again (the idiom from the ``signal`` docs)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _stdout_closed() -> int:
    """The reader went away (``... | head``): stop quietly."""
    _silence_stdout()
    return 1


def _output_failed(exc: _OutputFailed) -> int:
    _silence_stdout()
    _warn(f"context-keeper: writing the output failed ({exc.cause}); the store is not the cause. Send the output "
          "where it can be written (a disk with room), then run the command again.")
    return EXIT_OUTPUT_FAILED


def _project_from_command_line(project: str) -> str:
    """``--project`` as typed: relative to the current directory, as any path is. An empty one is
    refused rather than ignored: ``--project "$DIR"`` with DIR unset would act on whatever
    project the shell is in."""
    from context_keeper.errors import InvalidInput

    if not project.strip():
        raise InvalidInput(f"--project is empty ({project!r}; an unset variable?): give the project's directory, or "
                           "leave --project out to use the project the current directory is in", field="project")
    return os.path.abspath(os.path.expanduser(project))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        return cmd_serve(argparse.Namespace())  # the clients' path: no parser, no extra imports
    if argv[0] == "hook" and not {"-h", "--help"} & set(argv[1:]):
        # A hook must never exit 2 (that blocks the client's tool call or prompt): no parser
        # here, so an alias (scope_guard, SessionStart), an unknown name or an extra argument
        # goes to the same fail-open path as the console script.
        from context_keeper import hookio

        return hookio.run(argv[1] if len(argv) > 1 else None, *hookio.std_streams())
    if sys.stdout is None:
        # Started with fd 1 closed (`>&-`): nothing the command says could be seen, so it does
        # nothing (an install or init would act unreported) and exits as a closed pipe does.
        _warn("context-keeper: standard output is closed, so nothing was done; run the command with its output "
              "open (or sent to /dev/null)")
        return 1
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        return cmd_serve(args)
    if args.func is cmd_serve:
        return _run_command(args)  # the SDK owns the streams
    _tolerant_console()
    stdout = sys.stdout
    sys.stdout = _GuardedStdout(stdout)
    try:
        return _run_command(args)
    finally:
        sys.stdout = stdout


def _run_command(args: argparse.Namespace) -> int:
    try:
        if isinstance(getattr(args, "project", None), str):
            args.project = _project_from_command_line(args.project)
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # inside the try: a closed pipe often shows only at this flush
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except _OutputFailed as exc:
        return _output_failed(exc)
    except _ExceptionGroup as group:  # the demo's client runs in a task group (anyio)
        pipes, rest = group.split((BrokenPipeError, _OutputFailed))
        if pipes is not None and rest is None:
            failed, _ = pipes.split(_OutputFailed)
            while isinstance(failed, _ExceptionGroup):
                failed = failed.exceptions[0]
            return _output_failed(failed) if failed is not None else _stdout_closed()
        raise
    except ContextKeeperError as exc:
        _warn(f"context-keeper: {cli_message(exc)}")
        return exc.exit_code
    except OSError as exc:
        # A read-only or full disk under init or doctor --fix, or a client config install cannot
        # write: the person needs the path and the cause, not a traceback through filelock.
        # (After BrokenPipeError, which is one too.)
        print(f"context-keeper: the file system refused an operation ({exc}). {_os_error_hint(exc)}, then run "
              "the command again.", file=sys.stderr)
        return 5
    except KeyboardInterrupt:
        return 130


def _os_error_hint(exc: OSError) -> str:
    where = exc.filename or "the project's .context/ directory"
    if exc.errno == errno.EISDIR:
        return f"{where} is a directory where a file belongs: move it aside"
    if exc.errno == errno.ENOTDIR:
        return f"A part of the path {where} is a file where a directory belongs: move it aside"
    return f"Check that {where} is writable and the disk has room"
