"""Launcher: ``python server.py`` serves context-keeper over stdio (same as ``context-keeper``)."""

from context_keeper.server import main

if __name__ == "__main__":
    main()
