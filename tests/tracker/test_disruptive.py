"""Which rebalances disrupt consumption (and so count in storms), per protocol."""

from __future__ import annotations

from datetime import timedelta

from services.tracker import GenerationTracker, Position
from services.tracker.state import dump, load
from tests.tracker.test_generations import (
    T0,
    classic,
    epoch,
    kip848,
    member,
    member_meta,
    partition_metadata,
    target,
    target_epoch,
    tp,
)


def feed_at(
    tracker: GenerationTracker, timed: list[tuple[float, list[dict]]], offset: int = 0
) -> None:
    """Records at T0 + seconds, in log order, from source offset `offset` on."""
    for seconds, records in timed:
        for record in records:
            tracker.add(record, Position(7, offset, T0 + timedelta(seconds=seconds)))
            offset += 1


def flags(tracker: GenerationTracker) -> list[bool | None]:
    generations, _ = tracker.drain()
    return [None if g.rebalance is None else g.rebalance.disruptive for g in generations]


def kip848_epoch(n: int, targets: dict[str, list[int]]) -> list[dict]:
    return [*epoch(n), *(target(m, ps) for m, ps in targets.items()), target_epoch(n)]


def leave(mid: str) -> dict:
    return kip848("consumer_group_member_metadata", {"group_id": "k", "member_id": mid}, None)


def test_kip848_formation_leaves_and_idle_epochs_do_not_disrupt_but_a_later_join_does() -> None:
    """Members' rebalance timeout is 1 s (member_meta). m1 and m2 form the group within it;
    m2 leaves (its partitions go to m1, nobody loses any); m3 joins 60 s later and takes
    partitions from m1; an epoch moves nothing."""
    tracker = GenerationTracker()
    feed_at(
        tracker,
        [
            (
                0.0,
                [member_meta("m1"), partition_metadata(), *kip848_epoch(1, {"m1": [0, 1, 2, 3]})],
            ),
            (0.4, [member_meta("m2"), *kip848_epoch(2, {"m1": [0, 1], "m2": [2, 3]})]),
            (30, [leave("m2"), *kip848_epoch(3, {"m1": [0, 1, 2, 3]})]),
            (60, [member_meta("m3"), *kip848_epoch(4, {"m1": [0, 1], "m3": [2, 3]})]),
            (90, kip848_epoch(5, {"m1": [0, 1], "m3": [2, 3]})),
        ],
    )
    assert flags(tracker) == [None, False, False, True, False]


def test_kip848_a_join_after_the_first_rebalance_timeout_disrupts() -> None:
    tracker = GenerationTracker()
    feed_at(
        tracker,
        [
            (
                0.0,
                [member_meta("m1"), partition_metadata(), *kip848_epoch(1, {"m1": [0, 1, 2, 3]})],
            ),
            (5.0, [member_meta("m2"), *kip848_epoch(2, {"m1": [0, 1], "m2": [2, 3]})]),
        ],
    )
    assert flags(tracker) == [None, True]


def test_eager_every_rebalance_after_formation_disrupts_even_a_leave() -> None:
    """Rebalance timeout 300 s (member()). a and b form at 0 s and 2 s; c joins after the
    timeout; b leaves (a and c revoke everything under eager); then all leave (no running
    member left to disrupt); a new formation from empty does not disrupt either."""
    a, b, c = (lambda ps, m=m: member(m, ps) for m in "abc")
    tracker = GenerationTracker()
    feed_at(
        tracker,
        [
            (0, [classic("e", 1, "range", [a(tp("t", 0, 1, 2, 3))])]),
            (2, [classic("e", 2, "range", [a(tp("t", 0, 1)), b(tp("t", 2, 3))])]),
            (400, [classic("e", 3, "range", [a(tp("t", 0)), b(tp("t", 1, 2)), c(tp("t", 3))])]),
            (500, [classic("e", 4, "range", [a(tp("t", 0, 1)), c(tp("t", 2, 3))])]),
            (600, [classic("e", 5, "range", [])]),
            (700, [classic("e", 6, "range", [a(tp("t", 0, 1, 2, 3))])]),
            (701, [classic("e", 7, "range", [a(tp("t", 0, 1)), b(tp("t", 2, 3))])]),
        ],
    )
    assert flags(tracker) == [None, False, True, True, False, False, False]


def test_eager_a_member_leaving_ends_formation() -> None:
    a, b, c = (lambda ps, m=m: member(m, ps) for m in "abc")
    tracker = GenerationTracker()
    feed_at(
        tracker,
        [
            (0, [classic("e", 1, "range", [a(tp("t", 0, 1)), b(tp("t", 2, 3))])]),
            (1, [classic("e", 2, "range", [a(tp("t", 0, 1, 2, 3))])]),
            (2, [classic("e", 3, "range", [a(tp("t", 0, 1)), c(tp("t", 2, 3))])]),
        ],
    )
    assert flags(tracker) == [None, True, True]


def test_cooperative_a_leave_takes_nothing_but_a_join_that_revokes_disrupts() -> None:
    """a and b after formation (first seen at generation 7: formation not seen). b leaves:
    a gets its partitions, nothing revoked from a. c joins: a revokes t-2, t-3 (episode)."""
    coop = "cooperative-sticky"
    a, b, c = (lambda ps, m=m: member(m, ps) for m in "abc")
    tracker = GenerationTracker()
    feed_at(
        tracker,
        [
            (0, [classic("co", 7, coop, [a(tp("t", 0, 1)), b(tp("t", 2, 3))])]),
            (10, [classic("co", 8, coop, [a(tp("t", 0, 1, 2, 3))])]),
            (20, [classic("co", 9, coop, [a(tp("t", 0, 1)), c([])])]),
            (21, [classic("co", 10, coop, [a(tp("t", 0, 1)), c(tp("t", 2, 3))])]),
        ],
    )
    assert flags(tracker) == [None, False, None, True]


def test_a_restarted_tracker_remembers_that_a_group_is_forming() -> None:
    a, b = (lambda ps, m=m: member(m, ps) for m in "ab")
    tracker = GenerationTracker()
    feed_at(tracker, [(0, [classic("e", 1, "range", [a(tp("t", 0, 1, 2, 3))])])])
    tracker.drain()
    restarted = load(dump(tracker))
    assert restarted.last["e"].forming_until == T0 + timedelta(seconds=300)
    second = classic("e", 2, "range", [a(tp("t", 0, 1)), b(tp("t", 2, 3))])
    feed_at(restarted, [(1, [second])], offset=1)
    assert flags(restarted) == [False]
