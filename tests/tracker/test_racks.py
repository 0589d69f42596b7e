"""Rack-aware baselines (KIP-881): the members' racks from the records, the partitions'
replica racks handed in by the caller (`GenerationTracker.partition_racks`)."""

from __future__ import annotations

from services.tracker import GenerationTracker
from tests.tracker.test_generations import classic, feed, kip848_records, member, tp

# Partitions 0 and 1 of "t" on rack-a, 2 and 3 on rack-b (one replica each).
RACKS = {"t": [("rack-a",), ("rack-a",), ("rack-b",), ("rack-b",)]}


def racked(mid: str, assigned: list[dict], rack: str) -> dict:
    out = member(mid, assigned)
    out["subscription"]["rack_id"] = rack
    return out


def off_rack_then_a_join() -> list[dict]:
    """a (rack-a) owns 2 and 3, b (rack-b) owns 0 and 1: every partition off its owner's
    rack (placed before the replicas moved, say). Then c (rack-c) joins, and the group
    gets what Kafka 4.3.1's StickyAssignor gives with racks."""
    return [
        classic(
            "g",
            1,
            "sticky",
            [racked("a", tp("t", 2, 3), "rack-a"), racked("b", tp("t", 0, 1), "rack-b")],
        ),
        classic(
            "g",
            2,
            "sticky",
            [
                racked("a", tp("t", 0, 1), "rack-a"),
                racked("b", tp("t", 2), "rack-b"),
                racked("c", tp("t", 3), "rack-c"),
            ],
        ),
    ]


def baseline_of(partition_racks: dict) -> tuple[int, int | None, int]:
    tracker = GenerationTracker()
    tracker.partition_racks = partition_racks
    feed(tracker, off_rack_then_a_join())
    churn = tracker.drain()[0][1].rebalance
    return churn.moved, churn.baseline_moves, churn.minimum_moves


def test_a_rack_aware_rebalance_is_measured_against_the_rack_aware_baseline() -> None:
    """4 partitions, 3 members: quotas 1 and 2, one member may keep 2. Racks are in use
    (`useRackAwareAssignment`: the members' racks meet the replicas' racks, and the
    partitions' racks differ). Kafka's `ConstrainedAssignmentBuilder.assignOwnedPartitions`
    keeps no owned partition off its owner's rack, so a and b keep nothing; the rack-aware
    round robin deals 0 and 1 to a, 2 to b, and 3 (b is full) to c on no partition's rack:
    all 4 partitions change owner. Without racks the same builder lets a keep 2 and 3 and
    b keep 0, and only 1 moves, to c. (Kafka's own StickyAssignor, through
    tests/assignor/kafka_java.py, returned both assignments for this input.) The group
    did what Kafka does with racks: excess 0 against the rack-aware baseline, 3 against
    the rackless one; the minimum is 1 either way."""
    assert baseline_of(RACKS) == (4, 4, 1)
    assert baseline_of({}) == (4, 1, 1)


def test_racks_that_do_not_cover_the_partitions_are_not_used() -> None:
    """Racks of fewer partitions than the records assign (a stale answer) describe other
    partitions: the topic's racks are left out, and the baseline is the rackless one.
    Racks of more partitions (added since) are cut to those the records show."""
    assert baseline_of({"t": RACKS["t"][:3]}) == (4, 1, 1)
    assert baseline_of({"t": [*RACKS["t"], ("rack-a",), ("rack-b",)]}) == (4, 4, 1)


def test_rack_topics_are_those_of_generations_with_a_rack() -> None:
    """Only a classic generation in which a member states a rack can assign by rack: its
    subscribed topics, with the partitions assigned (highest + 1), or 0 if none are.
    A generation without racks and KIP-848 records (Kafka 4.3.1's server-side
    assignors ignore racks) ask for none."""
    plain = classic("p", 1, "sticky", [member("x", tp("u", 0, 7), topics=("u",))])
    idle = racked("d", [], "rack-a")
    idle["subscription"]["topics"] = ["t", "idle"]
    records = [*off_rack_then_a_join(), plain, classic("q", 1, "range", [idle])]
    assert GenerationTracker.rack_topics(records) == {"t": 4, "idle": 0}
    assert GenerationTracker.rack_topics([plain, *kip848_records(named=True)]) == {}
