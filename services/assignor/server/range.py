"""``server-range``: ``org.apache.kafka.coordinator.group.assignor.RangeAssignor`` (KIP-848).

Members sorted by group instance id (static members first), then member id, take
contiguous ranges of each subscribed topic; the first ``n % m`` subscribers of a topic get
one extra partition. The current assignment plays no part, so the result is exact.
"""

from __future__ import annotations

from collections.abc import Mapping

from services.assignor.common import member_info_key
from services.assignor.model import Assignment, Member, PartitionAssignorError
from services.assignor.server.common import to_output


def assign_server_range(counts: Mapping[str, int], members: list[Member]) -> Assignment:
    if not members:
        return {}
    ordered = sorted(members, key=member_info_key)
    subscribers: dict[str, int] = {}
    for m in ordered:
        for topic in m.topics:
            if topic not in counts:
                raise PartitionAssignorError("Member is subscribed to a non-existent topic")
            subscribers[topic] = subscribers.get(topic, 0) + 1
    next_range = dict.fromkeys(subscribers, 0)
    extra = {t: counts[t] % n for t, n in subscribers.items()}
    assigned: dict[str, dict[str, list[int]]] = {}
    for m in ordered:
        mine: dict[str, list[int]] = {}
        for topic in m.topics:
            start = next_range[topic]
            end = min(start + counts[topic] // subscribers[topic], counts[topic])
            if start < counts[topic] and extra[topic] > 0:
                end += 1
                extra[topic] -= 1
            if start < counts[topic]:
                next_range[topic] = end
                mine[topic] = list(range(start, end))
        assigned[m.id] = mine
    return to_output(members, assigned)
