"""The ``roundrobin`` assignor: ``org.apache.kafka.clients.consumer.RoundRobinAssignor``.

All subscribed partitions, topics in name order and partitions ascending, are dealt to
the members sorted in ``MemberInfo`` order, skipping members not subscribed to the topic.
"""

from __future__ import annotations

from collections.abc import Mapping

from services.assignor.common import member_info_key, subscribed_partition_counts
from services.assignor.model import Assignment, Member


def assign_roundrobin(counts: Mapping[str, int], members: list[Member]) -> Assignment:
    assignment: Assignment = {m.id: [] for m in members}
    ring = sorted(members, key=member_info_key)
    if not ring:
        return assignment
    subscribed = [frozenset(m.topics) for m in ring]
    lists = [assignment[m.id] for m in ring]
    size = len(ring)
    position = 0
    for topic, count in subscribed_partition_counts(counts, members).items():
        for partition in range(count):
            while topic not in subscribed[position]:
                position = (position + 1) % size
            lists[position].append((topic, partition))
            position = (position + 1) % size
    return assignment
