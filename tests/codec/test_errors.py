"""Bad bytes give a DecodeError that names the field and the byte offset."""

from __future__ import annotations

import struct

import pytest

from services.codec import DecodeError, decode_record, encode_key, encode_value
from tests.codec.test_vectors import OFFSET_KEY, s16

GOOD_VALUE = encode_value(
    "offset_commit", 3, {"offset": 1, "leader_epoch": 0, "metadata": "abc", "commit_timestamp": 2}
)


def error_of(key: bytes, value: bytes | None) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        decode_record(key, value)
    return info.value


def test_truncated_value_names_the_field_and_offset() -> None:
    err = error_of(OFFSET_KEY, GOOD_VALUE[:-3])
    assert err.field == "commit_timestamp"
    assert err.offset == 19  # 2 (version) + 8 + 4 + 2 + 3
    assert "truncated" in err.reason
    assert "OffsetCommitValue v3" in str(err)


def test_oversized_string_length() -> None:
    value = struct.pack(">hqih", 3, 1, 0, 500) + b"abc" + struct.pack(">q", 2)
    err = error_of(OFFSET_KEY, value)
    assert err.field == "metadata"
    assert err.offset == 14
    assert "500 exceeds" in err.reason


def test_negative_length_in_a_non_nullable_string() -> None:
    key = struct.pack(">hh", 1, -5) + b"x"
    err = error_of(key, GOOD_VALUE)
    assert err.field == "group"
    assert err.offset == 2
    assert "negative length -5" in err.reason


def test_array_count_larger_than_the_bytes_left_is_not_allocated() -> None:
    key = encode_key("group_metadata", {"group": "g"})
    value = struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 1)
    value += s16("range") + s16("m") + struct.pack(">q", 0) + struct.pack(">i", 2**31 - 1)
    err = error_of(key, value)
    assert err.field == "members"
    assert "2147483647 exceeds" in err.reason


def test_invalid_utf8() -> None:
    key = struct.pack(">h", 1) + struct.pack(">h", 2) + b"\xff\xfe" + s16("t")
    key += struct.pack(">i", 0)
    err = error_of(key, GOOD_VALUE)
    assert err.field == "group"
    assert "invalid UTF-8" in err.reason


def test_trailing_bytes() -> None:
    err = error_of(OFFSET_KEY, GOOD_VALUE + b"\x00\x00")
    assert err.offset == len(GOOD_VALUE)
    assert "2 trailing bytes" in err.reason


def test_nested_field_path() -> None:
    key = encode_key("group_metadata", {"group": "g"})
    member = s16("m") + s16(None) + s16("c") + struct.pack(">h", 40) + b"short"
    value = struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 1)
    value += s16("range") + s16("m") + struct.pack(">q", 0) + struct.pack(">i", 1) + member
    err = error_of(key, value)
    assert err.field == "members[0].client_host"


def test_key_too_short() -> None:
    err = error_of(b"\x00", None)
    assert err.field == "record_type"


def test_flexible_varint_too_long() -> None:
    key = encode_key("consumer_group_metadata", {"group_id": "g"})
    value = struct.pack(">hi", 0, 1) + b"\xff\xff\xff\xff\xff\xff"
    err = error_of(key, value)
    assert err.field == "_tagged_fields"


def test_a_fast_decoder_that_fails_where_the_checked_one_reads_is_named_a_defect() -> None:
    """A fast decoder is generated code; if it raises on bytes the checked decoder reads,
    the record is still kept (a DecodeError, never a stop), but as our defect, not as bad
    bytes: the reason says so and its counting label is "codec defect"."""
    from services.codec.embedded import _decode, encode_subscription
    from services.codec.schemas import CONSUMER_PROTOCOL_SUBSCRIPTION
    from spark_jobs.batch import failure_reason

    def broken(data: bytes, pos: int) -> tuple[dict, int]:
        raise IndexError("index out of range")

    good = encode_subscription({"version": 1, "topics": ["t"], "user_data": None})
    with pytest.raises(DecodeError) as info:
        _decode(CONSUMER_PROTOCOL_SUBSCRIPTION, [broken] * 4, good)
    assert info.value.reason.startswith("codec defect: the fast decoder raised IndexError")
    assert isinstance(info.value.__cause__, IndexError)
    assert failure_reason(info.value) == "ConsumerProtocolSubscription: codec defect"
