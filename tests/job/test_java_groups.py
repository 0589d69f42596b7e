"""Groups of Kafka's own Java consumers, and the history store's account of them.

Eight scenarios (`tests.job.java_scenarios`) run side by side on the session's Apache
Kafka 4.3.1 broker, each on its own group and topics: members joining one by one and
leaving again, rolling restarts, a member SIGKILLed, a member that stops polling past
max.poll.interval.ms, and static members restarted within their session timeout, under
the `sticky`, `cooperative-sticky`, `roundrobin` and `range` assignors. Every member logs
its rebalance callbacks with the generation it had. Then one `groupscope stream --once`
reads `__consumer_offsets` into PostgreSQL, and the store is held to what the clients saw.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

import pytest
from sqlalchemy import Engine

from services.store.database import create_store_engine
from tests.fixtures.real_kafka import RealKafka
from tests.job.java_members import JavaRuntime, TopicPartition
from tests.job.java_scenarios import (
    PLANS,
    RECORDS_PER_PARTITION,
    SESSION_TIMEOUT_MS,
    Scenario,
    play_all,
)
from tests.job.real_job import rows, run_job_once, stored_generations

pytestmark = pytest.mark.real_kafka

NAMES = [plan.name for plan in PLANS]
STICKY = [plan.name for plan in PLANS if plan.assignor in ("sticky", "cooperative-sticky")]

Members = dict[str, frozenset[TopicPartition]]  # identity -> partitions


@dataclass
class Run:
    engine: Engine
    scenarios: dict[str, Scenario]
    job: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def run(
    real_kafka: RealKafka, postgres_server, migrated_template: str, tmp_path_factory
) -> Iterator[Run]:
    runtime = JavaRuntime.for_test()
    name = postgres_server.create_database(template=migrated_template)
    engine = create_store_engine(postgres_server.url(name))
    try:
        directory = tmp_path_factory.mktemp("java-groups")
        scenarios = play_all(runtime, real_kafka, directory, uuid.uuid4().hex[:8])
        job = run_job_once(real_kafka, postgres_server.url(name), directory / "checkpoint")
        yield Run(engine, scenarios, job)
    finally:
        engine.dispose()
        postgres_server.drop_database(name)


def seen_generations(scenario: Scenario) -> dict[int, Members]:
    """generation -> identity -> the partitions that member held after its assignment
    callback in that generation, from every member's log."""
    out: dict[int, Members] = {}
    for member in scenario.group.members:
        for event in member.assigned():
            assert event.generation is not None and event.generation >= 0, event
            members = out.setdefault(event.generation, {})
            identity = member.identity(event)
            assert members.get(identity, event.assignment) == event.assignment, (
                "one member, two assignments in one generation",
                identity,
                event,
            )
            members[identity] = event.assignment
    return out


def stored(run: Run, scenario: Scenario) -> dict[int, Members]:
    return stored_generations(run.engine, scenario.group.group, by_instance=True)


def test_the_job_reads_the_java_groups_without_a_decode_failure(run: Run) -> None:
    assert run.job.returncode == 0, run.job.stderr[-3000:]
    assert "Traceback" not in run.job.stderr
    assert rows(run.engine, "SELECT source_partition, source_offset FROM decode_failures") == []


@pytest.mark.parametrize("name", NAMES)
def test_every_generation_the_clients_saw_is_stored_as_they_saw_it(run: Run, name: str) -> None:
    """Same generation ids, and each member that saw a generation is stored in it (static
    ones by instance id) with the partitions it saw. A stored generation may list members
    that never saw it, all of them members of the group: the next rebalance began before
    their SyncGroup was answered (under cooperative-sticky, the member that revokes
    rejoins at once), so they went on to the next generation without this one's
    assignment."""
    scenario = run.scenarios[name]
    seen, kept = seen_generations(scenario), stored(run, scenario)
    assert len(seen) >= 2
    twice = rows(
        run.engine,
        "SELECT generation FROM generations WHERE group_name = :group "
        "GROUP BY generation HAVING count(*) > 1",
        group=scenario.group.group,
    )
    assert twice == [], name
    everyone = {identity for members in seen.values() for identity in members}
    for generation, members in sorted(seen.items()):
        assert generation in kept, (name, generation)
        assert {m: kept[generation].get(m) for m in members} == members, (name, generation)
        assert set(kept[generation]) <= everyone, (name, generation)


@pytest.mark.parametrize("name", NAMES)
def test_the_stored_generations_no_client_saw_are_empty(run: Run, name: str) -> None:
    """Generation 0, written when the first member's JoinGroup created the group (Kafka's
    group coordinator commits a new classic group to the log at once, empty), and the
    generations written once every member was closing: the last one, empty, after the last
    member left, and (rarely) one of a member that rejoined just before its own SIGTERM."""
    scenario = run.scenarios[name]
    seen, kept = seen_generations(scenario), stored(run, scenario)
    unseen = {g: members for g, members in kept.items() if g not in seen}
    assert unseen.pop(0, None) == {}, name
    assert unseen.get(max(kept)) == {}, name
    assert min(unseen) > max(scenario.generations), (name, unseen)


@pytest.mark.parametrize("name", STICKY)
def test_the_sticky_baseline_moves_what_kafkas_assignor_moved(run: Run, name: str) -> None:
    """Every rebalance of a sticky or cooperative-sticky group into a generation with
    members moved exactly the partitions the baseline moves: the assignor core, fed the
    tracker's reconstruction of the previous generation, decides as Kafka's own assignor
    did. A cooperative episode (revocation round, then assignment round) is one rebalance
    from the generation before the revocation to the one that assigned what was revoked."""
    scenario = run.scenarios[name]
    measured = rows(
        run.engine,
        "SELECT r.from_generation, r.to_generation, r.partitions_moved, r.baseline_moves, "
        "r.baseline_assignor, r.cooperative_episode FROM rebalances r "
        "JOIN generations g ON g.id = r.to_generation_pk "
        "WHERE r.group_name = :group AND g.member_count > 0 ORDER BY r.to_generation",
        group=scenario.group.group,
    )
    settled = sorted(set(scenario.generations))
    assert {to for _, to, *_ in measured} >= set(settled[1:])  # every step is measured
    assert {r[4] for r in measured} == {scenario.assignor}
    assert [(f, t, moved) for f, t, moved, base, *_ in measured if moved != base] == [], [
        tuple(r) for r in measured
    ]
    assert any(moved > 0 for _, _, moved, *_ in measured)
    episodes = [r for r in measured if r[5]]
    if scenario.assignor == "cooperative-sticky":
        assert episodes and all(t >= f + 2 for f, t, *_ in episodes)
    else:
        assert not episodes


def test_a_static_members_restart_makes_no_new_generation(run: Run) -> None:
    """KIP-345: each restarted process rejoined the generation its predecessor had, and the
    store has that generation once (the coordinator rewrote the group with the new member
    id at the same generation: not a rebalance) and no later one in which both instances
    were members again."""
    scenario = run.scenarios["static-sticky"]
    first = scenario.generations[1]  # both joined: then the restarts
    assert set(scenario.generations[1:]) == {first}
    for member in scenario.restarted:
        assert member.assigned()[0].generation == first
    kept = stored(run, scenario)
    instances = {m.instance_id for m in scenario.group.members}
    assert set(kept[first]) == instances
    ((count,),) = rows(
        run.engine,
        "SELECT count(*) FROM generations WHERE group_name = :group AND generation = :first",
        group=scenario.group.group,
        first=first,
    )
    assert count == 1
    assert not [g for g, members in kept.items() if g > first and set(members) == instances]


def test_a_killed_member_is_removed_when_its_session_times_out(run: Run) -> None:
    scenario = run.scenarios["kill-sticky"]
    killed = scenario.killed
    assert killed is not None and killed.killed_at is not None
    (member_id,) = killed.member_ids()
    before, after = scenario.generations
    kept = stored(run, scenario)
    assert member_id in kept[before] and member_id not in kept[after]
    ((began,),) = rows(
        run.engine,
        "SELECT time FROM generations WHERE group_name = :group AND generation = :generation",
        group=scenario.group.group,
        generation=after,
    )
    assert isinstance(began, datetime)
    assert began.timestamp() - killed.killed_at >= SESSION_TIMEOUT_MS / 1000 - 1.0


def test_a_member_that_stops_polling_is_removed_and_rejoins_as_new(run: Run) -> None:
    scenario = run.scenarios["stall-coop"]
    stalled = scenario.stalled
    assert stalled is not None
    kinds = [e.kind for e in stalled.events()]
    assert kinds.index("assigned") < kinds.index("stalled") < kinds.index("lost")
    first, second = stalled.member_ids()
    joined = stalled.assigned()[0].generation
    assert joined is not None
    others = {
        m for member in scenario.group.members if member is not stalled for m in member.member_ids()
    }
    kept = stored(run, scenario)
    without = [g for g, members in kept.items() if g > joined and set(members) == others]
    assert without, "no generation of the others alone after it joined"
    assert all(first in kept[g] for g in range(joined, min(without)) if g in kept)
    assert second in kept[max(scenario.generations)] and first not in kept[max(without)]


def test_each_members_rack_is_stored(run: Run) -> None:
    scenario = run.scenarios["join-sticky"]
    stored_racks = dict(
        rows(
            run.engine,
            "SELECT m.member_id, m.rack FROM generation_members m "
            "JOIN generations g ON g.id = m.generation_pk WHERE g.group_name = :group",
            group=scenario.group.group,
        )
    )
    racks = {m.member_ids()[0]: m.settings["rack"] for m in scenario.group.members}
    assert stored_racks == racks


@pytest.mark.parametrize("name", NAMES)
def test_every_partition_is_committed_to_its_end(run: Run, name: str) -> None:
    scenario = run.scenarios[name]
    committed = dict(
        ((t, p), o)
        for t, p, o in rows(
            run.engine,
            "SELECT topic, partition, committed_offset FROM committed_offsets "
            "WHERE group_name = :group AND NOT deleted",
            group=scenario.group.group,
        )
    )
    assert committed == dict.fromkeys(scenario.group.partitions, RECORDS_PER_PARTITION)
