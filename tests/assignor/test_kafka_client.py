"""Cases ported from Kafka's RangeAssignorTest, RoundRobinAssignorTest, StickyAssignorTest,
AbstractStickyAssignorTest and CooperativeStickyAssignorTest (expected values are Kafka's)."""

from __future__ import annotations

import pytest

from services.assignor import assign
from tests.assignor.helpers import assert_balanced, assert_valid, member, tps

T12 = ["topic1", "topic2"]


def test_range_mixed_topics():
    members = [
        member("consumer1", ["topic1"]),
        member("consumer2", T12),
        member("consumer3", ["topic1"]),
    ]
    result = assign("range", {"topic1": 3, "topic2": 2}, members)
    assert result == {
        "consumer1": tps("topic1-0"),
        "consumer2": tps("topic1-1, topic2-0, topic2-1"),
        "consumer3": tps("topic1-2"),
    }


@pytest.mark.parametrize("assignor", ["range", "roundrobin"])
def test_static_members_sort_by_instance_id(assignor):
    """consumer-b has instance1, consumer-a instance2: instance ids decide the order."""
    members = [
        member("consumer-b", T12, instance="instance1"),
        member("consumer-a", T12, instance="instance2"),
    ]
    result = assign(assignor, {"topic1": 3, "topic2": 3}, members)
    expected = {
        "range": ("topic1-0, topic1-1, topic2-0, topic2-1", "topic1-2, topic2-2"),
        "roundrobin": ("topic1-0, topic1-2, topic2-1", "topic1-1, topic2-0, topic2-2"),
    }[assignor]
    assert result == {"consumer-b": tps(expected[0]), "consumer-a": tps(expected[1])}


def test_range_static_member_beats_dynamic_member():
    members = [member("consumer-b", T12, instance="instance1"), member("consumer-a", T12)]
    result = assign("range", {"topic1": 3, "topic2": 3}, members)
    assert result["consumer-b"] == tps("topic1-0, topic1-1, topic2-0, topic2-1")
    assert result["consumer-a"] == tps("topic1-2, topic2-2")


def test_range_static_assignment_persists_when_a_dynamic_member_is_replaced():
    statics = [member(f"consumer{i}", T12, instance=f"instance{i}") for i in (1, 2, 3)]
    counts = {"topic1": 5, "topic2": 4}
    first = assign("range", counts, [*statics, member("consumer4", T12)])
    assert first == {
        "consumer1": tps("topic1-0, topic1-1, topic2-0"),
        "consumer2": tps("topic1-2, topic2-1"),
        "consumer3": tps("topic1-3, topic2-2"),
        "consumer4": tps("topic1-4, topic2-3"),
    }
    second = assign("range", counts, [*statics, member("consumer5", T12)])
    assert second["consumer5"] == first["consumer4"]
    assert all(second[m["id"]] == first[m["id"]] for m in statics)


def test_roundrobin_skips_members_not_subscribed():
    members = [
        member("consumer1", ["topic1"]),
        member("consumer2", T12),
        member("consumer3", ["topic1"]),
    ]
    result = assign("roundrobin", {"topic1": 3, "topic2": 2}, members)
    assert result == {
        "consumer1": tps("topic1-0"),
        "consumer2": tps("topic1-1, topic2-0, topic2-1"),
        "consumer3": tps("topic1-2"),
    }


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_sticky_fresh_assignments(assignor):
    two = [member("consumer1", T12), member("consumer2", T12)]
    assert assign(assignor, {"topic1": 3, "topic2": 3}, two) == {
        "consumer1": tps("topic1-0, topic1-2, topic2-1"),
        "consumer2": tps("topic1-1, topic2-0, topic2-2"),
    }
    mixed = [
        member("consumer1", ["topic1"]),
        member("consumer2", T12),
        member("consumer3", ["topic1"]),
    ]
    assert assign(assignor, {"topic1": 3, "topic2": 2}, mixed) == {
        "consumer1": tps("topic1-0, topic1-2"),
        "consumer2": tps("topic2-0, topic2-1"),
        "consumer3": tps("topic1-1"),
    }
    one = [member("consumer1", ["topic"]), member("consumer2", ["topic"])]
    assert assign(assignor, {"topic": 1}, one) == {"consumer1": tps("topic-0"), "consumer2": []}


def test_sticky_only_assigns_subscribed_topics():
    result = assign("sticky", {"topic": 3, "other": 3}, [member("consumer", ["topic"])])
    assert result == {"consumer": tps("topic-0, topic-1, topic-2")}


def test_sticky_add_and_remove_consumer():
    """AbstractStickyAssignorTest.testAddRemoveConsumerOneTopic: the owner keeps its
    lowest-numbered partitions (owned partitions sorted by partition, then topic)."""
    counts = {"topic": 3}
    first = assign("sticky", counts, [member("consumer", ["topic"])])
    second = assign(
        "sticky",
        counts,
        [member("consumer", ["topic"], first["consumer"], 1), member("consumer2", ["topic"])],
    )
    assert second == {"consumer": tps("topic-0, topic-1"), "consumer2": tps("topic-2")}
    third = assign("sticky", counts, [member("consumer2", ["topic"], second["consumer2"], 2)])
    assert sorted(third["consumer2"]) == tps("topic-0, topic-1, topic-2")


def test_higher_generation_wins_a_doubly_claimed_partition():
    """AbstractStickyAssignorTest: consumer1 (generation 10) and consumer2 (generation 8)."""
    members = [
        member("consumer1", ["topic", "topic2"], tps("topic-0, topic2-1, topic-1"), 10),
        member("consumer2", ["topic", "topic2"], tps("topic-0, topic2-1, topic2-2"), 8),
    ]
    for assignor in ("sticky", "cooperative-sticky"):
        result = assign(assignor, {"topic": 3, "topic2": 3}, members)
        assert set(result["consumer1"]) == set(tps("topic-0, topic2-1, topic-1"))
        assert set(result["consumer2"]) == set(tps("topic-2, topic2-2, topic2-0"))


def test_same_generation_double_claims_are_revoked_first_under_cooperative():
    """CooperativeStickyAssignorTest: a partition claimed twice in one generation is
    invalidated, so the cooperative assignor leaves it unassigned for this round."""
    members = [
        member("consumer1", ["topic"], tps("topic-0, topic-1"), 1),
        member("consumer2", ["topic"], tps("topic-0, topic-2"), 1),
        member("consumer3", ["topic"], (), 1),
    ]
    cooperative = assign("cooperative-sticky", {"topic": 3}, members)
    assert cooperative == {
        "consumer1": tps("topic-1"),
        "consumer2": tps("topic-2"),
        "consumer3": [],
    }
    eager = assign("sticky", {"topic": 3}, members)
    assert eager["consumer3"] == tps("topic-0")


def test_poor_roundrobin_scenario_is_balanced_by_sticky():
    counts = {f"topic{i}": (i % 2) + 1 for i in range(1, 6)}
    every = list(counts)
    odd = ["topic1", "topic3", "topic5"]
    members = [
        member("consumer1", every),
        member("consumer2", odd),
        member("consumer3", odd),
        member("consumer4", every),
    ]
    result = assign("sticky", counts, members)
    assert_valid(result, counts, members)
    assert_balanced(result, members)
    assert sorted(len(p) for p in result.values()) == [2, 2, 2, 2]
    assert assign("roundrobin", counts, members)["consumer3"] == []


def test_hashmap_order_decides_who_keeps_the_extra_partition():
    """Kafka walks its subscription HashMap to hand out maxQuota.

    Seven partitions over three members: only one may keep three. A JVM (OpenJDK 17)
    iterates a HashMap of consumer1..3 as consumer3, consumer2, consumer1, so of the two
    members owning three, consumer2 keeps them whatever order the members joined in.
    """
    owned = {
        "consumer1": tps("t-0, t-1, t-2"),
        "consumer2": tps("t-3, t-4, t-5"),
        "consumer3": tps("t-6"),
    }
    for order in (["consumer1", "consumer2", "consumer3"], ["consumer3", "consumer1", "consumer2"]):
        members = [member(m, ["t"], owned[m], 1) for m in order]
        result = assign("sticky", {"t": 7}, members)
        assert sorted(result["consumer2"]) == owned["consumer2"]
        assert sorted(result["consumer1"]) == tps("t-0, t-1")
        assert sorted(result["consumer3"]) == tps("t-2, t-6")


def test_kafka_quirk_empty_subscription_seen_first_counts_as_equal():
    """allSubscriptionsEqual takes the first non-empty subscription as the reference. A JVM
    iterates a HashMap of "A", "B" as A, B, so A's empty subscription is skipped, the group
    counts as identical and the constrained builder deals A partitions too. Seen in the
    other order, the general builder would give A nothing."""
    members = [member("A", []), member("B", ["t"])]
    result = assign("sticky", {"t": 4}, members)
    assert sorted(len(p) for p in result.values()) == [2, 2]
    assert assign("range", {"t": 4}, members)["A"] == []


def test_kafka_quirk_previous_generation_hint_ignores_subscriptions():
    """performReassignments hands a partition back to its owner from an older generation
    when that owner has two fewer partitions, without checking that the owner still
    subscribes to the topic. Traced by hand through AbstractStickyAssignor: m1
    (generation 2) reported a-0 but now subscribes only to b and c; a-0 first goes to m0,
    then back to m1."""
    members = [
        member("m0", ["a", "b", "c", "d"], tps("d-0"), 3),
        member("m1", ["b", "c"], tps("a-0"), 2),
        member("m2", ["a", "b", "c", "d"], tps("b-0"), 1),
    ]
    result = assign("sticky", {"a": 1, "b": 1, "c": 0, "d": 2}, members)
    assert result == {"m0": tps("d-0"), "m1": tps("a-0"), "m2": tps("b-0, d-1")}


def test_roundrobin_static_assignment_persists_after_member_id_changes():
    """RoundRobinAssignorTest's scenario: static members keep their partitions under new
    member ids. Expected values dealt by hand: partitions in order, to instance1..3 in turn."""
    counts = {"topic1": 5, "topic2": 5}
    before = [member(f"consumer{i}", T12, instance=f"instance{i}") for i in (1, 2, 3)]
    first = assign("roundrobin", counts, before)
    by_instance = {m["group_instance_id"]: first[m["id"]] for m in before}
    assert by_instance == {
        "instance1": tps("topic1-0, topic1-3, topic2-1, topic2-4"),
        "instance2": tps("topic1-1, topic1-4, topic2-2"),
        "instance3": tps("topic1-2, topic2-0, topic2-3"),
    }
    renamed = [member(f"consumer{i + 3}", T12, instance=f"instance{i}") for i in (1, 2, 3)]
    second = assign("roundrobin", counts, renamed)
    assert {m["group_instance_id"]: second[m["id"]] for m in renamed} == by_instance
