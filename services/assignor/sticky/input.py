"""What ``AbstractStickyAssignor.assignPartitions`` computes before choosing a builder.

Partitions are numbered 0..P-1 ("global ids"): topics in Java name order, partitions
ascending, so ``(topic, partition)`` order is plain integer order. Members are numbered in
input order; ``order`` is the iteration order of Kafka's ``HashMap`` of subscriptions and
``rank`` is ``String.compareTo`` order of member ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain, repeat
from operator import add, itemgetter, lt

from services.assignor.common import (
    consumer_rack,
    replica_racks,
    subscribed_partition_counts,
    use_rack_aware_assignment,
)
from services.assignor.javaorder import hashmap_order, java_str_key
from services.assignor.model import Member

DEFAULT_GENERATION = -1


class RackInfo:
    """``AbstractStickyAssignor.RackInfo``."""

    def __init__(self, prep: StickyInput, racks: Mapping[str, Sequence[frozenset[str]]]) -> None:
        n = len(prep.members)
        self.consumer_rack: list[str | None] = [None] * n
        self.partition_racks: list[frozenset[str]] = []
        self.num_consumers: list[int] = []
        by_rack: dict[str, list[int]] = {}
        for i in prep.order:
            rack = consumer_rack(prep.members[i])
            if rack:
                by_rack.setdefault(rack, []).append(i)
        if not by_rack:
            self.enabled = False
            return
        partition_racks = [
            replica_racks(racks, topic, p)
            for topic, count in zip(prep.topics, prep.counts, strict=True)
            for p in range(count)
        ]
        all_racks = set().union(*partition_racks) if partition_racks else set()
        self.enabled = use_rack_aware_assignment(set(by_rack), all_racks, partition_racks)
        if self.enabled:
            for rack, ids in by_rack.items():
                for i in ids:
                    self.consumer_rack[i] = rack
            self.partition_racks = partition_racks
        sizes = {rack: len(ids) for rack, ids in by_rack.items()}
        self.num_consumers = [sum(sizes.get(r, 0) for r in rs) for rs in partition_racks]

    def mismatch(self, member: int, gid: int) -> bool:
        rack = self.consumer_rack[member]
        return rack is not None and rack not in self.partition_racks[gid]

    def sort_by_rack_consumers(self, partitions: list[int]) -> list[int]:
        if not self.num_consumers:
            return partitions
        return sorted(partitions, key=self.num_consumers.__getitem__)

    def next_rack_consumer(self, gid: int, consumers: list[int], first: int) -> int:
        racks = self.partition_racks[gid] if self.enabled else None
        if not racks:
            return -1
        size = len(consumers)
        for i in range(size):
            index = (first + i) % size
            rack = self.consumer_rack[consumers[index]]
            if rack is not None and rack in racks:
                return index
        return -1


class StickyInput:
    """Indexed form of one sticky assignment's input."""

    def __init__(
        self,
        counts: Mapping[str, int],
        members: list[Member],
        racks: Mapping[str, Sequence[frozenset[str]]],
    ) -> None:
        self.members = members
        per_topic = subscribed_partition_counts(counts, members)
        self.topics = list(per_topic)
        self.counts = list(per_topic.values())
        self.topic_index = {t: i for i, t in enumerate(self.topics)}
        self._count_of = dict(zip(self.topics, self.counts, strict=True))
        self.base: list[int] = []
        total = 0
        for count in self.counts:
            self.base.append(total)
            total += count
        self.total = total
        self._base_of = dict(zip(self.topics, self.base, strict=True))
        self.order = hashmap_order([m.id for m in members])
        by_name = sorted(range(len(members)), key=lambda i: java_str_key(members[i].id))
        self.rank = [0] * len(members)
        for r, i in enumerate(by_name):
            self.rank[i] = r
        self.by_rank = by_name
        self.rack_info = RackInfo(self, racks)
        self.max_generation = DEFAULT_GENERATION
        self.attach_owned(members)

    def attach_owned(self, members: list[Member]) -> None:
        """(Re)read the members' owned partitions: ``members`` are the same members, in order.

        The sticky fast path (``sticky.fast``) first builds this input from members without
        their owned partitions and only attaches them here when it cannot use them as sent.
        """
        self.members = members
        self._raw_owned: list[list[int] | None] = [None] * len(members)
        self.owned: list[list[int]] = [[] for _ in members]
        self.multiple_owners: set[int] = set()
        self.all_equal = self._resolve_owned()

    def raw_owned(self, member: int) -> list[int]:
        """A member's reported partitions that still exist, in the order it sent them."""
        cached = self._raw_owned[member]
        if cached is None:
            cached = self._raw_owned[member] = self._to_ids(self.members[member].owned)
        return cached

    def any_owned(self) -> bool:
        """Whether any member reported a partition that still exists."""
        return any(map(self.raw_owned, range(len(self.members))))

    def _to_ids(self, owned: Sequence[tuple[str, int]]) -> list[int]:
        topics = list(map(itemgetter(0), owned))
        partitions = list(map(itemgetter(1), owned))
        try:
            if all(map(lt, partitions, map(self._count_of.__getitem__, topics))):
                return list(map(add, map(self._base_of.__getitem__, topics), partitions))
        except KeyError:
            pass
        return [
            self._base_of[topic] + partition
            for topic, partition in owned
            if partition < self._count_of.get(topic, 0)
        ]

    def topic_of(self) -> list[int]:
        """Topic index of every global id."""
        topic_of: list[int] = []
        for t, count in enumerate(self.counts):
            topic_of.extend(repeat(t, count))
        return topic_of

    def partition_major_keys(self) -> list[int]:
        """A sort key per global id ordering by partition, then topic (Kafka's owned order)."""
        topics = len(self.topics)
        keys: list[int] = []
        for t, count in enumerate(self.counts):
            keys.extend(range(t, t + count * topics, topics))
        return keys

    def partition_tuples(self) -> list[tuple[str, int]]:
        tuples: list[tuple[str, int]] = []
        for topic, count in zip(self.topics, self.counts, strict=True):
            tuples.extend(zip(repeat(topic, count), range(count), strict=True))
        return tuples

    def _resolve_owned(self) -> bool:
        """``AbstractStickyAssignor.allSubscriptionsEqual``: also resolves double claims.

        Where two members claim one partition the higher generation keeps it; with equal
        generations neither does and the partition is remembered as multiply owned.
        Partitions beyond a topic's current count are ignored (Kafka never shrinks topics).

        Kafka's quirk is kept: the reference subscription is the first non-empty one, so a
        member with an empty subscription met before it still counts as "equal", and the
        constrained builder then deals it partitions like everyone else.
        """
        all_equal = True
        reference: set[str] = set()
        for i in self.order:
            topics = self.members[i].topics
            if not reference:
                reference.update(topics)
            elif all_equal and not (len(topics) == len(reference) and reference.issuperset(topics)):
                all_equal = False
        generation = [
            DEFAULT_GENERATION if m.generation is None else m.generation for m in self.members
        ]
        self.max_generation = max(generation, default=DEFAULT_GENERATION)
        claims = [self.raw_owned(i) for i in range(len(self.members))]
        total = sum(map(len, claims))
        if total == len(set(chain.from_iterable(claims))):
            self.owned = [list(ids) for ids in claims]
            return all_equal
        claimer = [-1] * self.total
        for i in self.order:
            gen = generation[i]
            mine = self.owned[i]
            for g in claims[i]:
                other = claimer[g]
                if other < 0:
                    mine.append(g)
                    claimer[g] = i
                elif gen == generation[other]:
                    self.multiple_owners.add(g)
                    _remove(self.owned[other], g)
                    claimer[g] = i
                elif gen > generation[other]:
                    mine.append(g)
                    _remove(self.owned[other], g)
                    claimer[g] = i
        return all_equal


def _remove(values: list[int], value: int) -> None:
    if value in values:
        values.remove(value)
