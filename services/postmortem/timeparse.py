"""Times and durations as people type them: ISO 8601, or relative forms like `2h`, `30m`.

A relative time counts back from now: `--since 2h` means two hours ago. Durations and
relative times use the same units: s, m, h, d, w, and may combine (`1h30m`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import overload

from services.durations import units_ms

# A century: history older than that does not exist, and `--since 99999999999d` would
# overflow timedelta (and `now - it` datetime) with a traceback.
MAX_DURATION = timedelta(days=36_525)


def parse_duration(text: str) -> timedelta:
    """`10m`, `1h30m`, `2d` → a positive timedelta up to a century; ValueError otherwise."""
    ms = units_ms(text)
    if ms is None:
        raise ValueError(f"not a duration: {text!r} (use forms like 90s, 10m, 2h, 1d, 1h30m)")
    seconds = ms / 1000
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(f"too long: {text!r} (at most 36525d, a century)")
    duration = timedelta(seconds=seconds)
    if duration <= timedelta(0):
        raise ValueError(f"a duration must be longer than zero: {text!r}")
    return duration


def parse_time(text: str, *, now: datetime | None = None) -> datetime:
    """ISO 8601 (naive means UTC), `now`, or a duration ago (`2h`) → an aware datetime."""
    value = text.strip()
    now = now or datetime.now(UTC)
    if value.lower() == "now":
        return now
    if units_ms(value) is not None:
        return now - parse_duration(value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"not a time: {text!r} (use ISO 8601 like 2026-03-01T12:00:00Z, or 2h for two "
            "hours ago)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@overload
def iso(moment: datetime) -> str: ...


@overload
def iso(moment: None) -> None: ...


def iso(moment: datetime | None) -> str | None:
    """A UTC ISO 8601 string ending in Z, as the JSON outputs use."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
