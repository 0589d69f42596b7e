"""Rack-aware assignment (KIP-881): Kafka's Java consumers on brokers with `broker.rack`.

On the session's broker no partition has a rack, so Kafka's client-side assignors never
assign by rack; nor would they on one node with a rack, where every partition has the
same racks (`AbstractPartitionAssignor.useRackAwareAssignment`: rack-aware only if
some partition's racks differ from the others'). This module's cluster is two nodes,
the controller-and-broker on `rack-a` and a broker on `rack-b`: a topic's partitions
(one replica each) are on one rack or the other. Members with `client.rack` rack-a,
rack-b and rack-c join one by one, then the two newest leave one by one, under
`range`, `sticky` and `cooperative-sticky`. One `groupscope stream --once` later, the
store is held to what the members' logs say (tests/kafka/consumer/GroupMember.java),
and each sticky rebalance moves what its rack-aware baseline moves: the job asks the
cluster for the partitions' replica racks (`spark_jobs.replica_racks`), which the module
also checks against the cluster's metadata, with its cache.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine

from services.assignor.common import use_rack_aware_assignment
from services.store.database import create_store_engine
from spark_jobs.replica_racks import REFRESH_S, ReplicaRacks
from tests.fixtures.real_kafka import RealKafka, Settings, launch
from tests.job.java_members import JavaRuntime
from tests.job.java_scenarios import Plan, Scenario, join_one_by_one_then_scale_in, play_all
from tests.job.real_job import rows, run_job_once, stored_generations
from tests.job.test_java_groups import seen_generations
from tests.job.test_real_kafka_kip848 import add_partitions

pytestmark = pytest.mark.real_kafka

RACKS = ("rack-a", "rack-b")  # of node 1 (and the controller) and node 2
PLANS = tuple(
    Plan(f"racks-{name}", assignor, (6,), join_one_by_one_then_scale_in)
    for name, assignor in (
        ("range", "range"),
        ("sticky", "sticky"),
        ("coop", "cooperative-sticky"),
    )
)
NAMES = [plan.name for plan in PLANS]
STICKY = [plan.name for plan in PLANS if plan.assignor != "range"]


@dataclass
class Run:
    broker: RealKafka
    racks: dict[str, list[frozenset[str]]]  # topic -> each partition's replica racks
    engine: Engine
    scenarios: dict[str, Scenario]
    job: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def run(
    tmp_path_factory: pytest.TempPathFactory, postgres_server, migrated_template: str
) -> Iterator[Run]:
    runtime = JavaRuntime.for_test()
    broker = launch(tmp_path_factory.mktemp("kafka"), Settings(rack=RACKS[0]))
    second = launch(tmp_path_factory.mktemp("kafka"), Settings(rack=RACKS[1]), joins=broker)
    name = postgres_server.create_database(template=migrated_template)
    engine = create_store_engine(postgres_server.url(name))
    try:
        await_nodes(broker, 2)
        directory = tmp_path_factory.mktemp("java-racks")
        scenarios = play_all(runtime, broker, directory, uuid.uuid4().hex[:8], PLANS)
        topics = [t for s in scenarios.values() for t in s.group.topics]
        job = run_job_once(broker, postgres_server.url(name), directory / "checkpoint")
        yield Run(broker, replica_racks(broker, topics), engine, scenarios, job)
    finally:
        engine.dispose()
        postgres_server.drop_database(name)
        for node in (second, broker):
            try:
                node.stop()
            finally:
                node.kill()


def await_nodes(broker: RealKafka, count: int, timeout: float = 60.0) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(broker.client_config())
    deadline = time.monotonic() + timeout
    while len(admin.describe_cluster(request_timeout=10).result(15).nodes) < count:
        assert time.monotonic() < deadline, f"fewer than {count} nodes after {timeout}s"
        time.sleep(0.5)


def replica_racks(broker: RealKafka, topics: list[str]) -> dict[str, list[frozenset[str]]]:
    """Each partition's replica racks, from the cluster's metadata."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(broker.client_config())
    rack_of = {n.id: n.rack for n in admin.describe_cluster().result(15).nodes}
    metadata = admin.list_topics(timeout=10)
    return {
        t: [
            frozenset(rack_of[r] for r in metadata.topics[t].partitions[p].replicas)
            for p in sorted(metadata.topics[t].partitions)
        ]
        for t in topics
    }


def test_the_assignors_assign_by_rack(run: Run) -> None:
    """Kafka's own condition, as the assignor core has it: members have racks that
    some partitions' replicas are on, and the partitions' racks differ."""
    consumer_racks = {"rack-a", "rack-b", "rack-c"}
    for topic, racks in run.racks.items():
        assert len(racks) == 6 and set(racks) == {frozenset({r}) for r in RACKS}, topic
        assert use_rack_aware_assignment(consumer_racks, set().union(*racks), racks)
    assert run.job.returncode == 0, run.job.stderr[-3000:]
    assert rows(run.engine, "SELECT reason FROM decode_failures") == []


@pytest.mark.parametrize("name", NAMES)
def test_every_generation_the_members_saw_is_stored_as_they_saw_it(run: Run, name: str) -> None:
    """Each member in each generation it logged, with the partitions it logged; and the
    only stored generations no member saw are the empty first (0) and last."""
    scenario = run.scenarios[name]
    seen = seen_generations(scenario)
    kept = stored_generations(run.engine, scenario.group.group)
    assert len(seen) >= 5  # three joins, two departures
    for generation, members in sorted(seen.items()):
        assert {m: kept[generation].get(m) for m in members} == members, (name, generation)
    unseen = {g: members for g, members in kept.items() if g not in seen}
    assert unseen == {0: {}, max(kept): {}}


@pytest.mark.parametrize("name", NAMES)
def test_each_members_rack_is_stored(run: Run, name: str) -> None:
    scenario = run.scenarios[name]
    stored_racks = set(
        rows(
            run.engine,
            "SELECT m.member_id, m.rack FROM generation_members m "
            "JOIN generations g ON g.id = m.generation_pk WHERE g.group_name = :group",
            group=scenario.group.group,
        )
    )
    racks = {(m.member_ids()[0], m.settings["rack"]) for m in scenario.group.members}
    assert stored_racks == racks


@pytest.mark.parametrize("name", STICKY)
def test_every_sticky_rebalance_moves_what_the_rack_aware_baseline_moves(
    run: Run, name: str
) -> None:
    """Every rebalance into a generation with members has a baseline of the group's own
    assignor, run with the members' racks and the partitions' replica racks as the job
    read them from the cluster, and it moved exactly as many partitions: excess 0. (With
    a rackless baseline one CI run's sticky group moved 3 where the baseline moved 2.)"""
    scenario = run.scenarios[name]
    measured = rows(
        run.engine,
        "SELECT r.to_generation, r.partitions_moved, r.baseline_moves, r.baseline_assignor "
        "FROM rebalances r JOIN generations g ON g.id = r.to_generation_pk "
        "WHERE r.group_name = :group AND g.member_count > 0 ORDER BY r.to_generation",
        group=scenario.group.group,
    )
    settled = sorted(set(scenario.generations))
    assert {to for to, *_ in measured} >= set(settled[1:])
    assert {r[3] for r in measured} == {scenario.assignor}
    assert [(to, baseline) for to, _, baseline, _ in measured] == [
        (to, moved) for to, moved, _, _ in measured
    ]
    assert any(moved > 0 for _, moved, *_ in measured)


def test_the_job_reads_the_replica_racks_the_cluster_metadata_has(
    run: Run, caplog: pytest.LogCaptureFixture
) -> None:
    """`ReplicaRacks` (one DescribeTopics) agrees with the racks of the replicas' nodes
    (Metadata and DescribeCluster); a topic the cluster does not have gets none, said
    once, and is not created by asking."""
    from confluent_kafka.admin import AdminClient

    racks = ReplicaRacks(run.broker.client_config())
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    with caplog.at_level("WARNING", logger="groupscope.replica_racks"):
        found = racks.lookup({**dict.fromkeys(run.racks, 6), missing: 1})
    expected = {t: [tuple(sorted(r)) for r in rs] for t, rs in run.racks.items()}
    assert found == expected
    assert missing in caplog.text and "Unknown topic" in caplog.text
    assert missing not in AdminClient(run.broker.client_config()).list_topics(timeout=10).topics


def test_a_topics_racks_are_asked_again_when_it_grows_or_they_are_old(run: Run) -> None:
    """Cached: a topic's racks are asked again when a batch assigns more partitions than
    they cover, or REFRESH_S after the last full lookup; else the cache answers."""
    now = [0.0]
    racks = ReplicaRacks(run.broker.client_config(), clock=lambda: now[0])
    topic = run.broker.create_topic(partitions=2)
    assert len(racks.lookup({topic: 2})[topic]) == 2
    grow(run.broker, topic, 4)
    assert len(racks.lookup({topic: 2})[topic]) == 2  # the cache
    assert len(racks.lookup({topic: 4})[topic]) == 4  # the batch saw partition 3
    grow(run.broker, topic, 6)
    assert len(racks.lookup({topic: 4})[topic]) == 4
    now[0] += REFRESH_S
    described = racks.lookup({topic: 4})[topic]
    assert len(described) == 6 and set(described) <= {(r,) for r in RACKS}


def grow(broker: RealKafka, topic: str, total: int, timeout: float = 30.0) -> None:
    """`total` partitions, once every node's metadata has them."""
    from confluent_kafka.admin import AdminClient

    add_partitions(broker, topic, total)
    admin = AdminClient(broker.client_config())
    deadline = time.monotonic() + timeout
    while len(admin.list_topics(topic, timeout=10).topics[topic].partitions) < total:
        assert time.monotonic() < deadline, f"{topic} has fewer than {total} partitions"
        time.sleep(0.2)
