"""Group scenarios played by Java members (`tests.job.java_members`) on a real broker.

Each scenario drives one group on its own topics and waits for the group to settle after
every step, so that each step is one rebalance the members' logs and the history store
can both be read for. `play_all` runs the scenarios side by side (threads; the members are
JVMs), then stops every member, so that the group is left empty before the job reads it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from tests.fixtures.real_kafka import RealKafka
from tests.job.java_members import STABLE_TIMEOUT_S, JavaGroup, JavaMember, JavaRuntime

SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms
STATIC_SESSION_TIMEOUT_MS = 15000  # long enough for a JVM to restart within it
MAX_POLL_INTERVAL_MS = 20000  # also the rebalance timeout of a classic member
STALL_MAX_POLL_INTERVAL_MS = 5000
STALL_AFTER_S = 5.0  # after its first assignment
STALL_FOR_S = 9.0
RECORDS_PER_PARTITION = 10
EMPTY_TIMEOUT_S = 60.0


@dataclass
class Scenario:
    """One played scenario: its group, and the facts the tests check it by."""

    name: str
    group: JavaGroup
    killed: JavaMember | None = None
    stalled: JavaMember | None = None
    generations: list[int] = field(default_factory=list)  # settled, after each step
    restarted: list[JavaMember] = field(default_factory=list)  # the static replacements

    @property
    def assignor(self) -> str:
        return self.group.assignor


def join_one_by_one_then_scale_in(scenario: Scenario) -> None:
    """Three members join one at a time (each with its own client.rack), then the two
    newest leave one at a time."""
    group, gens = scenario.group, scenario.generations
    for rack in ("rack-a", "rack-b", "rack-c"):
        group.start(rack=rack)
        gens.append(group.await_stable(gens[-1] if gens else -1))
    for member in group.live()[:0:-1]:
        member.stop()
        gens.append(group.await_stable(gens[-1]))


def rolling_restart(scenario: Scenario, size: int = 2) -> None:
    """`size` members; each in turn is stopped (SIGTERM: it leaves) and replaced by a new
    process, which joins with a new member id."""
    group, gens = scenario.group, scenario.generations
    for _ in range(size):
        group.start()
    gens.append(group.await_stable())
    for old in list(group.live()):
        old.stop()
        group.start()
        gens.append(group.await_stable(gens[-1]))


def kill_one(scenario: Scenario, size: int = 3) -> None:
    """`size` members; one is SIGKILLed and the coordinator removes it when its session
    times out."""
    group, gens = scenario.group, scenario.generations
    for _ in range(size):
        group.start()
    gens.append(group.await_stable())
    scenario.killed = group.live()[1]
    scenario.killed.kill()
    gens.append(group.await_stable(gens[-1]))


def stall_one(scenario: Scenario) -> None:
    """Two members; the second, STALL_AFTER_S after its first assignment, stops polling
    for longer than max.poll.interval.ms. Its heartbeat thread leaves the group for it (the
    other rebalances without it); when it polls again it finds its partitions lost and
    joins again, with a new member id."""
    group, gens = scenario.group, scenario.generations
    group.start()
    gens.append(group.await_stable())
    stalled = group.start(**{"stall-after-s": STALL_AFTER_S, "stall-for-s": STALL_FOR_S})
    scenario.stalled = stalled
    gens.append(group.await_stable(gens[-1]))
    deadline = time.monotonic() + STALL_AFTER_S + STALL_FOR_S + STABLE_TIMEOUT_S
    while "resumed" not in [e.kind for e in stalled.events()]:
        if time.monotonic() > deadline:
            raise AssertionError(f"{group.group}: the stalled member never resumed")
        time.sleep(0.2)
    kinds = [e.kind for e in stalled.events()]
    before = [e for e in stalled.events()[: kinds.index("stalled")] if e.kind == "assigned"]
    gens.append(group.await_stable(before[-1].generation or -1))  # once it is back


def restart_static_members(scenario: Scenario) -> None:
    """Two static members (group.instance.id) join one at a time; then each in turn is
    stopped (SIGTERM: a static member does not leave on close) and restarted with the same
    instance id well within its session timeout. The replacements leave on close
    (KIP-1092), so that the group ends empty."""
    group, gens = scenario.group, scenario.generations
    for n in range(2):
        group.start(instance_id=f"{group.group}-{n}")
        gens.append(group.await_stable(gens[-1] if gens else -1))
    for old in list(group.live()):
        old.stop()
        new = group.start(instance_id=old.instance_id, **{"leave-on-close": True})
        scenario.restarted.append(new)
        gens.append(group.await_stable())


@dataclass(frozen=True)
class Plan:
    name: str
    assignor: str
    topics: tuple[int, ...]  # partitions of each of its topics
    play: Callable[[Scenario], None]
    settings: dict[str, int | float] = field(default_factory=dict)


PLANS = (
    Plan("join-sticky", "sticky", (6,), join_one_by_one_then_scale_in),
    Plan("join-coop", "cooperative-sticky", (6,), join_one_by_one_then_scale_in),
    Plan("rolling-coop", "cooperative-sticky", (6,), rolling_restart),
    Plan("kill-sticky", "sticky", (6,), kill_one),
    Plan("kill-roundrobin", "roundrobin", (4, 2), partial(kill_one, size=2)),
    Plan("rolling-range", "range", (4, 2), partial(rolling_restart, size=2)),
    Plan(
        "stall-coop",
        "cooperative-sticky",
        (6,),
        stall_one,
        {"max-poll-interval-ms": STALL_MAX_POLL_INTERVAL_MS},
    ),
    Plan(
        "static-sticky",
        "sticky",
        (6,),
        restart_static_members,
        {"session-timeout-ms": STATIC_SESSION_TIMEOUT_MS},
    ),
)


def produce(broker: RealKafka, topics: dict[str, int]) -> None:
    """A few records in every partition, so that the members have offsets to commit."""
    from confluent_kafka import Producer

    producer = Producer(broker.client_config())
    for topic, partitions in topics.items():
        for p in range(partitions):
            for i in range(RECORDS_PER_PARTITION):
                producer.produce(topic, f"{topic}-{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def await_empty(broker: RealKafka, groups: list[str]) -> None:
    """Until the coordinator says every group is Empty: all its members have left."""
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(broker.client_config())
    deadline = time.monotonic() + EMPTY_TIMEOUT_S
    pending = list(groups)
    while pending:
        futures = admin.describe_consumer_groups(pending, request_timeout=10)
        pending = [g for g, f in futures.items() if f.result(15).state != ConsumerGroupState.EMPTY]
        if pending and time.monotonic() > deadline:
            raise AssertionError(f"groups not empty after {EMPTY_TIMEOUT_S}s: {pending}")
        time.sleep(0.5)


def play_all(
    runtime: JavaRuntime,
    broker: RealKafka,
    directory: Path,
    suffix: str,
    plans: Sequence[Plan] = PLANS,
) -> dict[str, Scenario]:
    """Every plan at once, each on its own group and topics; returns them by name once
    every member has closed (or was killed) and every group is empty."""
    scenarios = {}
    for plan in plans:
        name = f"{plan.name}-{suffix}"
        topics = {broker.create_topic(f"{name}-t{i}", n): n for i, n in enumerate(plan.topics)}
        produce(broker, topics)
        settings: dict[str, int | float] = {
            "session-timeout-ms": SESSION_TIMEOUT_MS,
            "heartbeat-interval-ms": 1000,
            "max-poll-interval-ms": MAX_POLL_INTERVAL_MS,
        } | plan.settings
        group = JavaGroup(
            runtime, broker, name, topics, plan.assignor, directory / name, **settings
        )
        scenarios[plan.name] = Scenario(plan.name, group)
    try:
        with ThreadPoolExecutor(len(plans)) as pool:
            futures = [pool.submit(plan.play, scenarios[plan.name]) for plan in plans]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            if any(f.exception() is not None for f in done):
                for scenario in scenarios.values():  # the others stop waiting at once
                    scenario.group.aborted = True
            for future in futures:
                future.result()
        with ThreadPoolExecutor(len(plans)) as pool:
            for future in [pool.submit(s.group.stop_all) for s in scenarios.values()]:
                future.result()
        await_empty(broker, [s.group.group for s in scenarios.values()])
    finally:
        for scenario in scenarios.values():
            scenario.group.kill_all()
    return scenarios
