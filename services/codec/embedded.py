"""The consumer protocol embedded in classic GroupMetadata members.

When a classic group's protocol type is `consumer`, each member's `subscription` and
`assignment` bytes are a `ConsumerProtocolSubscription` / `ConsumerProtocolAssignment`
with an INT16 version prefix. Leniency mirrors `ConsumerProtocol.deserializeSubscription`
and what real clients write:

* a version above the highest known one is read with the highest known schema, and
  trailing bytes are ignored (ConsumerProtocol.java: "new versions cannot remove or
  reorder any of the existing fields");
* a body that ends early at a field boundary (KafkaJS and sarama-cluster write "v1"
  subscriptions without `OwnedPartitions`) is read by its longest complete prefix, and
  the missing fields take their defaults;
* a zero-length assignment is an empty assignment.

Whenever a decode was lenient, the original bytes are kept under `raw`, so that
encoding the decoded object gives the same bytes back.
"""

from __future__ import annotations

import struct
from typing import Any

from services.codec.compiler import FAST_DECODE_ERRORS, decoder
from services.codec.encoder import encode_message
from services.codec.errors import DecodeError, codec_defect
from services.codec.schema import Message
from services.codec.schemas import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION

_HIGHEST = 3


def _decoders(message: Message) -> list[Any]:
    return [decoder(message, v) for v in message.versions]


_SUBSCRIPTION = _decoders(CONSUMER_PROTOCOL_SUBSCRIPTION)
_ASSIGNMENT = _decoders(CONSUMER_PROTOCOL_ASSIGNMENT)


def _decode(message: Message, decoders: list[Any], data: bytes) -> dict[str, Any]:
    if not data:
        empty = {f.snake: f.default_value() for f in message.fields}
        return {"version": None, **empty, "raw": b""}
    if len(data) < 2:
        raise DecodeError("version", 0, "1 byte: too short for the INT16 version", message.name)
    (version,) = struct.unpack_from(">h", data)
    if version < 0:
        raise DecodeError("version", 0, f"unsupported version {version}", message.name)
    schema_version = min(version, _HIGHEST)
    end = len(data)
    try:
        fields, pos = decoders[schema_version](data, 2)
        result = {"version": version, **fields}
        if pos != end:
            result["raw"] = data  # trailing bytes (a newer version's fields): keep them
        return result
    except FAST_DECODE_ERRORS as exc:
        fast = exc
    # The longest complete prefix: an older layout that ends exactly at the end.
    for older in range(schema_version - 1, -1, -1):
        try:
            fields, pos = decoders[older](data, 2)
        except FAST_DECODE_ERRORS:
            continue
        if pos == end:  # the decoder filled the missing fields with their defaults
            return {"version": version, **fields, "raw": data}
    checked = decoder(message, schema_version, checked=True)
    try:
        checked(data, 2)
    except DecodeError as exc:
        raise exc.within(message.name) from None
    raise codec_defect(fast, message.name) from fast


def decode_subscription(data: bytes) -> dict[str, Any]:
    """`ConsumerProtocolSubscription`: topics, user_data, owned_partitions, generation_id,
    rack_id."""
    return _decode(CONSUMER_PROTOCOL_SUBSCRIPTION, _SUBSCRIPTION, data)


def decode_assignment(data: bytes) -> dict[str, Any]:
    """`ConsumerProtocolAssignment`: assigned_partitions, user_data."""
    return _decode(CONSUMER_PROTOCOL_ASSIGNMENT, _ASSIGNMENT, data)


def _encode(message: Message, value: Any) -> bytes:
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if value.get("raw") is not None:
        return bytes(value["raw"])
    version = value["version"]
    return struct.pack(">h", version) + encode_message(message, min(version, _HIGHEST), value)


def encode_subscription(value: dict[str, Any] | bytes) -> bytes:
    """Bytes for a subscription object (or raw bytes, passed through)."""
    return _encode(CONSUMER_PROTOCOL_SUBSCRIPTION, value)


def encode_assignment(value: dict[str, Any] | bytes) -> bytes:
    """Bytes for an assignment object (or raw bytes, passed through)."""
    return _encode(CONSUMER_PROTOCOL_ASSIGNMENT, value)


_MEMO_SIZE = 8192
_memo: dict[tuple[int, bytes], dict[str, Any]] = {}


def decode_member_protocols(members: list[dict[str, Any]]) -> None:
    """Replace each member's subscription/assignment bytes with decoded objects, in place.

    Bytes that do not decode stay as `{"raw": bytes, "error": "..."}`. A member's bytes
    mostly repeat from one generation of its group to the next, so decoded objects are
    memoized by their exact bytes (bounded). They are shared: treat them as read-only.
    """
    memo = _memo
    for member in members:
        for kind, decode in ((0, decode_subscription), (1, decode_assignment)):
            name = "assignment" if kind else "subscription"
            data = member[name]
            found = memo.get((kind, data))
            if found is None:
                try:
                    found = decode(data)
                except DecodeError as exc:
                    found = {"raw": data, "error": str(exc)}
                if len(memo) >= _MEMO_SIZE:
                    memo.clear()
                memo[(kind, data)] = found
            member[name] = found
