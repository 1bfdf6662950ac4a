"""Work that grew faster than its input on hostile or unusual input, found in round 21's hunt.

No test here measures time. Each pins the answers of the rewritten code on small inputs of the
adversarial shape, and checks the mechanism that keeps it near-linear (where a scan starts, how
often a file is read) so the old behaviour fails deterministically. Tests that run an adversarial
input at the size limit would make the suite visibly hang if the fix regressed: that is their
failure signal. Credentials are assembled at runtime so this file never trips a secret scanner.
"""

from __future__ import annotations

import random
import re

from context_keeper import secrets
from context_keeper.model import MAX_TEXT
from context_keeper.secrets import find_secret

PASSWORD = "Zx9mQ2pLr7" + "Kd4fQw"


def _dna(size: int) -> str:
    rng = random.Random(21)
    return "".join(rng.choice("ACGT") for _ in range(size))


# ------------------------------------------------------------------ secrets: a long run of capitals

def test_a_keyword_glued_to_its_prefix_is_tried_only_where_the_capitals_start():
    """``[A-Z]+TOKEN`` tried at every capital of a run rescans the rest of the run each time."""
    keyword = re.compile(secrets._KEYWORD, re.IGNORECASE)
    assert keyword.match("PGPASSWORD", 0)
    assert keyword.match("PGPASSWORD", 1) is None


def test_glued_keywords_are_still_found_inside_and_after_runs_of_capitals():
    found = [
        f"PGPASSWORD={PASSWORD}",
        f"{_dna(300)}TOKEN={PASSWORD}",
        f"{_dna(300)} NPMTOKEN={PASSWORD}",
        f"x_PGPASSWORD={PASSWORD}",
        f"lowerPGPASSWORD={PASSWORD}",
        f'password="{PASSWORD}"APPSECRET={PASSWORD}',
    ]
    for text in found:
        assert find_secret(text) == "a password or secret assignment", text[-40:]
    for text in (_dna(300), "DEADBEEF" * 40, f"{_dna(300)}TOKENS={PASSWORD}", "the PGPASSWORD variable"):
        assert find_secret(text) is None, text[-40:]


def test_a_field_of_capitals_at_the_size_limit_is_scanned_without_hanging():
    """Before the fix this took seconds per field; a regression shows as a visibly hung test."""
    assert find_secret(_dna(MAX_TEXT)) is None
    assert find_secret(("DEADBEEF" * MAX_TEXT)[:MAX_TEXT]) is None
    assert find_secret(_dna(MAX_TEXT - 40) + f" PGPASSWORD={PASSWORD}") == "a password or secret assignment"
