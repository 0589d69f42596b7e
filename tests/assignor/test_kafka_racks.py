"""Rack-aware cases ported from Kafka's RangeAssignorTest and AbstractStickyAssignorTest.

Kafka's helper places partition i of each topic (topics in declaration order, a running
index across topics) on brokers ``(i + j + index) % brokers`` for each replica j.
Kafka's StickyAssignor reads the previous assignment from its user data, which those tests
leave empty, so its "owned" variants are fresh assignments here; CooperativeStickyAssignor
reads ``ownedPartitions``.
"""

from __future__ import annotations

import pytest

from services.assignor import assign
from tests.assignor.helpers import assert_valid, member, tps

TOPICS = {"t1": 6, "t2": 7, "t3": 2}
ALL = ["t1", "t2", "t3"]
EQUAL = [ALL, ALL, ALL]
UNEQUAL = [ALL, ALL, ["t1", "t3"]]


def racks(n: int) -> list[str]:
    return ["abcdef"[i % 6] for i in range(n)]


NULL3 = [None, None, None]


def partition_racks(topics: dict, replication: int, broker_racks: list) -> dict:
    result, index = {}, 0
    for topic, count in topics.items():
        per_partition = []
        for i in range(count):
            replicas = [
                broker_racks[(i + j + index) % len(broker_racks)] for j in range(replication)
            ]
            per_partition.append([r for r in replicas if r is not None])
        result[topic] = per_partition
        index += count
    return result


def run(assignor, topics, replication, broker_racks, consumer_racks, consumer_topics, owned=None):
    placement = partition_racks(topics, replication, broker_racks)
    members = [
        member(f"consumer{i}", t, tps(owned[i]) if owned else (), rack=consumer_racks[i])
        for i, t in enumerate(consumer_topics)
    ]
    result = assign(assignor, topics, members, placement)
    if not assignor.startswith("cooperative"):
        assert_valid(result, topics, members)
    mismatched = sum(
        1
        for i, m in enumerate(members)
        if m["rack"] is not None
        for topic, p in result[m["id"]]
        if m["rack"] not in placement[topic][p]
    )
    return [sorted(result[f"consumer{i}"]) for i in range(len(members))], mismatched


def expect(texts):
    return [sorted(tps(t)) for t in texts]


RANGE_PLAIN = [
    "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
    "t1-2, t1-3, t2-3, t2-4, t3-1",
    "t1-4, t1-5, t2-5, t2-6",
]


@pytest.mark.parametrize(
    ("replication", "brokers", "consumers", "expected", "mismatched"),
    [
        (3, racks(3), NULL3, RANGE_PLAIN, None),
        (3, NULL3, racks(3), RANGE_PLAIN, None),
        (
            1,
            racks(3),
            racks(3),
            [
                "t1-0, t1-3, t2-0, t2-3, t2-6",
                "t1-1, t1-4, t2-1, t2-4, t3-0",
                "t1-2, t1-5, t2-2, t2-5, t3-1",
            ],
            0,
        ),
        (
            2,
            racks(3),
            racks(3),
            [
                "t1-0, t1-2, t2-0, t2-2, t2-3, t3-1",
                "t1-1, t1-3, t2-1, t2-4, t3-0",
                "t1-4, t1-5, t2-5, t2-6",
            ],
            1,
        ),
        (3, racks(2), racks(3), RANGE_PLAIN, 4),
    ],
)
def test_range_rack_aware_uniform_subscription(
    replication, brokers, consumers, expected, mismatched
):
    got, wrong = run("range", TOPICS, replication, brokers, consumers, EQUAL)
    assert got == expect(expected)
    if mismatched is not None:
        assert wrong == mismatched


@pytest.mark.parametrize(
    ("replication", "brokers", "consumers", "expected", "mismatched"),
    [
        (
            3,
            racks(3),
            NULL3,
            [
                "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
                "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
                "t1-4, t1-5",
            ],
            None,
        ),
        (
            1,
            racks(3),
            racks(3),
            [
                "t1-0, t1-3, t2-0, t2-2, t2-3, t2-6",
                "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0",
                "t1-2, t1-5, t3-1",
            ],
            2,
        ),
        (
            2,
            racks(3),
            racks(3),
            [
                "t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1",
                "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0",
                "t1-4, t1-5",
            ],
            0,
        ),
    ],
)
def test_range_rack_aware_unequal_subscription(
    replication, brokers, consumers, expected, mismatched
):
    got, wrong = run("range", TOPICS, replication, brokers, consumers, UNEQUAL)
    assert got == expect(expected)
    if mismatched is not None:
        assert wrong == mismatched


def test_range_co_partitioning_wins_over_rack_alignment():
    topics = {"t1": 5, "t2": 5, "t3": 5}
    plain = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t3-1",
        "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
        "t1-4, t2-4, t3-4",
    ]
    for replication, brokers, mismatched in ((1, racks(3), 10), (2, racks(3), 5), (3, racks(2), 3)):
        got, wrong = run("range", topics, replication, brokers, racks(3), EQUAL)
        assert (got, wrong) == (expect(plain), mismatched)


STICKY_EQUAL = [
    "t1-0, t1-3, t2-0, t2-3, t2-6",
    "t1-1, t1-4, t2-1, t2-4, t3-0",
    "t1-2, t1-5, t2-2, t2-5, t3-1",
]
STICKY_UNEQUAL = [
    "t1-5, t2-0, t2-2, t2-4, t2-6",
    "t1-3, t2-1, t2-3, t2-5, t3-0",
    "t1-0, t1-1, t1-2, t1-4, t3-1",
]


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize(
    ("replication", "brokers", "consumers", "mismatched"),
    [
        (3, NULL3, racks(3), None),
        (3, racks(3), NULL3, None),
        (3, racks(3), racks(3), 0),
        (3, racks(3), ["d", "e", "f"], None),
        (3, racks(3), [None, "e", "f"], None),
        (1, racks(3), racks(3), 0),
        (2, racks(3), racks(3), 0),
        (3, racks(2), racks(3), 5),
    ],
)
def test_sticky_rack_aware_uniform_subscription(
    assignor, replication, brokers, consumers, mismatched
):
    for owned in (None, STICKY_EQUAL):
        got, wrong = run(assignor, TOPICS, replication, brokers, consumers, EQUAL, owned)
        assert got == expect(STICKY_EQUAL)
        if mismatched is not None:
            assert wrong == mismatched


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize(
    ("replication", "brokers", "consumers", "expected", "mismatched"),
    [
        (3, NULL3, racks(3), STICKY_UNEQUAL, None),
        (3, racks(3), NULL3, STICKY_UNEQUAL, None),
        (3, racks(3), racks(3), STICKY_UNEQUAL, 0),
        (3, racks(3), ["d", "e", "f"], STICKY_UNEQUAL, None),
        (3, racks(3), [None, "e", "f"], STICKY_UNEQUAL, None),
        (
            1,
            racks(3),
            racks(3),
            [
                "t1-3, t2-0, t2-2, t2-3, t2-6",
                "t1-4, t2-1, t2-4, t2-5, t3-0",
                "t1-0, t1-1, t1-2, t1-5, t3-1",
            ],
            4,
        ),
        (
            2,
            racks(3),
            racks(3),
            [
                "t1-3, t2-0, t2-2, t2-5, t2-6",
                "t1-0, t2-1, t2-3, t2-4, t3-0",
                "t1-1, t1-2, t1-4, t1-5, t3-1",
            ],
            0,
        ),
        (3, racks(2), racks(3), STICKY_UNEQUAL, 5),
    ],
)
def test_sticky_rack_aware_unequal_subscription(
    assignor, replication, brokers, consumers, expected, mismatched
):
    for owned in (None, expected):
        got, wrong = run(assignor, TOPICS, replication, brokers, consumers, UNEQUAL, owned)
        assert got == expect(expected)
        if mismatched is not None:
            assert wrong == mismatched


MISALIGNED = [
    "t1-0, t1-1, t1-2, t1-3, t1-4",
    "t1-5, t2-0, t2-1, t2-2, t2-3",
    "t2-4, t2-5, t2-6, t3-0, t3-1",
]


def test_cooperative_improves_rack_alignment_in_two_rounds():
    intermediate = ["t1-3", "t2-1", "t3-1"]
    got, wrong = run("cooperative-sticky", TOPICS, 1, racks(3), racks(3), UNEQUAL, MISALIGNED)
    assert (got, wrong) == (expect(intermediate), 0)
    final = [
        "t1-3, t2-0, t2-2, t2-3, t2-6",
        "t1-4, t2-1, t2-4, t2-5, t3-0",
        "t1-0, t1-1, t1-2, t1-5, t3-1",
    ]
    got, wrong = run("cooperative-sticky", TOPICS, 1, racks(3), racks(3), UNEQUAL, intermediate)
    assert (got, wrong) == (expect(final), 4)


def test_cooperative_stays_sticky_when_all_racks_match():
    intermediate = ["t1-2, t1-3, t1-4", "t2-0, t2-1, t2-2, t2-3", "t3-0, t3-1"]
    final = [
        "t1-2, t1-3, t1-4, t2-4, t2-5",
        "t2-0, t2-1, t2-2, t2-3, t2-6",
        "t1-0, t1-1, t1-5, t3-0, t3-1",
    ]
    got, _ = run("cooperative-sticky", TOPICS, 3, racks(3), racks(3), UNEQUAL, MISALIGNED)
    assert got == expect(intermediate)
    got, _ = run("cooperative-sticky", TOPICS, 3, racks(3), racks(3), UNEQUAL, intermediate)
    assert got == expect(final)


def test_range_uniform_partitions_unequal_subscription():
    topics = {"t1": 5, "t2": 5, "t3": 5}
    plain = [
        "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
        "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
        "t1-4, t3-4",
    ]
    cases = [
        (3, NULL3, plain, None),
        (
            1,
            racks(3),
            [
                "t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1",
                "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
                "t1-4, t3-4",
            ],
            9,
        ),
        (
            2,
            racks(3),
            [
                "t1-2, t2-0, t2-1, t2-3, t3-2",
                "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3",
                "t1-1, t1-4, t3-1, t3-4",
            ],
            0,
        ),
        (3, racks(2), plain, 2),
    ]
    for replication, brokers, expected, mismatched in cases:
        got, wrong = run("range", topics, replication, brokers, racks(3), UNEQUAL)
        assert got == expect(expected)
        if mismatched is not None:
            assert wrong == mismatched


def test_range_rack_aware_co_partitioning():
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    consumer_racks = ["a", "b", "b", "a"]
    pairs = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    plain = [
        "t1-0, t1-1, t1-2, t2-0, t2-1, t2-2",
        "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5",
        "t3-0, t4-0",
        "t3-1, t4-1",
    ]
    everything = [list(topics)] * 4
    plain_all = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0",
        "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1",
        "t1-4, t2-4",
        "t1-5, t2-5",
    ]
    cases = [
        (pairs, 3, racks(2), plain, None),
        (pairs, 2, racks(2), plain, 0),
        (
            pairs,
            1,
            racks(2),
            [
                "t1-0, t1-2, t1-4, t2-0, t2-2, t2-4",
                "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5",
                "t3-1, t4-1",
                "t3-0, t4-0",
            ],
            0,
        ),
        (everything, 3, racks(2), plain_all, None),
        (everything, 2, racks(2), plain_all, 0),
        (
            everything,
            1,
            racks(2),
            [
                "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0",
                "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1",
                "t1-5, t2-5",
                "t1-4, t2-4",
            ],
            0,
        ),
        (
            everything,
            1,
            racks(3),
            [
                "t1-0, t1-3, t2-0, t2-3, t3-0, t4-0",
                "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1",
                "t1-2, t2-2",
                "t1-5, t2-5",
            ],
            6,
        ),
    ]
    for consumer_topics, replication, brokers, expected, mismatched in cases:
        got, wrong = run("range", topics, replication, brokers, consumer_racks, consumer_topics)
        assert got == expect(expected)
        if mismatched is not None:
            assert wrong == mismatched


def test_range_co_partitioned_same_subscription_with_missing_topics():
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    subscribed = [f"t{i}" for i in range(1, 10)]
    plain = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
        "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2",
        "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3",
    ]
    got, _ = run("range", topics, 3, NULL3, racks(3), [subscribed] * 3)
    assert got == expect(plain)
    rack_aware = [
        "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1",
        "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
        "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3",
    ]
    got, wrong = run("range", topics, 2, racks(3), racks(3), [subscribed] * 3)
    assert (got, wrong) == (expect(rack_aware), 0)


def test_misaligned_owned_partitions_move_to_their_racks():
    """AbstractStickyAssignorTest, uniform subscription: owned partitions off the member's
    rack are dropped before quotas are counted (Kafka's test checks the builder's answer,
    before the cooperative assignor's adjustment)."""
    got, wrong = run("sticky", TOPICS, 1, racks(3), racks(3), EQUAL, MISALIGNED)
    assert (got, wrong) == (expect(STICKY_EQUAL), 0)


def test_cooperative_holds_back_misaligned_partitions_that_change_owner():
    """ConstrainedAssignmentBuilder counts an owned partition off its owner's rack as
    maybe revoked, so CooperativeStickyAssignor leaves it out of this round when it goes
    to another member (checked against Kafka 4.3.1's class): each member gets the sticky
    target less the partitions another member still owns."""
    got, wrong = run("cooperative-sticky", TOPICS, 1, racks(3), racks(3), EQUAL, MISALIGNED)
    owned = [set(tps(text)) for text in MISALIGNED]
    others = [set().union(*owned[:i], *owned[i + 1 :]) for i in range(len(owned))]
    held_back = [
        [tp for tp in target if tp not in others[i]]
        for i, target in enumerate(expect(STICKY_EQUAL))
    ]
    assert (got, wrong) == (held_back, 0)
    assert got == expect(["t1-0, t1-3", "t2-1", "t2-5, t3-1"])
