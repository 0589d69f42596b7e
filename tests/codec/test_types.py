"""The TypedDicts the tracker reads (services.codec.types) against the codec's schemas:
every field they name exists in the message they mirror, and every field they require is
in what the codec decodes at each of the message's versions."""

from __future__ import annotations

from typing import Any, get_type_hints

import pytest

from services.codec import decode_record, encode_key, encode_value, types
from services.codec.records import RECORD_TYPES
from services.codec.schema import Message
from services.codec.schemas import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION

# TypedDict -> (the message it mirrors, the path of struct fields down to it)
MIRRORS: list[tuple[type, Message, tuple[str, ...]]] = [
    (types.OffsetCommitKey, RECORD_TYPES[1].key, ()),
    (types.GroupMetadataKey, RECORD_TYPES[2].key, ()),
    (types.GroupMetadataValue, RECORD_TYPES[2].value, ()),
    (types.GroupMember, RECORD_TYPES[2].value, ("members",)),
    (types.ConsumerGroupKey, RECORD_TYPES[3].key, ()),
    (types.ConsumerGroupMetadataValue, RECORD_TYPES[3].value, ()),
    (types.ConsumerGroupPartitionMetadataValue, RECORD_TYPES[4].value, ()),
    (types.TopicMetadata, RECORD_TYPES[4].value, ("topics",)),
    (types.ConsumerGroupMemberKey, RECORD_TYPES[5].key, ()),
    (types.ConsumerGroupMemberMetadataValue, RECORD_TYPES[5].value, ()),
    (types.ConsumerGroupTargetAssignmentMetadataValue, RECORD_TYPES[6].value, ()),
    (types.ConsumerGroupTargetAssignmentMemberValue, RECORD_TYPES[7].value, ()),
    (types.TopicIdPartitions, RECORD_TYPES[7].value, ("topic_partitions",)),
    (types.ConsumerGroupCurrentMemberAssignmentValue, RECORD_TYPES[8].value, ()),
    (types.TopicIdPartitions, RECORD_TYPES[8].value, ("assigned_partitions",)),
    (types.ConsumerGroupRegularExpressionKey, RECORD_TYPES[16].key, ()),
    (types.ConsumerGroupRegularExpressionValue, RECORD_TYPES[16].value, ()),
    (types.Subscription, CONSUMER_PROTOCOL_SUBSCRIPTION, ()),
    (types.MemberAssignment, CONSUMER_PROTOCOL_ASSIGNMENT, ()),
    (types.TopicPartitions, CONSUMER_PROTOCOL_SUBSCRIPTION, ("owned_partitions",)),
]
# Keys the embedded protocols' decoder adds beside the schema's fields.
EMBEDDED_EXTRAS = {"version", "raw"}


def fields_at(message: Message, path: tuple[str, ...]) -> dict[str, Any]:
    fields = {f.snake: f for f in message.fields}
    for name in path:
        fields = {f.snake: f for f in fields[name].fields}
    return fields


def name(value: object) -> str | None:
    return getattr(value, "__name__", None)


@pytest.mark.parametrize(("typed", "message", "path"), MIRRORS, ids=name)
def test_every_field_a_typed_dict_names_is_in_its_schema(typed, message, path) -> None:
    extras = (
        EMBEDDED_EXTRAS
        if message
        in (
            CONSUMER_PROTOCOL_SUBSCRIPTION,
            CONSUMER_PROTOCOL_ASSIGNMENT,
        )
        else set()
    )
    unknown = set(get_type_hints(typed)) - set(fields_at(message, path)) - extras
    assert unknown == set()


def test_a_required_field_is_in_every_version_the_codec_decodes() -> None:
    """Encode each record type the tracker reads at each of its versions with its
    schema's defaults, decode it, and find every required key of its TypedDicts."""
    records = [
        (1, types.OffsetCommitKey, None),
        (2, types.GroupMetadataKey, types.GroupMetadataValue),
        (3, types.ConsumerGroupKey, types.ConsumerGroupMetadataValue),
        (4, types.ConsumerGroupKey, types.ConsumerGroupPartitionMetadataValue),
        (5, types.ConsumerGroupMemberKey, types.ConsumerGroupMemberMetadataValue),
        (6, types.ConsumerGroupKey, types.ConsumerGroupTargetAssignmentMetadataValue),
        (7, types.ConsumerGroupMemberKey, types.ConsumerGroupTargetAssignmentMemberValue),
        (8, types.ConsumerGroupMemberKey, types.ConsumerGroupCurrentMemberAssignmentValue),
        (16, types.ConsumerGroupRegularExpressionKey, types.ConsumerGroupRegularExpressionValue),
    ]
    checked = 0
    for type_id, key_type, value_type in records:
        rt = RECORD_TYPES[type_id]
        key = encode_key(type_id, {f.snake: f.default_value() for f in rt.key.fields})
        for version in rt.value.versions:
            value = {f.snake: f.default_value() for f in rt.value.fields}
            decoded = decode_record(key, encode_value(type_id, version, value))
            assert decoded["record_type"] == rt.name
            assert key_type.__required_keys__ <= decoded["key"].keys()
            if value_type is not None:
                missing = value_type.__required_keys__ - decoded["value"].keys()
                assert missing == set(), (rt.name, version)
            checked += 1
    assert checked >= len(records)
