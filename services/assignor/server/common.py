"""Input handling shared by the server-side (KIP-848) assignors."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import repeat

from services.assignor.javaorder import hashmap_order, java_str_key
from services.assignor.model import Assignment, AssignmentError, Member, PartitionAssignorError


def missing_topic(topic: str) -> PartitionAssignorError:
    return PartitionAssignorError(
        f"Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
    )


def member_order(members: list[Member]) -> list[Member]:
    """``GroupSpec.memberIds()`` order: the coordinator's HashMap of member ids."""
    return [members[i] for i in hashmap_order([m.id for m in members])]


def sorted_topics(topics: set[str]) -> list[str]:
    return sorted(topics, key=java_str_key)


def current_assignment(
    members: list[Member], counts: Mapping[str, int]
) -> dict[str, dict[str, list[int]]]:
    """Each member's target assignment as topic -> ascending partitions.

    Kafka keeps these as HashSets keyed by topic id; we iterate topics by name and
    partitions ascending. Partitions that no longer exist are dropped. A KIP-848 target
    assignment never gives one partition to two members, so such input is rejected.
    """
    owners: dict[tuple[str, int], str] = {}
    result: dict[str, dict[str, list[int]]] = {}
    for m in members:
        per_topic: dict[str, list[int]] = {}
        for topic, partition in m.owned:
            if partition >= counts.get(topic, 0):
                continue
            previous = owners.setdefault((topic, partition), m.id)
            if previous != m.id:
                raise AssignmentError(
                    f"{topic}-{partition} is owned by both {previous!r} and {m.id!r}; "
                    "a server-side target assignment gives each partition to one member"
                )
            per_topic.setdefault(topic, []).append(partition)
        result[m.id] = {t: sorted(per_topic[t]) for t in sorted_topics(set(per_topic))}
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
