"""Partitions added to the job's topic while it runs, on Apache Kafka 4.3.1 itself.

tansu 0.6.0 refuses CreatePartitions, so tests/job/test_kafka_source.py could only
script the broker's answers; here the topic really grows. The topic plays
`__consumer_offsets`: its records are offset commits encoded by the project's codec,
each group's in the partition Kafka would put it in (`partition_for(group, 4)`, the
topic's final partition count). The reader alone (no Spark) plans the new partitions
from their start; a live `groupscope stream` (Spark local, PostgreSQL) reads and
stores them, an aborted transaction at the start of one of them left out.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from services.codec import encode_key, encode_value, partition_for
from services.store.database import create_store_engine
from spark_jobs.kafka_source import KafkaStreamReader
from tests.fixtures.real_kafka import START_TIMEOUT_S, RealKafka
from tests.job.test_outages import (
    SPARK_START_S,
    Job,
    assert_no_traceback,
    commits_total,
    wait_until,
)
from tests.job.test_real_kafka import rows

pytestmark = pytest.mark.real_kafka

BEFORE, AFTER = 2, 4  # partitions of the topic, before and after it grows
COMMITS = 3  # offset commits per record batch: one per partition of topic `orders`


def add_partitions(broker: RealKafka, topic: str, total: int) -> None:
    """CreatePartitions up to `total`; returns once every partition has a leader."""
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient(broker.client_config())
    for future in admin.create_partitions([NewPartitions(topic, total)]).values():
        future.result(START_TIMEOUT_S)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        partitions = admin.list_topics(topic, timeout=5).topics[topic].partitions
        if len(partitions) == total and all(p.leader >= 0 for p in partitions.values()):
            return
        assert time.monotonic() < deadline, f"{topic} has no leader for every partition"
        time.sleep(0.1)


def group_in(partition: int, prefix: str) -> str:
    """The first `prefix-N` Kafka keeps in `partition` of AFTER offsets partitions."""
    return next(
        name
        for name in (f"{prefix}-{i}" for i in itertools.count())
        if partition_for(name, AFTER) == partition
    )


def commits(group: str, base: int) -> list[tuple[bytes, bytes]]:
    """COMMITS offset commits of `group`: orders-i at offset base + i."""
    return [
        (
            encode_key("offset_commit", {"group": group, "topic": "orders", "partition": i}),
            encode_value(
                "offset_commit", 3, {"offset": base + i, "commit_timestamp": 1_767_225_600_000}
            ),
        )
        for i in range(COMMITS)
    ]


def produce(
    broker: RealKafka, topic: str, partition: int, records: list, transaction: str | None = None
) -> None:
    """`records` (key, value) into `partition`; in a transaction that commits or aborts
    (`transaction` "commit" or "abort") or plainly. A new producer each time: it learns
    the partitions the topic has now."""
    from confluent_kafka import Producer

    config = broker.client_config()
    if transaction is not None:
        config["transactional.id"] = f"{topic}-{partition}"
    producer = Producer(config)
    if transaction is not None:
        producer.init_transactions(30)
        producer.begin_transaction()
    for key, value in records:
        producer.produce(topic, value, key, partition=partition)
    assert producer.flush(30) == 0
    if transaction == "commit":
        producer.commit_transaction(30)
    elif transaction == "abort":
        producer.abort_transaction(30)


# -- the source's planning, on its own ----------------------------------------------------------


@pytest.fixture
def reader(real_kafka: RealKafka) -> Iterator[tuple[KafkaStreamReader, str]]:
    topic = real_kafka.create_topic(partitions=BEFORE)
    source = KafkaStreamReader({"topic": topic, "bootstrap.servers": real_kafka.bootstrap_servers})
    yield source, topic
    source.stop()


def test_the_source_plans_an_added_partition_from_its_start(
    real_kafka: RealKafka, reader: tuple[KafkaStreamReader, str]
) -> None:
    """The port of test_kafka_source's scripted test: partition 2 appears between two
    plans and is planned from offset 0, its records read."""
    source, topic = reader
    produce(real_kafka, topic, 0, [(b"k", b"v")] * 5)
    produce(real_kafka, topic, 1, [(b"k", b"v")] * 3)
    start = source.initialOffset()
    assert start == {"0": 0, "1": 0}
    end = source.latestOffset(start, ReadAllAvailable())
    assert end == {"0": 5, "1": 3}
    add_partitions(real_kafka, topic, BEFORE + 1)
    produce(real_kafka, topic, 0, [(b"k", b"v")])
    produce(real_kafka, topic, 2, [(b"new", f"n{i}".encode()) for i in range(4)])
    later = source.latestOffset(end, ReadAllAvailable())
    assert later == {"0": 6, "1": 3, "2": 4}
    ranges = source.partitions(end, later)
    assert [(r.partition, r.start, r.end) for r in ranges] == [(0, 5, 6), (2, 0, 4)]
    read = [row for batch in source.read(ranges[1]) for row in batch.to_pylist()]
    assert [(r["partition"], r["offset"], r["value"]) for r in read] == [
        (2, i, f"n{i}".encode()) for i in range(4)
    ]


# -- a live job ------------------------------------------------------------------------------------


def stored_offsets(engine, group: str) -> dict[int, tuple[int, int, int]]:
    """orders partition -> (committed offset, source partition, source offset)."""
    sql = (
        "SELECT partition, committed_offset, source_partition, source_offset "
        "FROM committed_offsets WHERE group_name = :group AND NOT deleted"
    )
    return {p: (o, sp, so) for p, o, sp, so in rows(engine, sql, group=group)}


def test_a_live_job_reads_partitions_added_while_it_runs_from_their_start(
    real_kafka: RealKafka, database_url: str, tmp_path: Path
) -> None:
    topic = real_kafka.create_topic(partitions=BEFORE)
    groups = {p: group_in(p, "copy") for p in range(AFTER)}
    for p in range(BEFORE):
        produce(real_kafka, topic, p, commits(groups[p], 10))
    job = Job(
        [
            *("--bootstrap-servers", real_kafka.bootstrap_servers, "--topic", topic),
            *("--offsets-partitions", str(AFTER), "--database-url", database_url),
            *("--checkpoint", str(tmp_path / "checkpoint"), "--trigger", "1s"),
        ]
    )
    engine = create_store_engine(database_url)
    try:
        job.wait_for(r"groupscope.stream batch \d+: \d+ records", SPARK_START_S)
        before = {groups[p]: COMMITS for p in range(BEFORE)}
        wait_until(lambda: commits_total(engine) == before, 60, "the commits before")

        add_partitions(real_kafka, topic, AFTER)  # while the job runs
        produce(real_kafka, topic, 2, commits(groups[2], 100))  # offsets 0-2
        # Partition 3 starts with an aborted transaction (offsets 0-2, its marker 3),
        # then one that commits (offsets 4-6, marker 7).
        produce(real_kafka, topic, 3, commits(groups[3], 900), transaction="abort")
        produce(real_kafka, topic, 3, commits(groups[3], 300), transaction="commit")
        produce(real_kafka, topic, 0, commits(groups[0], 20))  # the old partitions go on
        expected = {**before, groups[0]: 2 * COMMITS, groups[2]: COMMITS, groups[3]: COMMITS}
        wait_until(lambda: commits_total(engine) == expected, 90, "the commits after")
        assert job.process.poll() is None, job.tail()

        assert stored_offsets(engine, groups[2]) == {i: (100 + i, 2, i) for i in range(COMMITS)}
        committed_only = {i: (300 + i, 3, COMMITS + 1 + i) for i in range(COMMITS)}
        assert stored_offsets(engine, groups[3]) == committed_only
        assert stored_offsets(engine, groups[0]) == {
            i: (20 + i, 0, COMMITS + i) for i in range(COMMITS)
        }
        progress = dict(rows(engine, "SELECT partition, last_offset FROM pipeline_progress"))
        assert progress == {0: 2 * COMMITS - 1, 1: COMMITS - 1, 2: COMMITS - 1, 3: 2 * COMMITS}
    finally:
        job.kill()
        engine.dispose()
    assert_no_traceback(job)
    assert "--offsets-partitions does not match" not in job.log, job.tail()
