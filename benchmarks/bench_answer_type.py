"""Time of the answer-type check on entries that are hard for its patterns (``states_value``: a
long run of digits, a long entry with many sentences, one huge sentence) and on questions that
are hard for its cues (``asked_kind``, at the 4,000-character limit of a query).

    python benchmarks/bench_answer_type.py

The check scans the most relevant entry of a question asking for a value, on every
``get_context`` and prompt-hook search of such a question, so it must stay linear in the entry.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from context_keeper.search.answer_type import asked_kind, states_value  # noqa: E402
from context_keeper.search.tokenize import terms  # noqa: E402

CASES = {
    "20,000-digit run": ("version", {"why_chosen": "Key " + "7" * 20_000 + "x for the quotes."}),
    "40,000-digit run": ("version", {"why_chosen": "Key " + "7" * 40_000 + "x for the quotes."}),
    "500 sentences": ("duration", {"why_chosen": " ".join(f"Step {i} retries the upload of parcel photos." for i in range(500))}),
    "one 20,000-word sentence": ("duration", {"why_chosen": " ".join(["an"] * 20_000)}),
    "typical entry": ("duration", {"summary": "Delivery photos are kept in S3",
                                   "why_chosen": "Drivers take a photo at every stop. Photos are kept for 90 days."}),
}

QUESTIONS = {
    "question: 'what ' x 800": ("what " * 800)[:4000],
    "question: 'how much what ' x 300": ("how much what " * 300)[:4000],
    "question: 'what the a-b ...'": ("what the " + "a-b " * 1000)[:4000],
    "typical question": "how long do we keep delivery photos of parcels?",
}


def _best_of_3(call) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> int:
    words = terms("how long do we keep delivery photos of parcels")
    for name, (kind, entry) in CASES.items():
        best = _best_of_3(lambda: states_value(kind, words, entry))
        print(f"{name:34s} {best * 1000:9.2f} ms")
    for name, question in QUESTIONS.items():
        best = _best_of_3(lambda: asked_kind(question))
        print(f"{name:34s} {best * 1000:9.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
