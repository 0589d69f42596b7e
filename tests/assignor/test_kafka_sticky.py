"""Cases ported from Kafka's AbstractStickyAssignorTest (run there for both StickyAssignor
and CooperativeStickyAssignor). Expected values are Kafka's.

Kafka's tests check ``partitionsTransferringOwnership`` of the shared builder; the
cooperative assignor's output is the builder's minus exactly those partitions, which is
what we compare. The tests build subscriptions in a default ``HashMap``, like Kafka's
consumer coordinator, so HashMap-order tie-breaks are Kafka's own.
"""

from __future__ import annotations

import pytest

from services.assignor import assign
from tests.assignor.helpers import assert_balanced, assert_valid, member, tps

BOTH = pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])


def run(assignor, counts, specs):
    members = [
        member(mid, topics, tps(owned), generation) for mid, topics, owned, generation in specs
    ]
    result = assign(assignor, counts, members)
    assert_valid_unless_cooperative(assignor, result, counts, members)
    return result


def assert_valid_unless_cooperative(assignor, result, counts, members):
    if assignor == "sticky":
        assert_valid(result, counts, members)
        assert_balanced(result, members)


def expect(assignor, result, expected, transferring=(), ordered=True):
    """``expected`` is the builder's answer; the cooperative one drops ``transferring``."""
    moving = set(tps(", ".join(transferring)))
    for mid, text in expected.items():
        want = tps(text)
        if assignor == "cooperative-sticky":
            want = [tp for tp in want if tp not in moving]
        got = result[mid]
        assert (got if ordered else sorted(got)) == (want if ordered else sorted(want)), mid


T12 = ["topic1", "topic2"]


@BOTH
def test_consumer_owning_min_quota_expected_max_quota(assignor):
    result = run(
        assignor,
        {"topic1": 2, "topic2": 3},
        [
            ("consumer1", T12, "topic1-0, topic2-1", 1),
            ("consumer2", T12, "topic1-1, topic2-2", 1),
        ],
    )
    expect(
        assignor,
        result,
        {"consumer1": "topic1-0, topic2-1, topic2-0", "consumer2": "topic1-1, topic2-2"},
    )


@BOTH
def test_max_quota_consumers_more_than_expected(assignor):
    """HashMap order (consumer3, consumer2, consumer1) lets consumer2 keep two."""
    result = run(
        assignor,
        {"topic1": 2, "topic2": 2},
        [
            ("consumer1", T12, "topic1-0, topic2-0", 1),
            ("consumer2", T12, "topic1-1, topic2-1", 1),
            ("consumer3", T12, "", 1),
        ],
    )
    expect(
        assignor,
        result,
        {"consumer1": "topic1-0", "consumer2": "topic1-1, topic2-1", "consumer3": "topic2-0"},
        transferring=["topic2-0"],
    )


@BOTH
def test_all_consumers_under_min_quota(assignor):
    result = run(
        assignor,
        {"topic1": 2, "topic2": 3},
        [
            ("consumer1", T12, "topic1-0", 1),
            ("consumer2", T12, "topic1-1", 1),
            ("consumer3", T12, "", 1),
        ],
    )
    expect(
        assignor,
        result,
        {
            "consumer1": "topic1-0, topic2-1",
            "consumer2": "topic1-1, topic2-2",
            "consumer3": "topic2-0",
        },
    )


@BOTH
def test_add_remove_two_consumers_two_topics(assignor):
    counts = {"topic1": 3, "topic2": 4}
    first = run(assignor, counts, [("consumer1", T12, "", -1), ("consumer2", T12, "", -1)])
    expect(
        assignor,
        first,
        {
            "consumer1": "topic1-0, topic1-2, topic2-1, topic2-3",
            "consumer2": "topic1-1, topic2-0, topic2-2",
        },
    )
    owned1, owned2 = "topic1-0, topic1-2, topic2-1, topic2-3", "topic1-1, topic2-0, topic2-2"
    second = run(
        assignor,
        counts,
        [
            ("consumer1", T12, owned1, 1),
            ("consumer2", T12, owned2, 1),
            ("consumer3", T12, "", 1),
            ("consumer4", T12, "", 1),
        ],
    )
    expect(
        assignor,
        second,
        {
            "consumer1": "topic1-0, topic2-1",
            "consumer2": "topic2-0, topic1-1",
            "consumer3": "topic1-2, topic2-3",
            "consumer4": "topic2-2",
        },
        transferring=["topic1-2", "topic2-3", "topic2-2"],
    )
    third = run(
        assignor,
        counts,
        [
            ("consumer3", T12, "topic1-2, topic2-3", 1),
            ("consumer4", T12, "topic2-2", 1),
        ],
    )
    expect(
        assignor,
        third,
        {
            "consumer3": "topic1-2, topic2-3, topic1-0, topic2-1",
            "consumer4": "topic2-2, topic1-1, topic2-0",
        },
    )


def test_topic_balance_after_reassignment():
    """Kafka asserts per-topic counts on the builder's answer, i.e. the eager one."""
    assignor = "sticky"
    counts = {"topic1": 12, "topic2": 12}

    def per_topic(result):
        return {
            mid: sorted(sum(1 for t, _ in parts if t == topic) for topic in counts)
            for mid, parts in result.items()
        }

    first = run(assignor, counts, [("consumer1", T12, "", -1)])
    second = run(
        assignor,
        counts,
        [
            ("consumer1", T12, ", ".join(f"{t}-{p}" for t, p in first["consumer1"]), 1),
            ("consumer2", T12, "", 1),
        ],
    )
    assert all(v == [6, 6] for v in per_topic(second).values())
    fmt = {m: ", ".join(f"{t}-{p}" for t, p in parts) for m, parts in second.items()}
    third = run(
        assignor,
        counts,
        [
            ("consumer1", T12, fmt["consumer1"], 1),
            ("consumer2", T12, fmt["consumer2"], 1),
            ("consumer3", T12, "", 1),
            ("consumer4", T12, "", 1),
        ],
    )
    assert all(v == [3, 3] for v in per_topic(third).values())


@BOTH
def test_all_consumers_reach_expected_quota(assignor):
    result = run(
        assignor,
        {"topic": 4},
        [
            ("consumer1", ["topic"], "topic-0, topic-1", 1),
            ("consumer2", ["topic"], "topic-2", 1),
            ("consumer3", ["topic"], "", 1),
        ],
    )
    expect(
        assignor,
        result,
        {"consumer1": "topic-0, topic-1", "consumer2": "topic-2", "consumer3": "topic-3"},
    )


@BOTH
@pytest.mark.parametrize("older", [9, -1])
def test_owned_partitions_invalidated_for_stale_or_missing_generation(assignor, older):
    claimed = "topic-0, topic-2, topic2-1"
    result = run(
        assignor,
        {"topic": 3, "topic2": 3},
        [
            ("consumer1", ["topic", "topic2"], claimed, 10),
            ("consumer2", ["topic", "topic2"], claimed, older),
        ],
    )
    expect(
        assignor,
        result,
        {"consumer1": claimed, "consumer2": "topic-1, topic2-0, topic2-2"},
        ordered=False,
    )


@BOTH
def test_owned_partitions_invalidated_for_multiple_generations(assignor):
    result = run(
        assignor,
        {"topic": 3, "topic2": 3},
        [
            ("consumer1", ["topic", "topic2"], "topic-0, topic2-1, topic-1", 10),
            ("consumer2", ["topic", "topic2"], "topic-0, topic2-1, topic2-2", 8),
        ],
    )
    expect(
        assignor,
        result,
        {"consumer1": "topic-0, topic2-1, topic-1", "consumer2": "topic-2, topic2-2, topic2-0"},
        ordered=False,
    )


@BOTH
def test_partition_claimed_twice_in_one_generation_transfers(assignor):
    result = run(
        assignor,
        {"topic": 3},
        [
            ("consumer1", ["topic"], "topic-0, topic-1", 1),
            ("consumer2", ["topic"], "topic-0, topic-2", 1),
            ("consumer3", ["topic"], "", 1),
        ],
    )
    expect(
        assignor,
        result,
        {"consumer1": "topic-1", "consumer2": "topic-2", "consumer3": "topic-0"},
        transferring=["topic-0"],
    )


@BOTH
def test_partitions_go_to_the_highest_generation(assignor):
    three = ["topic", "topic2", "topic3"]
    result = run(
        assignor,
        {"topic": 3, "topic2": 3, "topic3": 3},
        [
            ("consumer1", three, "topic-0, topic2-0, topic3-0", 10),
            ("consumer2", three, "topic-1, topic2-1, topic3-1", 9),
            ("consumer3", three, "topic2-1, topic3-0, topic3-2", 8),
        ],
    )
    expect(
        assignor,
        result,
        {
            "consumer1": "topic-0, topic2-0, topic3-0",
            "consumer2": "topic-1, topic2-1, topic3-1",
            "consumer3": "topic-2, topic2-2, topic3-2",
        },
        ordered=False,
    )


@BOTH
def test_no_reassignment_on_current_members(assignor):
    four = ["topic", "topic2", "topic3", "topic1"]
    counts = dict.fromkeys(["topic", "topic1", "topic2", "topic3"], 3)
    result = run(
        assignor,
        counts,
        [
            ("consumer1", four, "", -1),
            ("consumer2", four, "topic-0, topic2-0, topic1-0", 9),
            ("consumer3", four, "topic3-2, topic2-2, topic1-1", 8),
            ("consumer4", four, "topic3-1, topic-1, topic-2", 7),
        ],
    )
    expect(assignor, result, {"consumer1": "topic1-2, topic2-1, topic3-0"}, ordered=False)


@BOTH
def test_subscriptions_differ_and_one_partition_claimed_in_three_generations(assignor):
    for g1, g2, g3 in [(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)]:
        members = [
            member("consumer1", ["topic"], tps("topic-0, topic-2"), g1),
            member("consumer2", ["topic"], tps("topic-1, topic-2, topic-3"), g2),
            member("consumer3", ["topic"], tps("topic-2, topic-4, topic-5"), g3),
            member("consumer4", ["topic1"], tps("topic1-0"), 2),
        ]
        result = assign(assignor, {"topic": 6, "topic1": 1}, members)
        everything = [tp for parts in result.values() for tp in parts]
        assert len(everything) == len(set(everything))
        assert all(1 <= len(parts) <= 2 for parts in result.values())


@BOTH
def test_stickiness_when_the_leader_leaves(assignor):
    counts = {"topic1": 3}
    first = assign(assignor, counts, [member(f"consumer{i}", ["topic1"]) for i in range(1, 5)])
    assert all(len(p) <= 1 for p in first.values())
    survivors = [member(f"consumer{i}", ["topic1"], first[f"consumer{i}"], 1) for i in (2, 3, 4)]
    second = assign(assignor, counts, survivors)
    for m in survivors:
        assert len(second[m["id"]]) == 1
        assert set(first[m["id"]]) <= set(second[m["id"]])


def test_deleted_topics_are_skipped():
    result = assign(
        "sticky", {"topic1": 1, "topic3": 100}, [member("consumer", ["topic1", "topic2", "topic3"])]
    )
    assert len(result["consumer"]) == 101
    emptied = assign("sticky", {}, [member("consumer", ["topic"], tps("topic-0, topic-1"), 1)])
    assert emptied == {"consumer": []}


@BOTH
def test_double_claim_with_unequal_partitions_per_consumer(assignor):
    """CooperativeStickyAssignorTest: topic-0 must be revoked by both claimants first."""
    result = run(
        assignor,
        {"topic": 4},
        [
            ("consumer1", ["topic"], "topic-0, topic-1", 1),
            ("consumer2", ["topic"], "topic-0, topic-2", 1),
            ("consumer3", ["topic"], "", 1),
        ],
    )
    expect(
        assignor,
        result,
        {"consumer1": "topic-1, topic-3", "consumer2": "topic-2", "consumer3": "topic-0"},
        transferring=["topic-0"],
    )
