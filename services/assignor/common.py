"""Helpers shared by the client-side assignors (Kafka's ``AbstractPartitionAssignor``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from services.assignor.javaorder import hashmap_order, java_str_key
from services.assignor.model import Member


def member_info_key(member: Member) -> tuple[int, bytes]:
    """``AbstractPartitionAssignor.MemberInfo.compareTo``: static members first, by instance id."""
    if member.group_instance_id is not None:
        return (0, java_str_key(member.group_instance_id))
    return (1, java_str_key(member.id))


def subscribed_partition_counts(
    counts: Mapping[str, int], members: Iterable[Member]
) -> dict[str, int]:
    """The ``partitionsPerTopic`` Kafka's client hands its assignors.

    ``AbstractPartitionAssignor.assign(Cluster, ...)`` keeps only topics somebody subscribes
    to and whose metadata has at least one partition. Topics are returned in Java order.
    """
    subscribed = {t for m in members for t in m.topics}
    topics = sorted((t for t in subscribed if counts.get(t, 0) > 0), key=java_str_key)
    return {t: counts[t] for t in topics}


def partitions_per_topic_order(counts: Mapping[str, int], members: Sequence[Member]) -> list[str]:
    """The iteration order of the ``partitionsPerTopic`` HashMap Kafka's client builds.

    ``AbstractPartitionAssignor.assign(Cluster, ...)`` adds every member's topics, members
    in the subscriptions HashMap's order and each member's topics in the order sent, to a
    HashSet, then puts the topics that have partitions into a HashMap in that set's order.
    Both iterate by bucket, then insertion order, so names sharing a bucket keep the order
    in which the members listed them.
    """
    seen: dict[str, None] = {}
    for i in hashmap_order([m.id for m in members]):
        seen.update(dict.fromkeys(members[i].topics))
    names = list(seen)
    in_set = [names[i] for i in hashmap_order(names)]
    present = [t for t in in_set if counts.get(t, 0) > 0]
    return [present[i] for i in hashmap_order(present)]


def use_rack_aware_assignment(
    consumer_racks: set[str],
    partition_racks: set[str],
    racks_per_partition: Iterable[frozenset[str]],
) -> bool:
    """``AbstractPartitionAssignor.useRackAwareAssignment``."""
    if not consumer_racks or consumer_racks.isdisjoint(partition_racks):
        return False
    return not all(racks == partition_racks for racks in racks_per_partition)


def consumer_rack(member: Member) -> str | None:
    """A member's rack; Kafka ignores an empty rack id."""
    return member.rack or None


def replica_racks(
    racks: Mapping[str, Sequence[frozenset[str]]], topic: str, partition: int
) -> frozenset[str]:
    per_topic = racks.get(topic)
    return per_topic[partition] if per_topic else frozenset()
