"""What real clients and brokers write that a strict reader would reject."""

from __future__ import annotations

import struct

import pytest

from services.codec import (
    DecodeError,
    decode_assignment,
    decode_record,
    decode_subscription,
    encode_assignment,
    encode_key,
    encode_record,
    encode_subscription,
    encode_value,
)
from tests.codec.test_vectors import s16, subscription_v1_without_owned

SUB_V3 = {
    "version": 3,
    "topics": ["orders"],
    "user_data": b"\x01",
    "owned_partitions": [{"topic": "orders", "partitions": [1, 2]}],
    "generation_id": 9,
    "rack_id": "rack-a",
}


def test_newer_subscription_version_is_read_by_its_known_prefix() -> None:
    """ConsumerProtocol reads version > 3 with the v3 schema and ignores the rest."""
    v3 = encode_subscription(SUB_V3)
    future = struct.pack(">h", 7) + v3[2:] + b"new-fields"
    decoded = decode_subscription(future)
    assert decoded["version"] == 7
    assert decoded["owned_partitions"] == SUB_V3["owned_partitions"]
    assert decoded["rack_id"] == "rack-a"
    assert encode_subscription(decoded) == future


def test_v1_subscription_without_owned_partitions() -> None:
    data = subscription_v1_without_owned(["a", "b"])
    decoded = decode_subscription(data)
    assert decoded["topics"] == ["a", "b"]
    assert decoded["owned_partitions"] == []
    assert encode_subscription(decoded) == data


def test_v3_subscription_that_stops_before_rack() -> None:
    v2 = encode_subscription({**SUB_V3, "version": 2})
    truncated = struct.pack(">h", 3) + v2[2:]
    decoded = decode_subscription(truncated)
    assert decoded["generation_id"] == 9
    assert decoded["rack_id"] is None


def test_zero_length_assignment_is_empty() -> None:
    decoded = decode_assignment(b"")
    assert decoded["assigned_partitions"] == []
    assert encode_assignment(decoded) == b""


def test_newer_assignment_version() -> None:
    v3 = encode_assignment({"version": 3, "assigned_partitions": [], "user_data": None})
    decoded = decode_assignment(struct.pack(">h", 4) + v3[2:])
    assert decoded["version"] == 4
    assert decoded["assigned_partitions"] == []


def test_negative_subscription_version_is_an_error() -> None:
    with pytest.raises(DecodeError, match="unsupported version -1"):
        decode_subscription(struct.pack(">h", -1) + b"\x00\x00\x00\x00")


def test_undecodable_member_data_is_kept_with_an_error() -> None:
    key = encode_key("group_metadata", {"group": "g"})
    value = encode_value(
        "group_metadata",
        3,
        {
            "protocol_type": "consumer",
            "generation": 1,
            "protocol": "range",
            "leader": "m",
            "current_state_timestamp": 0,
            "members": [
                {
                    "member_id": "m",
                    "group_instance_id": None,
                    "client_id": "c",
                    "client_host": "h",
                    "rebalance_timeout": 1,
                    "session_timeout": 1,
                    "subscription": b"\x00\x00\xff\xff\xff\x7f",
                    "assignment": b"",
                }
            ],
        },
    )
    member = decode_record(key, value)["value"]["members"][0]
    assert member["subscription"]["raw"] == b"\x00\x00\xff\xff\xff\x7f"
    assert "topics" in member["subscription"]["error"]
    assert encode_record(decode_record(key, value)) == (key, value)


def test_other_protocol_types_keep_raw_bytes() -> None:
    key = encode_key("group_metadata", {"group": "connect-cluster"})
    member = {
        "member_id": "w",
        "group_instance_id": None,
        "client_id": "c",
        "client_host": "h",
        "rebalance_timeout": 1,
        "session_timeout": 1,
        "subscription": b"\x00\x01connect-bytes",
        "assignment": b"\x00\x01more",
    }
    value = encode_value(
        "group_metadata",
        3,
        {
            "protocol_type": "connect",
            "generation": 4,
            "protocol": "sessioned",
            "leader": "w",
            "current_state_timestamp": 0,
            "members": [member],
        },
    )
    decoded = decode_record(key, value)["value"]["members"][0]
    assert decoded["subscription"] == b"\x00\x01connect-bytes"
    assert decoded["assignment"] == b"\x00\x01more"


def test_unknown_record_type_is_returned_not_raised() -> None:
    key = struct.pack(">h", 99) + b"whatever"
    record = decode_record(key, b"\x00\x01zz")
    assert record["record_type"] == "unknown"
    assert record["key_version"] == 99
    assert record["value_version"] == 1
    assert record["key"]["raw"] == key
    assert "unknown record type 99" in record["reason"]


def test_unknown_value_version_is_returned_not_raised() -> None:
    key = encode_key("offset_commit", {"group": "g", "topic": "t", "partition": 0})
    value = struct.pack(">h", 5) + b"\x00" * 30
    record = decode_record(key, value)
    assert record["record_type"] == "unknown"
    assert record["value_version"] == 5
    assert "unknown value version 5 of offset_commit" in record["reason"]
    # The key's layout does not depend on the value's version: it is still decoded.
    assert record["known_type"] == "offset_commit"
    assert record["key"] == {"group": "g", "topic": "t", "partition": 0, "raw": key}
    assert record["value"] == {"raw": value}
    assert encode_record(record) == (key, value)


def test_unknown_value_version_of_a_group_record_keeps_its_group() -> None:
    key = encode_key("group_metadata", {"group": "payments"})
    value = struct.pack(">h", 99) + b"\x01\x02"
    record = decode_record(key, value)
    assert (record["record_type"], record["known_type"]) == ("unknown", "group_metadata")
    assert record["key"]["group"] == "payments"
    assert encode_record(record) == (key, value)


def test_unknown_record_type_has_no_known_type() -> None:
    record = decode_record(struct.pack(">h", 99) + b"k", b"\x00\x00")
    assert "known_type" not in record
    assert record["key"] == {"raw": struct.pack(">h", 99) + b"k"}


def test_zero_length_value_is_not_a_tombstone() -> None:
    key = encode_key("offset_commit", {"group": "g", "topic": "t", "partition": 0})
    with pytest.raises(DecodeError, match="no version"):
        decode_record(key, b"")


def test_share_group_partition_metadata_in_the_3_9_layout() -> None:
    """Type 9 changed incompatibly before 4.0; the 3.9 layout is read as a fallback."""
    key = struct.pack(">h", 9) + s16("share-group")
    topic_id = bytes(16)
    # InitializedTopics: one topic (id, name "t", partitions [0]), DeletingTopics: none.
    value = (
        struct.pack(">h", 0)
        + bytes([2])
        + topic_id
        + bytes([2])
        + b"t"
        + bytes([2])
        + struct.pack(">i", 0)
        + b"\x00"
        + bytes([1])
        + b"\x00"
    )
    record = decode_record(key, value)
    assert record["record_type"] == "share_group_partition_metadata"
    assert record["value"]["initialized_topics"][0]["topic_name"] == "t"
    assert record["value"]["deleting_topics"] == []


@pytest.mark.parametrize(
    ("type_id", "name", "body", "expected"),
    [
        (11, "share_group_metadata", struct.pack(">i", 7) + b"\x00", {"epoch": 7}),
        (17, "streams_group_metadata", struct.pack(">i", 7) + b"\x00", {"epoch": 7}),
        (
            15,
            "share_group_state_partition_metadata",
            bytes([1, 1]) + b"\x00",  # InitializedTopics and DeletingTopics empty
            {"initialized_topics": [], "deleting_topics": []},
        ),
    ],
)
def test_share_and_streams_values_before_kafka_4_1(type_id, name, body, expected) -> None:
    """Kafka 4.1 added MetadataHash (and InitializingTopics) untagged to these in-development
    values; the earlier layouts are read as fallbacks."""
    key = struct.pack(">h", type_id) + s16("g")
    record = decode_record(key, struct.pack(">h", 0) + body)
    assert record["record_type"] == name
    assert {k: v for k, v in record["value"].items() if k in expected} == expected
    assert set(record["value"]) <= set(expected) | {"unknown_tagged_fields"}
