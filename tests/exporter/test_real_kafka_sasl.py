"""One exporter, two Apache Kafka 4.3.1 clusters with different client settings (issue #18).

`sasl` is this module's broker, whose only client listener is SASL_PLAINTEXT with
SASL/PLAIN (users `admin` and `groupscope`); `plain` is the session's broker,
PLAINTEXT. Each has a topic of three partitions and a group committed behind the log
end, by different amounts. `groupscope stream --once --kafka-config-file` reads the SASL
broker's `__consumer_offsets` as `groupscope` (the own source's SASL path, on the tests'
Spark session); the session broker's is read the same way without credentials. Then one
exporter polls both: the shared `--kafka-config security.protocol=PLAINTEXT` is every
cluster's, and `--cluster-kafka-config-file sasl=FILE` puts the SASL login on top for
`sasl` only. Applied the other way round, or to both, one of the clusters would refuse
the client, and its lag would be missing: both clusters' lag is that cluster's
ListOffsets(latest, read_committed) minus its ListConsumerGroupOffsets. The password
reaches neither the job's log nor the exporter's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.store.database import create_store_engine
from tests.exporter.test_outages import exporter
from tests.exporter.test_real_kafka_lag import Once, end_offsets, produce, run_once
from tests.fixtures.real_kafka import RealKafka, Settings, launch
from tests.job.real_job import admin_offsets, rows
from tests.job.test_real_kafka_clusters import checked_lag, mkdir, wait_for_lags

pytestmark = pytest.mark.real_kafka

PASSWORD = "gs-Pa55-4-sasl"  # groupscope's; must appear in no log
USERS = {"admin": "admin-Pa55", "groupscope": PASSWORD}
GROUP, PARTITIONS, OFFSETS_PARTITIONS = "ledger-sasl", 3, 3
RECORDS = {"sasl": 6, "plain": 8}  # records per partition
BEHIND = {"sasl": 2, "plain": 5}  # the group's commits, behind the log end


@dataclass
class Clusters:
    brokers: dict[str, RealKafka]
    topics: dict[str, str]
    url: str
    runs: dict[str, Once]
    committed: dict[str, dict[tuple[str, int], int]]  # the Admin API's, per cluster
    ends: dict[str, dict[int, int]]  # ListOffsets(latest, read_committed), per cluster
    client_file: Path  # groupscope's login on the SASL broker


@pytest.fixture(scope="module")
def clusters(
    real_kafka: RealKafka,
    tmp_path_factory: pytest.TempPathFactory,
    postgres_server,
    migrated_template: str,
    spark,
) -> Iterator[Clusters]:
    directory = tmp_path_factory.mktemp("sasl")
    sasl = launch(
        tmp_path_factory.mktemp("kafka-sasl"),
        Settings(offsets_partitions=OFFSETS_PARTITIONS, sasl_users=USERS),
    )
    brokers = {"sasl": sasl, "plain": real_kafka}
    name = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(name)
    client_file = directory / "sasl.properties"
    client_file.write_text(
        "# groupscope's login on the SASL cluster\n"
        + "".join(f"{k}={v}\n" for k, v in sasl.sasl_config("groupscope").items())
    )
    try:
        topics = {}
        for cluster, broker in brokers.items():
            topics[cluster] = broker.create_topic(partitions=PARTITIONS)
            produce(broker, topics[cluster], RECORDS[cluster], PARTITIONS)
            broker.commit(
                GROUP,
                {
                    (topics[cluster], p): RECORDS[cluster] - BEHIND[cluster]
                    for p in range(PARTITIONS)
                },
            )
        runs = {
            "sasl": run_once(
                sasl,
                url,
                mkdir(directory / "sasl"),
                *("--cluster", "sasl", "--kafka-config-file", str(client_file)),
                *("--offsets-partitions", str(OFFSETS_PARTITIONS)),
            ),
        }
        runs["plain"] = run_once(real_kafka, url, mkdir(directory / "plain"), "--cluster", "plain")
        yield Clusters(
            brokers,
            topics,
            url,
            runs,
            {c: admin_offsets(b, [GROUP])[GROUP] for c, b in brokers.items()},
            {c: end_offsets(b, topics[c], committed=True) for c, b in brokers.items()},
            client_file,
        )
    finally:
        postgres_server.drop_database(name)
        try:
            sasl.stop()
        finally:
            sasl.kill()


def test_the_own_source_reads_a_sasl_brokers_offsets(clusters: Clusters) -> None:
    run = clusters.runs["sasl"]
    assert run.code == 0, run.log[-3000:]
    assert PASSWORD not in run.log
    assert "'sasl.password': '***'" in run.log
    engine = create_store_engine(clusters.url)
    try:
        stored = rows(
            engine,
            "SELECT topic, partition, committed_offset FROM committed_offsets "
            "WHERE cluster = 'sasl' AND group_name = :g AND NOT deleted",
            g=GROUP,
        )
    finally:
        engine.dispose()
    assert {(t, p): o for t, p, o in stored} == clusters.committed["sasl"]


def test_one_exporter_polls_each_cluster_with_its_own_settings(
    clusters: Clusters, tmp_path: Path
) -> None:
    sasl, plain = clusters.brokers["sasl"], clusters.brokers["plain"]
    with exporter(
        tmp_path,
        *("--database-url", clusters.url, "--interval", "0.5s"),
        *("--cluster", "sasl", "--bootstrap-servers", sasl.bootstrap_servers),
        *("--cluster-bootstrap", f"plain={plain.bootstrap_servers}"),
        *("--kafka-config", "security.protocol=PLAINTEXT"),
        *("--cluster-kafka-config-file", f"sasl={clusters.client_file}"),
    ) as running:
        seen = wait_for_lags(running, GROUP, clusters.topics)
        log = running.log.read_text()
    for cluster, committed in clusters.committed.items():
        labels = (("cluster", cluster), ("group", GROUP), ("topic", clusters.topics[cluster]))
        lag = checked_lag(seen, cluster, labels, committed, clusters.ends[cluster])
        assert lag == BEHIND[cluster] * PARTITIONS
    assert PASSWORD not in log
    assert "lag of cluster sasl from" in log and "'sasl.password': '***'" in log
