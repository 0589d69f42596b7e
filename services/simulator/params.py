"""Scenario parameters (`--set key=value`) and durations ("90s", "10m", "1h")."""

from __future__ import annotations

import builtins
import math
from collections.abc import Mapping
from typing import overload

from services.durations import duration_ms

# Members, partitions, crashes: a scenario's counts. Far above any scenario's use; a
# value like 99999999999 would otherwise build members or partitions until memory ran out.
MAX_INT = 100_000


class ParamError(ValueError):
    """A parameter or duration that cannot be used; the message is one line."""


def parse_duration(text: str) -> int:
    """Milliseconds in `text`: a number with a unit ms, s, m, h or d (seconds if none)."""
    try:
        return duration_ms(text)
    except ValueError as exc:
        raise ParamError(str(exc)) from None


class Params:
    """Typed access to `key=value` settings, remembering which were used."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self.values = dict(values or {})
        self.used: set[str] = set()

    def _raw(self, key: str) -> str | None:
        self.used.add(key)
        return self.values.get(key)

    def int(self, key: str, default: int, minimum: int = 0, maximum: int = MAX_INT) -> int:
        raw = self._raw(key)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ParamError(f"{key} must be an integer, got {raw!r}") from None
        if value < minimum:
            raise ParamError(f"{key} must be at least {minimum}, got {value}")
        if value > maximum:
            raise ParamError(f"{key} must be at most {maximum:,}, got {value:,}")
        return value

    def float(self, key: str, default: float, low: float = 0.0, high: float | None = None) -> float:
        raw = self._raw(key)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise ParamError(f"{key} must be a number, got {raw!r}") from None
        if not math.isfinite(value):
            raise ParamError(f"{key} must be a finite number, got {raw!r}")
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise ParamError(f"{key} must be {bound}, got {value}")
        return value

    def bool(self, key: str, default: bool) -> bool:
        raw = self._raw(key)
        if raw is None:
            return default
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise ParamError(f"{key} must be true or false, got {raw!r}")

    def str(self, key: str, default: str, choices: tuple[str, ...] | None = None) -> str:
        raw = self._raw(key)
        value = default if raw is None else raw
        if choices is not None and value not in choices:
            raise ParamError(f"{key} must be one of {', '.join(choices)}, got {value!r}")
        return value

    # Below, `str` and `int` would name the methods above: the types are spelled builtins.*.
    @overload
    def duration(self, key: builtins.str, default: builtins.int) -> builtins.int: ...

    @overload
    def duration(self, key: builtins.str, default: None) -> builtins.int | None: ...

    def duration(self, key: builtins.str, default: builtins.int | None) -> builtins.int | None:
        raw = self._raw(key)
        return default if raw is None else parse_duration(raw)

    def unused(self) -> list[builtins.str]:
        return sorted(set(self.values) - self.used)
