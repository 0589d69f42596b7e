"""The decoded records the generation tracker reads, as typed dictionaries.

The codec decodes every record type generically, from its schema tables, into plain
dicts keyed by Kafka's field names in snake_case; the group metadata decoder does so in C
(`_speedups`). These `TypedDict`s give those dicts types for the record types the tracker
handles, so that mypy checks every field the tracker reads (a misspelt or retired field is
a type error, not a KeyError in production) at no cost at run time: the objects stay the
dicts the decoders build. Dataclasses would cost a conversion per record and per member
on the hot path of group metadata (`python -m benchmarks codec`); docs/architecture.md
says why these stay dicts. `tests/codec/test_types.py` checks each field here against the
schema it mirrors, so a schema change that drops or renames a field fails a test.

Fields a version may lack (added later, or optional) are marked `NotRequired`.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class TopicPartitions(TypedDict):
    """A topic's partitions in the embedded consumer protocol (by name)."""

    topic: str
    partitions: list[int]


class Subscription(TypedDict):
    """`ConsumerProtocolSubscription` (v0-v3)."""

    version: int | None
    topics: list[str]
    user_data: bytes | None
    owned_partitions: NotRequired[list[TopicPartitions]]  # v1+
    generation_id: NotRequired[int]  # v2+
    rack_id: NotRequired[str | None]  # v3+
    raw: NotRequired[bytes]  # trailing bytes of a newer version


class MemberAssignment(TypedDict):
    """`ConsumerProtocolAssignment` (v0-v3)."""

    version: int | None
    assigned_partitions: list[TopicPartitions]
    user_data: bytes | None
    raw: NotRequired[bytes]


class OffsetCommitKey(TypedDict):
    """Types 0 and 1."""

    group: str
    topic: str
    partition: int


class GroupMetadataKey(TypedDict):
    """Type 2."""

    group: str


class GroupMember(TypedDict):
    """A member of `GroupMetadataValue`; `subscription` and `assignment` are decoded
    where the protocol type is `consumer`, else (or where they do not decode) bytes."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: Subscription | bytes
    assignment: MemberAssignment | bytes


class GroupMetadataValue(TypedDict):
    """Type 2's value (v0-v4)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: list[GroupMember]


class ConsumerGroupKey(TypedDict):
    """Types 3, 4 and 6."""

    group_id: str


class ConsumerGroupMemberKey(TypedDict):
    """Types 5, 7 and 8."""

    group_id: str
    member_id: str


class ConsumerGroupMetadataValue(TypedDict):
    """Type 3."""

    epoch: int
    metadata_hash: NotRequired[int]


class TopicMetadata(TypedDict):
    topic_id: str
    topic_name: str
    num_partitions: int
    partition_metadata: NotRequired[list[Any]]


class ConsumerGroupPartitionMetadataValue(TypedDict):
    """Type 4 (written by Kafka before 4.1)."""

    topics: list[TopicMetadata]


class ConsumerGroupMemberMetadataValue(TypedDict):
    """Type 5."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: NotRequired[str | None]
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic_member_metadata: NotRequired[Any]


class ConsumerGroupTargetAssignmentMetadataValue(TypedDict):
    """Type 6."""

    assignment_epoch: int
    assignment_timestamp: NotRequired[int]


class TopicIdPartitions(TypedDict):
    """A topic's partitions in a KIP-848 target assignment (by topic id)."""

    topic_id: str
    partitions: list[int]


class ConsumerGroupTargetAssignmentMemberValue(TypedDict):
    """Type 7."""

    topic_partitions: list[TopicIdPartitions]


class ConsumerGroupCurrentMemberAssignmentValue(TypedDict):
    """Type 8."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: list[TopicIdPartitions]
    partitions_pending_revocation: list[TopicIdPartitions]


class ConsumerGroupRegularExpressionKey(TypedDict):
    """Type 16."""

    group_id: str
    regular_expression: str


class ConsumerGroupRegularExpressionValue(TypedDict):
    """Type 16."""

    topics: list[str]
    version: int
    timestamp: int
