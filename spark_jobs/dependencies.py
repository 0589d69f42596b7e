"""The streaming job's database and broker: waiting for them at start-up, and watching
the broker while the query runs.

A live job started while either is away waits for it (logging the outage once); an
`--once` run says in one line what it cannot reach and exits non-zero. While the query
runs, the driver probes the broker itself, because the source that reads it runs in a
Python worker process of its own (or, for Spark's connector, in the JVM's consumers,
which only retry): an unreachable broker marks the pipeline degraded in
`pipeline_status` until it answers again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from services.outage import ONCE_MAX_OUTAGE_S, Backoff, Outage, OutageError, wait_through
from services.store.batch import PipelineReport
from services.store.errors import StoreUnavailableError
from spark_jobs.broker import BACKOFF, BrokerUnavailableError, Probe, wait_for_broker

log = logging.getLogger("groupscope.stream")

PROBE_EVERY_S = 10.0  # how often the follow loop asks the broker while it answers


def max_outage(text: str | None, once: bool) -> float | None:
    """`--max-outage` in seconds; None (wait without limit) for a live job unless given,
    `ONCE_MAX_OUTAGE_S` for `--once` unless given. `none` means without limit."""
    from services.durations import seconds_flag

    if text is None:
        return ONCE_MAX_OUTAGE_S if once else None
    if text.strip().lower() in ("none", "unlimited"):
        return None
    return seconds_flag("--max-outage", text)


def prepare_store(
    url: str,
    engine: Engine,
    prepare: Callable[[], Any],
    once: bool,
    limit: float | None,
    outage: Outage,
    cluster: str | None = None,
    backoff: Backoff | None = None,
) -> Any:
    """Check the server, migrate, then `prepare()` (read what the job starts from).

    `cluster` names the history of a store from before migration 0010 (one cluster's):
    the job's own cluster, which is what that history is when the job upgrades it.

    `--once` fails at the first unreachable attempt with a one-line
    `StoreUnavailableError`; a live job waits for the database (at most `limit` s),
    `backoff` between attempts (default: `Backoff()`).
    """
    from services.store.database import check_server, redacted
    from services.store.migrate import upgrade
    from services.store.repository import store_error

    def attempt() -> Any:
        check_server(engine)
        try:
            upgrade(url, cluster=cluster)
            return prepare()
        except DBAPIError as exc:
            error = store_error(exc, f"cannot reach PostgreSQL at {redacted(url)}")
            if not isinstance(error, StoreUnavailableError):
                raise
            raise error from exc

    if once:
        return attempt()
    try:
        return wait_through(
            attempt, (StoreUnavailableError,), outage, limit, backoff=backoff or Backoff()
        )
    except OutageError as exc:
        raise StoreUnavailableError(str(exc)) from None


def await_broker(
    probe: Probe,
    bootstrap: str,
    once: bool,
    limit: float | None,
    backoff: Backoff = BACKOFF,
) -> BrokerWatch:
    """A watch on the broker through `probe`, once it answers: `--once` fails at once
    with a one-line `OutageError` when it does not; a live job waits (at most `limit` s,
    `backoff` between probes)."""
    watch = BrokerWatch(probe, bootstrap)
    reason = watch.probe.problem()
    if reason is None:
        return watch
    if once:
        raise OutageError(f"cannot reach the Kafka broker at {bootstrap}: {reason}")
    try:
        wait_for_broker(watch.probe, watch.outage, limit, backoff)
    except BrokerUnavailableError as exc:
        raise OutageError(str(exc)) from None
    return watch


class BrokerWatch:
    """The driver's view of the broker while the query runs.

    `poll()` probes every PROBE_EVERY_S while the broker answers, and at every call while
    it does not (or when forced); `apply()` marks a report degraded (and not caught up:
    nothing is known about what the broker holds) while it is away. `last_down` is when
    a probe last failed (monotonic seconds), for a query that failed meanwhile.
    """

    def __init__(self, probe: Probe, bootstrap: str) -> None:
        self.probe = probe
        self.outage = Outage(f"the Kafka broker at {bootstrap}", log)
        self.last_down: float | None = None
        self._next = 0.0

    def poll(self, force: bool = False) -> None:
        now = time.monotonic()
        if not (force or self.outage.is_down) and now < self._next:
            return
        self._next = now + PROBE_EVERY_S
        reason = self.probe.problem()
        if reason is None:
            self.outage.up()
        else:
            self.last_down = time.monotonic()
            self.outage.down(reason)

    def away_since(self, start: float) -> bool:
        """The broker is away now, or was when a probe ran after `start` (monotonic)."""
        return self.outage.is_down or (self.last_down is not None and self.last_down >= start)

    def apply(self, report: PipelineReport) -> PipelineReport:
        if not self.outage.is_down:
            return report
        return replace(
            report,
            caught_up=False,
            records_behind=None,
            degraded_reason=f"{self.outage.what} unreachable: {self.outage.reason}",
            degraded_since=self.outage.since,
        )
