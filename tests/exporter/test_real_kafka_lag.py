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
ListOffsets(latest, read_committed). Its time lag is checked against the definition
(docs/architecture.md, "Lag"): the age of the record at the committed offset, whose
append time Kafka gives (a topic with `message.timestamp.type=LogAppendTime`).
Last, a real group rebalances while its commits pause and records are produced, and the
exporter's rebalance lag (services/exporter/rebalancelag.py) is the lag Kafka had then.
"""

from __future__ import annotations

import json
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
# The time lag group, on a topic of its own: in partition 6 of both 7 and 50, so that the
# coordinator-partition check names it in neither run. It commits offset CLOCKED_AT, the
# log end, before the exporter starts; the record at that offset is written later.
CLOCKED, CLOCKED_AT = "clocked-321", 3
# The rebalance lag group, on a topic of its own, in partition 5 of both 7 and 50.
REBALANCED, REBALANCED_RECORDS = "rebalanced-10", 6  # records per partition while paused
INTERVAL_S = 0.5  # the exporter's --interval
SETTLE_S = 3.0  # history before the record at CLOCKED_AT; its age when checked
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
    clock: str  # CLOCKED's topic: one partition, LogAppendTime
    rebalanced: str  # REBALANCED's topic: two partitions, committed at 0 before any record
    checkpoint: Path  # the clean run's: a later run goes on from where it stopped


def end_offsets(
    broker: RealKafka, topic: str, committed: bool, partitions: int = PARTITIONS
) -> dict[int, int]:
    """ListOffsets(latest) of every partition: the last stable offset at isolation level
    read_committed, the high watermark at read_uncommitted."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient(broker.client_config())
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
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


def produce(broker: RealKafka, topic: str, count: int, partitions: int = 1) -> None:
    """`count` records into each of the first `partitions` partitions, each acknowledged
    before this returns."""
    from confluent_kafka import Producer

    producer = Producer(broker.client_config(**{"linger.ms": 0}))
    for p in range(partitions):
        for i in range(count):
            producer.produce(topic, f"c{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def append_time(broker: RealKafka, topic: str, offset: int) -> float:
    """The broker's append time of the record at `offset` of partition 0, read back with
    a consumer (Unix seconds; Kafka keeps milliseconds)."""
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition

    consumer = Consumer(broker.client_config(**{"group.id": "clock-reader", "log_level": 3}))
    try:
        consumer.assign([TopicPartition(topic, 0, offset)])
        deadline = time.monotonic() + 30
        while (message := consumer.poll(0.5)) is None or message.error():
            assert time.monotonic() < deadline, f"no record at {topic}/0@{offset}"
        assert message.offset() == offset
        kind, ms = message.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME
        return ms / 1000
    finally:
        consumer.close()


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
        clock = broker.create_topic("clock", 1, {"message.timestamp.type": "LogAppendTime"})
        produce(broker, clock, CLOCKED_AT)
        broker.commit(CLOCKED, {(clock, 0): CLOCKED_AT})
        rebalanced = broker.create_topic("rebalanced", 2)
        broker.commit(REBALANCED, {(rebalanced, 0): 0, (rebalanced, 1): 0})
        urls = [postgres_server.url(name) for name in names]
        checkpoint = tmp_path_factory.mktemp("clean")
        clean = run_once(broker, urls[0], checkpoint, *PARTITION_COUNT)
        default = run_once(broker, urls[1], tmp_path_factory.mktemp("default"))
        yield Cluster(
            broker, topic, urls[0], clean, default, producer, clock, rebalanced, checkpoint
        )
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
        labels = (("cluster", "default"), ("group", group), ("topic", topic))
        out[group] = {
            "lag": metrics.get(("groupscope_lag_sum", labels)),
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


# -- time lag against the record's own append time ----------------------------------------


def clocked(running: Running, topic: str) -> tuple[float, float | None, float | None]:
    """(last refresh, CLOCKED's partition lag, its time lag) from one consistent refresh:
    two scrapes in a row with the same refresh time and values (the refresh time is set
    just before the refresh's exposition replaces the previous one)."""
    key = (("cluster", "default"), ("group", CLOCKED), ("partition", "0"), ("topic", topic))
    pair = (("cluster", "default"), ("group", CLOCKED), ("topic", topic))
    previous = None
    while True:
        metrics = running.metrics()
        sample = (
            metrics.get(("groupscope_exporter_last_refresh_timestamp_seconds", ()), 0.0),
            metrics.get(("groupscope_partition_lag", key)),
            metrics.get(("groupscope_partition_lag_seconds", key)),
        )
        assert metrics.get(("groupscope_lag_seconds", pair)) == sample[2]
        if sample == previous:
            return sample
        previous = sample


def test_time_lag_is_the_age_of_the_record_at_the_committed_offset(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Kafka's append time `a` of the record at CLOCKED's committed offset c against the
    time lag `s` the exporter exposes from a refresh at `r`. By definition the time lag
    is r minus the interpolated append time of the record at c, so `r - s` is that
    estimate. The log ends at c when the exporter starts, and the one record at c is
    appended SETTLE_S later: c is the lower end o1 of the crossing's interval [o1, o2),
    so the estimate is t1, the last poll that saw the log end at c. Polls are timed at
    their start and fetch after it, so t1 < a; the last refresh the test saw before the
    produce (l0) is such a poll, so l0 <= t1. The estimate's error a - t1 is then within
    the polls around the crossing (docs/architecture.md: at most the poll interval at
    the crossing), bounded by the test's own clock: below the time from l0 to the
    first scrape that shows the record as lag. Tolerance 3 ms besides: Kafka keeps
    milliseconds, and the exporter rounds seconds to 3 decimals."""
    broker, topic = cluster.broker, cluster.clock
    slack = 0.003
    with exporter(
        tmp_path,
        *("--database-url", cluster.url, "--bootstrap-servers", broker.bootstrap_servers),
        *("--interval", f"{INTERVAL_S}s", "--per-partition"),
    ) as running:
        started, lag, seconds = wait_for(
            lambda: (s := clocked(running, topic))[1] is not None and s, 60, "the first poll"
        )
        assert (lag, seconds) == (0, 0.0)  # committed at the log end: caught up
        time.sleep(SETTLE_S)  # the history grows older than the record will be
        l0, lag, seconds = clocked(running, topic)
        assert (lag, seconds) == (0, 0.0) and l0 > started
        produce(broker, topic, 1)  # the record at CLOCKED_AT
        seen = wait_for(lambda: clocked(running, topic)[1] == 1 and time.time(), 60, "lag 1")
        a = append_time(broker, topic, CLOCKED_AT)
        assert l0 < a < seen
        time.sleep(1.0)  # older: the time lag must have grown with the clock
        samples = [clocked(running, topic)]
        time.sleep(1.0)
        samples.append(clocked(running, topic))
    for r, lag, s in samples:
        assert lag == 1 and s is not None
        estimate = r - s  # the append time the exporter interpolated
        assert l0 - slack <= estimate <= a + slack, (l0, estimate, a)
        # the time lag is the record's age within the tolerance, which is under a second
        # or two (a few polls) and far below SETTLE_S, the history's age at the crossing
        assert 0 <= s - (r - a) <= (a - l0) + slack, (s, r - a)
    assert seen - l0 < SETTLE_S
    (r1, _, s1), (r2, _, s2) = samples
    assert r2 - r1 >= 1.0 and s2 - s1 == pytest.approx(r2 - r1, abs=slack)


# -- how far a group fell behind during a rebalance -----------------------------------------

REBALANCE_LAG = (
    "group_last_rebalance_lag_before_records",
    "group_last_rebalance_lag_peak_records",
    "group_last_rebalance_time_lag_peak_seconds",
)


def rebalance_metrics(running: Running, topic: str) -> dict[str, float | None]:
    """REBALANCED's lag sum, time lag, commit gap and rebalance lag gauges, as scraped."""
    metrics = running.metrics()
    group = (("cluster", "default"), ("group", REBALANCED))
    pair = (*group, ("topic", topic))
    out = {name: metrics.get(("groupscope_" + name, group)) for name in REBALANCE_LAG}
    out["lag"] = metrics.get(("groupscope_lag_sum", pair))
    out["seconds"] = metrics.get(("groupscope_lag_seconds", pair))
    out["gap"] = metrics.get(("groupscope_group_last_rebalance_commit_gap_seconds", group))
    out["refreshed"] = metrics.get(("groupscope_exporter_last_refresh_timestamp_seconds", ()))
    return out


def member(broker: RealKafka, topic: str):
    """A consumer of REBALANCED (eager `range`), subscribed; it commits only by hand."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        broker.client_config(
            **{
                "group.id": REBALANCED,
                "enable.auto.commit": False,
                "partition.assignment.strategy": "range",
                "log_level": 3,
            }
        )
    )
    consumer.subscribe([topic])
    return consumer


def poll_until(consumers: list, sizes: list[int]) -> None:
    """Poll every consumer until each holds as many partitions as `sizes` says (joining
    and rebalancing happen in poll)."""
    deadline = time.monotonic() + 60
    while [len(c.assignment()) for c in consumers] != sizes:
        assert time.monotonic() < deadline, f"no assignment of {sizes}"
        for c in consumers:
            c.poll(0.1)


def commit_at(consumer, topic: str, offset: int) -> None:
    from confluent_kafka import TopicPartition

    offsets = [TopicPartition(topic, tp.partition, offset) for tp in consumer.assignment()]
    retry_while_coordinator_pending(lambda: consumer.commit(offsets=offsets, asynchronous=False))


def kafkas_lag_sum(broker: RealKafka, topic: str) -> int:
    """ListOffsets(latest, read_committed) minus ListConsumerGroupOffsets, summed."""
    ends = end_offsets(broker, topic, committed=True, partitions=2)
    committed = admin_offsets(broker, [REBALANCED])[REBALANCED]
    assert {p for t, p in committed if t == topic} == set(ends)
    return sum(ends[p] - o for (t, p), o in committed.items() if t == topic)


def test_rebalance_lag_is_how_far_the_group_fell_behind_while_its_commits_paused(
    cluster: Cluster, tmp_path: Path
) -> None:
    """REBALANCED's one member commits (at the offsets the store already has, so that the
    exporter's lag is Kafka's throughout), then pauses while REBALANCED_RECORDS records
    per partition are produced; a second member joins (an eager rebalance moves one
    partition) and both commit at the log end. The job stores the rebalance and its
    commit gap G (from the first member's commit to the second's), and the exporter,
    which sampled the group all along, publishes the lag before (Kafka's, 0) and the
    peak (Kafka's lag while paused: every record produced); the peak time lag is at
    least the time lag it showed while paused, and at most the time since a refresh
    that saw the log still empty. A second exporter, started after the rebalance, holds
    no samples of it and publishes none of the three."""
    broker, topic = cluster.broker, cluster.rebalanced
    flags = (
        *("--database-url", cluster.url, "--bootstrap-servers", broker.bootstrap_servers),
        *("--interval", f"{INTERVAL_S}s"),
    )
    members = [member(broker, topic)]
    try:
        with exporter(tmp_path, *flags) as running:
            seen = wait_for(
                lambda: (m := rebalance_metrics(running, topic))["lag"] == 0 and m, 60, "lag 0"
            )
            assert all(seen[name] is None for name in REBALANCE_LAG)  # never rebalanced
            # The window starts at T - G: before the first member's commit by as long as
            # the second member takes from the rebalance (T) to its first commit. The
            # exporter must hold a sample from before that.
            time.sleep(4 * INTERVAL_S)
            poll_until(members, [2])
            commit_at(members[0], topic, 0)  # the moved partition's last commit before
            before = kafkas_lag_sum(broker, topic)
            empty = rebalance_metrics(running, topic)  # a refresh that saw no record yet
            # every refresh whose poll sees the records then begins after the commit
            time.sleep(3 * INTERVAL_S)
            produce(broker, topic, REBALANCED_RECORDS, partitions=2)
            paused = wait_for(
                lambda: (
                    (m := rebalance_metrics(running, topic))["lag"] == 2 * REBALANCED_RECORDS
                    and (m["seconds"] or 0) > 0
                    and m
                ),
                60,
                "the lag while paused",
            )
            lag_paused = kafkas_lag_sum(broker, topic)
            members.append(member(broker, topic))
            poll_until(members, [1, 1])
            for m in members:  # resumed: both at the log end
                commit_at(m, topic, REBALANCED_RECORDS)
            assert kafkas_lag_sum(broker, topic) == 0
            job = run_once(broker, cluster.url, cluster.checkpoint, *PARTITION_COUNT)
            assert job.code == 0, job.log[-3000:]
            got = wait_for(
                lambda: (
                    (m := rebalance_metrics(running, topic))[REBALANCE_LAG[0]] is not None and m
                ),
                60,
                "the rebalance lag",
            )
            done = time.time()
            code, body = running.get(f"/status?group={REBALANCED}")
            assert code == 200, body
            assert json.loads(body)["last_rebalance_lag"] == {
                "before": got["group_last_rebalance_lag_before_records"],
                "peak": got["group_last_rebalance_lag_peak_records"],
                "peak_time_lag_seconds": got["group_last_rebalance_time_lag_peak_seconds"],
            }
        assert (before, lag_paused) == (0, 2 * REBALANCED_RECORDS)
        assert got["gap"] is not None and got["gap"] > 0
        assert got["group_last_rebalance_lag_before_records"] == before
        assert got["group_last_rebalance_lag_peak_records"] == lag_paused
        peak_seconds = got["group_last_rebalance_time_lag_peak_seconds"]
        assert paused["seconds"] <= peak_seconds <= done - empty["refreshed"]

        with exporter(tmp_path, *flags) as late:
            after = wait_for(
                lambda: (
                    (m := rebalance_metrics(late, topic))["lag"] == 0 and m["gap"] is not None and m
                ),
                60,
                "the late exporter's lag",
            )
            time.sleep(2 * INTERVAL_S)  # a few refreshes more: still nothing
            after = rebalance_metrics(late, topic)
        assert after["gap"] == got["gap"]
        assert all(after[name] is None for name in REBALANCE_LAG)
    finally:
        for m in members:
            m.close()
