"""Retrying store calls that failed because the database was away, with backoff."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from services.store.errors import StoreUnavailableError

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: waits `initial_delay`, then ×`multiplier`, capped at `max_delay`.

    Only `StoreUnavailableError` is retried: a rejected batch fails the same way again.
    After `attempts` tries the last error propagates, and the caller must not advance.
    """

    attempts: int = 6
    initial_delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 30.0

    def delays(self) -> list[float]:
        """The waits between attempts, in seconds."""
        return [
            min(self.initial_delay * self.multiplier**n, self.max_delay)
            for n in range(self.attempts - 1)
        ]

    def run(self, operation: Callable[[], T], *, sleep: Callable[[float], None] = time.sleep) -> T:
        for delay in self.delays():
            try:
                return operation()
            except StoreUnavailableError as exc:
                log.warning("%s; retrying in %.1fs", exc, delay)
                sleep(delay)
        return operation()
