"""Records assembled by hand from the spec's framing rules (docs/codec.md, "Encoding rules"),
independently of the codec's encoder, then decoded and re-encoded byte for byte."""

from __future__ import annotations

import struct

from services.codec import decode_record, encode_record


def s16(text: str | None) -> bytes:
    """Non-flexible STRING / NULLABLE_STRING: INT16 length, -1 for null."""
    if text is None:
        return struct.pack(">h", -1)
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def b32(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def compact(text: str | None) -> bytes:
    """COMPACT_STRING: UNSIGNED_VARINT N+1, 0 for null (here N+1 < 128)."""
    if text is None:
        return b"\x00"
    data = text.encode()
    return bytes([len(data) + 1]) + data


OFFSET_KEY = struct.pack(">h", 1) + s16("payments") + s16("orders") + struct.pack(">i", 7)


def test_offset_commit_v1_has_expire_timestamp() -> None:
    value = struct.pack(">hq", 1, 1234) + s16("meta") + struct.pack(">qq", 1000, 2000)
    record = decode_record(OFFSET_KEY, value)
    assert record["key"] == {"group": "payments", "topic": "orders", "partition": 7}
    assert record["value"] == {
        "offset": 1234,
        "leader_epoch": -1,
        "metadata": "meta",
        "commit_timestamp": 1000,
        "expire_timestamp": 2000,
        "topic_id": "AAAAAAAAAAAAAAAAAAAAAA",  # v4+ only (tagged): the zero UUID
    }
    assert encode_record(record) == (OFFSET_KEY, value)


def test_offset_commit_v4_carries_a_tagged_topic_id() -> None:
    """Kafka 4.3.1's OffsetCommitValue v4 may carry the topic id in tag 0 (a UUID)."""
    topic_id = bytes(range(16))
    value = (
        struct.pack(">hqi", 4, 1234, 3)
        + compact("meta")
        + struct.pack(">q", 1000)
        + bytes([1, 0, 16])  # one tagged field: tag 0, 16 bytes
        + topic_id
    )
    record = decode_record(OFFSET_KEY, value)
    assert record["value"] == {
        "offset": 1234,
        "leader_epoch": 3,
        "metadata": "meta",
        "commit_timestamp": 1000,
        "expire_timestamp": -1,
        "topic_id": "AAECAwQFBgcICQoLDA0ODw",
    }
    assert encode_record(record) == (OFFSET_KEY, value)


def test_offset_commit_v3_has_leader_epoch() -> None:
    value = struct.pack(">hqi", 3, 2**40, 12) + s16("") + struct.pack(">q", 1_700_000_000_000)
    record = decode_record(OFFSET_KEY, value)
    assert record["value"]["offset"] == 2**40
    assert record["value"]["leader_epoch"] == 12
    assert record["value"]["expire_timestamp"] == -1
    assert encode_record(record) == (OFFSET_KEY, value)


def test_offset_commit_v4_is_flexible() -> None:
    value = struct.pack(">hqi", 4, 99, 3) + compact("m") + struct.pack(">q", 5) + b"\x00"
    record = decode_record(OFFSET_KEY, value)
    assert record["value"]["offset"] == 99
    assert record["value"]["metadata"] == "m"
    assert encode_record(record) == (OFFSET_KEY, value)


def test_legacy_type_0_key_decodes_as_offset_commit() -> None:
    key = struct.pack(">h", 0) + s16("g") + s16("t") + struct.pack(">i", 0)
    value = struct.pack(">hq", 0, 5) + s16("") + struct.pack(">q", 6)
    record = decode_record(key, value)
    assert record["record_type"] == "offset_commit"
    assert record["key_version"] == 0
    assert record["value"]["offset"] == 5
    assert encode_record(record) == (key, value)


def subscription_v1_without_owned(topics: list[str]) -> bytes:
    """What KafkaJS writes: version 1, topics, user data, and no OwnedPartitions."""
    body = struct.pack(">i", len(topics)) + b"".join(s16(t) for t in topics)
    return struct.pack(">h", 1) + body + b32(b"")


def assignment_v0(parts: dict[str, list[int]]) -> bytes:
    out = struct.pack(">hi", 0, len(parts))
    for topic, partitions in parts.items():
        out += s16(topic) + struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
    return out + struct.pack(">i", -1)  # null user data


def test_group_metadata_v3_with_lenient_member_data() -> None:
    key = struct.pack(">h", 2) + s16("orders-app")
    member = (
        s16("m-1")
        + s16("instance-1")
        + s16("client-1")
        + s16("/10.0.0.1")
        + struct.pack(">ii", 300000, 45000)
        + b32(subscription_v1_without_owned(["orders", "refunds"]))
        + b32(assignment_v0({"orders": [0, 2]}))
    )
    empty_assignment_member = (
        s16("m-2")
        + s16(None)
        + s16("client-2")
        + s16("/10.0.0.2")
        + struct.pack(">ii", 300000, 45000)
        + b32(subscription_v1_without_owned(["orders"]))
        + b32(b"")
    )
    value = (
        struct.pack(">h", 3)
        + s16("consumer")
        + struct.pack(">i", 12)
        + s16("range")
        + s16("m-1")
        + struct.pack(">q", 1_700_000_000_123)
        + struct.pack(">i", 2)
        + member
        + empty_assignment_member
    )
    record = decode_record(key, value)
    v = record["value"]
    assert (v["generation"], v["protocol"], v["leader"]) == (12, "range", "m-1")
    assert v["current_state_timestamp"] == 1_700_000_000_123
    first, second = v["members"]
    assert first["group_instance_id"] == "instance-1"
    assert second["group_instance_id"] is None
    assert first["subscription"]["version"] == 1
    assert first["subscription"]["topics"] == ["orders", "refunds"]
    assert first["subscription"]["owned_partitions"] == []
    assert first["subscription"]["generation_id"] == -1
    assert first["assignment"]["assigned_partitions"] == [{"topic": "orders", "partitions": [0, 2]}]
    assert first["assignment"]["user_data"] is None
    assert second["assignment"]["assigned_partitions"] == []
    assert encode_record(record) == (key, value)


def test_group_metadata_v0_empty_group() -> None:
    key = struct.pack(">h", 2) + s16("idle")
    value = struct.pack(">h", 0) + s16("consumer") + struct.pack(">i", 3)
    value += s16(None) + s16(None) + struct.pack(">i", 0)
    record = decode_record(key, value)
    assert record["value"]["protocol"] is None
    assert record["value"]["leader"] is None
    assert record["value"]["members"] == []
    assert record["value"]["current_state_timestamp"] == -1
    assert encode_record(record) == (key, value)


def test_consumer_group_member_with_tagged_classic_metadata() -> None:
    key = struct.pack(">h", 5) + s16("g") + s16("member-1")
    classic = struct.pack(">i", 45000) + bytes([2]) + compact("range") + bytes([3]) + b"ab"
    classic += b"\x00" + b"\x00"  # the protocol's and ClassicMemberMetadata's tag sections
    tagged = b"\x01" + classic  # the nullable struct's present marker (UNSIGNED_VARINT 1)
    value = (
        struct.pack(">h", 0)
        + compact(None)  # InstanceId
        + compact("rack-a")
        + compact("client")
        + compact("/1.2.3.4")
        + bytes([2])
        + compact("orders")  # SubscribedTopicNames
        + compact(None)  # SubscribedTopicRegex
        + struct.pack(">i", 30000)
        + compact("uniform")
        + b"\x01"
        + b"\x00"
        + bytes([len(tagged)])
        + tagged  # one tagged field, tag 0
    )
    record = decode_record(key, value)
    v = record["value"]
    assert v["rack_id"] == "rack-a"
    assert v["subscribed_topic_names"] == ["orders"]
    assert v["server_assignor"] == "uniform"
    assert v["classic_member_metadata"] == {
        "session_timeout_ms": 45000,
        "supported_protocols": [{"name": "range", "metadata": b"ab"}],
    }
    assert encode_record(record) == (key, value)


def test_consumer_group_current_assignment_topic_ids() -> None:
    key = struct.pack(">h", 8) + s16("g") + s16("m")
    topic_id = bytes(range(16))
    value = (
        struct.pack(">h", 0)
        + struct.pack(">iib", 5, 4, 0)
        + bytes([2])
        + topic_id
        + bytes([3])
        + struct.pack(">ii", 0, 1)
        + b"\x00"
        + bytes([1])  # no partitions pending revocation
        + b"\x00"
    )
    record = decode_record(key, value)
    v = record["value"]
    assert (v["member_epoch"], v["previous_member_epoch"], v["state"]) == (5, 4, 0)
    # Kafka prints topic ids as URL-safe base64 without padding (Uuid.toString).
    assert v["assigned_partitions"] == [
        {"topic_id": "AAECAwQFBgcICQoLDA0ODw", "partitions": [0, 1], "assignment_epochs": None}
    ]
    assert encode_record(record) == (key, value)


def test_current_assignment_tagged_assignment_epochs() -> None:
    """Kafka 4.3.1 adds AssignmentEpochs (tag 0, a nullable []int32) to each topic."""
    key = struct.pack(">h", 8) + s16("g") + s16("m")
    topic_id = bytes(range(16))
    epochs = bytes([3]) + struct.pack(">ii", 4, 5)  # COMPACT_ARRAY of two INT32
    value = (
        struct.pack(">h", 0)
        + struct.pack(">iib", 5, 4, 0)
        + bytes([2])
        + topic_id
        + bytes([3])
        + struct.pack(">ii", 0, 1)
        + bytes([1, 0, len(epochs)])  # one tagged field: tag 0
        + epochs
        + bytes([1])
        + b"\x00"
    )
    record = decode_record(key, value)
    assert record["value"]["assigned_partitions"] == [
        {"topic_id": "AAECAwQFBgcICQoLDA0ODw", "partitions": [0, 1], "assignment_epochs": [4, 5]}
    ]
    assert encode_record(record) == (key, value)
