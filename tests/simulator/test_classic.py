"""The classic protocol: Kafka's state transitions, assignments from the assignor core,
cooperative two-round rebalances, static membership, timeouts, empty groups, deletion."""

from __future__ import annotations

import itertools
import struct

import pytest

from services.assignor import assign
from services.codec import partition_for
from tests.simulator.conftest import ALL
from tests.simulator.helpers import run

# ClassicGroupState: each state and the states it may be entered from.
CLASSIC = [n for n in ALL if n != "kip848"]
ALLOWED_FROM = {
    "PreparingRebalance": {"Stable", "CompletingRebalance", "Empty"},
    "CompletingRebalance": {"PreparingRebalance"},
    "Stable": {"CompletingRebalance"},
    "Empty": {"PreparingRebalance"},
    "Dead": {"Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"},
}
SESSION_TIMEOUT_MS = 45_000
INITIAL_REBALANCE_DELAY_MS = 3_000


def classic_groups(result):
    return [s.name for s in result.specs if s.protocol == "classic"]


@pytest.mark.parametrize("name", [*CLASSIC, "sticky", "roundrobin", "static-cooperative"])
def test_state_transitions_are_kafkas(scenario_runs, name):
    result = scenario_runs[name]
    for group in classic_groups(result):
        states = result.events(group, "state")
        assert states, group
        current = "Empty"
        for event in states:
            moved = event["details"]
            assert moved["from"] == current
            assert moved["from"] in ALLOWED_FROM[moved["to"]], moved
            current = moved["to"]


@pytest.mark.parametrize("name", [*CLASSIC, "sticky", "static-cooperative"])
def test_group_metadata_is_written_when_the_group_stabilizes_or_empties(scenario_runs, name):
    result = scenario_runs[name]
    for group in classic_groups(result):
        stable = {
            (e["time"], e["details"]["generation"])
            for e in result.events(group, "state")
            if e["details"]["to"] in ("Stable", "Empty")
        }
        static_rejoins = {e["time"] for e in result.events(group, "static-rejoin")}
        generations = []
        for row, rec in result.group_records(group, "group_metadata"):
            if rec["tombstone"]:
                continue
            value = rec["value"]
            if row["timestamp"] in static_rejoins:
                assert value["generation"] == generations[-1]
                continue
            assert (row["timestamp"], value["generation"]) in stable
            if not value["members"]:
                assert value["protocol"] is None and value["leader"] is None
            else:
                assert value["leader"] in {m["member_id"] for m in value["members"]}
                assert value["protocol"] == result.spec(group).assignor
            generations.append(value["generation"])
        assert generations == sorted(set(generations))
        assert generations


def test_the_first_rebalance_waits_for_the_initial_delay(scenario_runs):
    result = scenario_runs["steady"]
    group = "steady-0"
    first_join = min(e["time"] for e in result.events(group, "join"))
    row, rec = result.group_records(group, "group_metadata")[0]
    assert rec["value"]["generation"] == 1
    assert row["timestamp"] - first_join >= INITIAL_REBALANCE_DELAY_MS
    assert len(rec["value"]["members"]) == 3


def _sticky_user_data(data: bytes) -> tuple[list, int]:
    """StickyAssignor's STICKY_ASSIGNOR_USER_DATA_V1, parsed by hand."""
    pos = 0
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    owned = []
    for _ in range(count):
        (n,) = struct.unpack_from(">h", data, pos)
        topic = data[pos + 2 : pos + 2 + n].decode()
        pos += 2 + n
        (k,) = struct.unpack_from(">i", data, pos)
        owned += [(topic, p) for p in struct.unpack_from(f">{k}i", data, pos + 4)]
        pos += 4 + 4 * k
    (generation,) = struct.unpack_from(">i", data, pos)
    return owned, generation


def _partition_counts(result, group, time):
    counts = dict(result.spec(group).topics)
    for event in result.events(group, "add-partitions"):
        if event["time"] <= time:
            counts[event["details"]["topic"]] = event["details"]["count"]
    return counts


def _assignor_members(protocol, value):
    members = []
    for m in value["members"]:
        sub = m["subscription"]
        owned = [(o["topic"], p) for o in sub["owned_partitions"] for p in o["partitions"]]
        generation = sub["generation_id"]
        if protocol == "sticky" and sub["user_data"]:
            owned, generation = _sticky_user_data(sub["user_data"])
        members.append(
            {
                "id": m["member_id"],
                "topics": sub["topics"],
                "owned": owned,
                "generation": None if generation < 0 else generation,
                "group_instance_id": m["group_instance_id"],
            }
        )
    return members


@pytest.mark.parametrize("name", [*CLASSIC, "sticky", "roundrobin", "static-cooperative"])
def test_assignment_in_group_metadata_is_the_assignor_cores(scenario_runs, name):
    result = scenario_runs[name]
    checked = 0
    for group in classic_groups(result):
        static_rejoins = {e["time"] for e in result.events(group, "static-rejoin")}
        for row, rec in result.group_records(group, "group_metadata"):
            value = rec["value"]
            if rec["tombstone"] or not value["members"] or row["timestamp"] in static_rejoins:
                continue
            protocol = value["protocol"]
            expected = assign(
                protocol,
                _partition_counts(result, group, row["timestamp"]),
                _assignor_members(protocol, value),
            )
            for member in value["members"]:
                got = [
                    (a["topic"], p)
                    for a in member["assignment"]["assigned_partitions"]
                    for p in a["partitions"]
                ]
                assert sorted(got) == sorted(expected[member["member_id"]])
            checked += 1
    assert checked


def _owners(value):
    return {
        (a["topic"], p): m["member_id"]
        for m in value["members"]
        for a in m["assignment"]["assigned_partitions"]
        for p in a["partitions"]
    }


def _direct_moves(result, group):
    """Partitions handed straight from one member to another that is still in the group."""
    records = [
        rec["value"]
        for _, rec in result.group_records(group, "group_metadata")
        if not rec["tombstone"]
    ]
    count = 0
    for before, after in itertools.pairwise(records):
        old, new = _owners(before), _owners(after)
        staying = {m["member_id"] for m in after["members"]}
        count += sum(1 for tp, o in new.items() if old.get(tp, o) != o and old[tp] in staying)
    return count


def test_cooperative_rebalances_take_two_generations(scenario_runs):
    result = scenario_runs["eager-vs-cooperative"]
    cooperative = "eager-vs-cooperative-0-cooperative-sticky"
    eager = "eager-vs-cooperative-0-range"
    # KIP-429: a partition never goes straight from one live member to another; the
    # first round revokes it (unassigned), the second assigns it.
    assert _direct_moves(result, cooperative) == 0
    assert _direct_moves(result, eager) > 0
    joins = [
        r
        for r in result.truth["rebalances"]
        if r["group"] == cooperative and r["joined"] and r["from_generation"] is not None
    ]
    assert joins
    total = sum(result.spec(cooperative).topics.values())
    by_generation = {
        rec["value"]["generation"]: rec["value"]
        for _, rec in result.group_records(cooperative, "group_metadata")
    }
    for episode in joins:
        first, second = episode["generations"]
        assert episode["cooperative"] is True
        assert len(_owners(by_generation[first])) < total  # revoked, unassigned
        assert len(_owners(by_generation[second])) == total
    eager_joins = [r for r in result.truth["rebalances"] if r["group"] == eager and r["joined"]]
    assert all(len(r["generations"]) == 1 for r in eager_joins)


def test_cooperative_groups_never_hand_partitions_over_directly(scenario_runs):
    result = scenario_runs["static-cooperative"]
    groups = classic_groups(result)
    assert len(groups) == 4
    for group in groups:
        assert _direct_moves(result, group) == 0, group


def test_static_members_survive_restarts_within_the_session_timeout(scenario_runs):
    result = scenario_runs["rolling-restart-static"]
    group = "rolling-restart-static-0"
    records = [rec["value"] for _, rec in result.group_records(group, "group_metadata")]
    assert len(records) == 1 + 4  # the first generation, then one store per restart
    assert {r["generation"] for r in records} == {1}
    assignment = {}
    member_ids = {}
    for value in records:
        for m in value["members"]:
            owned = sorted(
                (a["topic"], p)
                for a in m["assignment"]["assigned_partitions"]
                for p in a["partitions"]
            )
            assert assignment.setdefault(m["group_instance_id"], owned) == owned
            member_ids.setdefault(m["group_instance_id"], set()).add(m["member_id"])
    assert len(assignment) == 4 and None not in assignment
    assert all(len(ids) == 2 for ids in member_ids.values())  # a new member id per restart
    assert len([r for r in result.truth["rebalances"] if r["group"] == group]) == 1


def test_static_members_restarting_after_the_session_timeout_rebalance(tmp_path):
    result = run(tmp_path, "rolling-restart-static", downtime="60s", every="90s", members=2)
    group = "rolling-restart-static-0"
    expiries = result.events(group, "session-timeout")
    restarts = result.events(group, "restart")
    assert len(expiries) == len(restarts) == 2
    for restart, expiry in zip(restarts, expiries, strict=True):
        assert expiry["member"] == restart["member"]
        assert expiry["time"] - restart["time"] == SESSION_TIMEOUT_MS
    generations = [g["generation"] for g in result.truth["generations"] if g["group"] == group]
    assert generations == [1, 2, 3, 4, 5]  # each restart: removed, then back


def test_dynamic_members_rebalance_twice_per_restart(scenario_runs):
    result = scenario_runs["rolling-restart"]
    rebalances = [r for r in result.truth["rebalances"] if r["group"] == "rolling-restart-0"]
    assert len(rebalances) == 1 + 2 * 4
    assert [bool(r["left"]) for r in rebalances[1:]] == [True, False] * 4


def test_crashed_members_leave_after_the_session_timeout(scenario_runs):
    result = scenario_runs["crash-loop"]
    group = "crash-loop-0"
    crashes = {
        e["details"].get("member_id") or e["member"]: e for e in result.events(group, "crash")
    }
    expiries = result.events(group, "session-timeout")
    assert len(expiries) >= 5
    for expiry in expiries:
        crash = crashes[expiry["member"]]
        assert expiry["time"] - crash["time"] == SESSION_TIMEOUT_MS
    storm = [
        r
        for r in result.truth["rebalances"]
        if r["group"] == group and r["time"] - result.summary["start"] <= 10 * 60_000
    ]
    # A storm by default: 5 rebalances in 10 minutes (docs/architecture.md, "Storms").
    assert len(storm) >= 5


def test_slow_consumer_is_kicked_after_max_poll_interval(scenario_runs):
    result = scenario_runs["slow-consumer"]
    group = "slow-consumer-0"
    stalls = result.events(group, "stall")
    kicks = result.events(group, "poll-timeout")
    assert len(kicks) == 2
    for stall, kick in zip(stalls, kicks, strict=True):
        assert kick["member"] == stall["member"]
        assert kick["time"] - stall["time"] == 60_000  # the scenario's max.poll.interval.ms
        after = [
            g
            for g in result.truth["generations"]
            if g["group"] == group and g["time"] > kick["time"]
        ]
        assert kick["member"] not in after[0]["assignment"]


def test_a_static_member_stalled_past_the_rebalance_timeout_is_removed(tmp_path):
    result = run(tmp_path, "slow-consumer", static="true")
    group = "slow-consumer-0"
    [join] = [
        e for e in result.events(group, "join") if e["time"] > result.summary["start"] + 60_000 * 5
    ]
    [timeout] = result.events(group, "rebalance-timeout")
    assert timeout["member"] == "slow-consumer-0-instance-2"
    prepare = next(
        e["time"]
        for e in result.events(group, "state")
        if e["details"]["to"] == "PreparingRebalance" and e["time"] >= join["time"]
    )
    assert timeout["time"] - prepare == 60_000


def test_an_emptied_group_writes_its_empty_generation_and_deletion_tombstones(tmp_path):
    result = run(tmp_path, "scale-in", members=2, to=0, delete_after="4m")
    group = "scale-in-0"
    records = result.group_records(group)
    metadata = [rec for _, rec in records if rec["record_type"] == "group_metadata"]
    empty = metadata[-2]["value"]
    assert empty["members"] == [] and empty["generation"] == 3 and empty["protocol"] is None
    assert metadata[-1]["tombstone"]
    committed_keys = {
        (rec["key"]["topic"], rec["key"]["partition"])
        for _, rec in records
        if rec["record_type"] == "offset_commit" and not rec["tombstone"]
    }
    tail = records[-len(committed_keys) - 1 :]
    tombstoned = {(rec["key"]["topic"], rec["key"]["partition"]) for _, rec in tail[:-1]}
    assert all(rec["tombstone"] for _, rec in tail)
    assert tombstoned == committed_keys
    assert [e["details"]["to"] for e in result.events(group, "state")][-1] == "Dead"
    assert not [c for c in result.truth["commits"] if c["group"] == group]
    assert all(row["partition"] == partition_for(group) for row, _ in records)
