"""Two Apache Kafka 4.3.1 clusters, one history store, one exporter (issue #18).

Both clusters have a topic of three partitions and a consumer group on it, of the same
names, with different members (one on east, two on west), records and committed
offsets; Kafka puts the group in the same partition of each cluster's
`__consumer_offsets`. East is the session's broker, west one of this module's.
`groupscope stream --once --cluster NAME` reads each cluster into one database (in this
process, on the tests' Spark session). The store keeps them apart (each cluster's
offsets are its own Admin API's, its generations its own members'), `postmortem`
answers for the cluster it is given and refuses to guess, and one exporter polling both
clusters publishes each group's offsets and lag with its cluster label, each equal to
that cluster's ListOffsets minus its ListConsumerGroupOffsets.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.cli import main
from services.store.database import create_store_engine
from tests.exporter.test_outages import Running, exporter, wait_for
from tests.exporter.test_real_kafka_lag import Once, end_offsets, run_once
from tests.fixtures.real_kafka import RealKafka, Settings, launch, retry_while_coordinator_pending
from tests.job.real_job import admin_offsets, rows

pytestmark = pytest.mark.real_kafka

GROUP, TOPIC, PARTITIONS = "billing-twice", "orders-twice", 3
RECORDS = {"east": 4, "west": 9}  # records per partition
MEMBERS = {"east": 1, "west": 2}
# What each member commits: partition -> offset, below the log end so that lag shows.
BEHIND = {"east": 1, "west": 3}


@dataclass
class Clusters:
    brokers: dict[str, RealKafka]
    url: str
    runs: dict[str, Once]
    committed: dict[str, dict[tuple[str, int], int]]  # the Admin API's, per cluster
    ends: dict[str, dict[int, int]]  # ListOffsets(latest, read_committed), per cluster
    directory: Path


def produce(broker: RealKafka, per_partition: int) -> None:
    from confluent_kafka import Producer

    producer = Producer(broker.client_config(**{"linger.ms": 0}))
    for partition in range(PARTITIONS):
        for i in range(per_partition):
            producer.produce(TOPIC, f"r{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def join_commit_leave(broker: RealKafka, members: int, behind: int) -> None:
    """`members` classic consumers join `billing` one after the other (a rebalance per
    join), each commits its partitions `behind` the log end, and all close (the group
    is left empty): three or more generations, every one with the members that held it."""
    from confluent_kafka import Consumer, TopicPartition

    consumers = []
    try:
        for _ in range(members):
            consumer = Consumer(
                broker.client_config(
                    **{
                        "group.id": GROUP,
                        "enable.auto.commit": False,
                        "partition.assignment.strategy": "range",
                        "session.timeout.ms": 6000,
                        "log_level": 3,
                    }
                )
            )
            consumer.subscribe([TOPIC])
            consumers.append(consumer)

            def stable() -> bool:
                for c in consumers:
                    c.poll(0.1)
                held = [tp.partition for c in consumers for tp in c.assignment()]
                return sorted(held) == list(range(PARTITIONS)) and all(
                    c.assignment() for c in consumers
                )

            wait_for(stable, 60, f"{len(consumers)} members holding every partition")
        ends = end_offsets(broker, TOPIC, committed=True)
        for consumer in consumers:
            offsets = [
                TopicPartition(TOPIC, tp.partition, ends[tp.partition] - behind)
                for tp in consumer.assignment()
            ]
            retry_while_coordinator_pending(
                lambda c=consumer, o=offsets: c.commit(offsets=o, asynchronous=False)
            )
    finally:
        for consumer in consumers:
            consumer.close()


def wait_for_lags(running: Running, group: str, topics: dict[str, str]) -> dict:
    """The first scrape (as `metrics`) with the lag of `group` on every cluster's topic
    (`topics`: cluster -> topic), each lag also under its cluster's name."""

    def lags() -> dict | None:
        metrics = running.metrics()
        found = {
            c: metrics.get(("groupscope_lag_sum", (("cluster", c), ("group", group), ("topic", t))))
            for c, t in topics.items()
        }
        return {"metrics": metrics, **found} if None not in found.values() else None

    return wait_for(lags, 60, "lag of every cluster")


def checked_lag(
    seen: dict,
    cluster: str,
    labels: tuple[tuple[str, str], ...],
    committed: dict[tuple[str, int], int],
    ends: dict[int, int],
) -> float:
    """The lag `seen` on `cluster`, once its committed offsets are Kafka's (`committed`,
    ListConsumerGroupOffsets) and its lag is `ends` (ListOffsets) minus them."""
    assert seen["metrics"][("groupscope_committed_offset_sum", labels)] == sum(committed.values())
    assert seen[cluster] == sum(ends[p] - o for (_, p), o in committed.items())
    return seen[cluster]


def mkdir(path: Path) -> Path:
    path.mkdir()
    return path


@pytest.fixture(scope="module")
def clusters(
    real_kafka: RealKafka,
    tmp_path_factory: pytest.TempPathFactory,
    postgres_server,
    migrated_template: str,
    spark,
) -> Iterator[Clusters]:
    west = launch(tmp_path_factory.mktemp("kafka-west"), Settings())
    brokers = {"east": real_kafka, "west": west}
    name = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(name)
    directory = tmp_path_factory.mktemp("clusters")
    try:
        for cluster, broker in brokers.items():
            broker.create_topic(TOPIC, PARTITIONS)
            produce(broker, RECORDS[cluster])
            join_commit_leave(broker, MEMBERS[cluster], BEHIND[cluster])
        runs = {
            cluster: run_once(broker, url, mkdir(directory / cluster), "--cluster", cluster)
            for cluster, broker in brokers.items()
        }
        yield Clusters(
            brokers,
            url,
            runs,
            {c: admin_offsets(b, [GROUP])[GROUP] for c, b in brokers.items()},
            {c: end_offsets(b, TOPIC, committed=True) for c, b in brokers.items()},
            directory,
        )
    finally:
        postgres_server.drop_database(name)
        try:
            west.stop()
        finally:
            west.kill()


def test_the_store_keeps_each_clusters_group_apart(clusters: Clusters) -> None:
    for run in clusters.runs.values():
        assert run.code == 0, run.log[-3000:]
    engine = create_store_engine(clusters.url)
    try:
        groups = rows(engine, "SELECT cluster, name FROM groups WHERE name = :g", g=GROUP)
        assert sorted(map(tuple, groups)) == [("east", GROUP), ("west", GROUP)]
        for cluster in clusters.brokers:
            stored = rows(
                engine,
                "SELECT topic, partition, committed_offset FROM committed_offsets "
                "WHERE cluster = :c AND group_name = :g AND NOT deleted",
                c=cluster,
                g=GROUP,
            )
            assert {(t, p): o for t, p, o in stored} == clusters.committed[cluster]
            members = rows(
                engine,
                "SELECT max(member_count) FROM generations WHERE cluster = :c AND group_name = :g",
                c=cluster,
                g=GROUP,
            )
            assert members == [(MEMBERS[cluster],)]
            status = rows(
                engine,
                "SELECT source, caught_up FROM pipeline_status WHERE cluster = :c",
                c=cluster,
            )
            assert status == [
                (f"kafka:{clusters.brokers[cluster].bootstrap_servers}/__consumer_offsets", True)
            ]
        # Different offsets on each cluster: nothing could pass by mixing them up.
        assert clusters.committed["east"] != clusters.committed["west"]
    finally:
        engine.dispose()


def test_postmortem_answers_for_the_cluster_it_is_given(
    clusters: Clusters, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["postmortem", GROUP, "--database-url", clusters.url]) == 2
    err = capsys.readouterr().err
    assert err == (
        "groupscope postmortem: the store holds 2 clusters (east, west): give --cluster NAME\n"
    )
    for cluster in clusters.brokers:
        code = main(
            ["postmortem", GROUP, "--cluster", cluster, "--json", "--database-url", clusters.url]
        )
        assert code == 0
        timeline = json.loads(capsys.readouterr().out)
        most = max(len(g["members"]) for g in timeline["generations"])
        assert most == MEMBERS[cluster]


def test_one_exporter_publishes_both_clusters_with_their_own_lag(
    clusters: Clusters, tmp_path: Path
) -> None:
    east, west = clusters.brokers["east"], clusters.brokers["west"]
    with exporter(
        tmp_path,
        *("--database-url", clusters.url, "--interval", "0.5s"),
        *("--cluster", "east", "--bootstrap-servers", east.bootstrap_servers),
        *("--cluster-bootstrap", f"west={west.bootstrap_servers}"),
    ) as running:
        seen = wait_for_lags(running, GROUP, dict.fromkeys(clusters.brokers, TOPIC))
        metrics = seen["metrics"]
        for cluster in clusters.brokers:
            labels = (("cluster", cluster), ("group", GROUP), ("topic", TOPIC))
            lag = checked_lag(
                seen, cluster, labels, clusters.committed[cluster], clusters.ends[cluster]
            )
            assert lag == BEHIND[cluster] * PARTITIONS
            assert metrics[("groupscope_pipeline_caught_up", (("cluster", cluster),))] == 1
            group_labels = (("cluster", cluster), ("group", GROUP))
            assert metrics[("groupscope_group_generation", group_labels)] >= 2
        names = {name for name, _ in metrics}
        assert not any(
            "source" in dict(labels)
            for name, labels in metrics
            if name != "groupscope_pipeline_info"
        ), names
