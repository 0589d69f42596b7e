"""docs/assignors.md, "Worked examples", plus the examples in Kafka's own javadoc."""

from __future__ import annotations

from services.assignor import assign, minimum_moves, moves
from tests.assignor.helpers import assert_balanced, assert_valid, member, tps

ALL = ["t0", "t1", "t2", "t3"]


def test_range_ten_partitions_three_consumers():
    members = [member(f"C{i}", ["t"]) for i in range(3)]
    result = assign("range", {"t": 10}, members)
    assert result == {
        "C0": tps("t-0, t-1, t-2, t-3"),
        "C1": tps("t-4, t-5, t-6"),
        "C2": tps("t-7, t-8, t-9"),
    }


def test_range_two_topics_gives_the_first_consumer_eight():
    members = [member(f"C{i}", ["a", "b"]) for i in range(3)]
    result = assign("range", {"a": 10, "b": 10}, members)
    assert [len(result[f"C{i}"]) for i in range(3)] == [8, 6, 6]


MIXED_COUNTS = {"t0": 1, "t1": 2, "t2": 3}
MIXED = [member("C0", ["t0"]), member("C1", ["t0", "t1"]), member("C2", ["t0", "t1", "t2"])]


def test_roundrobin_mixed_subscriptions():
    assert assign("roundrobin", MIXED_COUNTS, MIXED) == {
        "C0": tps("t0-0"),
        "C1": tps("t1-0"),
        "C2": tps("t1-1, t2-0, t2-1, t2-2"),
    }


def test_sticky_mixed_subscriptions():
    result = assign("sticky", MIXED_COUNTS, MIXED)
    assert {m: sorted(p) for m, p in result.items()} == {
        "C0": tps("t0-0"),
        "C1": tps("t1-0, t1-1"),
        "C2": tps("t2-0, t2-1, t2-2"),
    }


def test_sticky_initial_assignment_and_a_leave():
    counts = dict.fromkeys(ALL, 2)
    members = [member(f"C{i}", ALL) for i in range(3)]
    first = assign("sticky", counts, members)
    assert {m: sorted(p) for m, p in first.items()} == {
        "C0": tps("t0-0, t1-1, t3-0"),
        "C1": tps("t0-1, t2-0, t3-1"),
        "C2": tps("t1-0, t2-1"),
    }
    survivors = [member(m, ALL, first[m], generation=1) for m in ("C0", "C2")]
    second = assign("sticky", counts, survivors)
    assert_valid(second, counts, survivors)
    for m in ("C0", "C2"):
        assert set(first[m]) <= set(second[m])
        assert len(second[m]) == 4
    assert moves(first, second).as_dict() == {"total": 3, "from_surviving": 0, "from_departed": 3}
    assert minimum_moves(first, ["C0", "C2"], counts) == moves(first, second)


def test_roundrobin_javadoc_identical_subscriptions():
    members = [member("C0", ["t0", "t1"]), member("C1", ["t0", "t1"])]
    assert assign("roundrobin", {"t0": 3, "t1": 3}, members) == {
        "C0": tps("t0-0, t0-2, t1-1"),
        "C1": tps("t0-1, t1-0, t1-2"),
    }


def test_range_javadoc_two_topics():
    members = [member("C0", ["t0", "t1"]), member("C1", ["t0", "t1"])]
    result = assign("range", {"t0": 3, "t1": 3}, members)
    assert result == {"C0": tps("t0-0, t0-1, t1-0, t1-1"), "C1": tps("t0-2, t1-2")}
    assert_balanced(assign("sticky", {"t0": 3, "t1": 3}, members), members)
