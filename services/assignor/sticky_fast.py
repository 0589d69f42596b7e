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
from itertools import chain, compress, repeat
from operator import add, itemgetter, mul

from services.assignor.model import TopicPartition
from services.assignor.sticky_constrained import ConstrainedBuilder
from services.assignor.sticky_input import StickyInput

_TOPIC = itemgetter(0)
_PARTITION = itemgetter(1)
_FREE = bytes.maketrans(b"\x00\x01", b"\x01\x00")
_FEW_FREE = 8  # up to this many free partitions in a topic are found by search
_CHUNK = 4096  # owned pairs checked at a time


def _read_chunk(
    chunk: list[list | tuple], prep: StickyInput, claimed: list[bytearray]
) -> list[list[TopicPartition]] | None:
    """Some members' owned pairs, marked in ``claimed``, each member's in Kafka's order.

    Kafka's order is the one ``ConstrainedAssignmentBuilder.assignOwnedPartitions`` sorts
    owned partitions into before keeping them: by partition, then topic. None if an entry
    is not a plain pair of a subscribed topic's existing partition. The members' pairs are
    checked together, a few thousand at a time, so that they are still in the CPU's cache
    from one pass to the next.
    """
    values = list(chain.from_iterable(chunk))
    if not values:
        return [[] for _ in chunk]
    kinds = set(map(type, values))
    if kinds != {tuple}:
        if not kinds <= {tuple, list}:
            return None
        values = list(map(tuple, values))
    if set(map(len, values)) != {2}:
        return None
    partitions = list(map(_PARTITION, values))
    topics = list(map(_TOPIC, values))
    if set(map(type, partitions)) != {int} or set(map(type, topics)) != {str}:
        return None
    try:
        tix = list(map(prep.topic_index.__getitem__, topics))
        # A partition beyond its topic's count raises IndexError; a negative one is
        # caught below, before anything relies on the marks.
        for t, p in zip(tix, partitions, strict=True):
            claimed[t][p] = 1
    except (KeyError, IndexError):
        return None
    owned: list[list[TopicPartition]] = []
    end = 0
    for member in chunk:
        start, end = end, end + len(member)
        if start == end:
            owned.append([])
            continue
        mine = partitions[start:end]
        if mine.count(mine[0]) == len(mine):
            if mine[0] < 0:
                return None
            keys = tix[start:end]
        else:
            keys = list(map(add, map(mul, mine, repeat(len(prep.topics))), tix[start:end]))
        in_order = sorted(keys)
        if in_order[0] < 0:
            return None
        if in_order == keys:
            owned.append(values[start:end])
            continue
        by_key = dict(zip(keys, values[start:end], strict=True))
        if len(by_key) != len(keys):
            return None  # a pair listed twice
        owned.append(list(map(by_key.__getitem__, in_order)))
    return owned


def _free(marks: bytearray) -> list[int]:
    """The unmarked partitions of one topic, in order."""
    if marks.count(0) > _FEW_FREE:
        return list(compress(range(len(marks)), marks.translate(_FREE)))
    free = []
    p = marks.find(0)
    while p >= 0:
        free.append(p)
        p = marks.find(0, p + 1)
    return free


class KeptPairsBuilder(ConstrainedBuilder):
    """``ConstrainedBuilder`` (Kafka's ``ConstrainedAssignmentBuilder``) on owned partitions
    read by ``_read_chunk``: the same quotas, order and round robin.

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
            self.assignment[i] = pairs[:keep]  # type: ignore[assignment]
            for topic, p in pairs[keep:]:
                t = index[topic]
                claimed[t][p] = 0
                self.revoked.add(base[t] + p)
        unassigned: list[int] = []
        for topic, start, marks in zip(self.prep.topics, base, claimed, strict=True):
            free = _free(marks)
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
    lists: list[list | tuple] = []
    for values in sent:
        if values is None:
            values = []
        elif type(values) is not list and type(values) is not tuple:
            return None
        lists.append(values)
    claimed = [bytearray(count) for count in prep.counts]
    owned: list[list[TopicPartition]] = []
    first = size = 0
    for last, values in enumerate(lists, start=1):
        size += len(values)
        if size >= _CHUNK or last == len(lists):
            read = _read_chunk(lists[first:last], prep, claimed)
            if read is None:
                return None
            owned.extend(read)
            first, size = last, 0
    if sum(map(len, owned)) != sum(map(bytearray.count, claimed, repeat(1))):
        return None  # a partition claimed twice: the general path arbitrates
    builder = KeptPairsBuilder(prep, owned, claimed)
    assignment: list[list] = builder.build()
    pair_of = builder.pairs_of.__getitem__
    moving = builder.transferring if cooperative else {}
    for dealt, keep in zip(assignment, builder.kept, strict=True):
        if len(dealt) > keep:
            dealt[keep:] = [pair_of(g) for g in dealt[keep:] if g not in moving]
    return assignment
