"""``UniformHeterogeneousAssignmentBuilder``: members subscribe to different topics.

Keep every owned partition still subscribed, deal the unassigned ones topic by topic to
the least loaded subscribers, then move partitions from the most to the least loaded
subscribers, topic by topic, for at most ``MAX_ITERATION_COUNT`` rounds. With overlapping
subscriptions the result is "almost balanced", as Kafka documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from services.assignor.model import Member
from services.assignor.server.common import current_assignment, missing_topic
from services.assignor.server.topic_ids import TopicId

MAX_ITERATION_COUNT = 16


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


class HeterogeneousBuilder:
    def __init__(
        self, counts: Mapping[str, int], members: list[Member], ids: Mapping[str, TopicId]
    ) -> None:
        self.counts = counts
        self.ids = ids
        self.members = members
        self.subscribers: dict[str, list[int]] = {}
        for i, m in enumerate(members):
            for topic in m.topics:
                if topic not in counts:
                    raise missing_topic(topic)
                self.subscribers.setdefault(topic, []).append(i)
        self.sizes = [0] * len(members)
        self.owners = {t: [-1] * counts[t] for t in self.subscribers}

    def _sorted(self, topics: Iterable[str]) -> list[str]:
        """``sortTopicIds``: partitions per subscriber descending, then subscriber count
        ascending, then topic id (``Uuid.compareTo``)."""
        counts, subscribers, ids = self.counts, self.subscribers, self.ids
        return sorted(
            topics,
            key=lambda t: (
                -(counts[t] / len(subscribers[t])),
                len(subscribers[t]),
                ids[t].key(),
            ),
        )

    def build(self) -> dict[str, dict[str, list[int]]]:
        if not self.subscribers:
            return {}
        old = current_assignment(self.members, self.counts, self.ids)
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
