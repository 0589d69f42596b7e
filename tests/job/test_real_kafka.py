"""The streaming job against Apache Kafka 4.3.1 itself: real groups, real `__consumer_offsets`.

Consumer groups of confluent-kafka clients (classic `range`, classic
`cooperative-sticky`, and a KIP-848 group, `group.protocol=consumer`) join one topic,
rebalance, consume and commit; a transactional producer commits a group's offsets with
`send_offsets_to_transaction`, aborting some transactions. Then `groupscope stream
--once` reads the broker's own `__consumer_offsets` (written by Kafka's group and
transaction coordinators, control records and all) into PostgreSQL, and the store is
compared with what Kafka's Admin API and the clients themselves say. Then one more
committed and one more aborted transaction, and the job runs again from its checkpoint:
it resumes there, reading only the new records.

Every test runs for both Kafka sources: groupscope's own (`kafka`) and Spark's official
connector (`spark-kafka`, resolved as `make kafka` caches it). The groups and
transactions are made once; each source reads them into a database and a checkpoint of
its own, both first runs before the last transactions and both second runs after them.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine

from services.exporter.snapshot import read_snapshot
from services.store.clusters import DEFAULT_CLUSTER
from services.store.database import create_store_engine
from tests.fixtures.real_kafka import RealKafka, retry_while_coordinator_pending
from tests.job.real_groups import Assigned, ConsumerGroup, await_all_stable
from tests.job.real_job import (
    admin_offsets,
    on,
    records_read,
    rows,
    run_job_once,
    spark_kafka_connector,
    stored_generations,
)

pytestmark = pytest.mark.real_kafka

PARTITIONS = 6
PER_PARTITION = 40
CLIENTS = {
    "range": {"partition.assignment.strategy": "range"},
    "cooperative": {"partition.assignment.strategy": "cooperative-sticky"},
    "consumer": {"group.protocol": "consumer"},  # KIP-848: the broker assigns
}
# (offset committed for every partition, whether the transaction commits); the last
# one of each run aborts, so that an aborted commit read by mistake would be the latest.
FIRST = [(10, True), (20, True), (25, False), (30, True), (35, False)]
AFTER_RESTART = [(40, True), (45, False)]  # read by the second run, from the checkpoint
TRANSACTIONS = FIRST + AFTER_RESTART
SOURCES = ["kafka", "spark-kafka"]


@dataclass
class Observed:
    """One group as its clients saw it when the job ran."""

    final: dict[str, tuple[int, frozenset[int]]]  # member id -> (generation, partitions)
    seen: list[Assigned]  # every assignment callback, from the members' logs
    commits: int


@dataclass
class Run:
    engine: Engine
    topic: str
    groups: dict[str, Observed]  # by group name
    txn_group: str
    admin_offsets: dict[str, dict[tuple[str, int], int]]
    job: subprocess.CompletedProcess
    resumed: subprocess.CompletedProcess  # the second run, from the first one's checkpoint


def produce(broker: RealKafka, topic: str) -> dict[int, int]:
    """PER_PARTITION records into every partition; returns the high watermarks."""
    from confluent_kafka import Producer

    producer = Producer(broker.client_config())
    for i in range(PER_PARTITION * PARTITIONS):
        producer.produce(topic, f"m{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return dict.fromkeys(range(PARTITIONS), PER_PARTITION)


def transactional_commits(
    broker: RealKafka, group: str, topic: str, transactions: list[tuple[int, bool]]
) -> None:
    """`transactions`, each committing `group`'s offsets through the transaction
    coordinator (TxnOffsetCommit) with a produced record beside them."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    consumer = Consumer(broker.client_config(**{"group.id": group, "log_level": 3}))
    producer = Producer(broker.client_config(**{"transactional.id": f"txn-{group}"}))
    try:
        producer.init_transactions(30)
        for offset, commit in transactions:
            producer.begin_transaction()
            producer.produce(topic, f"out-{offset}".encode(), partition=0)
            offsets = [TopicPartition(topic, p, offset) for p in range(PARTITIONS)]
            retry_while_coordinator_pending(
                lambda offsets=offsets: producer.send_offsets_to_transaction(
                    offsets, consumer.consumer_group_metadata(), 30
                )
            )
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def runs(
    real_kafka: RealKafka, postgres_server, migrated_template: str, tmp_path_factory
) -> Iterator[dict[str, Run | None]]:
    """One workload, read by each source: source -> its Run, None where the source
    cannot run here (Spark's connector not cached: its tests skip, or fail where Kafka
    is required, as `spark_kafka_connector` says)."""
    sources = [source for source in SOURCES if available(source)]
    suffix = uuid.uuid4().hex[:8]
    topic = real_kafka.create_topic(f"orders-{suffix}", PARTITIONS)
    logs = tmp_path_factory.mktemp("members")
    groups = {
        kind: ConsumerGroup(
            real_kafka, f"{kind}-{suffix}", topic, PARTITIONS, config, logs=logs, size=1
        )
        for kind, config in CLIENTS.items()
    }
    databases = {
        source: postgres_server.create_database(template=migrated_template) for source in sources
    }
    urls = {source: postgres_server.url(name) for source, name in databases.items()}
    engines = {source: create_store_engine(url) for source, url in urls.items()}
    try:
        # Stable before there is anything to read: one member with every partition, and
        # a rebalance: the second takes some from the first. The groups' rebalances
        # overlap in time.
        await_all_stable(groups.values())
        for group in groups.values():
            group.join()
        await_all_stable(groups.values())
        highs = produce(real_kafka, topic)
        for group in groups.values():
            group.consume_and_commit(highs)
        await_all_stable(groups.values())
        txn_group = f"txn-{suffix}"
        transactional_commits(real_kafka, txn_group, topic, FIRST)
        names = [g.group for g in groups.values()] + [txn_group]
        before = {g.group: (g.final(), len(g.seen())) for g in groups.values()}
        checkpoints = {s: tmp_path_factory.mktemp(f"job-{s}") / "checkpoint" for s in sources}
        members = list(groups.values())
        jobs = {s: run_job_once(real_kafka, urls[s], checkpoints[s], members, s) for s in sources}
        transactional_commits(real_kafka, txn_group, topic, AFTER_RESTART)
        offsets = admin_offsets(real_kafka, names)
        resumed = {
            s: run_job_once(real_kafka, urls[s], checkpoints[s], members, s) for s in sources
        }
        for group in groups.values():  # nobody rebalanced while the jobs ran
            assert (group.final(), len(group.seen())) == before[group.group]
        observed = {g.group: Observed(g.final(), g.seen(), g.commits) for g in groups.values()}
        yield {
            source: (
                Run(
                    engines[source],
                    topic,
                    observed,
                    txn_group,
                    offsets,
                    jobs[source],
                    resumed[source],
                )
                if source in sources
                else None
            )
            for source in SOURCES
        }
    finally:
        for group in groups.values():
            group.close()
        for source, engine in engines.items():
            engine.dispose()
            postgres_server.drop_database(databases[source])


def available(source: str) -> bool:
    """Whether `source` can run here: Spark's connector cached, for `spark-kafka`."""
    try:
        if source == "spark-kafka":
            spark_kafka_connector()
    except (pytest.skip.Exception, pytest.fail.Exception):
        return False
    return True


@pytest.fixture(scope="module", params=SOURCES)
def run(request: pytest.FixtureRequest, runs: dict[str, Run | None]) -> Run:
    found = runs[request.param]
    if found is None:
        spark_kafka_connector()  # skips, or fails where Kafka is required
    assert found is not None
    return found


def test_the_job_reads_kafkas_consumer_offsets_without_a_decode_failure(run: Run) -> None:
    for job in (run.job, run.resumed):
        assert job.returncode == 0, job.stderr[-3000:]
        assert "Traceback" not in job.stderr
    failures = rows(
        run.engine, "SELECT source_partition, source_offset, reason FROM decode_failures"
    )
    assert failures == []
    types = dict(rows(run.engine, "SELECT name, type FROM groups"))
    for name in run.groups:
        assert types[name] == ("consumer" if name.startswith("consumer-") else "classic")


def test_committed_offsets_equal_the_admin_apis(run: Run) -> None:
    sql = (
        "SELECT topic, partition, committed_offset FROM committed_offsets "
        "WHERE group_name = :group AND NOT deleted"
    )
    for group, expected in run.admin_offsets.items():
        stored = {(t, p): o for t, p, o in rows(run.engine, sql, group=group)}
        assert stored == expected, group
    for group in run.groups:  # every group consumed everything
        assert set(run.admin_offsets[group].values()) == {PER_PARTITION}
    assert set(run.admin_offsets[run.txn_group].values()) == {40}


def test_a_restarted_job_resumes_from_its_checkpoint(run: Run) -> None:
    """The second run reads the committed transaction's offsets written after the first
    (one per partition) and nothing before them: the aborted one is filtered out, and
    a source that started over would read the first run's records again."""
    first = records_read(run.job)
    committed = sum(1 for _, commit in AFTER_RESTART if commit) * PARTITIONS
    assert first > 2 * PARTITIONS * len(FIRST)
    assert records_read(run.resumed) == committed


def latest(run: Run, kind: str) -> tuple[dict, dict]:
    """A group's latest stored generation and what its members hold, both as member id
    -> (topic, partition)s."""
    group = next(g for g in run.groups if g.startswith(f"{kind}-"))
    observed = run.groups[group]
    (generation,) = {g for g, _ in observed.final.values()}  # one generation for all
    assert len(observed.final) == 2 and generation >= 2  # the second member joined
    stored = stored_generations(run.engine, group)
    assert max(stored) == generation, group
    held = {member: on(run.topic, parts) for member, (_, parts) in observed.final.items()}
    return stored[generation], held


@pytest.mark.parametrize("kind", ["range", "cooperative", "consumer"])
def test_the_latest_generation_is_what_the_members_hold(run: Run, kind: str) -> None:
    """Topic names included: for the KIP-848 group, Kafka 4.3 writes its assignments
    with topic ids and no record naming them, so the job names them from the cluster."""
    stored, held = latest(run, kind)
    assert stored == held


def test_a_kip848_groups_baseline_is_computed_on_its_topics(run: Run) -> None:
    """The rebalance into the KIP-848 group's latest epoch (the second member joined):
    Kafka's uniform assignor moved the fewest partitions it could, and the `uniform`
    baseline says so. Computed on topic ids, the baseline saw the subscribed topic with
    no partitions and counted no moves at all."""
    group = next(g for g in run.groups if g.startswith("consumer-"))
    (generation,) = {g for g, _ in run.groups[group].final.values()}
    ((moved, baseline, minimum, assignor),) = rows(
        run.engine,
        "SELECT partitions_moved, baseline_moves, minimum_moves, baseline_assignor "
        "FROM rebalances WHERE group_name = :group AND to_generation = :generation",
        group=group,
        generation=generation,
    )
    assert assignor == "uniform"
    assert moved > 0
    assert baseline == minimum == moved


def test_the_topics_current_owners_include_the_kip848_groups_members(run: Run) -> None:
    """`partition_ownership` (behind `groupscope owner TOPIC`) finds the KIP-848 group by
    its topic's name, each partition with the member that holds it."""
    group = next(g for g in run.groups if g.startswith("consumer-"))
    owned = rows(
        run.engine,
        "SELECT partition, member_id FROM partition_ownership "
        "WHERE topic = :topic AND group_name = :group AND valid_until IS NULL",
        topic=run.topic,
        group=group,
    )
    held = {p: m for m, (_, parts) in run.groups[group].final.items() for p in parts}
    assert dict(owned) == held and len(owned) == PARTITIONS


def test_every_assignment_a_classic_member_was_given_is_stored(run: Run) -> None:
    """Each eager or cooperative assignment callback, at the generation it came in."""
    for group, observed in run.groups.items():
        if group.startswith("consumer-"):
            continue
        stored = stored_generations(run.engine, group)
        assert observed.seen
        for assigned in observed.seen:
            stored_member = stored[assigned.generation][assigned.member_id]
            assert stored_member == on(run.topic, assigned.partitions), (
                group,
                assigned,
            )


@pytest.mark.parametrize("kind", ["range", "cooperative", "consumer"])
def test_no_generation_is_stored_that_no_member_saw_but_the_empty_first(
    run: Run, kind: str
) -> None:
    """Each stored generation (KIP-848: epoch) is one in which some member's log has an
    assignment callback, and the reverse, but a classic group's generation 0: written,
    empty, when the first member's JoinGroup creates the group (docs/testing.md). No
    member left, so there is no final empty generation. A KIP-848 epoch in which no
    member gained a partition (say, the first, before the member's topic had a
    target) calls no member back: such an epoch may be unseen, and no other."""
    group = next(g for g in run.groups if g.startswith(f"{kind}-"))
    stored = stored_generations(run.engine, group)
    seen = {a.generation for a in run.groups[group].seen}
    unseen = {g: members for g, members in stored.items() if g not in seen}
    assert seen <= set(stored)
    if kind != "consumer":
        assert unseen == {0: {}}
        return
    epochs = sorted(stored)
    for epoch in unseen:
        before = stored[epochs[epochs.index(epoch) - 1]] if epochs.index(epoch) else {}
        gained = {
            m: parts - before.get(m, frozenset())
            for m, parts in stored[epoch].items()
            if parts - before.get(m, frozenset())
        }
        assert gained == {}, (epoch, gained)


def test_every_commit_is_counted_once_and_aborted_ones_never(run: Run) -> None:
    counts = dict(rows(run.engine, "SELECT name, commits_total FROM groups"))
    for group, observed in run.groups.items():
        assert observed.commits >= PARTITIONS
        assert counts[group] == observed.commits, group
    committed_transactions = sum(1 for _, commit in TRANSACTIONS if commit)
    assert counts[run.txn_group] == committed_transactions * PARTITIONS


def test_aborted_transactional_offsets_never_appear(run: Run) -> None:
    aborted = {offset for offset, commit in TRANSACTIONS if not commit}
    history = rows(
        run.engine,
        "SELECT committed_offset FROM offset_history_entries WHERE group_name = :group",
        group=run.txn_group,
    )
    current = rows(
        run.engine,
        "SELECT committed_offset FROM committed_offsets WHERE group_name = :group",
        group=run.txn_group,
    )
    assert history and current
    assert not aborted & {o for (o,) in history + current}
    # the exporter's lag is the log end minus the offsets it reads from the store
    offsets = read_snapshot(run.engine, 300.0, datetime.now(UTC)).offsets
    group = offsets.groups.index((DEFAULT_CLUSTER, run.txn_group))
    mine = offsets.pair_group[offsets.pair] == group
    lag_base = set(offsets.committed[mine].tolist())
    assert lag_base and not aborted & lag_base
    assert lag_base == {max(o for o, commit in TRANSACTIONS if commit)}
