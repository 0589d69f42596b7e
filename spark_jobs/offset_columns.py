"""Vectorized decode of offset commits in Spark SQL: no Python on the hot path.

Offset commits are almost all of `__consumer_offsets`. Their keys (record types 0 and
1) and their values have fixed layouts around length-prefixed strings, so plain SQL over
`substring`, `hex` and `conv` decodes them. The layouts are the codec's tables
(`services.codec.schemas.OFFSET_COMMIT_KEY/VALUE`):

    key    INT16 type | INT16 n | group | INT16 m | topic | INT32 partition
    value  INT16 version | INT64 offset | [v3, v4: INT32 leader_epoch] | INT16 k | metadata
           | INT64 commit_timestamp | [v1: INT64 expire_timestamp]
    v4     (flexible) the metadata length is an unsigned varint of k + 1, and a tagged-field
           section follows the commit timestamp: empty (00), or the topic id alone
           (01 | tag 00 | size 10 | 16 bytes), as Kafka 4.x writes it

A row is decoded here only when every length is consistent with the record's size and
both strings are valid UTF-8. v4 is taken when its metadata is under 127 bytes (a
one-byte varint) and its tagged fields are one of those two shapes, which is what the
group coordinator writes; the topic id is not kept (the store keys offsets by name).
Anything else (group records, longer v4 metadata, other tagged fields, malformed bytes)
goes to the codec, which either decodes it or names what is wrong.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from services.tracker.model import MAX_MILLIS


def _unsigned(data: Column, pos: Column | int, size: int) -> Column:
    """Big-endian unsigned integer of `size` bytes at 1-based `pos`, as a bigint."""
    return F.conv(F.hex(F.substring(data, pos, size)), 16, 10).cast("bigint")


def int16(data: Column, pos: Column | int) -> Column:
    return F.shiftright(F.shiftleft(_unsigned(data, pos, 2), 48), 48).cast("int")


def int32(data: Column, pos: Column | int) -> Column:
    return F.shiftright(F.shiftleft(_unsigned(data, pos, 4), 32), 32).cast("int")


def int64(data: Column, pos: Column | int) -> Column:
    # conv with a negative target base reads the 64 bits as a signed number.
    return F.conv(F.hex(F.substring(data, pos, 8)), 16, -10).cast("bigint")


def _string(data: Column, pos: Column, length: Column) -> Column:
    return F.decode(F.substring(data, pos, length), "UTF-8")


def _valid_utf8(data: Column, pos: Column, length: Column) -> Column:
    return F.is_valid_utf8(F.substring(data, pos, length))


def _binary(*values: bytes) -> list[Column]:
    return [F.lit(bytearray(v)) for v in values]


V0, V1, V2, V3, V4 = (bytes([0, v]) for v in range(5))
# The tagged-field section of a v4 value that carries only its topic id (tag 0, 16 bytes).
TOPIC_ID_TAG = bytes([1, 0, 16])
V4_METADATA_POS = 16  # after version, offset, leader epoch and the 1-byte varint
V4_MAX_METADATA = 126  # a one-byte varint holds metadata length + 1 up to 127


def _value_layout(value: Column) -> tuple[Column, Column, Column]:
    """A non-flexible value's version bytes, the 1-based position of its metadata length
    (after the leader epoch in v3), and the 8 extra trailing bytes of v1's expire time."""
    version = F.substring(value, 1, 2)
    meta_len_pos = F.when(version == F.lit(bytearray(V3)), 15).otherwise(11)
    extra = F.when(version == F.lit(bytearray(V1)), 8).otherwise(0)
    return version, meta_len_pos, extra


def _byte_is(data: Column, pos: Column, byte: Column, table: Column) -> Column:
    """The byte at 1-based `pos` equals `byte` (0-255), looked up in `table` (`_BYTES`:
    Spark SQL has no cast from a number to bytes). Out of range, the lookup is null."""
    return F.substring(data, pos, 1) == F.try_element_at(table, byte + 1)


# The 256 one-byte binaries, as one SQL literal (one call into the JVM, not 256).
_BYTES = "array(" + ", ".join(f"X'{b:02X}'" for b in range(256)) + ")"


def _v4_metadata_length(value: Column, table: Column) -> Column:
    """The metadata length of a v4 value of the shape this module decodes, else null.

    The value's size fixes the metadata length once the tagged section's size is known,
    and that section is either 1 byte (00) or 19 (the topic id); each candidate length is
    checked against the varint byte (length + 1) and the section's own bytes, and at most
    one can match. Compared through `table`, as the non-flexible lengths are."""
    size = F.length(value)
    empty, with_id = size - (V4_METADATA_POS + 8), size - (V4_METADATA_POS + 8 + 18)
    tail_empty = F.substring(value, -1, 1) == F.lit(bytearray(b"\x00"))
    tail_id = F.substring(value, -19, 3) == F.lit(bytearray(TOPIC_ID_TAG))

    def fits(length: Column, tail: Column) -> Column:
        return (
            length.between(0, V4_MAX_METADATA)
            & _byte_is(value, F.lit(V4_METADATA_POS - 1), length + 1, table)
            & tail
        )

    return F.when(fits(empty, tail_empty), empty).when(fits(with_id, tail_id), with_id)


def commit_row_ok() -> Column:
    """Per-row checks cheap enough for every record: an offset-commit key type (0 or 1),
    and a null value or a v0-v3 value whose length matches its metadata length, or a v4
    value of the shape `_v4_metadata_length` reads.

    The metadata length a well-formed value must have follows from the value's size and
    version, so its two big-endian bytes are compared with that length's two bytes
    rather than parsed. Building the expected bytes as text instead
    (`unhex(lpad(hex(n), 4, '0'))`) cost a noticeable share of the executors' time
    (docs/performance.md, "Design measurements": row check bytes). The key's own layout
    is checked later, once per distinct key (`decode_offset_commits` on each key's latest
    commit).
    """
    key, value = F.col("key"), F.col("value")
    key_type = F.substring(key, 1, 2).isin(*_binary(V0, V1))
    version, meta_len_pos, extra = _value_layout(value)
    mlen = F.length(value) - meta_len_pos - 9 - extra
    table = F.expr(_BYTES)
    v4_mlen = _v4_metadata_length(value, table)
    value_ok = (
        value.isNull()
        | (
            version.isin(*_binary(V0, V1, V2, V3))
            & mlen.between(0, 32767)
            & _byte_is(value, meta_len_pos, F.shiftright(mlen, 8), table)
            & _byte_is(value, meta_len_pos + 1, mlen.bitwiseAND(255), table)
            & _valid_utf8(value, meta_len_pos + 2, mlen)
        )
        | (
            (version == F.lit(bytearray(V4)))
            & v4_mlen.isNotNull()
            & _valid_utf8(value, F.lit(V4_METADATA_POS), v4_mlen)
        )
    )
    return F.coalesce((F.length(key) >= 10) & key_type & value_ok, F.lit(False))


def decode_offset_commits() -> list[Column]:
    """Columns that decode `key`/`value` of offset commits. Adds `fast_ok`.

    Output columns: `record_type` (0/1), `group`, `topic`, `partition_id`, `committed_offset`
    (null for a tombstone), `leader_epoch`, `metadata`, `commit_ms`, `expire_ms`,
    `value_version`, and `fast_ok`: true where the SQL decode is complete and exact.
    """
    key, value = F.col("key"), F.col("value")
    key_len = F.length(key)
    record_type = int16(key, 1)
    glen = int16(key, 3)
    topic_len_pos = F.lit(5) + glen
    tlen = int16(key, topic_len_pos)
    partition_pos = topic_len_pos + 2 + tlen
    key_ok = (
        (key_len >= 10)
        & record_type.isin(0, 1)
        & (glen >= 0)
        & (topic_len_pos + 2 <= key_len + 1)
        & (tlen >= 0)
        & (partition_pos + 3 == key_len)
        & _valid_utf8(key, F.lit(5), glen)
        & _valid_utf8(key, topic_len_pos + 2, tlen)
    )

    value_len = F.length(value)
    version = int16(value, 1)
    _, meta_len_pos, extra = _value_layout(value)
    has_epoch = version.isin(3, 4)
    flexible = version == 4
    v4_mlen = _v4_metadata_length(value, F.expr(_BYTES))
    mlen = F.when(flexible, v4_mlen).otherwise(int16(value, meta_len_pos))
    meta_pos = F.when(flexible, V4_METADATA_POS).otherwise(meta_len_pos + 2)
    commit_pos = meta_pos + mlen
    expected_len = commit_pos + 7 + extra
    value_ok = value.isNull() | (
        (value_len >= 12)
        & (
            (version.between(0, 3) & (mlen >= 0) & (expected_len == value_len))
            | (flexible & v4_mlen.isNotNull())
        )
        & _valid_utf8(value, meta_pos, mlen)
    )
    fast_ok = F.coalesce(key_ok & value_ok, F.lit(False))

    def when_value(column: Column) -> Column:
        return F.when(value.isNotNull() & fast_ok, column)

    return [
        F.when(fast_ok, record_type).alias("record_type"),
        F.when(fast_ok, _string(key, F.lit(5), glen)).alias("group"),
        F.when(fast_ok, _string(key, topic_len_pos + 2, tlen)).alias("topic"),
        F.when(fast_ok, int32(key, partition_pos)).alias("partition_id"),
        when_value(int64(value, 3)).alias("committed_offset"),
        when_value(F.when(has_epoch, int32(value, 11)).otherwise(-1)).alias("leader_epoch"),
        when_value(_string(value, meta_pos, mlen)).alias("metadata"),
        when_value(int64(value, commit_pos)).alias("commit_ms"),
        when_value(F.when(version == 1, int64(value, commit_pos + 8)).otherwise(-1)).alias(
            "expire_ms"
        ),
        when_value(version).alias("value_version"),
        fast_ok.alias("fast_ok"),
    ]


def history_commit_ms(row_ok: Column) -> Column:
    """The commit timestamp (epoch ms) of a record that passed the row checks (`row_ok`,
    from `commit_row_ok`), where a date can hold it; else null (a tombstone, -1, a time
    out of range, a record the codec decodes on its own). Cheap enough for every record:
    it sits at a fixed distance from the value's end (the last 8 bytes; in v1 before the
    8 of the expire time), and in v4 right after the metadata, whose length the one-byte
    varint before it gives (`V4_METADATA_POS`)."""
    value = F.col("value")
    version, _, extra = _value_layout(value)
    commit_pos = F.when(
        version == F.lit(bytearray(V4)),
        _unsigned(value, V4_METADATA_POS - 1, 1) + (V4_METADATA_POS - 1),
    ).otherwise(F.length(value) - 7 - extra)
    commit_ms = int64(value, commit_pos)
    return F.when(row_ok & commit_ms.between(0, MAX_MILLIS), commit_ms)


def history_minute(commit_ms: Column, interval_ms: int) -> Column:
    """The interval of history time a record falls in (epoch milliseconds floor-divided
    by `interval_ms`), as the store bins it (`services.store.batch`, "Offset history"):
    by its commit time (`history_commit_ms`) where it has one, else by its own
    `timestamp` (a tombstone's)."""
    ms = F.coalesce(commit_ms, F.unix_millis(F.col("timestamp")))
    return F.floor(ms / F.lit(interval_ms))
