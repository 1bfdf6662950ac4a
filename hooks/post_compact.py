#!/usr/bin/env python3
"""context-keeper hook launcher (post-compact). Same as `context-keeper-hook post-compact`; see docs/hooks.md."""
import os
import sys

try:
    from context_keeper.hookio import main
except ImportError:  # running from a checkout without the package installed (or under python -S)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from context_keeper.hookio import main

sys.exit(main(["post-compact"]))
