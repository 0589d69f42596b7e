"""Kafka's invariants over random groups (hypothesis) and multi-step membership sequences."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.assignor import assign, minimum_moves, moves
from tests.assignor.helpers import assert_balanced, assert_valid, member

TOPICS = ["a", "b", "c", "d"]
CLIENT = ["range", "roundrobin", "sticky", "cooperative-sticky"]
BALANCING = ["sticky", "uniform"]

counts_st = st.fixed_dictionaries({t: st.integers(0, 7) for t in TOPICS})
subs_st = st.lists(st.sets(st.sampled_from(TOPICS), min_size=1), min_size=1, max_size=6)


def group(subscriptions):
    return [member(f"m{i}", sorted(topics)) for i, topics in enumerate(subscriptions)]


@settings(max_examples=150, deadline=None)
@given(counts_st, subs_st, st.sampled_from([*CLIENT, "uniform", "server-range"]))
def test_every_partition_assigned_once_to_a_subscriber(counts, subscriptions, assignor):
    members = group(subscriptions)
    result = assign(assignor, counts, members)
    assert_valid(result, counts, members)


@settings(max_examples=150, deadline=None)
@given(counts_st, subs_st, st.sampled_from([*BALANCING, "roundrobin"]))
def test_counts_differ_by_at_most_one_with_identical_subscriptions(counts, subscriptions, assignor):
    members = group([subscriptions[0]] * len(subscriptions))
    sizes = [len(p) for p in assign(assignor, counts, members).values()]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=150, deadline=None)
@given(counts_st, subs_st)
def test_sticky_is_balanced_with_any_subscriptions(counts, subscriptions):
    members = group(subscriptions)
    assert_balanced(assign("sticky", counts, members), members)


def rebalance(assignor, counts, previous, members, generation):
    """One rebalance episode: (first round, final). Cooperative members rejoin after any
    round that revoked partitions, as Kafka's consumers do."""

    def run(owned, gen):
        return assign(
            assignor,
            counts,
            [{**m, "owned": owned.get(m["id"], []), "generation": gen} for m in members],
        )

    first = result = run(previous, generation)
    owned, rounds = previous, 1
    while assignor == "cooperative-sticky" and any(
        not set(owned.get(m, [])) <= set(parts) for m, parts in result.items()
    ):
        assert rounds < 10, "cooperative rebalance did not settle"
        owned, result = result, run(result, generation + rounds)
        rounds += 1
    return first, result


changes_st = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.integers(0, 9)),
        st.tuples(st.just("leave"), st.integers(0, 9)),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=120, deadline=None)
@given(
    counts_st,
    st.integers(1, 6),
    changes_st,
    st.sampled_from(["sticky", "cooperative-sticky", "uniform"]),
)
def test_join_leave_sequences_stay_valid_and_minimally_sticky(counts, size, changes, assignor):
    """Identical subscriptions: no partition leaves a surviving member unless balance needs
    it - the moves equal the physical minimum at every step. (Kafka's homogeneous uniform
    builder gives the extra slots to members already holding an extra partition first.)"""
    ids = [f"m{i}" for i in range(size)]
    members = [member(i, TOPICS) for i in ids]
    _, current = rebalance(assignor, counts, {}, members, 0)
    for step, (kind, n) in enumerate(changes, start=1):
        mid = f"m{n}"
        if kind == "join" and mid not in ids:
            ids.append(mid)
        elif kind == "leave" and mid in ids and len(ids) > 1:
            ids.remove(mid)
        members = [member(i, TOPICS) for i in ids]
        first, after = rebalance(assignor, counts, current, members, 10 * step)
        assert_valid(after, counts, members)
        assert moves(current, after) == minimum_moves(current, ids, counts)
        if assignor == "cooperative-sticky":
            assert_first_round_never_hands_over(current, first)
        current = after


def assert_first_round_never_hands_over(before, first_round):
    """Cooperative: a partition owned by a surviving member never goes straight to another."""
    owner = {tp: m for m, parts in before.items() for tp in parts}
    for m, parts in first_round.items():
        for tp in parts:
            previous = owner.get(tp)
            assert previous is None or previous == m or previous not in first_round, (tp, m)


@settings(max_examples=120, deadline=None)
@given(counts_st, subs_st, subs_st)
def test_cooperative_with_changing_subscriptions(counts, before_subs, after_subs):
    before_members = group(before_subs)
    current = assign("sticky", counts, before_members)
    members = group(after_subs)
    first, after = rebalance("cooperative-sticky", counts, current, members, 1)
    assert_first_round_never_hands_over(current, first)
    assert_valid(after, counts, members)
    assert_balanced(after, members)


def test_crash_loop_keeps_sticky_moves_at_the_minimum():
    """A member crashing and rejoining five times under sticky and cooperative-sticky."""
    counts = {"orders": 24, "payments": 12}
    ids = [f"c{i}" for i in range(4)]
    for assignor in ("sticky", "cooperative-sticky"):
        current = rebalance(assignor, counts, {}, [member(i, list(counts)) for i in ids], 0)[1]
        for step in range(1, 11):
            live = ids if step % 2 == 0 else ids[1:]
            members = [member(i, list(counts)) for i in live]
            after = rebalance(assignor, counts, current, members, 10 * step)[1]
            assert moves(current, after) == minimum_moves(current, live, counts)
            current = after
        roundrobin = rebalance(
            "roundrobin", counts, {}, [member(i, list(counts)) for i in ids[1:]], 0
        )[1]
        full = assign("roundrobin", counts, [member(i, list(counts)) for i in ids])
        assert moves(full, roundrobin).from_surviving > 0


@settings(max_examples=120, deadline=None)
@given(counts_st, subs_st, st.sampled_from(["sticky", "cooperative-sticky", "uniform"]))
def test_reporting_the_assignment_back_changes_nothing(counts, subscriptions, assignor):
    """The second round of the benchmark: members re-send what they own; nothing moves."""
    members = group(subscriptions)
    first = assign(assignor, counts, members)
    if assignor == "cooperative-sticky":
        first = rebalance(assignor, counts, {}, members, 0)[1]
    again = assign(
        assignor, counts, [{**m, "owned": first[m["id"]], "generation": 5} for m in members]
    )
    assert moves(first, again).total == 0
    assert {m: sorted(p) for m, p in again.items()} == {m: sorted(p) for m, p in first.items()}


racks_st = st.sampled_from(["r1", "r2", "r3", None])


@settings(max_examples=120, deadline=None)
@given(
    counts_st,
    subs_st,
    st.lists(racks_st, min_size=6, max_size=6),
    st.data(),
    st.sampled_from(["range", "sticky", "uniform"]),
)
def test_racks_never_break_validity_or_balance(counts, subscriptions, member_racks, data, assignor):
    members = [
        member(f"m{i}", sorted(topics), rack=member_racks[i])
        for i, topics in enumerate(subscriptions)
    ]
    placement = {
        t: [data.draw(st.lists(st.sampled_from(["r1", "r2", "r3"]), max_size=2)) for _ in range(c)]
        for t, c in counts.items()
    }
    result = assign(assignor, counts, members, placement)
    assert_valid(result, counts, members)
    if assignor == "sticky":
        assert_balanced(result, members)
    if assignor == "range":
        for topic, count in counts.items():
            subscribers = [m["id"] for m in members if topic in m["topics"]]
            if subscribers and count:
                sizes = [sum(1 for t, _ in result[s] if t == topic) for s in subscribers]
                assert max(sizes) - min(sizes) <= 1
