"""Durations as operators type them in flags: `500ms`, `90s`, `10m`, `1h`, `2d`, or a bare
number of seconds. Standard library only, so any part of the project may use it."""

from __future__ import annotations

import re

_UNITS_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
# The longest duration any flag takes: a year and a day. Far longer values overflow
# timers (`threading.Event.wait`: "timestamp out of range for platform time_t") and
# Spark's trigger interval, or run the simulator for ever.
MAX_DURATION_MS = 366 * 86_400_000


def duration_ms(text: str) -> int:
    """Milliseconds in `text`; ValueError with a one-line reason otherwise."""
    match = _DURATION.match(str(text))
    if not match:
        raise ValueError(f"bad duration {text!r}: use e.g. 500ms, 90s, 10m, 1h")
    ms = float(match.group(1)) * _UNITS_MS[match.group(2) or "s"]
    if ms > MAX_DURATION_MS:
        raise ValueError(f"duration {text!r} is too long: at most 366d")
    return int(ms)


def seconds_flag(flag: str, text: str, positive: bool = True) -> float:
    """Seconds in a command-line duration flag; a one-line `UsageError` otherwise."""
    from services.cli import UsageError

    try:
        seconds = duration_ms(text) / 1000
    except ValueError as exc:
        if _DURATION.match(str(text)):  # well formed, but too long
            raise UsageError(f"{flag}: {exc}") from None
        raise UsageError(
            f"{flag} expects a duration such as 5s, 500ms or 1m, got {text!r}"
        ) from None
    if positive and seconds <= 0:
        raise UsageError(f"{flag} must be positive, got {text!r}")
    return seconds
