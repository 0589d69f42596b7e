"""KIP-848 groups (`group.protocol=consumer`) of librdkafka clients on Apache Kafka 4.3.1,
with the broker's `uniform` and `range` assignors, through `groupscope stream --once`.
The module's broker sends KIP-848 heartbeats every second: a rebalance then takes a
second or two instead of several heartbeats of five (the module: 70 s, not 140 s).

Each group lives through members joining one by one, partitions added to a subscribed
topic (CreatePartitions: the coordinator bumps the group epoch itself; for the `uniform`
group subscribed by regex, a new topic its regex matches) and a member leaving. The
store is then compared with the broker's own account, `Admin.describeConsumerGroups`
from Kafka's Java client (group epoch, target assignment epoch, each member's epoch,
current and target assignment: confluent-kafka reports no epochs), with what each client
saw, and with ListConsumerGroupOffsets. Every rebalance must move exactly what the
group's own assignor as baseline moves: if not, our reconstruction of the group or our
assignor core is wrong.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from services.store.database import create_store_engine
from tests.fixtures.real_kafka import RealKafka, Settings, launch
from tests.job.java_members import Event
from tests.job.real_groups import Assigned, ConsumerGroup, await_all_stable
from tests.job.real_job import (
    admin_offsets,
    describe_groups,
    rows,
    run_job_once,
    stored_generations,
    stored_offsets,
)

pytestmark = pytest.mark.real_kafka

# Two topics per group: (name suffix, partitions at first, partitions after the growth).
TOPICS = {"a": (6, 8), "b": (3, 3)}
# group kind -> the broker's assignor; `regex` subscribes to `^kip848-regex-<suffix>-.*`
# and grows by a new matching topic (b) rather than by partitions.
KINDS = {"uniform": "uniform", "range": "range", "regex": "uniform"}
BASELINES = {"uniform": "uniform", "range": "server-range"}  # assignor -> baseline
MEMBERS = 3
PER_PARTITION = 10
IMAGE_SETTLE_S = 2.0
HEARTBEAT = {
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}


def partitions(kind: str, grown: bool) -> dict[str, int]:
    """A group's topic suffixes and their partitions, before or after the growth."""
    if kind == "regex":
        return {"a": TOPICS["a"][0]} | ({"b": TOPICS["b"][0]} if grown else {})
    return {t: counts[grown] for t, counts in TOPICS.items()}


@dataclass
class Kip848Group:
    name: str
    assignor: str
    topics: list[str]
    final: dict[str, tuple[int, frozenset[tuple[str, int]]]]  # member -> (epoch, held)
    seen: list[Assigned]  # every assignment callback, from the members' logs
    events: list[Event]  # every callback, from the members' logs


@dataclass
class Run:
    engine: Engine
    groups: dict[str, Kip848Group]  # by kind
    described: dict[str, dict[str, Any]]  # by group name
    offsets: dict[str, dict[tuple[str, int], int]]
    job: subprocess.CompletedProcess


def add_partitions(broker: RealKafka, topic: str, total: int) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient(broker.client_config())
    for future in admin.create_partitions([NewPartitions(topic, total)]).values():
        future.result(60)


def produce(broker: RealKafka, topics: dict[str, int]) -> dict[tuple[str, int], int]:
    """PER_PARTITION records into every partition; returns the high watermarks."""
    from confluent_kafka import Producer

    producer = Producer(broker.client_config())
    for topic, partitions in topics.items():
        for p in range(partitions):
            for i in range(PER_PARTITION):
                producer.produce(topic, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0
    return {(t, p): PER_PARTITION for t, n in topics.items() for p in range(n)}


def grow(broker: RealKafka, kind: str, prefix: str) -> None:
    """New partitions for a group by names, a new matching topic for the regex group."""
    for t, count in partitions(kind, grown=True).items():
        if t not in partitions(kind, grown=False):
            broker.create_topic(f"{prefix}-{t}", count)
        elif count != partitions(kind, grown=False)[t]:
            add_partitions(broker, f"{prefix}-{t}", count)


def live_through_rebalances(broker: RealKafka, suffix: str, logs: Path) -> dict[str, ConsumerGroup]:
    """Per kind, a group on topics of its own: members join one by one, it gains
    partitions, the last member leaves; stable after each step."""
    groups = {}
    topics_of = {
        kind: [
            broker.create_topic(f"kip848-{kind}-{suffix}-{t}", n)
            for t, n in partitions(kind, False).items()
        ]
        for kind in KINDS
    }
    # Every topic exists before any member joins, and some time passes after: the group
    # coordinator learns of a new topic from the broker's metadata images
    # (GroupCoordinatorService.onNewMetadataImage), not from the metadata cache that
    # create_topic waits on. Seen in CI runs without this: the range group's first
    # member joined on topics a and b, and the coordinator wrote a target epoch (2)
    # over topic a alone, then epoch 3 over both before the member reconciled epoch 2,
    # so the store rightly held an epoch no client logged.
    time.sleep(IMAGE_SETTLE_S)
    for kind, assignor in KINDS.items():
        prefix = f"kip848-{kind}-{suffix}"
        topics = topics_of[kind]
        config = {"group.protocol": "consumer", "group.remote.assignor": assignor}
        groups[kind] = ConsumerGroup(
            broker,
            prefix,
            topics[0],
            sum(partitions(kind, False).values()),
            config,
            logs=logs,
            size=1,
            subscription=[f"^{prefix}-.*"] if kind == "regex" else topics,
        )
    await_all_stable(groups.values())  # the rebalances of the groups overlap in time
    for _ in range(MEMBERS - 1):
        for group in groups.values():
            group.join()
        await_all_stable(groups.values())
    for kind, group in groups.items():
        grow(broker, kind, group.group)
        group.partitions = sum(partitions(kind, True).values())
    await_all_stable(groups.values())
    for group in groups.values():
        group.leave()
    await_all_stable(groups.values())
    return groups


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    """This module's broker, with both of Kafka's server assignors named and KIP-848
    heartbeats every second (default: five), so that a rebalance takes a second or two."""
    kafka = launch(
        tmp_path_factory.mktemp("kafka"),
        Settings(consumer_assignors="uniform,range", extra=HEARTBEAT),
    )
    try:
        yield kafka
    finally:
        kafka.stop()
        kafka.kill()


@pytest.fixture(scope="module")
def run(
    broker: RealKafka, postgres_server, migrated_template: str, tmp_path_factory
) -> Iterator[Run]:
    suffix = uuid.uuid4().hex[:8]
    name = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(name)
    engine = create_store_engine(url)
    groups: dict[str, ConsumerGroup] = {}
    try:
        groups = live_through_rebalances(broker, suffix, tmp_path_factory.mktemp("members"))
        for kind, group in groups.items():
            topics = {f"{group.group}-{t}": n for t, n in partitions(kind, True).items()}
            group.consume_and_commit(produce(broker, topics))
        await_all_stable(groups.values())
        names = [g.group for g in groups.values()]
        before = {g.group: (g.holdings(), len(g.seen())) for g in groups.values()}
        described = describe_groups(broker, names)
        offsets = admin_offsets(broker, names)
        job = run_job_once(
            broker, url, tmp_path_factory.mktemp("job") / "checkpoint", list(groups.values())
        )
        for group in groups.values():  # nobody rebalanced while the job ran
            assert (group.holdings(), len(group.seen())) == before[group.group]
        observed = {
            kind: Kip848Group(
                g.group, KINDS[kind], g.subscription, g.holdings(), g.seen(), g.events()
            )
            for kind, g in groups.items()
        }
        yield Run(engine, observed, described, offsets, job)
    finally:
        for group in groups.values():
            group.close()
        engine.dispose()
        postgres_server.drop_database(name)


def test_the_job_reads_the_kip848_records_without_a_failure(run: Run) -> None:
    assert run.job.returncode == 0, run.job.stderr[-3000:]
    assert rows(run.engine, "SELECT reason FROM decode_failures") == []
    types = dict(rows(run.engine, "SELECT name, type FROM groups"))
    for group in run.groups.values():
        assert types[group.name] == "consumer"


@pytest.mark.parametrize("kind", KINDS)
def test_the_latest_epoch_is_what_the_broker_describes(run: Run, kind: str) -> None:
    """Group epoch, members, each member's target and current assignment, topics by
    name: the store's latest epoch equals Kafka's DescribeGroups answer."""
    group = run.groups[kind]
    assignor = group.assignor
    described = run.described[group.name]
    assert (described["type"], described["state"]) == ("Consumer", "Stable")
    assert described["assignor"] == assignor
    epoch = described["group_epoch"]
    assert described["target_assignment_epoch"] == epoch
    stored = stored_generations(run.engine, group.name)
    assert max(stored) == epoch
    by_broker = {}
    for member in described["members"]:
        assert member["member_epoch"] == epoch
        target = frozenset(map(tuple, member["target_assignment"]))
        assert frozenset(map(tuple, member["assignment"])) == target
        by_broker[member["member_id"]] = target
    assert stored[epoch] == by_broker
    assert len(by_broker) == MEMBERS - 1
    (assignors,) = rows(
        run.engine,
        "SELECT assignor FROM generations WHERE group_name = :group AND generation = :epoch",
        group=group.name,
        epoch=epoch,
    )
    assert assignors == (assignor,)


@pytest.mark.parametrize("kind", KINDS)
def test_every_epoch_a_client_saw_is_stored_with_its_partitions(run: Run, kind: str) -> None:
    """What a member held after each assignment callback, at the epoch its client had
    then, lies within the stored target of that epoch (a member can hold less than its
    target while another member still releases a partition: KIP-848's unreleased
    partitions); and what each member holds now is exactly the latest stored epoch's."""
    group = run.groups[kind]
    stored = stored_generations(run.engine, group.name)
    assert len(group.seen) >= MEMBERS + 2
    for assigned in group.seen:
        assert assigned.held <= stored[assigned.generation][assigned.member_id], assigned
    (epoch,) = {e for e, _ in group.final.values()}
    assert stored[epoch] == {member: held for member, (_, held) in group.final.items()}


@pytest.mark.parametrize("kind", KINDS)
def test_every_stored_epoch_is_one_a_member_logged(run: Run, kind: str) -> None:
    """The store has exactly the epochs found in the members' callback logs: each step
    here (a join, the growth, the departure) gives some member partitions, and that
    member's assignment callback comes at the new epoch. No one member's log has them
    all: a member that gains nothing in a step has no callback at its epoch, and a
    revocation comes at the epoch the member had before. Neither has epoch 1: an epoch
    is stored once its target assignment is written, and the first stored and the first
    logged is 2 (Kafka 4.3.1, librdkafka members)."""
    group = run.groups[kind]
    stored = stored_generations(run.engine, group.name)
    logged = {e.generation for e in group.events}
    assert logged == set(stored)
    assert min(stored) == 2 and max(stored) == max(e for e, _ in group.final.values())


@pytest.mark.parametrize("kind", KINDS)
def test_the_added_partitions_are_in_the_stored_epochs(run: Run, kind: str) -> None:
    group = run.groups[kind]
    counts = rows(
        run.engine,
        "SELECT partition_count FROM generations WHERE group_name = :group ORDER BY source_offset",
        group=group.name,
    )
    before, after = (sum(partitions(kind, grown).values()) for grown in (False, True))
    assert (counts[0][0], counts[-1][0]) == (before, after)


def test_committed_offsets_equal_the_admin_apis(run: Run) -> None:
    for kind, group in run.groups.items():
        expected = run.offsets[group.name]
        assert set(expected.values()) == {PER_PARTITION}
        assert len(expected) == sum(partitions(kind, True).values())
        assert stored_offsets(run.engine, group.name) == expected


@pytest.mark.parametrize("kind", KINDS)
def test_every_rebalance_moves_what_the_groups_baseline_moves(run: Run, kind: str) -> None:
    """Joins, new partitions (or a new topic the regex matches) and a departure each
    move exactly what the group's own assignor as baseline moves, so the excess over it
    is 0: Kafka's `uniform` keeps what it can, its `range` deals ranges by member id
    whatever each member held (`server-range`)."""
    group = run.groups[kind]
    rebalances = rows(
        run.engine,
        "SELECT from_generation, to_generation, partitions_moved, baseline_moves, "
        "baseline_assignor FROM rebalances WHERE group_name = :group ORDER BY to_generation",
        group=group.name,
    )
    assert len(rebalances) >= MEMBERS + 1  # joins, the growth, the departure
    assert {r.baseline_assignor for r in rebalances} == {BASELINES[group.assignor]}
    assert sum(r.partitions_moved for r in rebalances) > 0
    excess = [(r.to_generation, r.partitions_moved - r.baseline_moves) for r in rebalances]
    assert excess == [(to, 0) for to, _ in excess]


def test_a_regex_members_topics_are_those_its_regex_resolved_to(run: Run) -> None:
    """A member subscribed by regex names no topic: the store lists the topics the
    coordinator resolved the regex to, the new one from the epoch that assigns it."""
    group = run.groups["regex"]
    subscribed = rows(
        run.engine,
        "SELECT g.generation, g.partition_count, m.subscribed_topics FROM generations g "
        "JOIN generation_members m ON m.generation_pk = g.id WHERE g.group_name = :group",
        group=group.name,
    )
    topics = [f"{group.name}-{t}" for t in partitions("regex", grown=True)]
    assert subscribed
    for _, count, names in subscribed:
        assert names == (topics if count == sum(partitions("regex", True).values()) else topics[:1])
