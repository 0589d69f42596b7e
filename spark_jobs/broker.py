"""Is the Kafka broker there? A cheap metadata probe, and waiting until it answers.

Used on the driver (start-up, and the follow loop that reports a degraded pipeline) and
in the Python workers (the source's planning, a range reader whose range stalled): the
source runs in a Python worker process of its own, so each side probes for itself.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from services.outage import Backoff, Outage, OutageError, wait_through

PROBE_TIMEOUT_S = 5.0
BACKOFF = Backoff(initial=1.0, multiplier=2.0, cap=10.0)  # between probes
log = logging.getLogger("groupscope.kafka")


class BrokerUnavailableError(RuntimeError):
    """The broker (or the topic) stayed unreachable longer than `--max-outage`.

    Raised in a Python worker; the driver finds this class's name and message in the
    failed query's error (`unavailable_message`) and ends with that one line.
    """


def quiet(config: dict[str, Any]) -> dict[str, Any]:
    """A probe client's properties: librdkafka's own connection errors (one line per
    failed connect, per broker) stay out of the log; the outage is logged once instead."""
    return {**config, "log_level": 2, "log.connection.close": False}


def problem(client: Any, topic: str | None, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """None when the broker answers through `client` (a confluent-kafka Consumer or
    AdminClient) and, with `topic`, has that topic's metadata; else why not, in one line."""
    from confluent_kafka import KafkaException

    try:
        metadata = (
            client.list_topics(topic, timeout=timeout)
            if topic is not None
            else client.list_topics(timeout=timeout)
        )
    except KafkaException as exc:
        return exc.args[0].str() if exc.args else str(exc)
    if topic is None:
        return None
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        return f"topic {topic!r} not available: {found.error if found else 'no metadata'}"
    return None


class Probe(Protocol):
    """Anything that says whether the broker answers: None, or why not in one line."""

    def problem(self, timeout: float = PROBE_TIMEOUT_S) -> str | None: ...


class BrokerProbe:
    """A reusable client that answers `problem()`: for one topic, or with `topic=None`
    for the broker alone (a topic that is gone is not an outage)."""

    def __init__(self, config: dict[str, Any], topic: str | None) -> None:
        from confluent_kafka.admin import AdminClient

        self.topic = topic
        self._client = AdminClient(quiet(config))

    def problem(self, timeout: float = PROBE_TIMEOUT_S) -> str | None:
        return problem(self._client, self.topic, timeout)


def backoff(cap: float | None) -> Backoff:
    """The waits between probes, capped at `cap` seconds (`--retry-max-delay`) if given."""
    return BACKOFF if cap is None else BACKOFF.capped(cap)


class _Unreachable(Exception):
    pass


def wait_for_broker(
    probe: Probe, outage: Outage, max_outage: float | None, backoff: Backoff = BACKOFF
) -> None:
    """Return once the probe succeeds; raise `BrokerUnavailableError` after `max_outage`."""

    def check() -> None:
        reason = probe.problem()
        if reason is not None:
            raise _Unreachable(reason)

    try:
        wait_through(check, (_Unreachable,), outage, max_outage, backoff=backoff)
    except OutageError as exc:
        raise BrokerUnavailableError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class BrokerWaits:
    """How the source waits out an unreachable broker, in seconds (`--max-outage`,
    `--retry-max-delay`, `--read-stall-timeout`): for at most `max_outage` (None:
    without limit), probing at most `retry_max_delay` apart (None: `BACKOFF`'s cap); a
    range that gets no record for `stall_timeout` asks whether the broker is there
    (None: `range_reader.IDLE_POLLS` polls). Travels with each range to the workers."""

    max_outage: float | None = None
    retry_max_delay: float | None = None
    stall_timeout: float | None = None

    def wait(self, probe: Probe, outage: Outage) -> None:
        """`wait_for_broker` with these waits."""
        wait_for_broker(probe, outage, self.max_outage, backoff(self.retry_max_delay))


DEFAULT_WAITS = BrokerWaits()


def unavailable_message(error: object) -> str | None:
    """The `BrokerUnavailableError` message inside a failed query's error text, if any."""
    import re

    found = re.search(rf"{BrokerUnavailableError.__name__}: (.+)", str(error))
    return found.group(1).strip() if found else None
