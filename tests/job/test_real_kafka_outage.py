"""A live job outlives a real restart of its Apache Kafka broker (issues #14 and #19),
with either Kafka source: groupscope's own and Spark's connector.

The broker is stopped for real (SIGTERM: Kafka's controlled shutdown, the process gone,
every connection refused) for BROKER_OUTAGE_S, then started again on the same log
directory; the groups commit before and after. tests/job/test_outages.py covers a frozen
tansu (a network partition); this is the process stopped and started.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from services.store.database import create_store_engine
from tests.fixtures.real_kafka import RealKafka
from tests.job.real_job import spark_kafka_connector
from tests.job.test_outages import (
    BROKER_OUTAGE_S,
    SPARK_START_S,
    Job,
    assert_no_traceback,
    commits_total,
    degraded,
    wait_until,
)
from tests.job.test_real_kafka import SOURCES, admin_offsets, rows

pytestmark = pytest.mark.real_kafka

OFFSETS_PARTITIONS = 3
PARTITIONS = 3


def commit_rounds(broker: RealKafka, group: str, topic: str, rounds: int) -> int:
    """`rounds` commits of every partition (offsets 10, 20, ...); returns the records."""
    for n in range(1, rounds + 1):
        broker.commit(group, {(topic, p): 10 * n + p for p in range(PARTITIONS)})
    return rounds * PARTITIONS


@pytest.mark.parametrize("source", SOURCES)
def test_a_live_job_outlives_a_broker_stopped_and_started_again(
    source: str, start_real_kafka: Callable[..., RealKafka], database_url: str, tmp_path: Path
) -> None:
    if source == "spark-kafka":
        spark_kafka_connector()
    broker = start_real_kafka(offsets_partitions=OFFSETS_PARTITIONS)
    topic = broker.create_topic("orders", PARTITIONS)
    expected = {"before": commit_rounds(broker, "before", topic, 4)}
    job = Job(
        [
            *("--source", source, "--bootstrap-servers", broker.bootstrap_servers),
            *("--offsets-partitions", str(OFFSETS_PARTITIONS), "--database-url", database_url),
            *("--checkpoint", str(tmp_path / "checkpoint"), "--trigger", "1s"),
        ]
    )
    engine = create_store_engine(database_url)
    address = broker.bootstrap_servers
    try:
        job.wait_for(r"groupscope.stream batch \d+: \d+ records", SPARK_START_S)
        wait_until(lambda: commits_total(engine).get("before") == 12, 60, "commits before")
        # Commits the job may or may not have read when the broker stops: either way they
        # must land once, after it is back.
        expected["edge"] = commit_rounds(broker, "edge", topic, 2)
        stopped = time.monotonic()
        assert broker.stop() < 30  # Kafka's controlled shutdown, then the process is gone
        job.wait_for(rf"the Kafka broker at {address} unavailable", 30)
        wait_until(lambda: degraded(engine)[0] is not None, 30, "degraded_reason")
        reason, since = degraded(engine)
        assert f"the Kafka broker at {address} unreachable" in reason and since is not None
        time.sleep(max(0.0, BROKER_OUTAGE_S - (time.monotonic() - stopped)))
        assert job.process.poll() is None, job.tail()
        assert broker.start() < 60  # the same log directory: a real restart
        job.wait_for(rf"the Kafka broker at {address} available again after", 60)
        wait_until(lambda: degraded(engine) == (None, None), 30, "degraded cleared")
        expected["after"] = commit_rounds(broker, "after", topic, 3)
        wait_until(lambda: commits_total(engine).get("after") == 9, 90, "commits after")
        assert job.process.poll() is None, job.tail()
        assert commits_total(engine) == expected  # every commit once: none lost or doubled
        kafka = admin_offsets(broker, ["before", "edge", "after"])
        sql = "SELECT group_name, topic, partition, committed_offset FROM committed_offsets"
        stored: dict[str, dict] = {}
        for group, t, p, offset in rows(engine, sql):
            stored.setdefault(group, {})[(t, p)] = offset
        assert stored == kafka
    finally:
        job.kill()
        engine.dispose()
    assert_no_traceback(job)
    down = [line for line in job.lines if f"the Kafka broker at {address}" in line]
    assert len([line for line in down if "unavailable" in line]) == 1, down
    # nor once per failed connect: the Java clients' NetworkClient warns about each
    assert "could not be established" not in job.log, job.tail(80)
