"""Spark SQL's offset-commit decode agrees with the codec, record for record."""

from __future__ import annotations

import base64
import random
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from services.codec import DecodeError, decode_record, encode_key, encode_value
from services.store.batch import HISTORY_INTERVAL_MS
from services.tracker.model import MAX_MILLIS
from spark_jobs.offset_columns import (
    commit_row_ok,
    decode_offset_commits,
    history_commit_ms,
    history_minute,
)

# The records' own timestamp in the log: what a record without a usable commit time is
# binned by in the offset history.
RECORD_MS = 1_767_225_659_999

commits = st.tuples(
    st.text(max_size=20),
    st.text(max_size=20),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(0, 4),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.text(max_size=10),
    # commit timestamps a date can hold (the offset history bins by them), and any other
    st.one_of(st.integers(0, MAX_MILLIS), st.integers(-(2**63), 2**63 - 1)),
    st.booleans(),
    st.booleans(),  # v4 with its tagged topic id
)


def build(case: tuple) -> tuple[bytes, bytes | None]:
    group, topic, partition, version, offset, epoch, metadata, ts, tombstone, with_id = case
    key = encode_key("offset_commit", {"group": group, "topic": topic, "partition": partition})
    fields = {
        "offset": offset,
        "leader_epoch": epoch,
        "metadata": metadata,
        "commit_timestamp": ts,
        "expire_timestamp": ts ^ 1,
    }
    if with_id:  # any 16 bytes, written as Kafka's Uuid.toString() writes them
        topic_id = random.Random(offset).randbytes(16)
        fields["topic_id"] = base64.urlsafe_b64encode(topic_id).rstrip(b"=").decode()
    value = encode_value("offset_commit", version, fields)
    return key, None if tombstone else value


def mutate(data: bytes, rnd: random.Random) -> bytes:
    out = bytearray(data)
    pos = rnd.randrange(len(out))
    if rnd.random() < 0.5:
        out[pos] = rnd.randrange(256)
    else:
        del out[pos]
    return bytes(out)


@settings(max_examples=1, deadline=None)
@given(st.lists(commits, min_size=150, max_size=150), st.integers(0, 2**32))
def test_sql_decode_matches_the_codec(spark, cases: list[tuple], seed: int) -> None:
    rnd = random.Random(seed)
    rows = []
    for i, case in enumerate(cases):
        key, value = build(case)
        if i % 3 == 0:  # a third of the records are damaged in their key or value
            if value is not None and rnd.random() < 0.5:
                value = mutate(value, rnd)
            else:
                key = mutate(key, rnd)
        rows.append((i, key, value))
    record_time = datetime.fromtimestamp(RECORD_MS / 1000, UTC)
    df = spark.createDataFrame(
        [(*r, record_time) for r in rows], "id int, key binary, value binary, timestamp timestamp"
    )
    decoded = {
        r["id"]: r
        for r in df.select(
            "id", "value", "timestamp", commit_row_ok().alias("row_ok"), *decode_offset_commits()
        )
        .withColumn("commit_time_ms", history_commit_ms(F.col("row_ok")))
        .withColumn("minute", history_minute(F.col("commit_time_ms"), HISTORY_INTERVAL_MS))
        .collect()
    }
    fast = binned_by_commit = 0
    for i, key, value in rows:
        row = decoded[i]
        try:
            record = decode_record(key, value)
        except DecodeError:
            record = None
        exact = (
            record is not None
            and record["record_type"] == "offset_commit"
            and (value is None or record["value_version"] in (0, 1, 2, 3) or v4_as_kafka(record))
        )
        # Complete: every record the codec decodes as a v0-v3 commit, or as a v4 commit of
        # the shape Kafka writes, takes the SQL path ...
        assert row["fast_ok"] == exact, (key.hex(), value and value.hex(), record)
        # ... the cheap per-row check lets it through, and whatever else that check lets
        # through has a bad key, which the per-key check (fast_ok) then catches.
        assert row["row_ok"] >= exact
        if row["row_ok"] and not exact:
            with pytest.raises(DecodeError, match="Key"):
                decode_record(key, value)
        if not row["row_ok"]:  # the codec's: binned by the record's own time
            assert row["minute"] == RECORD_MS // HISTORY_INTERVAL_MS
        if not exact:
            continue
        fast += 1
        # ... and exact: field for field the same as the codec.
        k = record["key"]
        assert (row["group"], row["topic"], row["partition_id"]) == (
            k["group"],
            k["topic"],
            k["partition"],
        )
        # ... binned in the offset history by its commit time where a date can hold it,
        # else (a tombstone, -1, a time out of range) by the record's own
        ts = None if value is None else record["value"]["commit_timestamp"]
        if ts is not None and 0 <= ts <= MAX_MILLIS:
            binned_by_commit += 1
            assert row["commit_time_ms"] == ts
            assert row["minute"] == ts // HISTORY_INTERVAL_MS, (value.hex(), ts)
        else:
            assert row["commit_time_ms"] is None
            assert row["minute"] == RECORD_MS // HISTORY_INTERVAL_MS
        if value is None:
            assert row["committed_offset"] is None
            continue
        v = record["value"]
        assert row["committed_offset"] == v["offset"]
        assert row["leader_epoch"] == v["leader_epoch"]
        assert row["metadata"] == v["metadata"]
        assert row["commit_ms"] == v["commit_timestamp"]
        assert row["expire_ms"] == v["expire_timestamp"]
        assert row["value_version"] == record["value_version"]
    assert fast >= 60  # the undamaged v0-v4 records at least
    assert binned_by_commit >= 15


def v4_as_kafka(record: dict) -> bool:
    """A v4 value of the shape the SQL path reads: metadata under 127 bytes (a one-byte
    varint), and no tagged field but the topic id."""
    value = record["value"] or {}
    return (
        record["value_version"] == 4
        and len(value["metadata"].encode()) <= 126
        and "unknown_tagged_fields" not in value
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_the_row_check_reads_both_bytes_of_the_metadata_length(spark, version: int) -> None:
    """Metadata lengths across the high byte (255, 256, 4,660 = 0x1234, 32,767) pass the
    per-row check; the same values with either length byte changed fail it, as they fail
    the codec."""
    key = encode_key("offset_commit", {"group": "g", "topic": "t", "partition": 0})
    fields = {"offset": 5, "leader_epoch": 1, "commit_timestamp": 9, "expire_timestamp": 10}
    rows = []
    for n in (0, 255, 256, 0x1234, 32767):
        value = encode_value("offset_commit", version, {**fields, "metadata": "m" * n})
        position = 15 if version == 3 else 11  # 1-based position of the metadata length
        assert value[position - 1 : position + 1] == n.to_bytes(2, "big")
        rows.append((f"{n}", key, value))
        for byte, delta in ((0, 1), (1, 1), (0, -1)):
            bad = bytearray(value)
            bad[position - 1 + byte] = (bad[position - 1 + byte] + delta) % 256
            rows.append((f"{n}: byte {byte} {delta:+d}", key, bytes(bad)))
    df = spark.createDataFrame(rows, "id string, key binary, value binary")
    got = {r["id"]: r["ok"] for r in df.select("id", commit_row_ok().alias("ok")).collect()}
    for name, k, value in rows:
        try:
            decode_record(k, value)
            valid = True
        except DecodeError:
            valid = False
        assert got[name] == valid == (":" not in name), name


@pytest.mark.parametrize("with_id", [False, True])
def test_v4_values_as_kafka_writes_them_take_the_sql_path(spark, with_id: bool) -> None:
    """Kafka 4.x writes OffsetCommitValue v4 (flexible; the topic id as a tagged field).
    Metadata of 0 and 126 bytes is read by SQL exactly as the codec reads it; 127 bytes
    (a two-byte varint) and a varint byte off by one leave it to the codec."""
    key = encode_key("offset_commit", {"group": "g", "topic": "t", "partition": 0})
    fields = {"offset": 5, "leader_epoch": 1, "commit_timestamp": 9}
    if with_id:
        fields["topic_id"] = base64.urlsafe_b64encode(bytes(range(16))).rstrip(b"=").decode()
    rows = []
    for n in (0, 126, 127):
        value = encode_value("offset_commit", 4, {**fields, "metadata": "m" * n})
        rows.append((f"{n}", value, n <= 126))
        for delta in (1, -1):
            bad = bytearray(value)
            bad[14] = (bad[14] + delta) % 256  # the varint of the metadata length + 1
            rows.append((f"{n}: varint {delta:+d}", bytes(bad), False))
    df = spark.createDataFrame(
        [(i, key, v) for i, v, _ in rows], "id string, key binary, value binary"
    )
    got = {
        r["id"]: r
        for r in df.select(
            "id", commit_row_ok().alias("row_ok"), *decode_offset_commits()
        ).collect()
    }
    for name, value, fast in rows:
        row = got[name]
        assert (row["row_ok"], row["fast_ok"]) == (fast, fast), name
        if fast:
            decoded = decode_record(key, value)["value"]
            assert (row["committed_offset"], row["leader_epoch"]) == (5, 1)
            assert (row["metadata"], row["commit_ms"], row["expire_ms"]) == (
                decoded["metadata"],
                9,
                -1,
            )
            assert row["value_version"] == 4
