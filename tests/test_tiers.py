"""Every test is in exactly one of two camps: the `unit` tier, or one or more of the
tiers that start a real part (tests/conftest.py marks them; docs/testing.md). A test in
neither would be left out of `make test-fast` and of every `-m` selection; a test in
both would start Spark or a server inside the quick loop."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLLECT = (sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider")
HEAVY = "spark or postgres or broker or prometheus or cluster or real_kafka"


def collect(expression: str) -> tuple[int, int]:
    """(selected, collected) over the whole suite for `-m expression`."""
    done = subprocess.run(
        [*COLLECT, "-m", expression],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = done.stdout.strip().splitlines()[-1]
    if match := re.match(r"no tests collected \((\d+) deselected\)", summary):
        return 0, int(match[1])
    match = re.match(r"(?:(\d+)/)?(\d+) tests? collected", summary)
    assert match, f"unexpected collection summary: {summary!r}\n{done.stderr}"
    return int(match[1] or match[2]), int(match[2])


def test_every_test_is_unit_or_in_a_tier_that_starts_a_real_part_never_both() -> None:
    selected, collected = collect(f"(unit and ({HEAVY})) or not (unit or {HEAVY})")
    assert collected > 500, "the whole suite was not collected"
    assert selected == 0, f"{selected} tests are in both camps or in neither"
