"""Spark SQL's offset-commit decode agrees with the codec, record for record."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.codec import DecodeError, decode_record, encode_key, encode_value
from spark_jobs.offset_columns import commit_row_ok, decode_offset_commits

commits = st.tuples(
    st.text(max_size=20),
    st.text(max_size=20),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(0, 4),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.text(max_size=10),
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
)


def build(case: tuple) -> tuple[bytes, bytes | None]:
    group, topic, partition, version, offset, epoch, metadata, ts, tombstone = case
    key = encode_key("offset_commit", {"group": group, "topic": topic, "partition": partition})
    value = encode_value(
        "offset_commit",
        version,
        {
            "offset": offset,
            "leader_epoch": epoch,
            "metadata": metadata,
            "commit_timestamp": ts,
            "expire_timestamp": ts ^ 1,
        },
    )
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
    df = spark.createDataFrame(rows, "id int, key binary, value binary")
    decoded = {
        r["id"]: r
        for r in df.select(
            "id", commit_row_ok().alias("row_ok"), *decode_offset_commits()
        ).collect()
    }
    fast = 0
    for i, key, value in rows:
        row = decoded[i]
        try:
            record = decode_record(key, value)
        except DecodeError:
            record = None
        exact = (
            record is not None
            and record["record_type"] == "offset_commit"
            and (value is None or record["value_version"] in (0, 1, 2, 3))
        )
        # Complete: every record the codec decodes as a v0-v3 commit takes the SQL path ...
        assert row["fast_ok"] == exact, (key.hex(), value and value.hex(), record)
        # ... the cheap per-row check lets it through, and whatever else that check lets
        # through has a bad key, which the per-key check (fast_ok) then catches.
        assert row["row_ok"] >= exact
        if row["row_ok"] and not exact:
            with pytest.raises(DecodeError, match="Key"):
                decode_record(key, value)
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
    assert fast >= 60  # the undamaged v0-v3 records at least


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
