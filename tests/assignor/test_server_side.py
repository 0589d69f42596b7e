"""KIP-848 server-side assignors: ``uniform`` and ``server-range``."""

from __future__ import annotations

import pytest

from services.assignor import PartitionAssignorError, assign, moves
from tests.assignor.helpers import assert_balanced, assert_valid, member, tps


def test_server_range_javadoc_example():
    members = [member("M0", ["T1", "T2"]), member("M1", ["T1", "T2"])]
    assert assign("server-range", {"T1": 3, "T2": 3}, members) == {
        "M0": tps("T1-0, T1-1, T2-0, T2-1"),
        "M1": tps("T1-2, T2-2"),
    }


def test_server_range_static_members_keep_ranges_across_new_member_ids():
    """RangeAssignor javadoc: instance ids I0, I1 keep their ranges after a rolling bounce."""
    before = [member("M0", ["T1", "T2"], instance="I0"), member("M1", ["T1", "T2"], instance="I1")]
    after = [member("M3", ["T1", "T2"], instance="I0"), member("M2", ["T1", "T2"], instance="I1")]
    first = assign("server-range", {"T1": 3, "T2": 3}, before)
    second = assign("server-range", {"T1": 3, "T2": 3}, after)
    assert second["M3"] == first["M0"] and second["M2"] == first["M1"]
    dynamic = assign(
        "server-range", {"T1": 3, "T2": 3}, [member("M3", ["T1", "T2"]), member("M2", ["T1", "T2"])]
    )
    assert dynamic["M2"] == first["M0"]


def test_server_range_heterogeneous_counts_subscribers_per_topic():
    members = [member("a", ["t1"]), member("b", ["t1", "t2"]), member("c", ["t2"])]
    assert assign("server-range", {"t1": 3, "t2": 5}, members) == {
        "a": tps("t1-0, t1-1"),
        "b": tps("t1-2, t2-0, t2-1, t2-2"),
        "c": tps("t2-3, t2-4"),
    }


def test_server_range_more_members_than_partitions():
    members = [member(f"m{i}", ["t"]) for i in range(4)]
    assert assign("server-range", {"t": 2}, members) == {
        "m0": tps("t-0"),
        "m1": tps("t-1"),
        "m2": [],
        "m3": [],
    }


@pytest.mark.parametrize("assignor", ["uniform", "server-range"])
def test_subscribing_to_a_missing_topic_raises(assignor):
    with pytest.raises(PartitionAssignorError, match=r"non-existent|doesn't exist"):
        assign(assignor, {"t": 2}, [member("m", ["t", "ghost"])])


def test_uniform_homogeneous_keeps_owned_partitions_within_quota():
    counts = {"t1": 3, "t2": 3}
    first = assign("uniform", counts, [member("A", ["t1", "t2"]), member("B", ["t1", "t2"])])
    assert sorted(len(p) for p in first.values()) == [3, 3]
    grown = {"t1": 6, "t2": 6}
    second = assign(
        "uniform",
        grown,
        [member("A", ["t1", "t2"], first["A"]), member("B", ["t1", "t2"], first["B"])],
    )
    assert moves(first, second).total == 0
    assert sorted(len(p) for p in second.values()) == [6, 6]


def test_uniform_homogeneous_gives_a_newcomer_its_share():
    counts = {"t": 9}
    before = assign("uniform", counts, [member("A", ["t"]), member("B", ["t"])])
    after = assign(
        "uniform",
        counts,
        [member("A", ["t"], before["A"]), member("B", ["t"], before["B"]), member("C", ["t"])],
    )
    assert [len(after[m]) for m in "ABC"] == [3, 3, 3]
    assert set(after["A"]) <= set(before["A"]) and set(after["B"]) <= set(before["B"])


def test_uniform_heterogeneous_balances_and_keeps_what_it_can():
    """UniformHeterogeneousAssignmentBuilder's javadoc: with overlapping subscriptions the
    result is "almost balanced" - each topic's subscribers differ by at most one."""
    counts = {"t1": 6, "t2": 6}
    members = [member("A", ["t1"]), member("B", ["t1", "t2"]), member("C", ["t2"])]
    first = assign("uniform", counts, members)
    assert_valid(first, counts, members)
    assert_balanced(first, members)
    sizes = {m: len(p) for m, p in first.items()}
    assert abs(sizes["A"] - sizes["B"]) <= 1 and abs(sizes["B"] - sizes["C"]) <= 1
    again = assign("uniform", counts, [{**m, "owned": first[m["id"]]} for m in members])
    assert again == first


def test_uniform_heterogeneous_revokes_unsubscribed_topics():
    counts = {"t1": 4, "t2": 4}
    members = [
        member("A", ["t1"], tps("t1-0, t1-1, t2-0, t2-1")),
        member("B", ["t1", "t2"], tps("t1-2, t1-3, t2-2, t2-3")),
    ]
    result = assign("uniform", counts, members)
    assert_valid(result, counts, members)
    assert all(t == "t1" for t, _ in result["A"])
    assert set(tps("t1-0, t1-1")) <= set(result["A"])


def test_uniform_orders_topics_by_their_ids():
    """Kafka's uniform assignor orders topics by topic id (``Uuid.compareTo`` in the
    heterogeneous builder, ``HashSet<Uuid>`` order in the homogeneous one), not by name.
    Without ids, ids that order like the names stand in; with ids that reverse the
    names, the same group is dealt the other way (Kafka's answer for both inputs, per
    tests/assignor/test_against_kafka.py)."""
    counts = {"x": 2, "y": 2}
    members = [member("A", ["x"]), member("B", ["x", "y"]), member("C", ["y"])]
    reversed_ids = {"x": "AAAAAAAAAAIAAAAAAAAAAQ", "y": "AAAAAAAAAAEAAAAAAAAAAQ"}
    assert assign("uniform", counts, members) == {
        "A": tps("x-0"),
        "B": tps("x-1"),
        "C": tps("y-0, y-1"),
    }
    assert assign("uniform", counts, members, None, reversed_ids) == {
        "A": tps("x-0, x-1"),
        "B": tps("y-0"),
        "C": tps("y-1"),
    }


def test_server_side_rejects_a_partition_owned_twice():
    members = [member("A", ["t"], tps("t-0")), member("B", ["t"], tps("t-0"))]
    with pytest.raises(ValueError, match="owned by both"):
        assign("uniform", {"t": 2}, members)


# UniformHomogeneousAssignmentBuilderTest. Kafka's tests put members in a TreeMap (A, B,
# C); a HashMap of "A", "B", "C" (hashes 65, 66, 67) iterates in the same order.


def test_uniform_more_members_than_partitions():
    members = [member(m, ["topic3"]) for m in "ABC"]
    assert assign("uniform", {"topic3": 2}, members) == {
        "A": [],
        "B": tps("topic3-0"),
        "C": tps("topic3-1"),
    }


def test_uniform_first_assignment_gives_the_extra_to_the_last_member():
    """Kafka: A gets 2, B gets 3. Which topic's partitions go first follows topic ids in
    Kafka (topic3 there) and names here, so only the counts are Kafka's exact answer."""
    members = [member(m, ["topic1", "topic3"]) for m in "AB"]
    result = assign("uniform", {"topic1": 3, "topic3": 2}, members)
    assert (len(result["A"]), len(result["B"])) == (2, 3)


def test_uniform_unbalanced_previous_assignment():
    members = [
        member("A", ["topic1", "topic2"], tps("topic1-0, topic1-1, topic2-0, topic2-1")),
        member("B", ["topic1", "topic2"], tps("topic1-2, topic2-2")),
    ]
    assert assign("uniform", {"topic1": 3, "topic2": 3}, members) == {
        "A": tps("topic1-0, topic1-1, topic2-0"),
        "B": tps("topic1-2, topic2-1, topic2-2"),
    }


def test_uniform_member_added_after_initial_assignment():
    members = [
        member("A", ["topic1", "topic2"], tps("topic1-0, topic1-2, topic2-0")),
        member("B", ["topic1", "topic2"], tps("topic1-1, topic2-1, topic2-2")),
        member("C", ["topic1", "topic2"]),
    ]
    assert assign("uniform", {"topic1": 3, "topic2": 3}, members) == {
        "A": tps("topic1-0, topic1-2"),
        "B": tps("topic1-1, topic2-1"),
        "C": tps("topic2-0, topic2-2"),
    }


def test_uniform_partitions_added():
    """Kafka: A keeps its 3 and reaches 5, B keeps its 3 and reaches 6 (the extra goes to
    the last unfilled member). Which new partitions go where follows topic ids in Kafka."""
    members = [
        member("A", ["topic1", "topic2"], tps("topic1-0, topic1-2, topic2-0")),
        member("B", ["topic1", "topic2"], tps("topic1-1, topic2-1, topic2-2")),
    ]
    result = assign("uniform", {"topic1": 6, "topic2": 5}, members)
    assert (len(result["A"]), len(result["B"])) == (5, 6)
    assert set(members[0]["owned"]) <= set(result["A"])
    assert set(members[1]["owned"]) <= set(result["B"])


def test_uniform_ignores_racks():
    """Kafka 4.3.1's UniformHomogeneousAssignmentBuilder never asks for replica racks:
    members keep their owned partitions even off their rack (checked against the class;
    3.x builders moved them to members on their rack)."""
    racks = {"t": [["r1"], ["r2"], ["r1"], ["r2"]]}
    members = [
        member("A", ["t"], tps("t-0, t-1"), rack="r1"),
        member("B", ["t"], tps("t-2, t-3"), rack="r2"),
    ]
    result = assign("uniform", {"t": 4}, members, racks)
    assert sorted(result["A"]) == tps("t-0, t-1") and sorted(result["B"]) == tps("t-2, t-3")


# RangeAssignorTest (group coordinator, KIP-848): members in a TreeMap; the current range
# assignor ignores the previous assignment, so these are exact.
T12 = ["topic1", "topic2"]


@pytest.mark.parametrize(
    ("counts", "subs", "expected"),
    [
        (
            {"topic1": 2, "topic2": 2},
            {"A": T12, "B": T12, "C": T12},
            {"A": "topic1-0, topic2-0", "B": "topic1-1, topic2-1", "C": ""},
        ),
        (
            {"topic1": 4, "topic2": 4},
            {"A": T12, "B": T12},
            {
                "A": "topic1-0, topic1-1, topic2-0, topic2-1",
                "B": "topic1-2, topic1-3, topic2-2, topic2-3",
            },
        ),
        (
            {"topic1": 3, "topic2": 3},
            {"A": T12, "B": T12, "C": T12},
            {"A": "topic1-0, topic2-0", "B": "topic1-1, topic2-1", "C": "topic1-2, topic2-2"},
        ),
        (
            {"topic1": 4, "topic2": 3},
            {"A": T12, "B": T12, "C": ["topic1"]},
            {
                "A": "topic1-0, topic1-1, topic2-0, topic2-1",
                "B": "topic1-2, topic2-2",
                "C": "topic1-3",
            },
        ),
        (
            {"topic1": 3, "topic2": 3},
            {"B": T12},
            {"B": "topic1-0, topic1-1, topic1-2, topic2-0, topic2-1, topic2-2"},
        ),
        (
            {"topic1": 3, "topic2": 3, "topic3": 2},
            {"A": ["topic1"], "B": ["topic1", "topic2", "topic3"], "C": ["topic2"]},
            {
                "A": "topic1-0, topic1-1",
                "B": "topic1-2, topic2-0, topic2-1, topic3-0, topic3-1",
                "C": "topic2-2",
            },
        ),
    ],
)
def test_server_range_kafka_cases(counts, subs, expected):
    members = [member(m, topics) for m, topics in subs.items()]
    result = assign("server-range", counts, members)
    assert result == {m: tps(text) for m, text in expected.items()}


def test_server_range_mixed_static_membership():
    """Static members sort first by instance id; a new member id keeps the instance's range."""
    counts = {"topic1": 5}
    first = assign(
        "server-range",
        counts,
        [
            member("A", ["topic1"], instance="instanceA"),
            member("C", ["topic1"], instance="instanceC"),
            member("B", ["topic1"]),
        ],
    )
    assert first == {
        "A": tps("topic1-0, topic1-1"),
        "C": tps("topic1-2, topic1-3"),
        "B": tps("topic1-4"),
    }
    again = assign(
        "server-range",
        counts,
        [
            member("A1", ["topic1"], instance="instanceA"),
            member("C", ["topic1"], instance="instanceC"),
            member("B", ["topic1"]),
        ],
    )
    assert again == {"A1": first["A"], "C": first["C"], "B": first["B"]}


# UniformHeterogeneousAssignmentBuilderTest cases whose topic order needs no topic id:
# topics sort by partitions per subscriber (descending), then subscriber count.


def heterogeneous(counts, specs):
    members = [member(m, topics, tps(owned)) for m, topics, owned in specs]
    result = assign("uniform", counts, members)
    assert_valid(result, counts, members)
    return {m: sorted(parts) for m, parts in result.items()}


def test_uniform_heterogeneous_first_assignment_two_topics():
    result = heterogeneous(
        {"topic1": 3, "topic3": 6}, [("A", ["topic1", "topic3"], ""), ("B", ["topic3"], "")]
    )
    assert result == {
        "A": tps("topic1-0, topic1-1, topic1-2, topic3-4"),
        "B": tps("topic3-0, topic3-1, topic3-2, topic3-3, topic3-5"),
    }


def test_uniform_heterogeneous_more_members_than_partitions():
    result = heterogeneous(
        {"topic3": 1, "topic1": 2},
        [("A", ["topic3"], ""), ("B", ["topic3"], ""), ("C", ["topic1"], "")],
    )
    assert result == {"A": tps("topic3-0"), "B": [], "C": tps("topic1-0, topic1-1")}


def test_uniform_heterogeneous_unbalanced_previous_assignment():
    result = heterogeneous(
        {"topic1": 6, "topic2": 4, "topic3": 4},
        [
            ("A", ["topic1"], "topic1-0, topic1-1, topic1-2"),
            ("B", ["topic1", "topic2"], "topic1-3, topic2-0"),
            (
                "C",
                ["topic1", "topic2", "topic3"],
                "topic1-4, topic1-5, topic2-1, topic2-2, topic2-3, "
                "topic3-0, topic3-1, topic3-2, topic3-3",
            ),
        ],
    )
    assert result == {
        "A": tps("topic1-0, topic1-1, topic1-2, topic1-5"),
        "B": tps("topic1-3, topic2-0, topic2-1, topic2-2, topic2-3"),
        "C": tps("topic1-4, topic3-0, topic3-1, topic3-2, topic3-3"),
    }


def test_uniform_heterogeneous_partitions_added():
    result = heterogeneous(
        {"topic1": 6, "topic2": 5, "topic3": 3, "topic4": 3},
        [
            (
                "A",
                ["topic1", "topic3"],
                "topic1-0, topic1-1, topic1-2, topic1-3, topic3-0, topic3-1",
            ),
            (
                "B",
                ["topic1", "topic2", "topic3", "topic4"],
                "topic2-0, topic2-1, topic2-2, topic4-0, topic4-1, topic4-2",
            ),
        ],
    )
    assert result == {
        "A": tps(
            "topic1-0, topic1-1, topic1-2, topic1-3, topic1-4, topic1-5, "
            "topic3-0, topic3-1, topic3-2"
        ),
        "B": tps("topic2-0, topic2-1, topic2-2, topic2-3, topic2-4, topic4-0, topic4-1, topic4-2"),
    }


def test_uniform_heterogeneous_member_and_partitions_added():
    result = heterogeneous(
        {"topic1": 6, "topic2": 7},
        [
            ("A", ["topic1"], "topic1-0, topic1-2, topic2-0"),
            ("B", ["topic1", "topic2"], "topic1-1, topic2-1, topic2-2"),
            ("C", ["topic1", "topic2"], ""),
        ],
    )
    assert result == {
        "A": tps("topic1-0, topic1-2, topic1-3, topic1-4, topic1-5"),
        "B": tps("topic1-1, topic2-1, topic2-2, topic2-6"),
        "C": tps("topic2-0, topic2-3, topic2-4, topic2-5"),
    }


def test_uniform_heterogeneous_member_removed():
    result = heterogeneous(
        {"topic1": 3, "topic2": 8, "topic3": 3},
        [
            ("A", ["topic1", "topic3"], "topic1-0, topic1-1, topic1-2, topic3-0, topic3-1"),
            ("B", ["topic2"], "topic2-3, topic2-4, topic2-5, topic2-6"),
        ],
    )
    assert result == {
        "A": tps("topic1-0, topic1-1, topic1-2, topic3-0, topic3-1, topic3-2"),
        "B": [("topic2", p) for p in range(8)],
    }
