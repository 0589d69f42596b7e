"""Retrying store calls that failed because the database was away, with backoff."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from services.outage import Backoff, Outage, OutageError, wait_through
from services.store.errors import StoreUnavailableError

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: waits `initial_delay`, then ×`multiplier`, capped at `max_delay`.

    Only `StoreUnavailableError` is retried: a rejected batch fails the same way again.
    After `attempts` tries the last error propagates, and the caller must not advance.

    `attempts=None` retries without a count, through an outage of any length (a live
    job), or until the database has been away `max_outage` seconds (`--once`); then a
    `StoreUnavailableError` saying so propagates. The outage is logged once per state
    change (`services.outage.Outage`), not once per attempt.
    """

    attempts: int | None = 6
    initial_delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 30.0
    max_outage: float | None = None

    def delays(self) -> list[float]:
        """The waits between attempts, in seconds (a counted policy only)."""
        if self.attempts is None:
            raise ValueError("a policy without a count of attempts has no list of delays")
        return [
            min(self.initial_delay * self.multiplier**n, self.max_delay)
            for n in range(self.attempts - 1)
        ]

    def run(
        self,
        operation: Callable[[], T],
        *,
        sleep: Callable[[float], None] = time.sleep,
        outage: Outage | None = None,
    ) -> T:
        if self.attempts is None:
            return self._through_outage(operation, sleep, outage or Outage("the database", log))
        for delay in self.delays():
            try:
                return operation()
            except StoreUnavailableError as exc:
                log.warning("%s; retrying in %.1fs", exc, delay)
                sleep(delay)
        return operation()

    def _through_outage(
        self, operation: Callable[[], T], sleep: Callable[[float], None], outage: Outage
    ) -> T:
        backoff = Backoff(self.initial_delay, self.multiplier, self.max_delay)
        try:
            return wait_through(
                operation,
                (StoreUnavailableError,),
                outage,
                self.max_outage,
                backoff=backoff,
                sleep=sleep,
            )
        except OutageError as exc:
            raise StoreUnavailableError(str(exc)) from None
