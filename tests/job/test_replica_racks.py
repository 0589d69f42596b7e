"""Replica racks from a cluster that does not answer (the real lookup is exercised on a
two-rack cluster in tests/job/test_java_racks.py)."""

from __future__ import annotations

import logging
import time

import pytest

from spark_jobs.replica_racks import RETRY_AFTER_S, ReplicaRacks
from tests.fixtures.real_kafka import free_port


def test_a_broker_that_does_not_answer_leaves_the_baselines_rackless(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Nothing listens on the port: the lookup gives up after its timeout with no racks,
    says so once, and later batches do not wait on it until RETRY_AFTER_S has passed."""
    now = [0.0]
    racks = ReplicaRacks(
        {"bootstrap.servers": f"127.0.0.1:{free_port()}"}, timeout=1.0, clock=lambda: now[0]
    )
    with caplog.at_level(logging.WARNING, logger="groupscope.replica_racks"):
        started = time.monotonic()
        assert racks.lookup({"orders": 6}) == {}
        assert time.monotonic() - started < 5.0
        started = time.monotonic()
        assert racks.lookup({"orders": 6, "stock": 2}) == {}
        assert time.monotonic() - started < 0.5  # not asked again yet
        now[0] += RETRY_AFTER_S
        started = time.monotonic()
        assert racks.lookup({"orders": 6}) == {}
        assert time.monotonic() - started >= 1.0  # asked again
    assert len(caplog.records) == 1 and "orders" in caplog.text


def test_a_property_librdkafka_refuses_leaves_the_baselines_rackless(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`--source spark-kafka` takes Java client properties; one librdkafka refuses must
    not stop the job."""
    config = {"bootstrap.servers": "127.0.0.1:9", "sasl.jaas.config": "x"}
    with caplog.at_level(logging.WARNING, logger="groupscope.replica_racks"):
        racks = ReplicaRacks(config)
        assert racks.lookup({"orders": 6}) == {}
        assert racks.lookup({"orders": 6}) == {}
    assert len(caplog.records) == 1 and "JAAS" in caplog.text
