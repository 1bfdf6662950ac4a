"""Time of the answer-type check (``answer_type.states_value``) on entries that are hard for
its patterns: a long run of digits, a long entry with many sentences, one huge sentence.

    python benchmarks/bench_answer_type.py

The check scans the most relevant entry of a question asking for a value, on every
``get_context`` and prompt-hook search of such a question, so it must stay linear in the entry.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from context_keeper.search.answer_type import states_value  # noqa: E402
from context_keeper.search.tokenize import terms  # noqa: E402

CASES = {
    "20,000-digit run": ("version", {"why_chosen": "Key " + "7" * 20_000 + "x for the quotes."}),
    "40,000-digit run": ("version", {"why_chosen": "Key " + "7" * 40_000 + "x for the quotes."}),
    "500 sentences": ("duration", {"why_chosen": " ".join(f"Step {i} retries the upload of parcel photos." for i in range(500))}),
    "one 20,000-word sentence": ("duration", {"why_chosen": " ".join(["an"] * 20_000)}),
    "typical entry": ("duration", {"summary": "Delivery photos are kept in S3",
                                   "why_chosen": "Drivers take a photo at every stop. Photos are kept for 90 days."}),
}


def main() -> int:
    words = terms("how long do we keep delivery photos of parcels")
    for name, (kind, entry) in CASES.items():
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            states_value(kind, words, entry)
            best = min(best, time.perf_counter() - started)
        print(f"{name:28s} {best * 1000:9.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
