"""Durations as operators type them: `500ms`, `90s`, `10m`, `1h`, `2d`, `1w`, combined as
`1h30m`; in flags also a bare number of seconds. One grammar for the flags
(`duration_ms`, `seconds_flag`) and the postmortem commands' relative times
(`services.postmortem.timeparse`). Standard library only, so any part of the project
may use it."""

from __future__ import annotations

import re

_UNITS_MS = {
    "ms": 1,
    "s": 1_000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 604_800_000,
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_PARTS = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+")
# The longest duration any flag takes: a year and a day. Far longer values overflow
# timers (`threading.Event.wait`: "timestamp out of range for platform time_t") and
# Spark's trigger interval, or run the simulator for ever.
MAX_DURATION_MS = 366 * 86_400_000


def units_ms(text: str) -> float | None:
    """Milliseconds in `text` made of one or more number-unit parts (`1h30m`), any case;
    None where it is not such a text (a bare number has no unit)."""
    value = str(text).strip().lower()
    if not _PARTS.fullmatch(value):
        return None
    return sum(float(n) * _UNITS_MS[unit] for n, unit in _PART.findall(value))


def duration_ms(text: str) -> int:
    """Milliseconds in `text`; ValueError with a one-line reason otherwise."""
    match = _DURATION.match(str(text))
    combined = None if match else units_ms(text)
    if match:
        ms = float(match.group(1)) * _UNITS_MS[match.group(2) or "s"]
    elif combined is not None:
        ms = combined
    else:
        raise ValueError(f"bad duration {text!r}: use e.g. 500ms, 90s, 10m, 1h")
    if ms > MAX_DURATION_MS:
        raise ValueError(f"duration {text!r} is too long: at most 366d")
    return int(ms)


def seconds_flag(flag: str, text: str, positive: bool = True) -> float:
    """Seconds in a command-line duration flag; a one-line `UsageError` otherwise."""
    from services.cli import UsageError

    try:
        seconds = duration_ms(text) / 1000
    except ValueError as exc:
        if _DURATION.match(str(text)) or units_ms(text) is not None:  # well formed, too long
            raise UsageError(f"{flag}: {exc}") from None
        raise UsageError(
            f"{flag} expects a duration such as 5s, 500ms or 1m, got {text!r}"
        ) from None
    if positive and seconds <= 0:
        raise UsageError(f"{flag} must be positive, got {text!r}")
    return seconds
