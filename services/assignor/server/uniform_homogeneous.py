"""``UniformHomogeneousAssignmentBuilder`` (Kafka 4.3.1): every member subscribes to the
same topics.

Members, in the coordinator's HashMap order, keep owned partitions up to their quota
(``P // N``, plus one while extra slots remain; a member that cannot fill its extra slot
gives it up unless it is among the last ``P % N`` members), and the unfilled members, in
that order, take the unassigned partitions in turn. Kafka 4.3.1's builder ignores racks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.assignor.javaorder import bucket_order, copy_capacity, default_capacity
from services.assignor.model import Member, PartitionAssignorError
from services.assignor.server.common import current_assignment, missing_topic
from services.assignor.server.topic_ids import TopicId


def assign_homogeneous(
    counts: Mapping[str, int], members: list[Member], ids: Mapping[str, TopicId]
) -> dict[str, dict[str, list[int]]]:
    """``UniformHomogeneousAssignmentBuilder.build``; ``members`` in HashMap order.

    Unassigned partitions are those no member owns, topics in the order of the builder's
    ``subscribedTopicIds`` (``subscribed_order``), followed by the partitions members give
    up, in the order they give them up (``current_assignment``'s).
    """
    topics = subscribed_order(members[0].topics, ids)
    if not topics:
        return {}
    for topic in topics:
        if topic not in counts:
            raise missing_topic(topic)
    old = current_assignment(members, counts, ids)
    taken = {(t, p) for per_topic in old.values() for t, ps in per_topic.items() for p in ps}
    unassigned = [(t, p) for t in topics for p in range(counts[t]) if (t, p) not in taken]
    total = sum(counts[t] for t in topics)
    count = len(members)
    min_quota, extra = divmod(total, count)
    subscribed = set(topics)
    target: dict[str, dict[str, list[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for index, m in enumerate(members):
        quota, has_extra = min_quota, False
        if extra > 0:
            quota, has_extra = quota + 1, True
        mine: dict[str, list[int]] = {}
        for topic, partitions in old[m.id].items():
            if topic not in subscribed:
                continue
            if len(partitions) <= quota:
                quota -= len(partitions)
                mine[topic] = list(partitions)
                continue
            if quota > 0:
                mine[topic] = partitions[:quota]
            unassigned.extend((topic, p) for p in partitions[quota:])
            quota = 0
        if quota > 0 and has_extra and count - index > extra:
            quota, has_extra = quota - 1, False
        if quota > 0:
            unfilled.append((m.id, quota))
        if has_extra:
            extra -= 1
        target[m.id] = mine
    position = 0
    for member_id, quota in unfilled:
        for topic, partition in unassigned[position : position + quota]:
            target[member_id].setdefault(topic, []).append(partition)
        position += quota
    if position < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return target


def subscribed_order(topics: Sequence[str], ids: Mapping[str, TopicId]) -> list[str]:
    """The builder's ``new HashSet<>(subscribedTopicIds)`` of the first member, filled from
    the member's own ``HashSet`` of ids (added in subscription order), as it iterates."""
    own = list(dict.fromkeys(topics))
    own = [own[i] for i in bucket_order([ids[t].hash() for t in own], default_capacity(len(own)))]
    return [own[i] for i in bucket_order([ids[t].hash() for t in own], copy_capacity(len(own)))]
