"""Launcher: ``python server.py`` serves context-keeper over stdio (same as ``context-keeper``).

With arguments (``--help``, ``--version``, a subcommand) it is ``python -m context_keeper``: the
clients run it with none, and that path stays the server's alone (no parser, no CLI import).
"""

import sys

if __name__ == "__main__":
    if sys.argv[1:]:
        from context_keeper.cli import main as cli_main

        sys.exit(cli_main())
    from context_keeper.server import main

    main()
