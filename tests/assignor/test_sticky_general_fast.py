"""The fast path for differing subscriptions (``sticky.general_fast``) gives exactly the
general path's answer: same lists in the same order, or the same error.

``general`` (``sticky_paths``) is the sticky assignors' path as ``assign`` ran it before the
fast paths existed. Random groups mostly make the fast path decline (claims conflict, or
the owned partitions are not plain); sequences of rebalances, each member re-sending what
it got, make it run, with and without moves once the free partitions are dealt.
"""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from services.assignor import assign
from services.assignor.sticky.general_fast import assign_kept_general
from tests.assignor.sticky_paths import (
    GENERATIONS,
    IDS,
    SPOILERS,
    STICKY,
    assert_same,
    assert_spoiled_alike,
    chunk_size,
    chunks_st,
    outcome,
    run_fast_path,
    spoil,
)

TOPICS = ["a", "b", "c", "d"]
counts_st = st.fixed_dictionaries({t: st.integers(0, 6) for t in TOPICS})
subscription_st = st.lists(st.sampled_from(TOPICS), max_size=4, unique=True)


def fast(assignor, counts, members):
    """The fast path alone: its assignment, or None where it declines."""
    return run_fast_path(assign_kept_general, assignor, counts, members)


def assert_fast_matches(assignor, counts, members):
    """``assign`` matches the general path, and so does the fast path where it runs."""
    kind, expected = assert_same(assignor, counts, members)
    got = outcome(fast, assignor, counts, members)
    if got[0] != "ok":  # the fast path went on with the general moves, and failed alike
        assert got == (kind, expected)
        return expected, True
    taken = got[1]
    if taken is not None:
        assert (kind, taken) == ("ok", expected)
    return expected, taken is not None


@st.composite
def uneven_groups(draw, spoiled: bool):
    """Members with their own subscriptions; partitions owned by none, one or two members
    (a conflict that generations decide), in any order, of any topic."""
    counts = draw(counts_st)
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=7, unique=True))
    n = len(ids)
    owned: list[list] = [[] for _ in ids]
    for t in TOPICS:
        for p in range(counts[t]):
            for owner in draw(st.lists(st.integers(-1, n - 1), min_size=1, max_size=2)):
                if owner >= 0 and (t, p) not in owned[owner]:
                    owned[owner].append((t, p))
    members = [
        {
            "id": mid,
            "topics": draw(subscription_st),
            "owned": list(draw(st.permutations(parts))),
            "generation": draw(st.sampled_from(GENERATIONS)),
        }
        for mid, parts in zip(ids, owned, strict=True)
    ]
    if spoiled:
        for kind in draw(st.lists(st.sampled_from(SPOILERS), min_size=1, max_size=2)):
            spoil(draw, kind, members, counts)
    return counts, members


@settings(max_examples=400, deadline=None)
@given(uneven_groups(spoiled=False), st.sampled_from(STICKY), chunks_st)
def test_uneven_groups_match_the_general_path(group, assignor, chunk):
    counts, members = group
    with chunk_size(chunk):
        _, taken = assert_fast_matches(assignor, counts, members)
    event("fast path" if taken else "general path")


@settings(max_examples=300, deadline=None)
@given(uneven_groups(spoiled=True), st.sampled_from(STICKY), chunks_st)
def test_spoiled_uneven_groups_match_the_general_path_including_errors(group, assignor, chunk):
    counts, members = group
    event(f"spoiled: {assert_spoiled_alike(assignor, counts, members, chunk)}")


STEPS = ["join", "leave", "stale", "resend", "resubscribe"]


@settings(max_examples=250, deadline=None)
@given(
    counts_st,
    st.dictionaries(st.sampled_from(IDS), subscription_st, min_size=1, max_size=6),
    st.lists(
        st.tuples(st.sampled_from(STEPS), st.sampled_from(IDS), subscription_st),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(STICKY),
    chunks_st,
)
def test_rebalances_of_uneven_groups_match_the_general_path(
    counts, subscriptions, steps, assignor, chunk
):
    """Sequences of rebalances, each member re-sending what it got, with generations.

    A "stale" member re-sends an assignment from an older generation, so partitions are
    claimed twice with different generations (the higher one keeps them); a
    "resubscribe" member changes its subscription and still owns its old partitions.
    """
    subscriptions = dict(subscriptions)
    history: list[dict] = []
    current: dict = {}
    for generation, (kind, mid, topics) in enumerate([("resend", "", []), *steps], start=1):
        if kind in ("join", "resubscribe") and (kind == "resubscribe") == (mid in subscriptions):
            subscriptions[mid] = topics
        elif kind == "leave" and mid in subscriptions and len(subscriptions) > 1:
            del subscriptions[mid]
        members = []
        for i, subscribed in subscriptions.items():
            owned, sent_generation = current.get(i, []), generation - 1
            if kind == "stale" and i == mid and len(history) > 1:
                owned, sent_generation = history[-2].get(i, []), generation - 2
            members.append(
                {"id": i, "topics": subscribed, "owned": owned, "generation": sent_generation}
            )
        with chunk_size(chunk):
            result, taken = assert_fast_matches(assignor, counts, members)
        event(f"step {kind}: {'fast' if taken else 'general'} path")
        history.append(result)
        current = result


def _uneven(counts, size):
    """``size`` members on every topic but the last, which is on the first topic only."""
    topics = list(counts)
    members = [{"id": f"c{i:02d}", "topics": topics} for i in range(size)]
    members[-1]["topics"] = topics[:1]
    return members


def _resent(members, result, generation):
    return [{**m, "owned": result[m["id"]], "generation": generation} for m in members]


def test_a_member_leaving_an_uneven_group_takes_the_fast_path():
    """The benchmark's shape, small: the leaver's partitions go one to a member, so the
    group is balanced once they are dealt."""
    counts = {f"t{i}": 20 for i in range(10)}
    members = _uneven(counts, 20)
    for assignor in STICKY:
        first = assign(assignor, counts, members)
        second = _resent(members, first, 1)
        assert assert_fast_matches(assignor, counts, second) == (first, True)
        _, taken = assert_fast_matches(assignor, counts, _resent(members[1:], first, 2))
        assert taken


def test_partitions_of_a_topic_given_up_are_dealt_and_held_back_by_cooperative():
    """A member that no longer subscribes to a topic keeps none of its partitions; the
    cooperative assignor leaves them unassigned until that member has revoked them."""
    counts = {"a": 4, "b": 4}
    members = [
        {"id": "c1", "topics": ["a"], "owned": [("a", 0), ("a", 1), ("b", 0)], "generation": 3},
        {"id": "c2", "topics": ["a", "b"], "owned": [("b", 1), ("a", 2)], "generation": 3},
        {"id": "c3", "topics": ["b"], "owned": [("b", 2), ("b", 3), ("a", 3)], "generation": 3},
    ]
    eager, taken = assert_fast_matches("sticky", counts, members)
    assert taken
    cooperative, taken = assert_fast_matches("cooperative-sticky", counts, members)
    assert taken
    assert eager["c2"][:2] == [("b", 1), ("a", 2)]
    handed_over = {tp for parts in eager.values() for tp in parts} - {
        tp for parts in cooperative.values() for tp in parts
    }
    assert handed_over == {("b", 0), ("a", 3)}


def test_a_group_out_of_balance_once_dealt_goes_on_with_the_general_moves():
    """The member on the first topic only is one short of the others, and the leaver's
    partitions make the others one larger still: a partition of the first topic moves."""
    counts = {f"t{i}": 123 for i in range(40)}
    members = _uneven(counts, 77)
    first = assign("sticky", counts, members)
    leave = _resent(members[1:], first, 1)
    for assignor in STICKY:
        result, taken = assert_fast_matches(assignor, counts, leave)
        assert taken
        moved = [m["id"] for m in leave if not set(m["owned"]) <= set(result[m["id"]])]
        assert moved


def test_identical_subscriptions_are_left_to_the_other_fast_path():
    counts = {"a": 4}
    members = [
        {"id": "c1", "topics": ["a"], "owned": [("a", 0), ("a", 1)], "generation": 1},
        {"id": "c2", "topics": ["a"], "owned": [("a", 2), ("a", 3)], "generation": 1},
    ]
    assert fast("sticky", counts, members) is None
    assert_same("sticky", counts, members)
