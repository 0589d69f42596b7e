"""One micro-batch: decode, check coordinator partitions, track generations, write.

Runs as `foreachBatch`. Offset commits (the bulk) are decoded by Spark SQL
(`offset_columns`) and reduced to the latest commit per (group, topic, partition) and
minute of commit time (the offset history's resolution, `services.store.batch`) before
anything reaches the driver. Everything else is a small remainder: group records, flexible
or malformed records. It is collected in log order and decoded with the codec on the
driver, where the generation tracker keeps each group's last generation. The whole batch
is written in one store transaction, and replaying a batch is a no-op. If the database
rejects the batch, the records to blame are set aside as decode failures
(`spark_jobs.poison`) and the rest is written.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from services.codec import DecodeError, decode_record, partition_for
from services.groupfilter import KEEP_ALL, GroupFilter
from services.outage import Outage
from services.store.batch import (
    HISTORY_INTERVAL_MS,
    BatchHealth,
    BatchWrite,
    DecodeFailure,
    OffsetCommit,
    Repair,
    SourceProgress,
)
from services.store.errors import BatchRejectedError, StoreUnavailableError
from services.store.repository import HistoryStore
from services.store.retry import RetryPolicy
from services.store.snapshots import LatestGeneration
from services.tracker import GenerationTracker, Position, Snapshot
from services.tracker.model import MAX_MILLIS, identity, time_repair, to_datetime
from spark_jobs import evidence, poison, tracker_files
from spark_jobs.checkpoint import with_source_positions
from spark_jobs.gc_pause import gc_paused
from spark_jobs.group_rows import drop_filtered
from spark_jobs.offset_columns import (
    commit_row_ok,
    decode_offset_commits,
    history_commit_ms,
    history_minute,
)
from spark_jobs.replica_racks import ReplicaRacks
from spark_jobs.topic_names import TopicNames

log = logging.getLogger("groupscope.stream")
T = TypeVar("T")


def source_columns() -> list:
    """The source's columns, renamed so that they cannot clash with decoded fields."""
    return [
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.col("timestamp").alias("source_time"),
        "key",
        "value",
    ]


@dataclass
class BatchStats:
    """What a batch did: pipeline health for the logs and the exporter."""

    batch_id: int = -1
    records: int = 0
    offset_commits: int = 0
    group_records: int = 0
    # Records of groups the filter drops (`--groups-exclude`, `--groups-include`): read,
    # counted in `records` and here, neither tracked nor stored.
    filtered: int = 0
    generations: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    # Group records of a type the tracker has no handler for, by type.
    unknown_types: Counter[str] = field(default_factory=Counter)
    # Rebalances stored without a baseline (the assignor rejected the group), by reason.
    baseline_failures: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    end_offsets: dict[int, int] = field(default_factory=dict)


def snapshot_of(latest: LatestGeneration) -> Snapshot:
    """A stored generation as the tracker's starting point."""
    assignment, topics = {}, {}
    for m in latest.members:
        ident = identity(m.member_id, m.group_instance_id)
        assignment[ident] = [(t, p) for t, ps in sorted(m.assignment.items()) for p in ps]
        topics[ident] = tuple(m.subscribed_topics)
    position = Position(latest.source_partition, latest.source_offset, latest.time)
    return Snapshot(latest.generation, position, assignment, topics, latest.assignor)


def bounded(reason: str) -> str:
    """A reason without its numbers (offsets, lengths, type ids), for counting by label."""
    return re.sub(r" \d+\b", "", reason)


def failure_reason(exc: DecodeError) -> str:
    """A short, bounded label for counting: what failed, without offsets or lengths."""
    reason = exc.reason.split(":")[0].split(" ")[0:3]
    return bounded(f"{exc.message or 'record'}: {' '.join(reason)}")


def _commit(row: dict[str, Any], repairs: list[Repair]) -> OffsetCommit:
    """An offset commit from a decoded row (the SQL path's column names). A time out of
    the range of a date (any client can commit one) becomes None, its raw milliseconds
    a repair."""
    commit_ms, expire_ms = row["commit_ms"], row["expire_ms"]
    if (commit_ms is not None and not -1 <= commit_ms <= MAX_MILLIS) or (
        expire_ms is not None and not -1 <= expire_ms <= MAX_MILLIS
    ):
        position = row["source_partition"], row["source_offset"]
        for millis, field in ((commit_ms, "commit_timestamp"), (expire_ms, "expire_timestamp")):
            repair = time_repair(millis, field, *position)
            if repair is not None:
                repairs.append(repair)
    return OffsetCommit(
        group=row["group"],
        topic=row["topic"],
        partition=row["partition_id"],
        offset=row["committed_offset"],
        source_partition=row["source_partition"],
        source_offset=row["source_offset"],
        commit_time=to_datetime(commit_ms),
        leader_epoch=row["leader_epoch"],
        metadata=row["metadata"],
        expire_time=to_datetime(expire_ms),
        commits=row["commits"],
        record_time=row["source_time"],
        latest_commit_time=to_datetime(row["latest_commit_ms"]),
    )


SOURCE_COLUMNS = ("partition", "offset", "timestamp", "key", "value")
POSITION_PREFIX = b"\xff\xff"  # offset-commit keys start 00 00 or 00 01, never ff
NULL_KEY_PREFIX = b"\xff\xfe"


def remainder_key(group_key: bytes) -> bytes | None:
    """The record key inside a remainder row's grouping key (see `_ReduceColumns`)."""
    if group_key.startswith(NULL_KEY_PREFIX):
        return None
    return group_key.split(b"/", 2)[2]


# A batch's commits: the latest of each (group, topic, partition, interval of history
# time), the interval as `offset_columns.history_minute` numbers it (None: no time).
Commits = dict[tuple[str, str, int, int | None], OffsetCommit]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_INTERVAL = timedelta(milliseconds=HISTORY_INTERVAL_MS)


def history_minute_of(commit: OffsetCommit) -> int | None:
    """The interval of history time of a commit the codec decoded: the number Spark's
    `history_minute` gives the others (commit timestamp, else record timestamp)."""
    time = commit.commit_time or commit.record_time
    return None if time is None else (time - _EPOCH) // _INTERVAL


def merge_commit(
    commits: Commits, key: tuple[str, str, int, int | None], commit: OffsetCommit
) -> None:
    """Keep the later of `commit` and the one `commits` holds under `key`, counting both
    and keeping the later commit time of both."""
    known = commits.get(key)
    if known is None:
        commits[key] = commit
    else:  # the latest is kept; the one it supersedes is still counted
        latest = commit if known.source_offset < commit.source_offset else known
        times = [t for c in (known, commit) if (t := c.latest_commit_time or c.commit_time)]
        commits[key] = replace(
            latest,
            commits=known.commits + commit.commits,
            latest_commit_time=max(times, default=None),
        )


def malformed_keys(
    rows: dict[bytes, list[dict[str, Any]]], remainder: list[dict[str, Any]]
) -> list[bytes]:
    """Of the rows whose offset-commit key SQL could not decode, by key: the keys with
    several records, all of which the codec must see (returned, to be read again), and
    the single records, added to `remainder` as they are. A key's records may sit in
    several intervals of history time, so the count is the key's, not a row's."""
    bad = []
    for key, key_rows in rows.items():
        if sum(r["n"] for r in key_rows) > 1:
            bad.append(key)  # a malformed key: all its records fail
        else:
            remainder += key_rows
    return bad


@dataclass(frozen=True)
class _ReduceColumns:
    """`reduce_batch`'s expressions. Building them takes about a thousand Py4J calls
    (docs/performance.md, "Design measurements": reduction expressions), and they do not
    depend on the batch, so they are built once per JVM session and reused.

    A record that passes the cheap row checks is grouped under its key and its interval
    of history time (`offset_columns.history_minute`: the offset history keeps each
    interval's latest commit, so that it does not depend on how records are cut into
    batches); any other record under a key unique to it: its source position followed
    by its own key bytes (`ff ff <partition>/<offset>/<key>`, or `ff fe
    <partition>/<offset>` for a null key), so that the aggregate need not carry the key.
    It carries one binary column (the latest value) and otherwise plain numbers, which
    took less CPU than the latest row as one struct (the same item of
    docs/performance.md).

    A binary aggregation buffer rules out Spark's `HashAggregateExec`, and Spark then
    plans a sort aggregate unless some aggregate is a `TypedImperativeAggregate`
    (`AggUtils.createAggregate`). `collect_list` of a null literal is one that stays
    empty (nulls are skipped), so with it the plan is an `ObjectHashAggregateExec`,
    faster than sorting every record by its binary key (the same item). Past
    `spark.sql.objectHashAggregate.sortBased.fallbackThreshold` keys in one task
    (`spark_jobs.session`), Spark falls back to sorting, with the same result.
    """

    checked: list[Any]
    keyed: list[Any]
    agg: list[Any]
    latest: list[Any]
    decoded: list[Any]

    @classmethod
    def build(cls) -> _ReduceColumns:
        position = F.concat(
            F.bin("source_partition").cast("binary"),
            F.lit(bytearray(b"/")),
            F.bin("source_offset").cast("binary"),
        )
        unique = F.when(
            F.col("key").isNull(), F.concat(F.lit(bytearray(NULL_KEY_PREFIX)), position)
        ).otherwise(
            F.concat(F.lit(bytearray(POSITION_PREFIX)), position, F.lit(bytearray(b"/")), "key")
        )
        row_ok = F.substring("group_key", 1, 1) != F.lit(bytearray(b"\xff"))
        return cls(
            checked=[*SOURCE_COLUMNS, commit_row_ok().alias("row_ok")],
            keyed=[
                F.col("partition").alias("source_partition"),
                F.col("offset").alias("source_offset"),
                F.col("timestamp").alias("source_time"),
                "value",
                F.when(F.col("row_ok"), F.col("key")).otherwise(unique).alias("group_key"),
                history_commit_ms(F.col("row_ok")).alias("commit_time_ms"),
                history_minute(F.col("commit_time_ms"), HISTORY_INTERVAL_MS).alias("minute"),
            ],
            agg=[
                F.max_by("source_partition", "source_offset").alias("source_partition"),
                F.max("source_offset").alias("source_offset"),
                # the latest record's: a tombstone's history time (OffsetCommit.record_time)
                F.max_by("source_time", "source_offset").alias("source_time"),
                F.max_by("value", "source_offset").alias("value"),
                F.count("*").alias("n"),
                F.count("value").alias("commits"),  # a tombstone (null value) is no commit
                # the latest commit time, which a later tombstone does not carry
                F.max("commit_time_ms").alias("latest_commit_ms"),
                F.collect_list(F.lit(None).cast("int")).alias("hash_plan"),
            ],
            latest=[
                row_ok.alias("row_ok"),
                "source_partition",
                "source_offset",
                "source_time",
                F.when(row_ok, F.col("group_key")).alias("key"),
                "value",
                # + 0: an aggregate nothing reads is pruned, and with it the hash plan.
                (F.col("n") + F.size("hash_plan")).alias("n"),
                "commits",
                F.when(~row_ok, F.col("group_key")).alias("group_key"),  # only where needed
                "minute",
                "latest_commit_ms",
            ],
            decoded=["*", *decode_offset_commits()],
        )


_columns: dict[int, _ReduceColumns] = {}


def _reduce_columns(df: DataFrame) -> _ReduceColumns:
    session = id(df.sparkSession._jsparkSession)
    if session not in _columns:
        _columns.clear()
        _columns[session] = _ReduceColumns.build()
    return _columns[session]


def reduce_batch(df: DataFrame) -> DataFrame:
    """The whole batch in one Spark job, without caching the source.

    An offset commit's key bytes identify its (group, topic, partition), so commits that
    pass the cheap per-row checks are reduced to the latest per key and minute of commit
    time first (with their count), and only those winners are decoded: one row per
    partition in a live batch, one per partition and minute in a backlog. Every other
    record is grouped under a key unique to its source position, so it keeps its own
    row and bytes for the codec (`key` is null in its row: `remainder_key` reads it from
    `group_key`). One binary grouping key keeps the row checks from being evaluated more
    than once.
    """
    columns = _reduce_columns(df)
    latest = (
        df.select(*columns.checked)
        .select(*columns.keyed)
        .groupBy("group_key", "minute")
        .agg(*columns.agg)
        .select(*columns.latest)
    )
    return latest.select(*columns.decoded)


class BatchProcessor:
    """The foreachBatch function, with the state that lives between batches."""

    def __init__(
        self,
        store: HistoryStore,
        source: str,
        offsets_partitions: int,
        known: dict[str, LatestGeneration] | None = None,
        retry: RetryPolicy | None = None,
        state_dir: Path | None = None,
        checkpoint: Path | None = None,
        end_quietly: bool = False,
        topic_names: TopicNames | None = None,
        store_outage: Outage | None = None,
        replica_racks: ReplicaRacks | None = None,
        groups: GroupFilter = KEEP_ALL,
    ) -> None:
        """`state_dir` keeps the tracker's state between runs (beside the checkpoint);
        without a saved state the tracker starts from the store's latest generations.
        `checkpoint` (Spark's) tells which batches found a source log gone backwards.

        `end_quietly`: when the store stays unavailable past the retry policy, turn
        Spark's (and py4j's) logging off before failing the query, so that the job ends
        with the one line its driver prints (`processor.gave_up`) instead of stack traces
        of the same error.

        `topic_names` (a live source's cluster) names the topic ids of KIP-848 targets
        before the batch's group records reach the tracker; without it they stay ids
        unless the group's partition metadata names them (a replay). `replica_racks` (a
        live source's cluster) gives the tracker the partitions' replica racks of the
        batch's rack-aware generations; without it their baselines assign without racks.

        `groups`: the groups to track and store; the records of others are counted
        (`BatchStats.filtered`) and dropped, and what the tracker kept of them (from a
        run without the filter) is forgotten, so that a group included again later
        starts afresh rather than with a rebalance across the records it missed."""
        self.store = store
        self.checkpoint = checkpoint
        self.source = source
        self.offsets_partitions = offsets_partitions
        self.state_dir = state_dir
        saved = tracker_files.latest(state_dir) if state_dir else None
        self.saver = tracker_files.TrackerFiles(state_dir) if state_dir else None
        self.groups = groups
        self.tracker = saved or GenerationTracker(
            {g: snapshot_of(s) for g, s in (known or {}).items() if groups.keeps(g)}
        )
        if groups.active:
            self.tracker.forget(groups.dropped(self.tracker.groups()))
        self.checked: set[str] = set()  # groups whose coordinator partition was checked
        self.retry = retry or RetryPolicy()
        # Shared by the batch writes and the driver's status reports (`stream._report`),
        # so that a database outage is logged once, whoever notices it.
        self.store_outage = store_outage or Outage("the database", log)
        self.gave_up: StoreUnavailableError | None = None  # the write that ended the job
        self.end_quietly = end_quietly
        self.topic_names = topic_names
        self.replica_racks = replica_racks
        self.mismatched: dict[str, tuple[int, int]] = {}
        self.last = BatchStats()
        self.batches = 0

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        with gc_paused():
            self._process(df, batch_id)

    def _process(self, df: DataFrame, batch_id: int) -> None:
        started = time.perf_counter()
        batch, stats = self._build(df, batch_id)
        batch = replace(batch, health=BatchHealth(stats.records, time.perf_counter() - started))
        if self.checkpoint is not None:
            batch = with_source_positions(batch, self.checkpoint)
        try:
            self._write(batch, df, stats)
        except StoreUnavailableError as exc:
            self.gave_up = exc  # Spark wraps it; the driver ends with this one line
            if self.end_quietly:
                df.sparkSession.sparkContext.setLogLevel("OFF")
                # py4j logs the exception it hands back to the JVM, with its traceback.
                logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)
            raise
        if self.saver is not None:
            self.saver.save(batch_id, self.tracker)
        stats.seconds = time.perf_counter() - started
        self.last = stats
        self.batches += 1
        log.info(
            "batch %d: %d records (%d offset commits, %d group records%s), %d generations, "
            "%d failures, %.2fs",
            batch_id,
            stats.records,
            stats.offset_commits,
            stats.group_records,
            f", {stats.filtered} of filtered groups" if self.groups.active else "",
            stats.generations,
            sum(stats.failures.values()),
            stats.seconds,
        )

    def _write(self, batch: BatchWrite, df: DataFrame, stats: BatchStats) -> None:
        """Write the batch, waiting out store outages (`self.retry`); if the database
        rejects it, set aside the records it refuses (`spark_jobs.poison`) and write the
        rest."""

        def retried(operation: Callable[[], T]) -> T:
            return self.retry.run(operation, outage=self.store_outage)

        try:
            retried(lambda: self.store.write_batch(batch))
        except BatchRejectedError as exc:
            log.warning("%s; looking for the records the database rejects", exc)
            error = exc
            kept, count = retried(lambda: poison.without_rejected(self.store, batch, df, error))
            stats.failures[poison.CATEGORY] += count
            retried(lambda: self.store.write_batch(kept))

    def _build(self, df: DataFrame, batch_id: int) -> tuple[BatchWrite, BatchStats]:
        stats = BatchStats(batch_id=batch_id)
        table = reduce_batch(df).toArrow()
        if self.groups.active:
            table = self._drop_filtered(table, stats)
        rows = table.to_pylist()
        offsets: Commits = {}
        repairs: list[Repair] = []
        remainder: list[dict[str, Any]] = []
        malformed: dict[bytes, list[dict[str, Any]]] = {}
        for row in rows:
            stats.records += row["n"]
            partition, last = row["source_partition"], row["source_offset"]
            stats.end_offsets[partition] = max(stats.end_offsets.get(partition, -1), last)
            if not row["fast_ok"]:
                if not row["row_ok"]:
                    row["key"] = remainder_key(row["group_key"])
                    remainder.append(row)
                else:
                    malformed.setdefault(row["key"], []).append(row)
                continue
            stats.offset_commits += row["n"]
            key = (row["group"], row["topic"], row["partition_id"], row["minute"])
            merge_commit(offsets, key, _commit(row, repairs))
            self._check_partition(row["group"], partition)
        bad_keys = malformed_keys(malformed, remainder)
        if bad_keys:
            remainder += (
                df.select(*source_columns())
                .where(F.col("key").isin(*[F.lit(bytearray(k)) for k in bad_keys]))
                .toArrow()
                .to_pylist()
            )
        remainder.sort(key=lambda r: (r["source_partition"], r["source_offset"]))
        failures = self._remainder(remainder, offsets, stats, repairs, df)
        if repairs:  # only those of the commits kept, not of ones superseded in the batch
            kept = {(o.source_partition, o.source_offset) for o in offsets.values()}
            repairs = [r for r in repairs if (r.source_partition, r.source_offset) in kept]
        generations, events = self.tracker.drain()
        stats.generations = len(generations)
        self._log_tracker_counts(batch_id, stats)
        batch = BatchWrite(
            batch_id=batch_id,
            source=self.source,
            batch_time=datetime.now(UTC),
            offsets=list(offsets.values()),
            group_events=events,
            generations=generations,
            decode_failures=failures,
            progress=[SourceProgress(p, last) for p, last in sorted(stats.end_offsets.items())],
            repairs=repairs + self.tracker.drain_repairs(),
            replacements=self.tracker.drain_replacements(),
            costs=self.tracker.drain_costs(),
        )
        return batch, stats

    def _drop_filtered(self, table: Any, stats: BatchStats) -> Any:
        """The reduced rows without those of dropped groups, counted; their source
        positions still count for the batch's progress, and each dropped group's
        coordinator partition is checked once (a wrong --offsets-partitions shows
        whichever groups are kept)."""
        table, dropped = drop_filtered(table, self.groups)
        stats.records += dropped.records
        stats.filtered += dropped.records
        for partition, last in dropped.end_offsets.items():
            stats.end_offsets[partition] = max(stats.end_offsets.get(partition, -1), last)
        for group, partition in dropped.partitions:
            self._check_partition(group, partition)
        return table

    def _log_tracker_counts(self, batch_id: int, stats: BatchStats) -> None:
        """One line per unknown record type and per baseline failure reason."""
        stats.unknown_types, stats.baseline_failures, examples = self.tracker.drain_counts()
        for kind, count in sorted(stats.unknown_types.items()):
            log.info(
                "batch %d: %d group records of type %s, which the tracker does not track",
                batch_id,
                count,
                kind,
            )
        for reason, count in sorted(stats.baseline_failures.items()):
            log.warning(
                "batch %d: %d rebalances stored without a baseline (%s), e.g. %s",
                batch_id,
                count,
                reason,
                examples[reason],
            )

    def _remainder(
        self,
        rows: list[dict[str, Any]],
        offsets: Commits,
        stats: BatchStats,
        repairs: list[Repair],
        df: DataFrame,
    ) -> list[DecodeFailure]:
        """Decode the records SQL did not, in log order; returns the failures."""
        failures, group_records, codec_commits = [], [], []
        for row in rows:
            position = Position(row["source_partition"], row["source_offset"], row["source_time"])
            try:
                record = decode_record(row["key"], row["value"])
            except DecodeError as exc:
                failures.append(self._failure(row, str(exc), failure_reason(exc), stats))
                continue
            kind = record["record_type"]
            if kind == "unknown":
                failures.append(
                    self._failure(row, record["reason"], bounded(record["reason"]), stats)
                )
                continue
            key = record["key"]
            group = key.get("group", key.get("group_id"))
            self._check_partition(group, position.partition)
            if group is not None and not self.groups.keeps(group):
                stats.filtered += 1
                continue
            if kind == "offset_commit":
                stats.offset_commits += 1
                commit = self._codec_commit(record, position, repairs)
                codec_commits.append(commit)
                key = (commit.group, commit.topic, commit.partition, history_minute_of(commit))
                merge_commit(offsets, key, commit)
            else:
                stats.group_records += 1
                group_records.append((record, position))
        if self.topic_names is not None:
            unnamed = self.tracker.unnamed_topic_ids(r for r, _ in group_records)
            if unnamed:
                self.tracker.topic_names.update(self.topic_names.resolve(unnamed))
        if self.replica_racks is not None:
            wanted = self.tracker.rack_topics(r for r, _ in group_records)
            self.tracker.partition_racks = self.replica_racks.lookup(wanted) if wanted else {}
        # The batch's latest commit of each partition goes to the tracker in log order
        # with the group records: the evidence that times a departed member's removal
        # (services/tracker/causes.py; docs/architecture.md, "Rebalance causes") and ends
        # a moved partition's commit gap (services/tracker/cost.py). Only commits of
        # groups with generations count (GenerationTracker.commit), so the others (most
        # partitions of a backlog batch) are not built or sorted at all. Where a batch
        # holds more commits of a group's partition than its latest around the group's
        # records, `spark_jobs.evidence` adds the first and last between each two, and
        # the commits the codec decoded go in one by one.
        generations = self.tracker.last.keys() | self.tracker.kip848.keys()
        with_records = {evidence.record_group(r) for r, _ in group_records}
        tracked = generations | with_records
        waiting = self.tracker.cost.waiting()
        marks = evidence.marks(
            df, evidence.needed(group_records, offsets.values(), waiting, generations)
        )
        commits = [
            (c, c.commit_time)
            for c in [*offsets.values(), *codec_commits]
            if c.group in tracked and c.offset is not None and c.commit_time is not None
        ]
        # A group with no record in the batch and no moved partition waiting for its
        # first commit only learns each partition's latest commit time: no order
        # against other records matters, so its commits skip the records' sort (at
        # 100,000 groups, nearly every commit of a batch; docs/performance.md).
        in_order = with_records | waiting.keys()
        marks += [
            (
                {
                    "record_type": "offset_commit",
                    "key": {"group": c.group, "topic": c.topic, "partition": c.partition},
                    "value": {},
                },
                Position(c.source_partition, c.source_offset, at),
            )
            for c, at in commits
            if c.group in in_order
        ]
        ordered = sorted([*group_records, *marks], key=lambda r: (r[1].partition, r[1].offset))
        for record, position in ordered:
            self.tracker.add(record, position)
        latest = sorted(
            (ct for ct in commits if ct[0].group not in in_order),
            key=lambda ct: (ct[0].source_partition, ct[0].source_offset),
        )
        for c, at in latest:
            self.tracker.commit(c.group, c.topic, c.partition, at, c.source_offset)
        return failures

    @staticmethod
    def _codec_commit(
        record: dict[str, Any], position: Position, repairs: list[Repair]
    ) -> OffsetCommit:
        """A commit the codec decoded, in the SQL path's row shape."""
        key, value = record["key"], record["value"] or {}
        return _commit(
            {
                "group": key["group"],
                "topic": key["topic"],
                "partition_id": key["partition"],
                "committed_offset": value.get("offset"),
                "source_partition": position.partition,
                "source_offset": position.offset,
                "source_time": position.time,
                "commit_ms": value.get("commit_timestamp"),
                "leader_epoch": value.get("leader_epoch"),
                "metadata": value.get("metadata"),
                "expire_ms": value.get("expire_timestamp"),
                "commits": int(record["value"] is not None),  # a tombstone is no commit
                "latest_commit_ms": value.get("commit_timestamp"),
            },
            repairs,
        )

    @staticmethod
    def _failure(
        row: dict[str, Any], reason: str, category: str, stats: BatchStats
    ) -> DecodeFailure:
        stats.failures[category] += 1
        return DecodeFailure(
            source_partition=row["source_partition"],
            source_offset=row["source_offset"],
            reason=reason,
            key=row["key"],
            value=row["value"],
            source_time=row["source_time"],
            category=category,
        )

    def _check_partition(self, group: str | None, source_partition: int) -> None:
        """Kafka keeps a group's records in partition_for(group, N); anything else means
        the configured N (offsets.topic.num.partitions) is wrong. Checked once per group
        (all of a group's records are in one partition), so that the hash is not computed
        again for every reduced row of a batch; a mismatch is reported once."""
        if group is None or group in self.checked:
            return
        self.checked.add(group)
        expected = partition_for(group, self.offsets_partitions)
        if expected != source_partition:
            self.mismatched[group] = (expected, source_partition)
            log.error(
                "group %r is in __consumer_offsets partition %d, but partition_for(group, %d) "
                "is %d: --offsets-partitions does not match the cluster's "
                "offsets.topic.num.partitions",
                group,
                source_partition,
                self.offsets_partitions,
                expected,
            )
