"""The bookkeeping structures of Kafka's general sticky builder, on integer ids."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterator

from services.assignor.javaorder import JavaHashSetPicker
from services.assignor.sticky.input import StickyInput


class SortedMembers:
    """Kafka's ``TreeSet`` ordered by (assignment size, member id), as one sorted int list.

    A member's key is ``size * N + rank``; it must be removed before its size changes and
    re-added afterwards, exactly as Kafka does with its comparator-backed TreeSet.
    """

    __slots__ = ("by_rank", "keys", "n", "rank", "sizes")

    def __init__(self, prep: StickyInput, sizes: list[int]) -> None:
        self.n = len(prep.members)
        self.rank = prep.rank
        self.by_rank = prep.by_rank
        self.sizes = sizes
        self.keys: list[int] = []

    def add(self, member: int) -> None:
        insort(self.keys, self.sizes[member] * self.n + self.rank[member])

    def remove(self, member: int) -> None:
        key = self.sizes[member] * self.n + self.rank[member]
        i = bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            del self.keys[i]

    def __iter__(self) -> Iterator[int]:
        by_rank, n = self.by_rank, self.n
        return (by_rank[k % n] for k in self.keys)

    def first(self) -> int:
        return self.by_rank[self.keys[0] % self.n]

    def last(self) -> int:
        return self.by_rank[self.keys[-1] % self.n]


class PartitionMovements:
    """``AbstractStickyAssignor.PartitionMovements`` (only what the assignment needs)."""

    def __init__(self, hash_of: Callable[[int], int]) -> None:
        self.hash_of = hash_of
        self.moves: dict[int, tuple[int, int]] = {}
        self.by_topic: dict[int, dict[tuple[int, int], JavaHashSetPicker]] = {}

    def _remove_record(self, gid: int, topic: int) -> tuple[int, int]:
        pair = self.moves.pop(gid)
        pairs = self.by_topic[topic]
        pairs[pair].discard(gid)
        if not len(pairs[pair]):
            del pairs[pair]
        if not pairs:
            del self.by_topic[topic]
        return pair

    def _add_record(self, gid: int, topic: int, pair: tuple[int, int]) -> None:
        self.moves[gid] = pair
        pairs = self.by_topic.setdefault(topic, {})
        if pair not in pairs:
            pairs[pair] = JavaHashSetPicker(self.hash_of)
        pairs[pair].add(gid)

    def move(self, gid: int, topic: int, old: int, new: int) -> None:
        if gid in self.moves:
            src, _ = self._remove_record(gid, topic)
            if src != new:
                self._add_record(gid, topic, (src, new))
        else:
            self._add_record(gid, topic, (old, new))

    def actual_partition_to_move(self, gid: int, topic: int, old: int, new: int) -> int:
        """``getTheActualPartitionToBeMoved``: undo an earlier opposite move if there is one.

        Which partition of that reverse move comes back depends on Kafka's HashSet order,
        which we replay from ``TopicPartition.hashCode``.
        """
        pairs = self.by_topic.get(topic)
        if pairs is None:
            return gid
        if gid in self.moves:
            old = self.moves[gid][0]
        reverse = pairs.get((new, old))
        return gid if reverse is None else reverse.first()
