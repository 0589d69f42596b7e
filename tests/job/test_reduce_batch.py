"""The batch reduction (`spark_jobs.batch.reduce_batch`) on real Spark: the latest commit
per key with its count, every other record on its own row, whichever aggregate Spark runs."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from services.codec import encode_key, encode_value
from spark_jobs.batch import reduce_batch, remainder_key

THRESHOLD = "spark.sql.objectHashAggregate.sortBased.fallbackThreshold"


def records(seed: int, n: int) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(partition, offset, key, value): commits over 60 keys, tombstones, a truncated
    value, a group record and a null key, over three source partitions. As in Kafka, a
    group's records are all in one partition (here its number modulo 3)."""
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
        value = encode_value("offset_commit", 3, {"offset": i})
        roll = rnd.random()
        if roll < 0.05:
            value = None
        elif roll < 0.08:
            value = value[:-3]
        elif roll < 0.10:
            key, value = encode_key("group_metadata", {"group": f"g{partition}"}), b"\x00\x03"
        elif roll < 0.11:
            key = None
        out.append((partition, offsets[partition], key, value))
        offsets[partition] += 1
    return out


def expected(rows: list[tuple[int, int, bytes | None, bytes | None]]) -> dict:
    """What the reduction must give, worked out in plain Python: well-formed commits by
    key (latest value, last position, count), everything else by its own position."""
    out: dict = {}
    for partition, offset, key, value in rows:
        well_formed = key is not None and key[:2] in (b"\x00\x00", b"\x00\x01")
        well_formed &= value is None or len(value) == 24
        if well_formed:
            _, _, _, n = out.get(("key", key), (0, 0, None, 0))
            out[("key", key)] = (partition, offset, value, n + 1)
        else:
            out[("own", partition, offset)] = (key, value)
    return out


def reduced(spark, rows) -> dict:
    df = spark.createDataFrame(
        [("__consumer_offsets", p, o, None, k, v) for p, o, k, v in rows],
        "topic string, partition int, offset long, timestamp timestamp, key binary, value binary",
    ).repartition(3)
    out: dict = {}
    for row in reduce_batch(df).toArrow().to_pylist():
        if row["row_ok"]:
            out[("key", row["key"])] = (
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
