#!/usr/bin/env python3
"""context-keeper hook launcher (user-prompt-submit). Same as `context-keeper-hook user-prompt-submit`; see docs/hooks.md."""
import os
import sys

try:
    from context_keeper.hookio import main
except ImportError:  # running from a checkout without the package installed (or under python -S)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from context_keeper.hookio import main

sys.exit(main(["user-prompt-submit"]))
