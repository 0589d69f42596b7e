"""Churn of a rebalance: how many partitions changed owner, and the physical minimum.

A *move* is a partition owned both before and after whose owner changed. Moves split into
those taken from members that are still in the group (the real cost) and those of members
that left (unavoidable).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from services.assignor.model import Member, check_partition_counts, to_member

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Moves:
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


def _owners(assignment: Mapping[str, Iterable[Sequence]]) -> dict[TopicPartition, str]:
    owners: dict[TopicPartition, str] = {}
    for member, partitions in assignment.items():
        for topic, partition in partitions:
            owners[(topic, partition)] = member
    return owners


def moves(
    before: Mapping[str, Iterable[Sequence]], after: Mapping[str, Iterable[Sequence]]
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


def _as_members(members: Iterable[Mapping | Member | str], topics: list[str]) -> list[Member]:
    return [
        Member(id=m, topics=tuple(topics)) if isinstance(m, str) else to_member(m) for m in members
    ]


def minimum_moves(
    before: Mapping[str, Iterable[Sequence]],
    members: Iterable[Mapping | Member | str],
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
    Kafka's ``sticky`` assignor reaches for this group, and the result is a lower bound:
    no assignment with those counts moves fewer partitions (sticky's own included).
    """
    counts = check_partition_counts(partitions_per_topic)
    group = _as_members(members, [t for t, c in counts.items() if c > 0])
    if not group:
        return Moves(0, 0)
    ids = {m.id for m in group}
    subscribed = {m.id: set(m.topics) for m in group}
    wanted = {t for m in group for t in m.topics if counts.get(t, 0) > 0}
    departed = 0
    forced = 0
    owned: dict[str, int] = dict.fromkeys(ids, 0)
    for tp, owner in _owners(before).items():
        topic, partition = tp
        if topic not in wanted or partition >= counts[topic]:
            continue
        if owner not in ids:
            departed += 1
        elif topic in subscribed[owner]:
            owned[owner] += 1
        else:
            forced += 1
    shares = _shares(group, counts, wanted)
    if shares is None:
        total = sum(counts[t] for t in wanted)
        minimum, extra = divmod(total, len(group))
        kept = sum(min(o, minimum) for o in owned.values())
        kept += min(extra, sum(1 for o in owned.values() if o > minimum))
    else:
        kept = sum(min(owned[m], shares[m]) for m in ids)
    return Moves(sum(owned.values()) - kept + forced, departed)


def _shares(group: list[Member], counts: Mapping[str, int], wanted: set[str]) -> dict | None:
    """Per-member counts of a balanced assignment; None when subscriptions are identical."""
    reference = set(group[0].topics) & wanted
    if all(set(m.topics) & wanted == reference for m in group):
        return None
    from services.assignor.api import assign

    plain = [Member(id=m.id, topics=m.topics) for m in group]
    result = assign("sticky", counts, plain)
    return {m: len(partitions) for m, partitions in result.items()}
