"""Vectorized decode of offset commits in Spark SQL: no Python on the hot path.

Offset commits are almost all of `__consumer_offsets`. Their keys (record types 0 and
1) and their non-flexible values (v0–v3) have fixed layouts around two length-prefixed
strings, so plain SQL over `substring`, `hex` and `conv` decodes them (DESIGN.md §5:
about 1.2 M records/s on 2 cores). The layouts are the codec's tables
(`services.codec.schemas.OFFSET_COMMIT_KEY/VALUE`):

    key    INT16 type | INT16 n | group | INT16 m | topic | INT32 partition
    value  INT16 version | INT64 offset | [v3: INT32 leader_epoch] | INT16 k | metadata
           | INT64 commit_timestamp | [v1: INT64 expire_timestamp]

A row is decoded here only when every length is consistent with the record's size and
both strings are valid UTF-8. Anything else (group records, flexible v4 values,
malformed bytes) goes to the codec, which either decodes it or names what is wrong.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


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


V0, V1, V2, V3 = (bytes([0, v]) for v in range(4))


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


def commit_row_ok() -> Column:
    """Per-row checks cheap enough for every record: an offset-commit key type (0 or 1),
    and a null value or a v0-v3 value whose length matches its metadata length.

    The metadata length a well-formed value must have follows from the value's size and
    version, so its two big-endian bytes are compared with that length's two bytes
    rather than parsed. Building the expected bytes as text instead
    (`unhex(lpad(hex(n), 4, '0'))`) took 11% of the executors' JFR samples in a batch
    from Kafka. The key's own layout is checked later, once per distinct key
    (`decode_offset_commits` on each key's latest commit).
    """
    key, value = F.col("key"), F.col("value")
    key_type = F.substring(key, 1, 2).isin(*_binary(V0, V1))
    version, meta_len_pos, extra = _value_layout(value)
    mlen = F.length(value) - meta_len_pos - 9 - extra
    table = F.expr(_BYTES)
    value_ok = value.isNull() | (
        version.isin(*_binary(V0, V1, V2, V3))
        & mlen.between(0, 32767)
        & _byte_is(value, meta_len_pos, F.shiftright(mlen, 8), table)
        & _byte_is(value, meta_len_pos + 1, mlen.bitwiseAND(255), table)
        & _valid_utf8(value, meta_len_pos + 2, mlen)
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
    has_epoch = version == 3
    mlen = int16(value, meta_len_pos)
    commit_pos = meta_len_pos + 2 + mlen
    expected_len = commit_pos + 7 + extra
    value_ok = value.isNull() | (
        (value_len >= 12)
        & version.between(0, 3)
        & (mlen >= 0)
        & (expected_len == value_len)
        & _valid_utf8(value, meta_len_pos + 2, mlen)
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
        when_value(_string(value, meta_len_pos + 2, mlen)).alias("metadata"),
        when_value(int64(value, commit_pos)).alias("commit_ms"),
        when_value(F.when(version == 1, int64(value, commit_pos + 8)).otherwise(-1)).alias(
            "expire_ms"
        ),
        when_value(version).alias("value_version"),
        fast_ok.alias("fast_ok"),
    ]
