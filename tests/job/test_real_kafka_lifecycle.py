"""Consumer group lifecycles on Apache Kafka 4.3.1, read by `groupscope stream --once`.

Classic librdkafka (confluent-kafka) groups, each on topics of its own, on one broker
that checks for expired offsets every second:

- `regex`: `roundrobin` members subscribed to `^rx-<suffix>-.*`; a matching topic is
  created and the group rebalances onto it.
- `grow`: `cooperative-sticky` members; CreatePartitions adds two partitions to their
  topic and the group rebalances onto them.
- `gone`: `range` members consume, commit and leave; DeleteGroups deletes the group (the
  coordinator writes tombstones of its offsets and of the group).
- `trim`: a member commits every partition and leaves; OffsetDelete deletes one
  partition's offset (Kafka's Java Admin: confluent-kafka has no such call).
- `expire`: offsets committed with a retention time of one second (OffsetCommit v2, as
  clients before KIP-211 did); the broker expires them and writes their tombstones.

Then the store is compared with what the clients saw and with ListConsumerGroupOffsets.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine

from services.exporter.snapshot import read_snapshot
from services.store.database import create_store_engine
from tests.fixtures.real_kafka import RealKafka, Settings, launch
from tests.job.legacy_commit import commit_with_retention
from tests.job.real_groups import Assigned, ConsumerGroup, await_all_stable
from tests.job.real_job import (
    admin_offsets,
    delete_offsets,
    rows,
    run_job_once,
    stored_generations,
    stored_offsets,
)

pytestmark = pytest.mark.real_kafka

PER_PARTITION = 10
REFRESH = {"topic.metadata.refresh.interval.ms": 1000}  # sees new topics and partitions
EXPIRE_OFFSET = 7
EXPIRY_TIMEOUT_S = 60.0
TRIMMED = 1  # the partition of `trim` whose offset is deleted


@dataclass
class Observed:
    """A group as its clients saw it: each member's (generation, held) now, and every
    assignment callback."""

    final: dict[str, tuple[int, frozenset[tuple[str, int]]]]
    seen: list[Assigned]
    commits: int  # offset commit records the members wrote


@dataclass
class Run:
    engine: Engine
    names: dict[str, str]  # scenario -> group
    topics: dict[str, list[str]]  # scenario -> its topics
    observed: dict[str, Observed]  # by scenario
    offsets: dict[str, dict[tuple[str, int], int]]  # by group
    job: subprocess.CompletedProcess
    logged: dict[str, set[int]]  # scenario -> generations of assignment callbacks, at the end


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    """This module's broker: it looks for expired offsets every second (default: every
    ten minutes)."""
    kafka = launch(tmp_path_factory.mktemp("kafka"), Settings(offsets_retention_check_ms=1000))
    try:
        yield kafka
    finally:
        kafka.stop()
        kafka.kill()


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


def partitions_of(broker: RealKafka, topics: list[str]) -> dict[str, int]:
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient(broker.client_config()).list_topics(timeout=10)
    return {t: len(metadata.topics[t].partitions) for t in topics}


def delete_group(broker: RealKafka, group: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(broker.client_config())  # alive until the futures are done
    for future in admin.delete_consumer_groups([group]).values():
        future.result(30)


def add_partitions(broker: RealKafka, topic: str, total: int) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient(broker.client_config())
    for future in admin.create_partitions([NewPartitions(topic, total)]).values():
        future.result(60)


def await_no_offsets(broker: RealKafka, group: str) -> None:
    deadline = time.monotonic() + EXPIRY_TIMEOUT_S
    while admin_offsets(broker, [group])[group]:
        if time.monotonic() > deadline:
            raise AssertionError(f"the offsets of {group} did not expire")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def run(
    broker: RealKafka, postgres_server, migrated_template: str, tmp_path_factory
) -> Iterator[Run]:
    suffix = uuid.uuid4().hex[:8]
    names = {s: f"{s}-{suffix}" for s in ("regex", "grow", "gone", "trim", "expire")}
    topics = {
        "regex": [broker.create_topic(f"rx-{suffix}-a", 4)],
        "grow": [broker.create_topic(f"grow-{suffix}", 4)],
        "gone": [broker.create_topic(f"gone-{suffix}", 3)],
        "trim": [broker.create_topic(f"trim-{suffix}", 3)],
        "expire": [broker.create_topic(f"expire-{suffix}", 3)],
    }
    db = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(db)
    engine = create_store_engine(url)
    logs = tmp_path_factory.mktemp("members")
    groups = {
        "regex": ConsumerGroup(
            broker,
            names["regex"],
            topics["regex"][0],
            4,
            {"partition.assignment.strategy": "roundrobin", **REFRESH},
            logs=logs,
            subscription=[f"^rx-{suffix}-.*"],
        ),
        "grow": ConsumerGroup(
            broker,
            names["grow"],
            topics["grow"][0],
            4,
            {"partition.assignment.strategy": "cooperative-sticky", **REFRESH},
            logs=logs,
        ),
        "gone": ConsumerGroup(broker, names["gone"], topics["gone"][0], 3, {}, logs=logs),
        "trim": ConsumerGroup(broker, names["trim"], topics["trim"][0], 3, {}, logs=logs, size=1),
    }
    try:
        await_all_stable(groups.values())
        topics["regex"].append(broker.create_topic(f"rx-{suffix}-b", 2))
        groups["regex"].partitions = 6
        add_partitions(broker, topics["grow"][0], 6)
        groups["grow"].partitions = 6
        await_all_stable(groups.values())
        for scenario, group in groups.items():
            group.consume_and_commit(produce(broker, partitions_of(broker, topics[scenario])))
        observed = {s: Observed(g.holdings(), g.seen(), g.commits) for s, g in groups.items()}
        for scenario in ("gone", "trim"):
            while groups[scenario].members:
                groups[scenario].leave()
        delete_group(broker, names["gone"])
        delete_offsets(broker, names["trim"], topics["trim"][0], [TRIMMED])
        commit_with_retention(
            broker.bootstrap_servers,
            names["expire"],
            topics["expire"][0],
            dict.fromkeys(range(3), EXPIRE_OFFSET),
            retention_ms=1000,
        )
        await_no_offsets(broker, names["expire"])
        offsets = admin_offsets(broker, list(names.values()))
        live = [groups["regex"], groups["grow"]]
        before = {g.group: (g.holdings(), len(g.seen())) for g in live}
        job = run_job_once(broker, url, tmp_path_factory.mktemp("job") / "checkpoint", live)
        for group in live:  # nobody rebalanced while the job ran
            assert (group.holdings(), len(group.seen())) == before[group.group]
        logged = {s: {a.generation for a in g.seen()} for s, g in groups.items()}
        yield Run(engine, names, topics, observed, offsets, job, logged)
    finally:
        for group in groups.values():
            group.close()
        engine.dispose()
        postgres_server.drop_database(db)


def test_the_job_reads_every_lifecycle_without_a_failure(run: Run) -> None:
    assert run.job.returncode == 0, run.job.stderr[-3000:]
    assert "Traceback" not in run.job.stderr
    assert rows(run.engine, "SELECT reason FROM decode_failures") == []


@pytest.mark.parametrize("scenario", ["regex", "grow", "gone", "trim"])
def test_every_generation_a_member_saw_is_stored_with_its_assignment(
    run: Run, scenario: str
) -> None:
    """Each assignment callback, eager or cooperative, at the generation the client had
    then: the stored generation gives that member exactly those partitions."""
    stored = stored_generations(run.engine, run.names[scenario])
    observed = run.observed[scenario]
    assert observed.seen
    for assigned in observed.seen:
        assert stored[assigned.generation][assigned.member_id] == assigned.held, assigned
    (generation,) = {g for g, _ in observed.final.values()}
    assert stored[generation] == {m: held for m, (_, held) in observed.final.items()}


@pytest.mark.parametrize("scenario", ["regex", "grow", "gone", "trim"])
def test_the_stored_generations_no_member_saw_are_empty(run: Run, scenario: str) -> None:
    """As for Kafka's Java consumer (docs/testing.md): generation 0, written when the
    first JoinGroup creates the group, and for the groups whose members all left, the
    last one, written when the last member left; every other stored generation has an
    assignment callback in some member's log."""
    stored = stored_generations(run.engine, run.names[scenario])
    seen = run.logged[scenario]
    unseen = {g: members for g, members in stored.items() if g not in seen}
    expected = {0: {}}
    if scenario in ("gone", "trim"):
        expected[max(stored)] = {}
    assert unseen == expected
    assert seen <= set(stored)


def test_a_regex_subscription_takes_the_new_topic_with_roundrobin(run: Run) -> None:
    """The latest generation spans both topics the pattern matches, dealt round-robin
    (topics by name, partitions ascending, to the members in member id order)."""
    group, (first, second) = run.names["regex"], run.topics["regex"]
    stored = stored_generations(run.engine, group)
    latest = stored[max(stored)]
    everything = [(first, p) for p in range(4)] + [(second, p) for p in range(2)]
    members = sorted(latest)
    dealt = {m: frozenset(everything[i :: len(members)]) for i, m in enumerate(members)}
    assert latest == dealt
    subscribed = rows(
        run.engine,
        "SELECT g.assignor, m.subscribed_topics FROM generations g "
        "JOIN generation_members m ON m.generation_pk = g.id "
        "WHERE g.group_name = :group AND g.generation = :generation",
        group=group,
        generation=max(stored),
    )
    assert {(a, tuple(sorted(t))) for a, t in subscribed} == {("roundrobin", (first, second))}


def test_added_partitions_are_assigned_in_a_stored_generation(run: Run) -> None:
    """Before CreatePartitions a generation spread the topic's four partitions; the
    latest spreads all six."""
    group, (topic,) = run.names["grow"], run.topics["grow"]
    stored = stored_generations(run.engine, group)
    covered = [set().union(*stored[g].values()) for g in sorted(stored) if stored[g]]
    assert {(topic, p) for p in range(4)} in covered
    assert covered[-1] == {(topic, p) for p in range(6)}


def test_committed_offsets_equal_the_admin_apis(run: Run) -> None:
    """Deleted, trimmed and expired offsets included: their tombstones were applied."""
    for scenario, group in run.names.items():
        assert stored_offsets(run.engine, group) == run.offsets[group], scenario
    trim_topic = run.topics["trim"][0]
    assert run.offsets[run.names["trim"]] == {
        (trim_topic, p): PER_PARTITION for p in range(3) if p != TRIMMED
    }
    assert run.offsets[run.names["gone"]] == {}
    assert run.offsets[run.names["expire"]] == {}


@pytest.mark.parametrize("scenario", ["gone", "trim", "expire"])
def test_deleted_offsets_are_kept_as_tombstones(run: Run, scenario: str) -> None:
    """A deleted offset keeps its row, marked deleted and without an offset."""
    group = run.names[scenario]
    deleted = rows(
        run.engine,
        "SELECT topic, partition, committed_offset FROM committed_offsets "
        "WHERE group_name = :group AND deleted",
        group=group,
    )
    expected = {"gone": range(3), "trim": [TRIMMED], "expire": range(3)}[scenario]
    assert {(t, p) for t, p, _ in deleted} == {(run.topics[scenario][0], p) for p in expected}
    assert {o for _, _, o in deleted} == {None}
    # a tombstone is no commit: the count is what the clients committed
    committed = run.observed[scenario].commits if scenario in run.observed else len(expected)
    commits = rows(run.engine, "SELECT commits_total FROM groups WHERE name = :g", g=group)
    assert commits[0][0] == committed > 0


def test_a_deleted_group_is_dead(run: Run) -> None:
    """DeleteGroups: the coordinator writes the group's tombstone after its members left
    (an empty generation); the store marks it deleted and the exporter reports it dead,
    while the groups that live on do not."""
    (deleted_at,) = rows(
        run.engine, "SELECT deleted_at FROM groups WHERE name = :g", g=run.names["gone"]
    )
    assert deleted_at[0] is not None
    stored = stored_generations(run.engine, run.names["gone"])
    assert stored[max(stored)] == {}  # the members left before the deletion
    states = {
        g.name: g.current_state for g in read_snapshot(run.engine, 300.0, datetime.now(UTC)).groups
    }
    assert states[run.names["gone"]] == "dead"
    assert states[run.names["regex"]] == states[run.names["grow"]] == "stable"
