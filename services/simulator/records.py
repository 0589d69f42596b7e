"""The records Kafka's group coordinator appends to `__consumer_offsets`, as (key, value) bytes.

Classic groups: `OffsetCommitValue` v3 (what `MetadataVersion.offsetCommitValueVersion`
picks without an explicit expire timestamp) and `GroupMetadataValue` v3
(`MetadataVersion.groupMetadataValueVersion`: the highest non-flexible version). KIP-848
consumer groups: record types 3-8, all value version 0. A tombstone has a null value.

Everything except offset commits goes through the codec's encoder. Offset commits are the
bulk of the topic, so `OffsetCommitEncoder` packs keys and v3 values with `struct`
directly (one precompiled format per metadata string, one key prefix per topic);
`tests/simulator/test_records.py` checks it against the codec byte for byte.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from services.assignor.javaorder import hashmap_order
from services.codec import encode_assignment, encode_key, encode_subscription, encode_value

OFFSET_COMMIT_VERSION = 3
GROUP_METADATA_VERSION = 3
CONSUMER_PROTOCOL_VERSION = 3  # ConsumerProtocolSubscription/Assignment HIGHEST_SUPPORTED

Bytes = tuple[bytes, bytes | None]
TopicPartition = tuple[str, int]
_INT32 = struct.Struct(">i").pack


class OffsetCommitEncoder:
    """Offset commit records (type 1 key, value v3) for one group, keys cached.

    A key is the group's and the topic's length-prefixed strings (`OffsetCommitKey` v0,
    non-flexible) and the INT32 partition, so the bytes before the partition are built
    once per topic.
    """

    __slots__ = ("_group", "_packs", "_prefixes", "keys")

    def __init__(self, group: str) -> None:
        self._group = group.encode()
        self._packs: dict[str, Any] = {}
        self._prefixes: dict[str, bytes] = {}
        self.keys: dict[TopicPartition, bytes] = {}

    def _prefix(self, topic: str) -> bytes:
        prefix = self._prefixes.get(topic)
        if prefix is None:
            raw = topic.encode()
            prefix = self._prefixes[topic] = (
                struct.pack(">hh", 1, len(self._group))
                + self._group
                + struct.pack(">h", len(raw))
                + raw
            )
        return prefix

    def key(self, topic: str, partition: int) -> bytes:
        found = self.keys.get((topic, partition))
        if found is None:
            found = self.keys[(topic, partition)] = self._prefix(topic) + _INT32(partition)
        return found

    def add_keys(self, topic: str, partitions: range) -> None:
        """Cache the keys of `partitions` of `topic` at once."""
        prefix = self._prefix(topic)
        self.keys.update({(topic, p): prefix + _INT32(p) for p in partitions})

    def value_packer(self, metadata: str) -> tuple[Any, bytes]:
        """`(pack, raw)`: the value is `pack(OFFSET_COMMIT_VERSION, offset, leader_epoch,
        len(raw), raw, commit_timestamp)`; callers inline it on the hot path."""
        found = self._packs.get(metadata)
        if found is None:
            raw = metadata.encode()
            found = self._packs[metadata] = (struct.Struct(f">hqih{len(raw)}sq").pack, raw)
        return found

    def value(self, offset: int, leader_epoch: int, metadata: str, timestamp: int) -> bytes:
        pack, raw = self.value_packer(metadata)
        return pack(OFFSET_COMMIT_VERSION, offset, leader_epoch, len(raw), raw, timestamp)

    def tombstone(self, topic: str, partition: int) -> tuple[bytes, None]:
        return self.key(topic, partition), None


@lru_cache(maxsize=4096)
def _java_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(keys[i] for i in hashmap_order(keys))


def _by_topic(partitions: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    """`CollectionUtils.groupPartitionsByTopic`: a HashMap of topic -> partitions in order."""
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": grouped[t]} for t in _java_order(tuple(grouped))]


def java_hash_set(values: Iterable[str]) -> list[str]:
    """Iteration order of a `java.util.HashSet<String>` holding `values`."""
    return list(_java_order(tuple(dict.fromkeys(values))))


def sticky_user_data(assigned: Sequence[TopicPartition], generation: int) -> bytes:
    """`StickyAssignor.subscriptionUserData`: STICKY_ASSIGNOR_USER_DATA_V1 (eager sticky)."""
    out = bytearray()
    groups = _by_topic(assigned)
    out += struct.pack(">i", len(groups))
    for entry in groups:
        raw = entry["topic"].encode()
        out += struct.pack(">h", len(raw)) + raw
        out += struct.pack(
            f">i{len(entry['partitions'])}i", len(entry["partitions"]), *entry["partitions"]
        )
    out += struct.pack(">i", generation)
    return bytes(out)


def subscription_bytes(
    topics: Sequence[str],
    owned: Sequence[TopicPartition],
    generation: int,
    user_data: bytes | None,
) -> bytes:
    """`ConsumerProtocol.serializeSubscription` at the client's highest version."""
    return _subscription(tuple(topics), tuple(owned), generation, user_data)


@lru_cache(maxsize=65536)
def _subscription(
    topics: tuple[str, ...],
    owned: tuple[TopicPartition, ...],
    generation: int,
    user_data: bytes | None,
) -> bytes:
    return encode_subscription(
        {
            "version": CONSUMER_PROTOCOL_VERSION,
            "topics": java_hash_set(topics),
            "user_data": user_data,
            "owned_partitions": _by_topic(owned),
            "generation_id": generation,
            "rack_id": None,
        }
    )


def assignment_bytes(assigned: Sequence[TopicPartition]) -> bytes:
    """`ConsumerProtocol.serializeAssignment` at the client's highest version."""
    return _assignment(tuple(assigned))


@lru_cache(maxsize=65536)
def _assignment(assigned: tuple[TopicPartition, ...]) -> bytes:
    return encode_assignment(
        {
            "version": CONSUMER_PROTOCOL_VERSION,
            "assigned_partitions": _by_topic(assigned),
            "user_data": None,
        }
    )


def group_metadata(
    group: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    state_timestamp: int,
    members: Sequence[Mapping[str, Any]],
) -> Bytes:
    """A classic group's `GroupMetadataValue` v3 (`newGroupMetadataRecord`).

    `members` are in the order the group's member HashMap iterates, each with
    member_id, group_instance_id, client_id, client_host, rebalance_timeout,
    session_timeout, subscription (bytes) and assignment (bytes).
    """
    value = {
        "protocol_type": "consumer",
        "generation": generation,
        "protocol": protocol,
        "leader": leader,
        "current_state_timestamp": state_timestamp,
        "members": list(members),
    }
    return (
        encode_key("group_metadata", {"group": group}),
        encode_value("group_metadata", GROUP_METADATA_VERSION, value),
    )


def group_tombstone(group: str) -> Bytes:
    return encode_key("group_metadata", {"group": group}), None


def _kip848(record_type: str, key: dict[str, Any], value: dict[str, Any] | None) -> Bytes:
    return encode_key(record_type, key), encode_value(record_type, 0, value)


def consumer_group_epoch(group: str, epoch: int | None) -> Bytes:
    """Type 3; `epoch` None writes the tombstone."""
    value = None if epoch is None else {"epoch": epoch}
    return _kip848("consumer_group_metadata", {"group_id": group}, value)


def consumer_group_topics(group: str, topics: Sequence[tuple[str, str, int]] | None) -> Bytes:
    """Type 4: (topic id, name, partitions) of every subscribed topic; None: tombstone."""
    value = None
    if topics is not None:
        value = {
            "topics": [
                {"topic_id": tid, "topic_name": name, "num_partitions": n, "partition_metadata": []}
                for tid, name, n in topics
            ]
        }
    return _kip848("consumer_group_partition_metadata", {"group_id": group}, value)


def consumer_group_member(group: str, member_id: str, member: Mapping[str, Any] | None) -> Bytes:
    """Type 5: a member's subscription; None: tombstone."""
    value = None
    if member is not None:
        value = {
            "instance_id": member["instance_id"],
            "rack_id": None,
            "client_id": member["client_id"],
            "client_host": member["client_host"],
            "subscribed_topic_names": list(member["topics"]),
            "subscribed_topic_regex": None,
            "rebalance_timeout_ms": member["rebalance_timeout_ms"],
            "server_assignor": member["server_assignor"],
        }
    key = {"group_id": group, "member_id": member_id}
    return _kip848("consumer_group_member_metadata", key, value)


def _topic_ids(
    partitions: Iterable[TopicPartition], ids: Mapping[str, str]
) -> list[dict[str, Any]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return [{"topic_id": ids[t], "partitions": sorted(ps)} for t, ps in sorted(grouped.items())]


def consumer_group_target_epoch(group: str, epoch: int | None) -> Bytes:
    """Type 6; None: tombstone."""
    value = None if epoch is None else {"assignment_epoch": epoch}
    return _kip848("consumer_group_target_assignment_metadata", {"group_id": group}, value)


def consumer_group_target(
    group: str, member_id: str, partitions: Iterable[TopicPartition] | None, ids: Mapping[str, str]
) -> Bytes:
    """Type 7: a member's target assignment; None: tombstone."""
    value = None if partitions is None else {"topic_partitions": _topic_ids(partitions, ids)}
    key = {"group_id": group, "member_id": member_id}
    return _kip848("consumer_group_target_assignment_member", key, value)


def consumer_group_current(
    group: str,
    member_id: str,
    state: Mapping[str, Any] | None,
    ids: Mapping[str, str],
) -> Bytes:
    """Type 8: a member's epochs, state and current assignment; None: tombstone.

    `state` has member_epoch, previous_member_epoch, state (`MemberState`: 0 STABLE,
    1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS), assigned and pending_revocation.
    """
    value = None
    if state is not None:
        value = {
            "member_epoch": state["member_epoch"],
            "previous_member_epoch": state["previous_member_epoch"],
            "state": state["state"],
            "assigned_partitions": _topic_ids(state["assigned"], ids),
            "partitions_pending_revocation": _topic_ids(state["pending_revocation"], ids),
        }
    key = {"group_id": group, "member_id": member_id}
    return _kip848("consumer_group_current_member_assignment", key, value)
