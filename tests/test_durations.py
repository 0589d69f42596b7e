"""One duration grammar for flags and the postmortem's relative times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.cli import UsageError
from services.durations import duration_ms, seconds_flag, units_ms
from services.postmortem.timeparse import parse_duration, parse_time


@pytest.mark.parametrize(
    ("text", "ms"),
    [("500ms", 500), ("90", 90_000), ("90s", 90_000), (" 10 m ", 600_000), ("2d", 172_800_000),
     ("1w", 604_800_000), ("1h30m", 5_400_000), ("1M30S", 90_000), ("1.5h", 5_400_000)],
)  # fmt: skip
def test_flags_take_one_unit_a_bare_number_of_seconds_or_combined_units(text, ms) -> None:
    assert duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "m", "10x", "1h 30m", "-5s", "5s5"])
def test_a_flag_duration_that_is_not_one_says_so(text) -> None:
    with pytest.raises(ValueError, match="bad duration"):
        duration_ms(text)
    with pytest.raises(UsageError, match="--every expects a duration"):
        seconds_flag("--every", text)


def test_too_long_is_named_too_long_in_both_forms() -> None:
    for text in ("367d", "52w3d"):
        with pytest.raises(UsageError, match=r"--every: duration .* is too long: at most 366d"):
            seconds_flag("--every", text)


def test_the_postmortem_reads_the_same_units_but_needs_one() -> None:
    now = datetime(2026, 11, 25, 3, 12, tzinfo=UTC)
    assert parse_duration("1h30m") == timedelta(milliseconds=units_ms("1h30m") or 0)
    assert parse_time("1h30m", now=now) == now - timedelta(hours=1, minutes=30)
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("90")  # a bare number is not a relative time
