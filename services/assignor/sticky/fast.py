"""The sticky assignors' fast path: identical subscriptions, owned partitions as sent.

After a group's first assignment nearly every rebalance looks alike: every member re-sends
the partitions it owns, each of them well formed, still existing and claimed by no one
else. Kafka's ``AbstractStickyAssignor.allSubscriptionsEqual`` then keeps every claim as
sent, and ``ConstrainedAssignmentBuilder`` needs of each member only its partitions sorted
by partition, then topic, and how many there are. This path reads the (topic, partition)
pairs in bulk instead of one by one, marks the claimed partitions in one bytearray per
topic, and hands back the kept pairs themselves instead of building new ones, so that a
rebalance costs about what its changes cost, not what the million owned partitions cost.

It declines (returns None) whenever the general path might decide differently or raise:
differing subscriptions, rack-aware assignment, an owned entry that is not a plain
``(str, int)`` pair of a subscribed topic within its partition count, or a partition
claimed twice (by one member or by two). The caller then checks and resolves the claims
one by one in ``StickyInput``. Both paths give the same assignment; the property tests in
``tests/assignor/test_sticky_fast.py`` compare them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import add, itemgetter, mul
from typing import cast

from services.assignor.model import TopicPartition
from services.assignor.sticky.constrained import ConstrainedBuilder
from services.assignor.sticky.input import StickyInput
from services.assignor.sticky.owned import (
    NotPlain,
    claims,
    free_partitions,
    read_owned,
    sent_lists,
)

_PARTITION = itemgetter(1)


def _in_kafka_order(
    pairs: list[TopicPartition], tix: list[int], partitions: list[int], topics: int
) -> list[TopicPartition] | None:
    """One member's pairs in the order ``ConstrainedAssignmentBuilder.assignOwnedPartitions``
    sorts owned partitions into before keeping them: by partition, then topic.

    Topic by topic (the order of a first assignment), a stable sort by partition is all
    it takes. None if a pair is listed twice and the caller's count of claims cannot tell.
    """
    if not pairs:
        return []
    if partitions.count(partitions[0]) == len(partitions):
        keys = tix
    elif tix == sorted(tix):
        return sorted(pairs, key=_PARTITION)
    else:
        keys = list(map(add, map(mul, partitions, repeat(topics)), tix))
    in_order = sorted(keys)
    if in_order == keys:
        return pairs
    by_key = dict(zip(keys, pairs, strict=True))
    if len(by_key) != len(keys):
        return None
    return list(map(by_key.__getitem__, in_order))


class KeptPairsBuilder(ConstrainedBuilder[int | TopicPartition]):
    """``ConstrainedBuilder`` (Kafka's ``ConstrainedAssignmentBuilder``) on owned partitions
    read by ``sticky.owned.read_owned``: the same quotas, order and round robin.

    A member's list starts with the (topic, partition) pairs it keeps, ``kept[i]`` of
    them, and goes on with the global ids dealt to it; ``pairs_of`` gives the pair of
    every id that can be dealt.
    """

    def __init__(
        self, prep: StickyInput, owned: list[list[TopicPartition]], claimed: list[bytearray]
    ) -> None:
        super().__init__(prep)
        self.owned = owned
        self.claimed = claimed
        self.kept = [0] * len(owned)
        self.pairs_of: dict[int, TopicPartition] = {}

    def _assign_owned(self) -> list[int]:
        base, claimed, index = self.prep.base, self.claimed, self.prep.topic_index
        for i in self.prep.order:
            pairs = self.owned[i]
            keep = self.kept[i] = self._quota(i, len(pairs))
            # The kept pairs start the member's list; the ids dealt to it are appended.
            self.assignment[i] = cast("list[int | TopicPartition]", pairs[:keep])
            for topic, p in pairs[keep:]:
                t = index[topic]
                claimed[t][p] = 0
                self.revoked[base[t] + p] = i
        unassigned: list[int] = []
        for topic, start, marks in zip(self.prep.topics, base, claimed, strict=True):
            free = free_partitions(marks)
            ids = list(map(start.__add__, free))
            self.pairs_of.update(zip(ids, zip(repeat(topic), free), strict=True))
            unassigned.extend(ids)
        return unassigned


def assign_owned_as_sent(
    prep: StickyInput, sent: Sequence[object], cooperative: bool
) -> list[list[TopicPartition]] | None:
    """Each member's partitions (members in input order), or None to take the general path.

    ``prep`` was built from members without their owned partitions; ``sent`` holds those,
    unchecked (``model.owned_as_sent``). The result is what ``StickyAssignor`` (or, with
    ``cooperative``, ``CooperativeStickyAssignor``) returns for the same input.
    """
    if not prep.all_equal or prep.rack_info.enabled or not any(sent):
        return None
    claimed = [bytearray(count) for count in prep.counts]
    owned: list[list[TopicPartition]] = []
    topics = len(prep.topics)
    try:
        for pairs, tix, partitions in read_owned(prep, sent_lists(sent), claimed):
            in_order = _in_kafka_order(pairs, tix, partitions, topics)
            if in_order is None:
                return None  # a pair listed twice
            owned.append(in_order)
    except NotPlain:
        return None
    if sum(map(len, owned)) != claims(claimed):
        return None  # a partition claimed twice: the general path arbitrates
    builder = KeptPairsBuilder(prep, owned, claimed)
    assignment = builder.build()
    pair_of = builder.pairs_of.__getitem__
    moving = builder.transferring if cooperative else {}
    for dealt, keep in zip(assignment, builder.kept, strict=True):
        if len(dealt) > keep:
            ids = cast("list[int]", dealt[keep:])  # after the kept pairs: the dealt ids
            dealt[keep:] = [pair_of(g) for g in ids if g not in moving]
    return cast("list[list[TopicPartition]]", assignment)  # every dealt id now a pair
