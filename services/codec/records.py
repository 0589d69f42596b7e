"""Records of `__consumer_offsets`: framing, the record-type registry, decode and encode.

Framing (`CoordinatorRecordSerde`): the key is an INT16 record type and the key body,
the value an INT16 version and the value body, or null for a tombstone. The value schema
is chosen by the key's record type. Unknown record types and value versions are returned
as `unknown` records with their bytes, as Kafka's loader skips them
(`CoordinatorLoaderImpl`: "It could be a left over from an aborted upgrade").
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from services.codec import schemas as s
from services.codec.compiler import FAST_DECODE_ERRORS, Decoder, decoder
from services.codec.embedded import decode_member_protocols, encode_assignment, encode_subscription
from services.codec.encoder import encode_message
from services.codec.errors import DecodeError, EncodeError, codec_defect
from services.codec.schema import Message

_accelerated: Callable[[bytes], dict[str, Any] | None] | None
try:  # the optional C accelerator (services/codec/_speedups.c), built by `pip install`
    from services.codec._speedups import decode_group_metadata_value as _accelerated
except ImportError:  # not built: the pure-Python decoders do everything
    _accelerated = None

Record = dict[str, Any]
_INT16 = struct.Struct(">h")


@dataclass
class RecordType:
    """One record type: its name in decoded output, key and value schemas."""

    type_id: int
    name: str
    key: Message
    value: Message
    fallbacks: tuple[Message, ...] = ()  # older layouts of an in-development value


def _registry() -> dict[int, RecordType]:
    types = [
        (0, "offset_commit", s.OFFSET_COMMIT_KEY, s.OFFSET_COMMIT_VALUE),
        (1, "offset_commit", s.OFFSET_COMMIT_KEY, s.OFFSET_COMMIT_VALUE),
        (2, "group_metadata", s.GROUP_METADATA_KEY, s.GROUP_METADATA_VALUE),
        (
            3,
            "consumer_group_metadata",
            s.CONSUMER_GROUP_METADATA_KEY,
            s.CONSUMER_GROUP_METADATA_VALUE,
        ),
        (
            4,
            "consumer_group_partition_metadata",
            s.CONSUMER_GROUP_PARTITION_METADATA_KEY,
            s.CONSUMER_GROUP_PARTITION_METADATA_VALUE,
        ),
        (
            5,
            "consumer_group_member_metadata",
            s.CONSUMER_GROUP_MEMBER_METADATA_KEY,
            s.CONSUMER_GROUP_MEMBER_METADATA_VALUE,
        ),
        (
            6,
            "consumer_group_target_assignment_metadata",
            s.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
            s.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        ),
        (
            7,
            "consumer_group_target_assignment_member",
            s.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
            s.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        (
            8,
            "consumer_group_current_member_assignment",
            s.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
            s.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        (
            9,
            "share_group_partition_metadata",
            s.SHARE_GROUP_PARTITION_METADATA_KEY,
            s.SHARE_GROUP_PARTITION_METADATA_VALUE,
        ),
        (
            10,
            "share_group_member_metadata",
            s.SHARE_GROUP_MEMBER_METADATA_KEY,
            s.SHARE_GROUP_MEMBER_METADATA_VALUE,
        ),
        (11, "share_group_metadata", s.SHARE_GROUP_METADATA_KEY, s.SHARE_GROUP_METADATA_VALUE),
        (
            12,
            "share_group_target_assignment_metadata",
            s.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
            s.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        ),
        (
            13,
            "share_group_target_assignment_member",
            s.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
            s.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        (
            14,
            "share_group_current_member_assignment",
            s.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
            s.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        (
            15,
            "share_group_state_partition_metadata",
            s.SHARE_GROUP_STATE_PARTITION_METADATA_KEY,
            s.SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
        ),
        (
            16,
            "consumer_group_regular_expression",
            s.CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
            s.CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
        ),
        (
            17,
            "streams_group_metadata",
            s.STREAMS_GROUP_METADATA_KEY,
            s.STREAMS_GROUP_METADATA_VALUE,
        ),
        (
            18,
            "streams_group_partition_metadata",
            s.STREAMS_GROUP_PARTITION_METADATA_KEY,
            s.STREAMS_GROUP_PARTITION_METADATA_VALUE,
        ),
        (
            19,
            "streams_group_member_metadata",
            s.STREAMS_GROUP_MEMBER_METADATA_KEY,
            s.STREAMS_GROUP_MEMBER_METADATA_VALUE,
        ),
        (
            20,
            "streams_group_target_assignment_metadata",
            s.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
            s.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        ),
        (
            21,
            "streams_group_target_assignment_member",
            s.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
            s.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        (
            22,
            "streams_group_current_member_assignment",
            s.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
            s.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        (
            23,
            "streams_group_topology",
            s.STREAMS_GROUP_TOPOLOGY_KEY,
            s.STREAMS_GROUP_TOPOLOGY_VALUE,
        ),
    ]
    registry = {t: RecordType(t, name, key, value) for t, name, key, value in types}
    registry[9].fallbacks = (s.SHARE_GROUP_PARTITION_METADATA_VALUE_3_9,)
    registry[11].fallbacks = (s.SHARE_GROUP_METADATA_VALUE_4_0,)
    registry[15].fallbacks = (s.SHARE_GROUP_STATE_PARTITION_METADATA_VALUE_4_0,)
    registry[17].fallbacks = (s.STREAMS_GROUP_METADATA_VALUE_4_0,)
    return registry


RECORD_TYPES: dict[int, RecordType] = _registry()
RECORD_TYPE_IDS: dict[str, int] = {rt.name: rt.type_id for rt in RECORD_TYPES.values()}
RECORD_TYPE_IDS["offset_commit"] = 1  # what every broker since 0.9 writes
_NAMES: dict[int, str] = {rt.type_id: rt.name for rt in RECORD_TYPES.values()}


def _decode_body(message: Message, version: int, data: bytes) -> dict[str, Any]:
    """Decode `data[2:]`; any failure becomes a DecodeError naming the field and offset."""
    try:
        fields, end = decoder(message, version)(data, 2)
    except FAST_DECODE_ERRORS as fast:
        try:
            decoder(message, version, checked=True)(data, 2)
        except DecodeError as exc:
            raise exc.within(f"{message.name} v{version}") from None
        raise codec_defect(fast, f"{message.name} v{version}") from fast
    if end != len(data):
        raise DecodeError(
            "", end, f"{len(data) - end} trailing bytes", f"{message.name} v{version}"
        )
    return fields


def _unknown(
    type_id: int,
    value_version: int | None,
    key: bytes,
    value: bytes | None,
    reason: str,
    known: tuple[str, dict[str, Any]] | None = None,
) -> Record:
    """An undecodable record kept whole. `known`: the record type's name and decoded key,
    when only the value's version is unknown (a newer broker's record): the key's layout
    is fixed per type, so the group, topic and partition are still told, as Kafka's
    console formatter (`CoordinatorRecordMessageFormatter`) prints the key and marks the
    value unknown."""
    record: Record = {
        "record_type": "unknown",
        "key_version": type_id,
        "value_version": value_version,
        "tombstone": value is None,
        "reason": reason,
        "key": {"raw": key},
        "value": None if value is None else {"raw": value},
    }
    if known is not None:
        record["known_type"] = known[0]
        record["key"] = {**known[1], "raw": key}
    return record


# The hot path's tables, filled as record types and versions are first decoded.
_FAST_KEYS: dict[int, Decoder] = {}
_FAST_VALUES: dict[tuple[int, int], Decoder] = {}


def decode_record(key: bytes, value: bytes | None) -> Record:
    """Decode one `__consumer_offsets` record.

    Returns `{"record_type", "key_version", "value_version", "tombstone", "key", "value"}`.
    Raises DecodeError for bytes that break the schema; unknown record types and value
    versions come back as `record_type: "unknown"` with the raw bytes.
    """
    # Fast path for well-formed records of known types; anything else (tombstones,
    # unknown types or versions, errors, fallbacks) takes the full path below.
    if value is not None and key is not None:
        try:
            type_id = key[0] << 8 | key[1]
            version = value[0] << 8 | value[1]
            key_fields, end = _FAST_KEYS[type_id](key, 2)
            if end == len(key):
                value_fields, end = _FAST_VALUES[type_id, version](value, 2)
                if end == len(value):
                    return {
                        "record_type": _NAMES[type_id],
                        "key_version": type_id,
                        "value_version": version,
                        "tombstone": False,
                        "key": key_fields,
                        "value": value_fields,
                    }
        except _FAST_PATH_MISSES:  # the full path decodes it, or says what is wrong
            pass
    return _decode_record_full(key, value)


# No fast decoder for the type or version yet (KeyError), bytes a fast decoder cannot
# read, or an embedded protocol that fails inside it (DecodeError).
_FAST_PATH_MISSES: tuple[type[Exception], ...] = (KeyError, DecodeError, *FAST_DECODE_ERRORS)


def _decode_record_full(key: bytes, value: bytes | None) -> Record:
    if key is None or len(key) < 2:
        raise DecodeError("record_type", 0, "key shorter than its INT16 record type", "key")
    (type_id,) = _INT16.unpack_from(key)
    rt = RECORD_TYPES.get(type_id)
    if rt is None:
        return _unknown(type_id, _version_of(value), key, value, f"unknown record type {type_id}")
    key_fields = _decode_body(rt.key, 0, key)
    _FAST_KEYS.setdefault(type_id, decoder(rt.key, 0))
    if value is None:
        return {
            "record_type": rt.name,
            "key_version": type_id,
            "value_version": None,
            "tombstone": True,
            "key": key_fields,
            "value": None,
        }
    if len(value) < 2:
        # Kafka: "Could not read version from value's buffer." A zero-length value is
        # not a tombstone.
        raise DecodeError("value_version", 0, f"value of {len(value)} bytes has no version")
    (version,) = _INT16.unpack_from(value)
    if version not in rt.value.versions:
        reason = f"unknown value version {version} of {rt.name}"
        return _unknown(type_id, version, key, value, reason, (rt.name, key_fields))
    try:
        value_fields = _decode_body(rt.value, version, value)
        _FAST_VALUES.setdefault((type_id, version), _fast_value_decoder(rt, version))
    except DecodeError as error:
        value_fields = _fallback(rt, version, value, error)
    if type_id == 2 and value_fields["protocol_type"] == "consumer":
        decode_member_protocols(value_fields["members"])
    return {
        "record_type": rt.name,
        "key_version": type_id,
        "value_version": version,
        "tombstone": False,
        "key": key_fields,
        "value": value_fields,
    }


def accelerated() -> bool:
    """Whether the C accelerator decodes GroupMetadataValue (built, and not switched off)."""
    return _accelerated is not None


@contextmanager
def pure_python() -> Iterator[None]:
    """Decode with the pure-Python decoders only, within the block (tests, benchmarks)."""
    global _accelerated
    saved, _accelerated = _accelerated, None
    try:
        yield
    finally:
        _accelerated = saved


def _fast_value_decoder(rt: RecordType, version: int) -> Decoder:
    """The hot path's value decoder. GroupMetadataValue's decodes members' consumer protocol
    too, with the C accelerator where it is built and sure of the bytes."""
    pure = decoder(rt.value, version)
    if rt.type_id != 2:
        return pure

    def group_metadata(value: bytes, pos: int) -> tuple[dict[str, Any], int]:
        accelerated = _accelerated
        if accelerated is not None:
            fields = accelerated(value)
            if fields is not None:  # None: irregular bytes, for the Python decoder to judge
                return fields, len(value)
        fields, end = pure(value, pos)
        if end == len(value) and fields["protocol_type"] == "consumer":
            decode_member_protocols(fields["members"])
        return fields, end

    return group_metadata


def _fallback(rt: RecordType, version: int, value: bytes, error: DecodeError) -> dict[str, Any]:
    """Try the older layouts of an in-development record; else raise the first error."""
    for message in rt.fallbacks:
        try:
            return _decode_body(message, version, value)
        except DecodeError:
            continue
    raise error


def _version_of(value: bytes | None) -> int | None:
    if value is None or len(value) < 2:
        return None
    version: int = _INT16.unpack_from(value)[0]
    return version


def encode_key(record_type: str | int, key: dict[str, Any]) -> bytes:
    """Key bytes: the INT16 record type and the key body."""
    rt = _record_type(record_type)
    return _INT16.pack(rt.type_id) + encode_message(rt.key, 0, key)


def encode_value(
    record_type: str | int, version: int, value: dict[str, Any] | None
) -> bytes | None:
    """Value bytes at `version`, or None for a tombstone.

    For a `consumer` group the members' subscription/assignment may be decoded objects
    or raw bytes.
    """
    if value is None:
        return None
    rt = _record_type(record_type)
    if rt.type_id == 2 and value.get("protocol_type") == "consumer":
        value = {**value, "members": [_member_bytes(m) for m in value.get("members", [])]}
    return _INT16.pack(version) + encode_message(rt.value, version, value)


def encode_record(record: Record) -> tuple[bytes, bytes | None]:
    """The (key, value) bytes of a decoded record: the inverse of `decode_record`."""
    if record["record_type"] == "unknown":
        return bytes(record["key"]["raw"]), (
            None if record["value"] is None else bytes(record["value"]["raw"])
        )
    type_id = record["key_version"]
    key = encode_key(type_id, record["key"])
    return key, encode_value(type_id, record["value_version"], record["value"])


def _record_type(record_type: str | int) -> RecordType:
    type_id = RECORD_TYPE_IDS.get(record_type) if isinstance(record_type, str) else record_type
    rt = None if type_id is None else RECORD_TYPES.get(type_id)
    if rt is None:
        raise EncodeError(f"unknown record type {record_type!r}")
    return rt


def _member_bytes(member: dict[str, Any]) -> dict[str, Any]:
    return {
        **member,
        "subscription": encode_subscription(member["subscription"]),
        "assignment": encode_assignment(member["assignment"]),
    }


__all__ = [
    "RECORD_TYPES",
    "DecodeError",
    "Record",
    "accelerated",
    "decode_record",
    "encode_key",
    "encode_record",
    "encode_value",
    "pure_python",
]
