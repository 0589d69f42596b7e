"""The offset commits the tracker needs around a batch's group records.

The batch reduction (`spark_jobs.batch.reduce_batch`) keeps each partition's latest
commit of the batch. That is all the tracker needs when a batch is short (a live job's
trigger): a partition's latest commit before a group record is the last one before it,
and one after it is the first. A backlog batch (a backfill, `stream --once` over a day)
holds many commits of a partition on both sides of a group's records, and the tracker
needs, for each group record, each partition's last commit before it (a departed
member's commits time its removal: `services/tracker/causes.py`) and first commit after
it (the end of a moved partition's commit gap: `services/tracker/cost.py`).

So for the groups that can rebalance in the batch (known before it, or with two
generations in it) and have a partition with more than one commit after their first
group record of the batch, and for the groups with a moved partition still
waiting for its first commit and more than one commit of it in the batch, a second
Spark job cuts each partition's commits into *segments* between consecutive group
records of its group and keeps the first and the last commit of each segment: at most
two commits per partition and group record (one segment for a group without records in
the batch), however many the batch holds. Other groups cost nothing.

The segment of a commit at offset o is the number of its group's records before o,
found without sorting the commits: each group's record offsets b1 < ... < bm are cut
into at most m buckets of equal width over [b1, bm]; a small table gives, per bucket,
the records before it and the offsets inside it, and both tables are broadcast. A
commit's segment is then its bucket's count plus the few offsets of its bucket below o.
"""

from __future__ import annotations

import functools
import logging
import math
import operator
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StructField,
    StructType,
)

from services.store.batch import OffsetCommit
from services.tracker import Position
from services.tracker.model import to_datetime
from spark_jobs.offset_columns import commit_row_ok, decode_offset_commits, int16

Record = tuple[dict[str, Any], Position]
log = logging.getLogger("groupscope.stream")

_GROUPS = StructType(
    [
        StructField("gname", BinaryType(), False),
        StructField("first", LongType(), False),
        StructField("width", LongType(), False),
        StructField("buckets", LongType(), False),
        StructField("records", IntegerType(), False),
    ]
)
_BUCKETS = StructType(
    [
        StructField("gname", BinaryType(), False),
        StructField("bucket", LongType(), False),
        StructField("before", IntegerType(), False),
        StructField("inside", ArrayType(LongType(), False), False),
    ]
)


def record_group(record: Mapping[str, Any]) -> str:
    """The group a decoded group record belongs to (classic `group`, KIP-848 `group_id`)."""
    key = record["key"]
    return str(key.get("group", key.get("group_id")))


GENERATION_RECORDS = ("group_metadata", "consumer_group_target_assignment_metadata")


def needed(
    records: Iterable[Record],
    commits: Iterable[OffsetCommit],
    waiting: Mapping[str, Collection[tuple[str, int]]],
    known: Collection[str] = (),
) -> dict[str, list[int]]:
    """group -> the sorted offsets of its group records in the batch (maybe none), for
    each group with a partition whose latest commit of the batch stands for more than
    one commit and is not enough:

    - it follows the group's first record of the batch, so it is not the last commit
      before each record, nor the first after; only for groups that can rebalance in
      the batch: `known` ones (the tracker has a generation of theirs) and those with
      two generations or more in it (a group's first generation is no rebalance, so
      a backfill's many groups that merely form cost nothing);
    - or the partition moved in a rebalance that waits for its first commit (`waiting`,
      the tracker's `CostWatch.waiting`): the batch's first commit ends the gap, not its
      latest."""
    bounds: dict[str, list[int]] = {}
    generations: dict[str, int] = {}
    for record, position in records:
        group = record_group(record)
        bounds.setdefault(group, []).append(position.offset)
        if record["record_type"] in GENERATION_RECORDS and record["value"] is not None:
            generations[group] = generations.get(group, 0) + 1
    first = {
        g: min(offsets) for g, offsets in bounds.items() if g in known or generations.get(g, 0) > 1
    }
    wanted = {
        c.group
        for c in commits
        if c.commits > 1
        and (
            c.source_offset > first.get(c.group, c.source_offset)
            or (c.topic, c.partition) in waiting.get(c.group, ())
        )
    }
    return {g: sorted(bounds.get(g, [])) for g in wanted}


def bucket_rows(
    bounds: Mapping[str, Sequence[int]],
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The two tables: per group (name, first offset, bucket width, buckets, records) and
    per group and bucket (name, bucket, records before it, offsets inside it)."""
    groups, buckets = [], []
    for group, offsets in bounds.items():
        name = bytearray(group.encode())
        if not offsets:  # one segment: the whole batch
            groups.append((name, 0, 1, 0, 0))
            continue
        first, span = offsets[0], offsets[-1] - offsets[0] + 1
        width = max(1, math.ceil(span / len(offsets)))
        count = math.ceil(span / width)
        groups.append((name, first, width, count, len(offsets)))
        inside: dict[int, list[int]] = {}
        for b in offsets:
            inside.setdefault((b - first) // width, []).append(b)
        before = 0
        for k in range(count):
            here = inside.get(k, [])
            buckets.append((name, k, before, here))
            before += len(here)
    return groups, buckets


def segment_ends(df: DataFrame, bounds: Mapping[str, Sequence[int]]) -> DataFrame:
    """The first and the last commit of each partition of the `bounds` groups between
    consecutive group records, decoded (`decode_offset_commits`' columns)."""
    spark = df.sparkSession
    groups_rows, bucket_rows_ = bucket_rows(bounds)
    groups = F.broadcast(spark.createDataFrame(groups_rows, _GROUPS))
    buckets = F.broadcast(spark.createDataFrame(bucket_rows_, _BUCKETS))
    key = F.col("key")
    # The keys of the groups' commits start with type 0 or 1 and the group as a string
    # (INT16 length, bytes): prefixes compared without parsing the length, one set per
    # length, so that the batch's other records cost a few substrings each. The full row
    # check follows for the few that pass (Spark evaluates the conjuncts in order).
    by_length: dict[int, list[bytes]] = {}
    for group in bounds:
        name = group.encode()
        by_length.setdefault(len(name), []).append(len(name).to_bytes(2, "big") + name)
    ours = functools.reduce(
        operator.or_,
        (
            F.substring(key, 3, 2 + length).isin(*(F.lit(bytearray(p)) for p in prefixes))
            for length, prefixes in sorted(by_length.items())
        ),
    )
    commit_key = F.substring(key, 1, 2).isin(F.lit(bytearray(b"\0\0")), F.lit(bytearray(b"\0\1")))
    commits = (
        df.where(commit_key & ours & F.col("value").isNotNull())
        .where(commit_row_ok())
        .select(
            F.col("partition").alias("source_partition"),
            F.col("offset").alias("source_offset"),
            "key",
            "value",
            F.substring(key, F.lit(5), int16(key, 3)).alias("gname"),
        )
    )
    offset = F.col("source_offset")
    bucketed = commits.join(groups, "gname").withColumn(
        "bucket", F.floor((offset - F.col("first")) / F.col("width")).cast("long")
    )
    segment = (
        F.when(F.col("bucket") < 0, F.lit(0))
        .when(F.col("bucket") >= F.col("buckets"), F.col("records"))
        .otherwise(F.col("before") + F.size(F.filter("inside", lambda b: b < offset)))
    )
    ends = (
        bucketed.join(buckets, ["gname", "bucket"], "left")
        .groupBy("key", segment.alias("segment"))
        .agg(
            F.min_by(F.struct("source_partition", "source_offset", "value"), offset).alias("a"),
            F.max_by(F.struct("source_partition", "source_offset", "value"), offset).alias("z"),
        )
        .select("key", F.explode(F.array_distinct(F.array("a", "z"))).alias("c"))
        .select("key", "c.source_partition", "c.source_offset", F.col("c.value").alias("value"))
    )
    return ends.select("*", *decode_offset_commits()).where("fast_ok AND commit_ms IS NOT NULL")


def marks(df: DataFrame, bounds: Mapping[str, Sequence[int]]) -> list[Record]:
    """`segment_ends` as offset-commit records for the tracker, with their positions."""
    if not bounds:
        return []
    started = time.perf_counter()
    rows = (
        segment_ends(df, bounds)
        .select("group", "topic", "partition_id", "source_partition", "source_offset", "commit_ms")
        .toArrow()
        .to_pylist()
    )
    out = []
    for r in rows:
        at = to_datetime(r["commit_ms"])
        if at is None:
            continue
        record = {
            "record_type": "offset_commit",
            "key": {"group": r["group"], "topic": r["topic"], "partition": r["partition_id"]},
            "value": {},
        }
        out.append((record, Position(r["source_partition"], r["source_offset"], at)))
    log.info(
        "commits around the group records of %d groups: %d, in %.2fs",
        len(bounds),
        len(out),
        time.perf_counter() - started,
    )
    return out
