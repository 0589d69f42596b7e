"""Times and durations as the postmortem commands accept them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from services.postmortem.timeparse import iso, parse_duration, parse_time

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("10m", timedelta(minutes=10)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("1w", timedelta(weeks=1)),
        ("1h30m", timedelta(minutes=90)),
        ("0.5h", timedelta(minutes=30)),
        (" 2H ", timedelta(hours=2)),
    ],
)
def test_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "10", "m", "ten minutes", "10x", "-5m", "0m", "1h 30m"])
def test_not_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2h", NOW - timedelta(hours=2)),
        ("30m", NOW - timedelta(minutes=30)),
        ("now", NOW),
        ("2026-02-28T23:00:00Z", datetime(2026, 2, 28, 23, tzinfo=UTC)),
        ("2026-02-28T23:00:00", datetime(2026, 2, 28, 23, tzinfo=UTC)),
        ("2026-02-28", datetime(2026, 2, 28, tzinfo=UTC)),
        (
            "2026-03-01T09:00:00+02:00",
            datetime(2026, 3, 1, 9, tzinfo=timezone(timedelta(hours=2))),
        ),
    ],
)
def test_times(text: str, expected: datetime) -> None:
    assert parse_time(text, now=NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "12:00 tomorrow"])
def test_not_times(text: str) -> None:
    with pytest.raises(ValueError, match="not a time"):
        parse_time(text, now=NOW)


def test_iso_is_utc_with_a_z() -> None:
    moment = datetime(2026, 3, 1, 14, 30, tzinfo=timezone(timedelta(hours=2)))
    assert iso(moment) == "2026-03-01T12:30:00Z"
    assert iso(None) is None
