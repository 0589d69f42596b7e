"""Lag and the coordinator-partition check against Apache Kafka 4.3.1 itself.

A broker of this module's own runs with `offsets.topic.num.partitions=7`. A
transactional producer writes a topic: a committed transaction, an aborted one, and
one left open, so that the partitions' last stable offset (LSO) stops below their high
watermark. A `read_committed` consumer group reads everything it may and commits; a
second group commits by hand, part of the way. `groupscope stream --once` (in this
process, on the tests' Spark session) reads the broker's `__consumer_offsets` twice:
with the default `--offsets-partitions 50`, which must name every group Kafka put in
another partition than 50 partitions would, and with `--offsets-partitions 7`, which
must name none. Then a `groupscope exporter` process polls the broker and is scraped:
its lag is Kafka's answer, the committed offsets of ListConsumerGroupOffsets against
ListOffsets(latest, read_committed).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from services.codec import partition_for
from tests.exporter.test_outages import Running, exporter, wait_for
from tests.fixtures.real_kafka import RealKafka, Settings, launch, retry_while_coordinator_pending
from tests.job.test_real_kafka import admin_offsets

pytestmark = pytest.mark.real_kafka

OFFSETS_PARTITIONS = 7
PARTITIONS = 3
COMMITTED, ABORTED, OPEN = 10, 5, 4  # records per partition of each transaction
# The groups. Kafka keeps `reader` and `partial` in partitions 1 and 6 of 7, where 50
# partitions would put them in 39 and 15; `steady-180` is in partition 0 of both.
READER, PARTIAL, STEADY = "reader", "partial", "steady-180"
GROUPS = (READER, PARTIAL, STEADY)
PARTIAL_OFFSETS = {0: 5, 1: 10, 2: 17}  # in the committed transaction, its marker, the LSO
PARTITION_COUNT = ("--offsets-partitions", str(OFFSETS_PARTITIONS))
MISMATCH = re.compile(
    r"group '([^']+)' is in __consumer_offsets partition (\d+), but "
    r"partition_for\(group, (\d+)\) is (\d+): --offsets-partitions does not match"
)


@dataclass
class Cluster:
    broker: RealKafka
    topic: str
    url: str  # the store of the clean run
    clean: Once  # --offsets-partitions 7
    default: Once  # the default, 50
    open_transaction: Any  # the producer whose transaction is still open


def end_offsets(broker: RealKafka, topic: str, committed: bool) -> dict[int, int]:
    """ListOffsets(latest) of every partition: the last stable offset at isolation level
    read_committed, the high watermark at read_uncommitted."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient(broker.client_config())
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)}
    futures = admin.list_offsets(request, isolation_level=level, request_timeout=30)
    return {tp.partition: f.result(30).offset for tp, f in futures.items()}


def transactions(broker: RealKafka, topic: str):
    """COMMITTED records per partition committed, ABORTED aborted, OPEN left open;
    returns the producer holding the open transaction."""
    from confluent_kafka import Producer

    # Open for the whole module (two job runs): well within the broker's 15 min maximum.
    producer = Producer(
        broker.client_config(
            **{"transactional.id": f"txn-{topic}", "transaction.timeout.ms": 600_000}
        )
    )
    producer.init_transactions(30)
    for count, end in ((COMMITTED, "commit"), (ABORTED, "abort"), (OPEN, None)):
        producer.begin_transaction()
        for i in range(count * PARTITIONS):
            producer.produce(topic, f"r{i}".encode(), partition=i % PARTITIONS)
        assert producer.flush(30) == 0  # abort_transaction purges what is not sent yet
        if end == "commit":
            producer.commit_transaction(30)
        elif end == "abort":
            producer.abort_transaction(30)
    return producer


def read_committed_and_commit(broker: RealKafka, group: str, topic: str) -> None:
    """A read_committed consumer reads every partition up to its LSO, then commits its
    position, as a consumer that has read everything it may does."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    lso = end_offsets(broker, topic, committed=True)
    consumer = Consumer(
        broker.client_config(
            **{
                "group.id": group,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "log_level": 3,
            }
        )
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 60
        while True:
            consumer.consume(100, 0.5)
            positions = {tp.partition: tp.offset for tp in consumer.position(consumer.assignment())}
            if positions == lso:
                break
            assert time.monotonic() < deadline, f"{group} read only to {positions} of {lso}"
        offsets = [TopicPartition(topic, p, o) for p, o in positions.items()]
        retry_while_coordinator_pending(
            lambda: consumer.commit(offsets=offsets, asynchronous=False)
        )
    finally:
        consumer.close()


@dataclass
class Once:
    """A `groupscope stream --once` run: its exit status and what it logged."""

    code: int
    log: str


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def run_once(broker: RealKafka, url: str, directory: Path, *flags: str) -> Once:
    """`groupscope stream --once` into `url`, in this process: on the tests' Spark
    session, which a subprocess would start again (a JVM and Spark, twice a module)."""
    from services.cli import main

    collect = Collect()
    logger = logging.getLogger("groupscope.stream")
    logger.addHandler(collect)
    try:
        code = main(
            [
                *("stream", "--once", "--bootstrap-servers", broker.bootstrap_servers),
                *("--database-url", url, "--checkpoint", str(directory / "checkpoint"), *flags),
            ]
        )
    finally:
        logger.removeHandler(collect)
    return Once(code, "\n".join(collect.lines))


def reported(job: Once) -> dict[str, tuple[int, int, int]]:
    """Each group the job named: (its partition, the partition count, the partition it
    expected)."""
    return {
        m.group(1): (int(m.group(2)), int(m.group(3)), int(m.group(4)))
        for m in MISMATCH.finditer(job.log)
    }


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, postgres_server, migrated_template: str, spark
) -> Iterator[Cluster]:
    broker = launch(
        tmp_path_factory.mktemp("kafka"), Settings(offsets_partitions=OFFSETS_PARTITIONS)
    )
    names = [postgres_server.create_database(template=migrated_template) for _ in range(2)]
    try:
        topic = broker.create_topic("payments", PARTITIONS)
        producer = transactions(broker, topic)
        read_committed_and_commit(broker, READER, topic)
        broker.commit(PARTIAL, {(topic, p): o for p, o in PARTIAL_OFFSETS.items()})
        broker.commit(STEADY, {(topic, 0): 1})
        urls = [postgres_server.url(name) for name in names]
        clean = run_once(broker, urls[0], tmp_path_factory.mktemp("clean"), *PARTITION_COUNT)
        default = run_once(broker, urls[1], tmp_path_factory.mktemp("default"))
        yield Cluster(broker, topic, urls[0], clean, default, producer)
    finally:
        for name in names:
            postgres_server.drop_database(name)
        try:
            broker.stop()
        finally:
            broker.kill()


# -- the coordinator-partition check ------------------------------------------------------


def test_the_clusters_partition_count_reports_no_group(cluster: Cluster) -> None:
    assert cluster.clean.code == 0, cluster.clean.log[-3000:]
    assert re.search(r"batch \d+: [1-9]\d* records", cluster.clean.log)  # it did read
    assert reported(cluster.clean) == {}
    assert "--offsets-partitions does not match" not in cluster.clean.log


def test_the_default_50_names_every_group_kafka_put_elsewhere(cluster: Cluster) -> None:
    """Kafka places a group in `abs(hashCode) % offsets.topic.num.partitions`
    (GroupCoordinatorService.partitionFor); the job, told 50, names each group whose
    records it finds elsewhere, once, with the partition it found it in."""
    job = cluster.default
    assert job.code == 0, job.log[-3000:]
    expected = {
        group: (partition_for(group, OFFSETS_PARTITIONS), 50, partition_for(group, 50))
        for group in GROUPS
        if partition_for(group, OFFSETS_PARTITIONS) != partition_for(group, 50)
    }
    assert expected.keys() == {READER, PARTIAL}  # steady-180 is where 50 would put it too
    assert reported(job) == expected
    assert all(len(re.findall(rf"group '{g}' is in", job.log)) == 1 for g in expected)


# -- lag against the Admin API -------------------------------------------------------------


def lag_samples(running: Running, topic: str) -> dict[str, dict]:
    """Per group: offset lag, time lag and per-partition offset lag as scraped."""
    metrics = running.metrics()
    out: dict[str, dict] = {}
    for group in GROUPS:
        labels = (("group", group), ("topic", topic))
        out[group] = {
            "lag": metrics.get(("groupscope_lag", labels)),
            "seconds": metrics.get(("groupscope_lag_seconds", labels)),
            "partitions": {
                int(dict(key)["partition"]): value
                for (name, key), value in metrics.items()
                if name == "groupscope_partition_lag"
                and dict(key).keys() >= {"group", "topic", "partition"}
                and (dict(key)["group"], dict(key)["topic"]) == (group, topic)
            },
        }
    return out


def kafkas_lag(broker: RealKafka, topic: str) -> dict[str, dict[int, int]]:
    """Per group and partition: ListOffsets(latest, read_committed) minus the offset
    ListConsumerGroupOffsets gives."""
    lso = end_offsets(broker, topic, committed=True)
    committed = admin_offsets(broker, list(GROUPS))
    return {
        group: {p: lso[p] - offset for (t, p), offset in offsets.items() if t == topic}
        for group, offsets in committed.items()
    }


def scraped_lag(
    running: Running, topic: str, expected: dict[str, dict[int, int]], behind: str
) -> dict:
    """The scrape once every group's per-partition lag is what Kafka says and the time
    lag of the group `behind` has grown above 0 (right after the exporter's first poll
    it is the age of a one-sample history, 0), or the last scrape, at the deadline."""

    def matches() -> dict | None:
        got = lag_samples(running, topic)
        same = all(got[g]["partitions"] == expected[g] for g in GROUPS)
        return got if same and (got[behind]["seconds"] or 0) > 0 else None

    try:
        return wait_for(matches, 60, "lag equal to Kafka's")
    except AssertionError:
        return lag_samples(running, topic)


def test_lag_is_the_last_stable_offset_minus_the_committed_offset(
    cluster: Cluster, tmp_path: Path
) -> None:
    """With a transaction open, the high watermark is OPEN records past the LSO on every
    partition; a read_committed group that has read all it may is not behind."""
    broker, topic = cluster.broker, cluster.topic
    lso = end_offsets(broker, topic, committed=True)
    high = end_offsets(broker, topic, committed=False)
    assert {p: high[p] - lso[p] for p in range(PARTITIONS)} == dict.fromkeys(
        range(PARTITIONS), OPEN
    )  # the open transaction
    expected = kafkas_lag(broker, topic)
    assert expected[READER] == dict.fromkeys(range(PARTITIONS), 0)
    assert expected[PARTIAL] == {p: lso[p] - o for p, o in PARTIAL_OFFSETS.items()}
    with exporter(
        tmp_path,
        *("--database-url", cluster.url, "--bootstrap-servers", broker.bootstrap_servers),
        *("--interval", "0.5s", "--per-partition"),
    ) as running:
        got = scraped_lag(running, topic, expected, behind=PARTIAL)
        for group in GROUPS:
            assert got[group]["partitions"] == expected[group], group
            assert got[group]["lag"] == sum(expected[group].values()), group
        assert got[READER]["seconds"] == 0.0  # caught up with all it may read
        assert got[PARTIAL]["seconds"] > 0.0

        cluster.open_transaction.commit_transaction(30)  # the LSO moves past its marker
        moved = kafkas_lag(broker, topic)
        assert moved[READER] == dict.fromkeys(range(PARTITIONS), OPEN + 1)
        got = scraped_lag(running, topic, moved, behind=READER)
        for group in GROUPS:
            assert got[group]["partitions"] == moved[group], group
            assert got[group]["lag"] == sum(moved[group].values()), group
        assert got[READER]["seconds"] > 0.0
