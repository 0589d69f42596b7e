"""The client-side ``range`` assignor: ``org.apache.kafka.clients.consumer.RangeAssignor``.

Per topic, partitions in numeric order go to the topic's subscribers sorted by
``MemberInfo`` order (group instance id first, then member id); the first ``n % m``
subscribers get one extra. With consumer and replica racks (KIP-881) partitions are first
matched to consumers on the same rack, keeping the same per-topic counts, and topics with
the same subscribers and partition count stay co-partitioned.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from itertools import islice, repeat

from services.assignor.common import (
    consumer_rack,
    member_info_key,
    partitions_per_topic_order,
    replica_racks,
    subscribed_partition_counts,
    use_rack_aware_assignment,
)
from services.assignor.model import Assignment, Member


class _TopicState:
    """``RangeAssignor.TopicAssignmentState``."""

    def __init__(
        self,
        topic: str,
        num_partitions: int,
        consumers: list[Member],
        racks: Mapping[str, Sequence[frozenset[str]]],
    ) -> None:
        self.topic = topic
        self.consumers = [c.id for c in consumers]
        self.consumer_racks = {c.id: consumer_rack(c) for c in consumers}
        self.unassigned: dict[int, None] = dict.fromkeys(range(num_partitions))
        self.num_assigned = dict.fromkeys(self.consumers, 0)
        n = len(self.consumers)
        self.per_consumer = num_partitions // n if n else 0
        self.remaining_extra = num_partitions % n if n else 0
        all_consumer_racks = {r for r in self.consumer_racks.values() if r}
        if all_consumer_racks:
            self.partition_racks = [replica_racks(racks, topic, p) for p in range(num_partitions)]
        else:
            self.partition_racks = []
        all_partition_racks = set().union(*self.partition_racks) if self.partition_racks else set()
        self.needs_rack_aware = use_rack_aware_assignment(
            all_consumer_racks, all_partition_racks, self.partition_racks
        )
        self.group_key = tuple(self.consumer_racks.items())

    def racks_match(self, consumer: str, partition: int) -> bool:
        rack = self.consumer_racks[consumer]
        if rack is None:
            return True
        return partition < len(self.partition_racks) and rack in self.partition_racks[partition]

    def max_assignable(self, consumer: str) -> int:
        extra = 1 if self.remaining_extra > 0 else 0
        return max(0, self.per_consumer + extra - self.num_assigned[consumer])

    def on_assigned(self, consumer: str, partitions: list[int]) -> None:
        self.num_assigned[consumer] += len(partitions)
        if self.num_assigned[consumer] > self.per_consumer:
            self.remaining_extra -= 1
        for p in partitions:
            del self.unassigned[p]


def _assign(
    state: _TopicState, consumer: str, partitions: list[int], assignment: Assignment
) -> None:
    assignment[consumer].extend(zip(repeat(state.topic), partitions))
    state.on_assigned(consumer, partitions)


def _assign_ranges(
    state: _TopicState,
    may_assign: Callable[[str, int], bool] | None,
    assignment: Assignment,
) -> None:
    """``RangeAssignor.assignRanges``; ``may_assign`` None means every partition may go."""
    for consumer in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        if may_assign is None:
            chosen = list(islice(state.unassigned, limit))
        else:
            chosen = list(islice((p for p in state.unassigned if may_assign(consumer, p)), limit))
        if chosen:
            _assign(state, consumer, chosen, assignment)


def _assign_co_partitioned(
    consumers: list[str], num_partitions: int, states: list[_TopicState], assignment: Assignment
) -> None:
    remaining = list(consumers)
    for p in range(num_partitions):
        match = next(
            (
                c
                for c in remaining
                if all(s.racks_match(c, p) and s.max_assignable(c) > 0 for s in states)
            ),
            None,
        )
        if match is None:
            continue
        for s in states:
            _assign(s, match, [p], assignment)
        if all(s.max_assignable(match) <= 0 for s in states):
            remaining.remove(match)
            if not remaining:
                break


def _assign_with_rack_matching(states: list[_TopicState], assignment: Assignment) -> None:
    by_consumers: dict[tuple[tuple[str, str | None], ...], list[_TopicState]] = defaultdict(list)
    for s in states:
        by_consumers[s.group_key].append(s)
    for group in by_consumers.values():
        by_count: dict[int, list[_TopicState]] = defaultdict(list)
        for s in group:
            by_count[len(s.partition_racks)].append(s)
        for num_partitions, co_partitioned in by_count.items():
            if len(co_partitioned) > 1:
                _assign_co_partitioned(
                    co_partitioned[0].consumers, num_partitions, co_partitioned, assignment
                )
            elif co_partitioned[0].needs_rack_aware:
                _assign_ranges(co_partitioned[0], co_partitioned[0].racks_match, assignment)


def _plain_ranges(topic: str, count: int, consumers: list[str], assignment: Assignment) -> None:
    """Without racks ``assignRanges`` reduces to Kafka's classic arithmetic."""
    per_consumer, extra = divmod(count, len(consumers))
    start = 0
    for i, consumer in enumerate(consumers):
        length = per_consumer + (1 if i < extra else 0)
        assignment[consumer].extend(zip(repeat(topic), range(start, start + length)))
        start += length


def assign_range(
    counts: Mapping[str, int],
    members: list[Member],
    racks: Mapping[str, Sequence[frozenset[str]]],
) -> Assignment:
    """``RangeAssignor.assignPartitions``; member lists come out in Kafka's order."""
    per_topic = subscribed_partition_counts(counts, members)
    keys = {m.id: member_info_key(m) for m in members}
    subscribers: dict[str, list[Member]] = defaultdict(list)
    for m in members:
        for t in m.topics:
            subscribers[t].append(m)
    ordered = partitions_per_topic_order(per_topic, members)
    sorted_subscribers = {t: sorted(subscribers[t], key=lambda m: keys[m.id]) for t in ordered}
    assignment: Assignment = {m.id: [] for m in members}
    if not any(consumer_rack(m) for m in members):
        for topic in ordered:
            consumers = [m.id for m in sorted_subscribers[topic]]
            _plain_ranges(topic, per_topic[topic], consumers, assignment)
        return assignment
    states = [_TopicState(t, per_topic[t], sorted_subscribers[t], racks) for t in ordered]
    rack_aware = any(s.needs_rack_aware for s in states)
    if rack_aware:
        _assign_with_rack_matching(states, assignment)
    for s in states:
        _assign_ranges(s, None, assignment)
    if rack_aware:
        for partitions in assignment.values():
            partitions.sort()
    return assignment
