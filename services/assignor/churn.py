"""Churn of a rebalance: how many partitions changed owner, and the physical minimum.

A *move* is a partition owned both before and after whose owner changed. Moves split into
those taken from members that are still in the group (the real cost) and those of members
that left (unavoidable).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from services.assignor.minflow import MinCostFlow
from services.assignor.model import (
    Assignment,
    Member,
    RawMember,
    TopicPartition,
    check_partition_counts,
    to_member,
)


@dataclass(frozen=True, slots=True)
class Moves:
    """Partitions that changed owner, by whether their previous owner is still a member."""

    from_surviving: int
    from_departed: int

    @property
    def total(self) -> int:
        return self.from_surviving + self.from_departed

    def as_dict(self) -> dict[str, int]:
        return {
            "total": self.total,
            "from_surviving": self.from_surviving,
            "from_departed": self.from_departed,
        }


def _owners(assignment: Mapping[str, Iterable[TopicPartition]]) -> dict[TopicPartition, str]:
    owners: dict[TopicPartition, str] = {}
    for member, partitions in assignment.items():
        for topic, partition in partitions:
            owners[(topic, partition)] = member
    return owners


def moves(
    before: Mapping[str, Iterable[TopicPartition]], after: Mapping[str, Iterable[TopicPartition]]
) -> Moves:
    """Partitions assigned in both ``before`` and ``after`` whose owner changed.

    A move is *from a surviving member* when its previous owner is still a key of ``after``
    (still in the group), otherwise *from a departed member*.
    """
    old = _owners(before)
    surviving = departed = 0
    for tp, owner in _owners(after).items():
        previous = old.get(tp)
        if previous is None or previous == owner:
            continue
        if previous in after:
            surviving += 1
        else:
            departed += 1
    return Moves(surviving, departed)


def _as_members(members: Iterable[RawMember | Member | str], topics: list[str]) -> list[Member]:
    return [
        Member(id=m, topics=tuple(topics)) if isinstance(m, str) else to_member(m) for m in members
    ]


def minimum_moves(
    before: Mapping[str, Iterable[TopicPartition]],
    members: Iterable[RawMember | Member | str],
    partitions_per_topic: Mapping[str, int],
) -> Moves:
    """The fewest moves any balanced assignment of ``members`` could make from ``before``.

    ``members`` are member mappings (as for ``assign``; only ``id`` and ``topics`` matter)
    or bare ids, which subscribe to every topic of ``partitions_per_topic``.

    Partitions of departed members always move. A surviving member must give up the
    partitions it no longer subscribes to, and whatever it owns beyond its share. With
    identical subscriptions the shares are ``P // N``, and ``P % N`` members - best those
    owning the most - may keep one more; the result is exact. With differing subscriptions
    balanced assignments do not share one set of counts, so the shares are the counts that
    Kafka's ``sticky`` assignor reaches from ``before``, and the result is exact for those
    counts: the lower bound when sticky's own answer meets it, otherwise a min-cost flow
    over groups of partitions. No assignment with those counts moves fewer partitions.
    """
    counts = check_partition_counts(partitions_per_topic)
    group = _as_members(members, [t for t, c in counts.items() if c > 0])
    if not group:
        return Moves(0, 0)
    ids = {m.id for m in group}
    subscribed = {m.id: set(m.topics) for m in group}
    wanted = {t for m in group for t in m.topics if counts.get(t, 0) > 0}
    departed = forced = 0
    keepable: dict[tuple[str, str], int] = {}
    for tp, owner in _owners(before).items():
        topic, partition = tp
        if topic not in wanted or partition >= counts[topic]:
            continue
        if owner not in ids:
            departed += 1
        elif topic in subscribed[owner]:
            keepable[(topic, owner)] = keepable.get((topic, owner), 0) + 1
        else:
            forced += 1
    owned = dict.fromkeys(ids, 0)
    for (_, owner), n in keepable.items():
        owned[owner] += n
    if _identical(group, wanted):
        total = sum(counts[t] for t in wanted)
        minimum, extra = divmod(total, len(group))
        kept = sum(min(o, minimum) for o in owned.values())
        kept += min(extra, sum(1 for o in owned.values() if o > minimum))
        return Moves(sum(owned.values()) - kept + forced, departed)
    sticky = _sticky_rebalance(group, counts, before)
    shares = {m: len(partitions) for m, partitions in sticky.items()}
    lower = sum(max(0, owned[m] - shares[m]) for m in ids) + forced
    if moves(before, sticky).from_surviving == lower:
        return Moves(lower, departed)
    moved = _fewest_moves_for_shares(group, counts, wanted, keepable, shares)
    return Moves(lower if moved is None else moved + forced, departed)


def _identical(group: list[Member], wanted: set[str]) -> bool:
    reference = set(group[0].topics) & wanted
    return all(set(m.topics) & wanted == reference for m in group)


def _sticky_rebalance(
    group: list[Member], counts: Mapping[str, int], before: Mapping[str, Iterable[TopicPartition]]
) -> Assignment:
    """Kafka's sticky answer for this group, the members reporting ``before`` as owned."""
    from services.assignor.api import assign

    reported = [
        Member(id=m.id, topics=m.topics, owned=tuple((t, p) for t, p in before.get(m.id, ())))
        for m in group
    ]
    return assign("sticky", counts, reported)


def _fewest_moves_for_shares(
    group: list[Member],
    counts: Mapping[str, int],
    wanted: set[str],
    keepable: Mapping[tuple[str, str], int],
    shares: Mapping[str, int],
) -> int | None:
    """Fewest owned partitions that must change owner to reach exactly ``shares``.

    A min-cost flow: each partition flows from its group (topic, owner) to a subscriber;
    staying with its owner costs 0, going anywhere else costs 1. None if ``shares``
    cannot be met within the subscriptions.
    """
    topics = sorted(wanted)
    member_ids = [m.id for m in group]
    node = {("member", m): 2 + i for i, m in enumerate(member_ids)}
    for t in topics:
        node[("pool", t)] = len(node) + 2
    groups = list(keepable.items())
    first_group = len(node) + 2
    graph = MinCostFlow(first_group + len(groups) + len(topics))
    source, sink = 0, 1
    for i, ((topic, owner), n) in enumerate(groups):
        graph.add_edge(source, first_group + i, n, 0)
        graph.add_edge(first_group + i, node[("member", owner)], n, 0)
        graph.add_edge(first_group + i, node[("pool", topic)], n, 1)
    for j, topic in enumerate(topics):
        free = counts[topic] - sum(n for (t, _), n in groups if t == topic)
        graph.add_edge(source, first_group + len(groups) + j, free, 0)
        graph.add_edge(first_group + len(groups) + j, node[("pool", topic)], free, 0)
    total = sum(counts[t] for t in topics)
    for m in group:
        for topic in set(m.topics) & wanted:
            graph.add_edge(node[("pool", topic)], node[("member", m.id)], total, 0)
        graph.add_edge(node[("member", m.id)], sink, shares.get(m.id, 0), 0)
    flow, cost = graph.run(source, sink, total)
    return cost if flow == total else None
