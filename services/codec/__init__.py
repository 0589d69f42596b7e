"""The `__consumer_offsets` codec: a pure library (stdlib only, no I/O).

from services.codec import decode_record, encode_record, partition_for
"""

from services.codec.embedded import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from services.codec.errors import DecodeError, EncodeError
from services.codec.hashing import java_string_hash, partition_for
from services.codec.records import (
    RECORD_TYPES,
    Record,
    decode_record,
    encode_key,
    encode_record,
    encode_value,
)

__all__ = [
    "RECORD_TYPES",
    "DecodeError",
    "EncodeError",
    "Record",
    "decode_assignment",
    "decode_record",
    "decode_subscription",
    "encode_assignment",
    "encode_key",
    "encode_record",
    "encode_subscription",
    "encode_value",
    "java_string_hash",
    "partition_for",
]
