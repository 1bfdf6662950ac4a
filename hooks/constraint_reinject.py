#!/usr/bin/env python3
"""context-keeper 0.x hook name kept so existing settings keep working: now silent.

The opt-in periodic re-injection it did is covered by scope-guard (per file) and by the
session-start summary after a compaction. `context-keeper install` replaces this entry.
"""
import sys

sys.stdin.read() if not sys.stdin.isatty() else None
sys.exit(0)
