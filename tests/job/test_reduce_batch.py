"""The batch reduction (`spark_jobs.batch.reduce_batch`) on real Spark: the latest commit
per key and minute of history time with its count, every other record on its own row,
whichever aggregate Spark runs."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest

from services.codec import encode_key, encode_value
from services.store.batch import HISTORY_INTERVAL_MS
from spark_jobs.batch import reduce_batch, remainder_key

THRESHOLD = "spark.sql.objectHashAggregate.sortBased.fallbackThreshold"


Record = tuple[int, int, int, bytes | None, bytes | None]
LAG_MS = 30_000  # how long after its commit time a record is appended, here


def records(seed: int, n: int) -> list[Record]:
    """(partition, offset, timestamp ms, key, value): commits over 60 keys, tombstones, a
    truncated value, a group record and a null key, over three source partitions, a
    record a second, over 50 minutes. As in Kafka, a group's records are all in one
    partition (here its number modulo 3). Each record is appended 30 s after its commit
    time, and some commits have none (-1), so that a minute of commit time and one of
    the record's own time differ."""
    rnd = random.Random(seed)
    keys = [
        (g % 3, encode_key("offset_commit", {"group": f"g{g}", "topic": "t", "partition": p}))
        for g in range(20)
        for p in range(3)
    ]
    offsets = {0: 0, 1: 0, 2: 0}
    out = []
    for i in range(n):
        partition, key = rnd.choice(keys)
        commit_ms = -1 if rnd.random() < 0.1 else i * 1000
        value = encode_value("offset_commit", 3, {"offset": i, "commit_timestamp": commit_ms})
        roll = rnd.random()
        if roll < 0.05:
            value = None
        elif roll < 0.08:
            value = value[:-3]
        elif roll < 0.10:
            key, value = encode_key("group_metadata", {"group": f"g{partition}"}), b"\x00\x03"
        elif roll < 0.11:
            key = None
        out.append((partition, offsets[partition], i * 1000 + LAG_MS, key, value))
        offsets[partition] += 1
    return out


def expected(rows: list[Record]) -> dict:
    """What the reduction must give, worked out in plain Python: well-formed commits by
    key and minute of their commit time, else (tombstones, no commit time) of their own
    (latest value, last position, count); everything else by its own position."""
    out: dict = {}
    for partition, offset, record_ms, key, value in rows:
        well_formed = key is not None and key[:2] in (b"\x00\x00", b"\x00\x01")
        well_formed &= value is None or len(value) == 24
        if well_formed:
            commit_ms = -1 if value is None else int.from_bytes(value[-8:], "big", signed=True)
            minute = (commit_ms if commit_ms >= 0 else record_ms) // HISTORY_INTERVAL_MS
            _, _, _, n = out.get(("key", key, minute), (0, 0, None, 0))
            out[("key", key, minute)] = (partition, offset, value, n + 1)
        else:
            out[("own", partition, offset)] = (key, value)
    return out


def reduced(spark, rows: list[Record]) -> dict:
    df = spark.createDataFrame(
        [
            ("__consumer_offsets", p, o, datetime.fromtimestamp(ms / 1000, UTC), k, v)
            for p, o, ms, k, v in rows
        ],
        "topic string, partition int, offset long, timestamp timestamp, key binary, value binary",
    ).repartition(3)
    out: dict = {}
    for row in reduce_batch(df).toArrow().to_pylist():
        if row["row_ok"]:
            out[("key", row["key"], row["minute"])] = (
                row["source_partition"],
                row["source_offset"],
                row["value"],
                row["n"],
            )
        else:
            assert row["n"] == 1
            position = ("own", row["source_partition"], row["source_offset"])
            out[position] = (remainder_key(row["group_key"]), row["value"])
    return out


@contextmanager
def fallback_threshold(spark, keys: int) -> Iterator[None]:
    before = spark.conf.get(THRESHOLD)
    spark.conf.set(THRESHOLD, str(keys))
    try:
        yield
    finally:
        spark.conf.set(THRESHOLD, before)


def test_the_reduction_runs_as_a_hash_aggregate(spark) -> None:
    df = spark.createDataFrame(
        [("t", 0, 0, None, b"\x00\x01", None)],
        "topic string, partition int, offset long, timestamp timestamp, key binary, value binary",
    )
    plan = reduce_batch(df)._jdf.queryExecution().executedPlan().toString()
    assert "ObjectHashAggregate" in plan
    assert "SortAggregate" not in plan


@pytest.mark.parametrize("keys", [100_000, 1], ids=["hash", "sort-fallback"])
def test_latest_per_key_and_every_other_record_alone(spark, keys: int) -> None:
    rows = records(seed=keys, n=3000)
    with fallback_threshold(spark, keys):
        got = reduced(spark, rows)
    assert got == expected(rows)
    assert any(k[0] == "own" for k in got)
    assert any(v[3] > 1 for k, v in got.items() if k[0] == "key")
    # a key's commits land in several minutes, tombstones and timeless commits by their
    # own time, which is not their neighbours' commit time
    minutes = {k[1]: set() for k in got if k[0] == "key"}
    for k in got:
        if k[0] == "key":
            minutes[k[1]].add(k[2])
    assert min(len(m) for m in minutes.values()) > 10
