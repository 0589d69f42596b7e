"""The sticky fast path (``sticky.fast``) gives exactly the general path's answer.

``general`` (``sticky_paths``) is the sticky assignors' path as ``assign`` ran it before the
fast paths existed; ``assign`` must return the same assignment or raise the same error.
"""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from services.assignor import AssignmentError, assign
from services.assignor.model import (
    Member,
    check_partition_counts,
    to_members,
)
from services.assignor.sticky.fast import assign_owned_as_sent
from services.assignor.sticky.input import StickyInput
from tests.assignor.sticky_paths import (
    GENERATIONS,
    IDS,
    SPOILERS,
    STICKY,
    assert_same,
    assert_spoiled_alike,
    chunk_size,
    chunks_st,
    general,
    outcome,
    run_fast_path,
    spoil,
)

TOPICS = ["a", "b", "c"]


def fast(assignor, counts, members):
    """The fast path alone: its assignment, or None where it declines."""
    return run_fast_path(assign_owned_as_sent, assignor, counts, members)


counts_st = st.fixed_dictionaries({t: st.integers(0, 6) for t in TOPICS})


@st.composite
def groups(draw, spoiled: bool):
    counts = draw(counts_st)
    topics = sorted(draw(st.sets(st.sampled_from(TOPICS), min_size=1)))
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=6, unique=True))
    n = len(ids)
    universe = [(t, p) for t in topics for p in range(counts[t])]
    if draw(st.booleans()):
        # Partitions of an existing topic nobody subscribes to are owned too, sometimes.
        universe += [(t, p) for t in TOPICS if t not in topics for p in range(counts[t])]
    owners = draw(st.lists(st.integers(-1, n - 1), min_size=len(universe), max_size=len(universe)))
    owned: list[list] = [[] for _ in ids]
    for tp, owner in zip(universe, owners, strict=True):
        if owner >= 0:
            owned[owner].append(tp)
    owned = [draw(st.permutations(parts)) for parts in owned]
    members = [
        {
            "id": mid,
            "topics": topics,
            "owned": list(parts),
            "generation": draw(st.sampled_from(GENERATIONS)),
        }
        for mid, parts in zip(ids, owned, strict=True)
    ]
    if draw(st.booleans()):
        # Kafka's quirk: an empty subscription seen first still counts as "all equal".
        members[draw(st.integers(0, n - 1))]["topics"] = []
    if spoiled:
        for kind in draw(st.lists(st.sampled_from(SPOILERS), min_size=1, max_size=2)):
            spoil(draw, kind, members, counts)
    return counts, members


@settings(max_examples=400, deadline=None)
@given(groups(spoiled=False), st.sampled_from(STICKY), chunks_st)
def test_plain_groups_take_the_fast_path_and_match_the_general_path(group, assignor, chunk):
    counts, members = group
    kind, expected = outcome(general, assignor, counts, members)
    with chunk_size(chunk):
        assert outcome(assign, assignor, counts, members) == (kind, expected)
        if kind != "ok":  # Kafka fails on this group too (see sticky.moves)
            event("plain: Kafka fails")
            return
        subscribed = {t for m in members for t in m["topics"] if counts[t] > 0}
        plain = all(tp[0] in subscribed for m in members for tp in m["owned"])
        prep = StickyInput(check_partition_counts(counts), to_members(members), {})
        if plain and prep.all_equal and any(m["owned"] for m in members):
            assert fast(assignor, counts, members) == expected
            event("plain: fast path")
        else:
            event("plain: general path")


@settings(max_examples=400, deadline=None)
@given(groups(spoiled=True), st.sampled_from(STICKY), chunks_st)
def test_spoiled_groups_match_the_general_path_including_errors(group, assignor, chunk):
    counts, members = group
    event(f"spoiled: {assert_spoiled_alike(assignor, counts, members, chunk)}")


@settings(max_examples=150, deadline=None)
@given(
    counts_st,
    st.lists(st.sampled_from(IDS), min_size=1, max_size=6, unique=True),
    st.lists(
        st.tuples(st.sampled_from(["join", "leave", "stale", "resend"]), st.sampled_from(IDS)),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(STICKY),
)
def test_generations_of_rebalances_match_the_general_path(counts, ids, steps, assignor):
    """Sequences of rebalances, each member re-sending what it got, with generations.

    A "stale" member re-sends an assignment from an older generation, so partitions are
    claimed twice with different generations (the higher one keeps them).
    """
    topics = list(TOPICS)
    ids = list(ids)
    history: list[dict] = []
    current: dict = {}
    for generation, (kind, mid) in enumerate([("resend", ""), *steps], start=1):
        if kind == "join" and mid not in ids:
            ids.append(mid)
        elif kind == "leave" and mid in ids and len(ids) > 1:
            ids.remove(mid)
        members = []
        for i in ids:
            owned, sent_generation = current.get(i, []), generation - 1
            if kind == "stale" and i == mid and len(history) > 1:
                owned, sent_generation = history[-2].get(i, []), generation - 2
            members.append(
                {"id": i, "topics": topics, "owned": owned, "generation": sent_generation}
            )
        _, result = assert_same(assignor, counts, members)
        event("step: fast path" if fast(assignor, counts, members) else "step: general path")
        history.append(result)
        current = result


def test_a_member_leaving_a_large_group_takes_the_fast_path():
    counts = {f"t{i}": 40 for i in range(10)}
    members = [{"id": f"c{i:02d}", "topics": list(counts)} for i in range(17)]
    for assignor in STICKY:
        first = assign(assignor, counts, members)
        again = [{**m, "owned": first[m["id"]], "generation": 1} for m in members[1:]]
        assert fast(assignor, counts, again) is not None
        assert assert_same(assignor, counts, again)[1] == fast(assignor, counts, again)


def test_owned_lists_are_not_handed_back_or_changed():
    counts = {"a": 4}
    owned = [("a", 0), ("a", 1)]
    members = [{"id": "c1", "topics": ["a"], "owned": owned, "generation": 1}]
    result = assign("sticky", counts, members)
    assert result == {"c1": [("a", 0), ("a", 1), ("a", 2), ("a", 3)]}
    assert result["c1"] is not owned
    assert owned == [("a", 0), ("a", 1)]


def test_unsorted_owned_partitions_are_kept_in_kafkas_order():
    """Kept partitions come back sorted by partition, then topic (Kafka's sort)."""
    counts = {"a": 3, "b": 3}
    members = [
        {"id": "c1", "topics": ["a", "b"], "owned": [("b", 2), ("a", 1), ("b", 0)]},
        {"id": "c2", "topics": ["a", "b"], "owned": [("b", 1), ("a", 0)]},
    ]
    assert fast("sticky", counts, members) is not None
    result = assert_same("sticky", counts, members)[1]
    assert result["c1"] == [("b", 0), ("a", 1), ("b", 2)]


def test_errors_keep_their_order_when_the_owned_check_is_deferred():
    """Owned partitions are checked before a member's generation, and members before racks."""
    bad_owned_and_generation = [
        {"id": "c1", "topics": ["a"], "owned": [("a", 0), ("a", 0)], "generation": "x"}
    ]
    with_racks = [
        {"id": "c1", "topics": ["a"], "owned": [["a", -1]]},
        {"id": "c2", "topics": ["a"], "owned": [], "generation": True},
    ]
    for assignor in STICKY:
        got = assert_same(assignor, {"a": 2}, bad_owned_and_generation)
        assert got == ("AssignmentError", "member 'c1' owns a partition twice")
        got = assert_same(assignor, {"a": 2}, with_racks, {"a": [["r1"]]})
        assert got == ("AssignmentError", "member 'c1': negative partition a--1")


def test_members_given_as_records_keep_their_owned_partitions_unchecked():
    """A ``Member`` passes through unchecked, as before: a twice-listed partition is then
    a double claim for the general path to resolve, not an error."""
    members = [
        Member(id="c1", topics=("a",), owned=(("a", 0), ("a", 0), ("a", 1)), generation=2),
        Member(id="c2", topics=("a",), owned=(("a", 2),), generation=2),
    ]
    for assignor in STICKY:
        assert_same(assignor, {"a": 4}, members)
        assert fast(assignor, {"a": 4}, members) is None


def test_racks_and_differing_subscriptions_take_the_general_path():
    counts = {"a": 4, "b": 2}
    owned = {"c1": [("a", 0), ("a", 1), ("b", 0)], "c2": [("a", 2), ("a", 3), ("b", 1)]}
    racked = [
        {"id": m, "topics": ["a", "b"], "owned": o, "rack": r}
        for (m, o), r in zip(owned.items(), ["r1", "r2"], strict=True)
    ]
    differing = [
        {"id": "c1", "topics": ["a", "b"], "owned": owned["c1"]},
        {"id": "c2", "topics": ["a"], "owned": owned["c2"]},
    ]
    racks = {"a": [["r1"], ["r2"], ["r1"], ["r2"]], "b": [["r1"], ["r2"]]}
    for assignor in STICKY:
        assert_same(assignor, counts, racked, racks)
        assert_same(assignor, counts, differing)
        assert fast(assignor, counts, differing) is None


def test_a_member_without_owned_partitions_is_read_as_owning_nothing():
    counts = {"a": 3}
    members = [
        {"id": "c1", "topics": ["a"], "owned": None},
        {"id": "c2", "topics": ["a"], "owned": (("a", 1),)},
        {"id": "c3", "topics": ["a"]},
    ]
    for assignor in STICKY:
        assert fast(assignor, counts, members) is not None
        assert_same(assignor, counts, members)


def test_bad_owned_values_raise_as_before():
    for owned in ("a-0", {"a": 0}, [("a", 0, 1)], [("a", 1.5)], [(1, 0)]):
        members = [{"id": "c1", "topics": ["a"], "owned": owned}]
        for assignor in STICKY:
            got = assert_same(assignor, {"a": 2}, members)
            assert got[0] == "AssignmentError"
    assert issubclass(AssignmentError, ValueError)
