"""``uniform``: ``org.apache.kafka.coordinator.group.assignor.UniformAssignor`` (KIP-848).

Homogeneous groups use ``UniformHomogeneousAssignmentBuilder``: members, in the
coordinator's HashMap order, keep owned partitions up to their quota (``P // N``, plus one
for ``P % N`` of them: first those already holding that many, then the last unfilled
members), and the unfilled ones take the unassigned partitions in turn. With member and
replica racks, only partitions on a member's rack are kept, and unassigned ones go to a
member on their rack first.
Heterogeneous groups use ``UniformHeterogeneousAssignmentBuilder``: keep every owned
partition still subscribed, deal the unassigned ones topic by topic to the least loaded
subscribers, then move partitions from the most to the least loaded subscribers.

Kafka iterates topics by topic id (a HashSet of UUIDs, or UUID order as the last
tie-break); we use topic names instead. Which partitions move can therefore differ from
Kafka, though the sizes and the number of moves follow the same rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.assignor.common import consumer_rack, replica_racks, use_rack_aware_assignment
from services.assignor.model import Member, PartitionAssignorError
from services.assignor.server_common import (
    current_assignment,
    member_order,
    sorted_topics,
    to_output,
)

MAX_ITERATION_COUNT = 16


def _missing(topic: str) -> PartitionAssignorError:
    return PartitionAssignorError(
        f"Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
    )


def assign_uniform(
    counts: Mapping[str, int],
    members: list[Member],
    racks: Mapping[str, Sequence[frozenset[str]]],
) -> dict:
    if not members:
        return {}
    ordered = member_order(members)
    if all(set(m.topics) == set(ordered[0].topics) for m in ordered):
        assigned = _homogeneous(counts, ordered, racks)
    else:
        assigned = _Heterogeneous(counts, ordered).build()
    return to_output(members, assigned)


def _homogeneous(
    counts: Mapping[str, int],
    members: list[Member],
    racks: Mapping[str, Sequence[frozenset[str]]],
) -> dict:
    """``UniformHomogeneousAssignmentBuilder``, rack-aware version.

    Each member, in HashMap order, keeps owned partitions up to its quota (with racks in
    play, only those on its rack). The ``P % N`` extra slots go first to members already
    holding an extra partition, then to the last unfilled members.
    """
    topics = sorted_topics(set(members[0].topics))
    if not topics:
        return {}
    for topic in topics:
        if topic not in counts:
            raise _missing(topic)
    rack = {m.id: consumer_rack(m) for m in members}
    member_racks = {r for r in rack.values() if r}
    per_partition = (
        [replica_racks(racks, t, p) for t in topics for p in range(counts[t])]
        if member_racks and racks
        else []
    )
    use_racks = use_rack_aware_assignment(
        member_racks, set().union(*per_partition) if per_partition else set(), per_partition
    )

    def rack_match(member_id: str, topic: str, partition: int) -> bool:
        return rack[member_id] is not None and rack[member_id] in replica_racks(
            racks, topic, partition
        )

    old = current_assignment(members, counts)
    taken = {(t, p) for per_topic in old.values() for t, ps in per_topic.items() for p in ps}
    unassigned = [(t, p) for t in topics for p in range(counts[t]) if (t, p) not in taken]
    total = sum(counts[t] for t in topics)
    min_quota, extra = divmod(total, len(members))
    subscribed = set(topics)
    target: dict[str, dict[str, list[int]]] = {}
    unfilled: list[list] = []
    for m in members:
        quota, has_extra = min_quota, False
        if extra > 0:
            quota, has_extra = quota + 1, True
        mine: dict[str, list[int]] = {}
        for topic, partitions in old[m.id].items():
            if topic not in subscribed:
                continue
            if len(partitions) <= quota and not use_racks:
                quota -= len(partitions)
                mine[topic] = list(partitions)
                continue
            kept = []
            for p in partitions:
                if quota > 0 and (not use_racks or rack_match(m.id, topic, p)):
                    quota -= 1
                    kept.append(p)
                else:
                    unassigned.append((topic, p))
            if kept:
                mine[topic] = kept
        if quota > 0 and has_extra:
            quota, has_extra = quota - 1, False
        if quota == 0 and has_extra:
            extra -= 1
        if quota > 0 or (extra > 0 and not has_extra):
            unfilled.append([m.id, quota])
        target[m.id] = mine

    if use_racks:
        left = []
        for topic, p in unassigned:
            i = 0
            while i < len(unfilled):
                member_id, quota = unfilled[i]
                if quota == 0 and extra == 0:
                    del unfilled[i]
                    continue
                if not rack_match(member_id, topic, p):
                    i += 1
                    continue
                target[member_id].setdefault(topic, []).append(p)
                if quota > 0:
                    unfilled[i][1] -= 1
                else:
                    del unfilled[i]
                    extra -= 1
                break
            else:
                left.append((topic, p))
        unassigned = left

    for entry in reversed(unfilled):
        if extra > 0:
            extra -= 1
            entry[1] += 1
    index = 0
    for member_id, quota in unfilled:
        for topic, partition in unassigned[index : index + quota]:
            target[member_id].setdefault(topic, []).append(partition)
        index += quota
    if index < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return target


class _Balancer:
    """``UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer``."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted: list[int] = []

    def initialize(self, members: list[int]) -> int:
        sizes = self.sizes
        self.sorted = sorted(members, key=lambda i: (sizes[i], i))
        first, last = self.sorted[0], self.sorted[-1]
        self.least_end = 0
        self.least_count = sizes[first] - 1
        self.next_least = 0
        self.most_start = len(self.sorted)
        self.most_end = len(self.sorted)
        self.most_count = sizes[last] + 1
        self.next_most = len(self.sorted) - 1
        return sizes[last] - sizes[first]

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            while (
                self.least_end < len(self.sorted)
                and self.sizes[self.sorted[self.least_end]] == self.least_count
            ):
                self.least_end += 1
            self.next_least = 0
        member = self.sorted[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = self.sizes[self.sorted[self.most_start - 1]]
            else:
                self.most_count -= 1
            while (
                self.most_start > 0
                and self.sizes[self.sorted[self.most_start - 1]] == self.most_count
            ):
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.sorted[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        i = self.next_most + 1
        end = self.most_end - 1
        self.sorted[i], self.sorted[end] = self.sorted[end], self.sorted[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Heterogeneous:
    def __init__(self, counts: Mapping[str, int], members: list[Member]) -> None:
        self.counts = counts
        self.members = members
        self.subscribers: dict[str, list[int]] = {}
        for i, m in enumerate(members):
            for topic in m.topics:
                if topic not in counts:
                    raise _missing(topic)
                self.subscribers.setdefault(topic, []).append(i)
        self.sizes = [0] * len(members)
        self.owners = {t: [-1] * counts[t] for t in self.subscribers}

    def _sorted(self, topics) -> list[str]:
        counts, subscribers = self.counts, self.subscribers
        by_name = sorted_topics(set(topics))
        return sorted(
            by_name, key=lambda t: (-(counts[t] / len(subscribers[t])), len(subscribers[t]))
        )

    def build(self) -> dict:
        if not self.subscribers:
            return {}
        old = current_assignment(self.members, self.counts)
        for i, m in enumerate(self.members):
            for topic, partitions in old[m.id].items():
                if topic in m.topics:
                    for p in partitions:
                        self.owners[topic][p] = i
                    self.sizes[i] += len(partitions)
        unassigned = {
            t: [p for p, o in enumerate(owners) if o == -1] for t, owners in self.owners.items()
        }
        balancer = _Balancer(self.sizes)
        for topic in self._sorted(t for t, ps in unassigned.items() if ps):
            balancer.initialize(self.subscribers[topic])
            for p in unassigned[topic]:
                self._assign(topic, p, balancer.next_least_loaded())
        movable = [t for t, subs in self.subscribers.items() if len(subs) >= 2]
        if movable:
            self._balance_topics(self._sorted(movable), balancer)
        target: dict[str, dict[str, list[int]]] = {m.id: {} for m in self.members}
        for topic, owners in self.owners.items():
            for p, i in enumerate(owners):
                target[self.members[i].id].setdefault(topic, []).append(p)
        return target

    def _assign(self, topic: str, partition: int, member: int) -> None:
        owners = self.owners[topic]
        if owners[partition] != -1:
            self.sizes[owners[partition]] -= 1
        owners[partition] = member
        self.sizes[member] += 1

    def _balance_topics(self, topics: list[str], balancer: _Balancer) -> None:
        last_rebalanced = -1
        for _ in range(MAX_ITERATION_COUNT):
            for index, topic in enumerate(topics):
                if index == last_rebalanced:
                    return
                moved = self._balance_topic(topic, balancer)
                if moved > 0 or last_rebalanced == -1:
                    last_rebalanced = index

    def _balance_topic(self, topic: str, balancer: _Balancer) -> int:
        moved = 0
        if balancer.initialize(self.subscribers[topic]) <= 1:
            return moved
        owners = self.owners[topic]
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        while not balancer.is_balanced():
            most = -1
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            partition = partitions[end[most] - 1]
            end[most] -= 1
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self._assign(topic, partition, least)
            moved += 1
        return moved
