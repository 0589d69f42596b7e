"""Waiting out a dependency's outage (the database, the Kafka broker), and saying so.

A live job must outlive any outage of what it depends on: it waits with capped
exponential backoff and carries on where it was. What it logs stays readable however long
the outage lasts: one line when the dependency goes away, a reminder at most every few
minutes while it stays away, and one line with the outage's duration when it is back.
An `--once` run waits a bounded time (`--max-outage`) and then gives up with one line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

T = TypeVar("T")

REMIND_EVERY_S = 300.0  # "still unavailable" at most this often
RETRY_MAX_DELAY_S = 10.0  # the default cap of the waits between attempts (--retry-max-delay)
ONCE_MAX_OUTAGE_S = 120.0  # --once gives up after this long unless --max-outage says otherwise


class OutageError(Exception):
    """A dependency stayed unavailable longer than the job was allowed to wait."""


def duration(seconds: float) -> str:
    """`42s`, `3m05s`, `2h01m`: how long an outage lasted, for people."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@dataclass(frozen=True)
class Backoff:
    """Waits of `initial`, then ×`multiplier`, capped at `cap` seconds: the cap bounds how
    late a recovery is noticed."""

    initial: float = 0.5
    multiplier: float = 2.0
    cap: float = RETRY_MAX_DELAY_S

    def capped(self, cap: float) -> Backoff:
        """The same waits capped at `cap` (`--retry-max-delay`), the first one too."""
        return Backoff(min(self.initial, cap), self.multiplier, cap)

    def delays(self) -> Iterator[float]:
        delay = self.initial
        while True:
            yield delay
            delay = min(delay * self.multiplier, self.cap)


class Outage:
    """One dependency's availability as the job last saw it; logs each state change once.

    Thread-safe: a batch write (Spark's foreachBatch callback thread) and the driver's
    follow loop report on the same database.
    """

    def __init__(
        self,
        what: str,
        logger: logging.Logger,
        *,
        remind_every: float = REMIND_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self._log = logger
        self._remind_every = remind_every
        self._clock = clock
        self._lock = threading.Lock()
        self._started: float | None = None
        self._reminded = 0.0
        self.since: datetime | None = None  # wall-clock start, for pipeline_status
        self.reason: str | None = None

    @property
    def is_down(self) -> bool:
        return self._started is not None

    def down(self, reason: str) -> float:
        """Record a failed attempt; returns how long the dependency has been away."""
        with self._lock:
            now = self._clock()
            self.reason = reason
            if self._started is None:
                self._started, self._reminded = now, now
                self.since = datetime.now(UTC)
                self._log.warning("%s unavailable, waiting for it: %s", self.what, reason)
                return 0.0
            if now - self._reminded >= self._remind_every:
                self._reminded = now
                self._log.warning(
                    "%s still unavailable after %s: %s",
                    self.what,
                    duration(now - self._started),
                    reason,
                )
            return now - self._started

    def up(self) -> None:
        """Record a successful attempt; logs the recovery once."""
        with self._lock:
            if self._started is None:
                return
            lasted = self._clock() - self._started
            self._started, self.since, self.reason = None, None, None
            self._log.warning("%s available again after %s", self.what, duration(lasted))

    def elapsed(self) -> float:
        with self._lock:
            return 0.0 if self._started is None else self._clock() - self._started

    def give_up_message(self, max_outage: float) -> str:
        return (
            f"{self.what} unavailable for {duration(self.elapsed())} "
            f"(--max-outage {duration(max_outage)}): {self.reason}"
        )


def wait_through(
    operation: Callable[[], T],
    retriable: tuple[type[Exception], ...],
    outage: Outage,
    max_outage: float | None,
    *,
    backoff: Backoff = Backoff(),
    sleep: Callable[[float], None] = time.sleep,
    describe: Callable[[Exception], str] = str,
) -> T:
    """`operation()`, retried through an outage of what it needs.

    `retriable` are the errors that mean "unavailable"; anything else propagates at once.
    With `max_outage` (seconds) it raises `OutageError` once the outage has lasted that
    long; without, it waits as long as the outage lasts.
    """
    for delay in backoff.delays():
        try:
            result = operation()
        except retriable as exc:
            away = outage.down(describe(exc))
            if max_outage is not None and away >= max_outage:
                raise OutageError(outage.give_up_message(max_outage)) from None
            if max_outage is not None:
                delay = min(delay, max_outage - away)
            sleep(delay)
            continue
        outage.up()
        return result
    raise AssertionError("unreachable: the backoff never ends")
