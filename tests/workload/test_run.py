"""`run_workload` against a real Kafka-protocol broker (tansu): real librdkafka groups that
consume, commit, scale, restart and crash."""

from __future__ import annotations

import multiprocessing
import uuid

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from services.workload.config import GroupSpec, WorkloadConfig
from services.workload.runner import run_workload

PARTITIONS = 4


def committed_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    return {(tp.topic, tp.partition): tp.offset for tp in future.result(30).topic_partitions}


def log_end_offsets(bootstrap: str, topics: tuple[str, ...]) -> dict[tuple[str, int], int]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ends"})
    try:
        return {
            (t, p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1]
            for t in topics
            for p in range(PARTITIONS)
        }
    finally:
        consumer.close()


def test_groups_consume_commit_and_rebalance_through_one_cycle(kafka_broker):
    prefix = f"wl-{uuid.uuid4().hex[:8]}"
    orders, payments = f"{prefix}-orders", f"{prefix}-payments"
    eager = GroupSpec(f"{prefix}-range", (orders, payments), "range", members=2)
    cooperative = GroupSpec(f"{prefix}-coop", (orders,), "cooperative-sticky", members=2)
    lines: list[str] = []
    config = WorkloadConfig(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        groups=[eager, cooperative],
        topics=(orders, payments),
        partitions=PARTITIONS,
        rate=100,
        step_interval_s=1.0,
        # step i goes to group i mod 2: scale-up range, crash-loop coop, restart range,
        # scale-down coop
        steps=("scale-up", "crash-loop", "restart", "scale-down"),
        cycles=1,
        duration_s=60,  # a bound: the cycle ends the run well before
        session_timeout_ms=2_000,
        crashes=2,
        crash_uptime_s=0.5,
        join_timeout_s=20,
        commit_interval_s=0.5,
        progress_interval_s=5,
    )
    summary = run_workload(config, say=lines.append)

    assert summary.topics_created == [orders, payments]
    assert summary.steps == [
        f"scale-up {eager.name}",
        f"crash-loop {cooperative.name}",
        f"restart {eager.name}",
        f"scale-down {cooperative.name}",
    ]
    assert summary.produced > 0 and summary.produce_failures == 0
    assert summary.seconds < 60
    assert not summary.warnings, summary.warnings
    range_, coop = summary.groups[eager.name], summary.groups[cooperative.name]

    # range: 2 members, +1 (scale-up), restart (one leaves, one joins): 3 members, 4
    # started, and every rebalance revokes and reassigns all: more assignment callbacks
    # than the 2 initial joins plus the 2 joiners
    assert (range_.members, range_.members_started, range_.crashes) == (3, 4, 0)
    assert range_.assign_callbacks > 4 and range_.revoke_callbacks > 0
    # cooperative: the crash-loop kills the oldest and one replacement (2 crashes), the
    # last replacement stays; scale-down then stops the newest: 1 member left
    assert (coop.members, coop.members_started, coop.crashes) == (1, 4, 2)
    assert coop.assign_callbacks >= 4
    assert any("crash 2/2" in line and "after it joined" in line for line in lines), lines

    for group in (range_, coop):
        assert group.joined and group.consumed > 0 and group.commits > 0
    # every member process has ended
    assert not multiprocessing.active_children()

    # the broker holds the groups' commits: offsets on the subscribed topics, never past
    # the log end
    ends = log_end_offsets(kafka_broker.bootstrap_servers, (orders, payments))
    for spec in (eager, cooperative):
        offsets = committed_offsets(kafka_broker.bootstrap_servers, spec.name)
        positive = {tp: o for tp, o in offsets.items() if o >= 0}
        assert positive and sum(positive.values()) > 0, (spec.name, offsets)
        assert {t for t, _ in positive} <= set(spec.topics)
        assert all(o <= ends[tp] for tp, o in positive.items()), (positive, ends)
