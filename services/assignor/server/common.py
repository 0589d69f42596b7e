"""Input handling shared by the server-side (KIP-848) assignors."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import repeat

from services.assignor.javaorder import (
    bucket_order,
    default_capacity,
    hashmap_order,
    int_set_order,
    java_str_key,
)
from services.assignor.model import Assignment, AssignmentError, Member, PartitionAssignorError
from services.assignor.server.topic_ids import TopicId, topic_ids


def missing_topic(topic: str) -> PartitionAssignorError:
    return PartitionAssignorError(
        f"Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
    )


def member_order(members: list[Member]) -> list[Member]:
    """``GroupSpec.memberIds()`` order: the coordinator's HashMap of member ids."""
    return [members[i] for i in hashmap_order([m.id for m in members])]


def sorted_topics(topics: set[str]) -> list[str]:
    return sorted(topics, key=java_str_key)


def group_topic_ids(
    counts: Mapping[str, int], members: list[Member], given: Mapping[str, str] | None
) -> dict[str, TopicId]:
    """The id of every topic the group's input names (counts, subscriptions, owned)."""
    names = {*counts, *(t for m in members for t in m.topics)}
    names.update(t for m in members for t, _ in m.owned)
    return topic_ids(names, given)


def current_assignment(
    members: list[Member], counts: Mapping[str, int], ids: Mapping[str, TopicId]
) -> dict[str, dict[str, list[int]]]:
    """Each member's target assignment as topic -> partitions, both in the order in which
    the coordinator iterates them: a ``HashMap<Uuid, HashSet<Integer>>`` filled from the
    member's owned list (``GroupSpec.memberAssignment``).

    Partitions that no longer exist are dropped. A KIP-848 target assignment never gives
    one partition to two members, so such input is rejected.
    """
    owners: dict[tuple[str, int], str] = {}
    result: dict[str, dict[str, list[int]]] = {}
    for m in members:
        per_topic: dict[str, dict[int, None]] = {}
        for topic, partition in m.owned:
            if partition >= counts.get(topic, 0):
                continue
            previous = owners.setdefault((topic, partition), m.id)
            if previous != m.id:
                raise AssignmentError(
                    f"{topic}-{partition} is owned by both {previous!r} and {m.id!r}; "
                    "a server-side target assignment gives each partition to one member"
                )
            per_topic.setdefault(topic, {})[partition] = None
        topics = list(per_topic)
        order = bucket_order([ids[t].hash() for t in topics], default_capacity(len(topics)))
        result[m.id] = {topics[i]: int_set_order(list(per_topic[topics[i]])) for i in order}
    return result


def to_output(members: list[Member], assigned: Mapping[str, Mapping[str, list[int]]]) -> Assignment:
    """Each member's partitions as (topic, partition), topics by name, partitions ascending."""
    names = {t for per_topic in assigned.values() for t in per_topic}
    rank = {t: i for i, t in enumerate(sorted_topics(names))}.__getitem__
    out: Assignment = {}
    for m in members:
        per_topic = assigned.get(m.id, {})
        out[m.id] = [
            tp for t in sorted(per_topic, key=rank) for tp in zip(repeat(t), sorted(per_topic[t]))
        ]
    return out
