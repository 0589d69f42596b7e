"""groupscope's own Kafka source, on Spark 4's Python Data Source API and confluent-kafka.

Spark's official Kafka connector cannot be loaded where Maven Central is out of reach
(docs/architecture.md, "The Kafka source"), so the job carries this one. It keeps
Spark's Kafka-source contract:

* offsets per partition, as `{"<partition>": next_offset}`, in the checkpoint;
* one input partition per Kafka partition and offset range (large ranges are split), so
  reads run on executors, in parallel;
* `isolation.level=read_committed`: aborted transactional offset commits are never
  delivered, and the end offset is the last stable offset;
* gaps left by compaction and control records are expected: a range ends when the
  consumer's position passes its end, not when a record with offset end-1 arrives;
* partitions added to the topic are picked up from their earliest offset;
* read limits (`ReadMaxRows`, from `maxRecordsPerTrigger`) are shared across partitions,
  and `Trigger.AvailableNow` stops at the offsets seen when the query started;
* librdkafka properties pass through (SASL/SSL);
* rows are yielded as Arrow record batches (`spark_jobs.range_reader` reads a range);
* a partition whose log went backwards is read again from its start, at new positions
  (see "Logs that go backwards" below).

Logs that go backwards
----------------------
When a partition's last stable offset falls below the checkpoint's next offset, the log
was replaced (the offsets topic deleted and recreated, a cluster rebuilt, an unclean
leader election truncated it). This source reads the new log from its start. The
history store identifies a record by its position (`source_partition`, `source_offset`),
and keeps only what moves positions forward, so the new log's records, at offsets the
old log already used, would be dropped as replays. The source therefore emits positions,
not raw offsets: `offset` = the partition's *base* + Kafka offset. The base is 0 until a
reset; a reset adds the checkpoint's next offset to it, so every position after the
reset is greater than every position before it, and a replay of the new log (a batch
replayed after a crash) lands on the same positions again. Bases travel with the
source's offsets in Spark's checkpoint, `{"<partition>": next_offset, "bases":
{"<partition>": base}}` (the key is left out while every base is 0, the format of
earlier releases). The store keeps them too (`pipeline_progress.position_base`), and a
new checkpoint (`--reset-checkpoint`, or one deleted by hand) starts from the higher of
the old checkpoint's and the store's (option `bases`). The job's driver counts a reset
when a batch's bases differ from the previous batch's (`spark_jobs.checkpoint`), in
`pipeline_status.log_resets_total`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from services.outage import Outage
from spark_jobs.broker import DEFAULT_WAITS, BrokerProbe, BrokerWaits, quiet
from spark_jobs.range_reader import chosen_reader, read_range

SCHEMA = "topic string, partition int, offset long, timestamp timestamp, key binary, value binary"
FORMAT = "groupscope_kafka"
SPLIT = 1_000_000  # records per input partition at most
BASES = "bases"  # the offsets' key for the partitions' position bases
# A log reset is read again in full, so it is believed only when a second look, this
# much later, still shows it (one odd answer from a broker must not double the history).
RESET_CONFIRM_S = 1.0
METADATA_TIMEOUT_S = 10  # a planning call while the broker is away blocks this long

log = logging.getLogger("groupscope.kafka_source")


class TopicUnavailableError(RuntimeError):
    """The topic has no metadata (yet): a broker that restarted without its log, say."""


def client_config(options: Mapping[str, str]) -> dict[str, Any]:
    config = json.loads(options.get("config", "{}"))
    config["bootstrap.servers"] = options["bootstrap.servers"]
    return config


class KafkaRange(InputPartition):
    """Offsets [start, end) of one Kafka partition, and how to read them
    (`spark_jobs.range_reader`)."""

    def __init__(
        self,
        topic: str,
        partition: int,
        start: int,
        end: int,
        config: dict,
        reader: str,
        base: int = 0,
        incarnation: int = 0,
        waits: BrokerWaits = DEFAULT_WAITS,
    ) -> None:
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.config, self.reader, self.base = config, reader, base
        # The topic's log: changes with every reset (the sum of the bases, which only grow).
        self.incarnation = incarnation
        self.waits = waits


def share(available: dict[str, int], budget: int) -> dict[str, int]:
    """Split a read budget across partitions by water-filling: smallest first, each takes
    at most an equal share of what is left, so what one cannot use goes to the others."""
    grant = dict.fromkeys(available, 0)
    items = sorted((n, p) for p, n in available.items() if n > 0)
    for i, (n, p) in enumerate(items):
        grant[p] = min(n, budget // (len(items) - i))
        budget -= grant[p]
    for n, p in reversed(items):  # what integer division left over
        if budget > 0 and grant[p] < n:
            grant[p] += 1
            budget -= 1
    return grant


def _highs(marks: dict[str, tuple[int, int]]) -> dict[str, int]:
    """Each partition's last stable offset, from `(earliest, last stable)` watermarks."""
    return {p: high for p, (_, high) in marks.items()}


def split_offsets(offsets: dict) -> tuple[dict[str, int], dict[str, int]]:
    """`({partition: next Kafka offset}, {partition: position base})` of the source's
    offsets JSON (see the module docstring)."""
    positions = {p: o for p, o in offsets.items() if p != BASES}
    return positions, {p: int(b) for p, b in offsets.get(BASES, {}).items()}


def joined_offsets(positions: dict[str, int], bases: dict[str, int]) -> dict:
    """The source's offsets JSON; without `bases` while every base is 0."""
    kept = {p: b for p, b in bases.items() if b}
    return {**positions, BASES: kept} if kept else dict(positions)


def went_backwards(start: dict[str, int], marks: dict[str, tuple[int, int]]) -> list[str]:
    """Partitions whose last stable offset is below the checkpoint's next offset: their
    log was replaced. (A healthy log's last stable offset never decreases.)"""
    return [p for p, (_, high) in marks.items() if p in start and 0 <= high < start[p]]


def _shifted(batches: Iterator[pa.RecordBatch], base: int) -> Iterator[pa.RecordBatch]:
    """Record batches with `offset` moved up by the partition's position base."""
    for batch in batches:
        index = batch.schema.get_field_index("offset")
        offsets = pc.add(batch.column(index), pa.scalar(base, pa.int64()))
        yield batch.set_column(index, batch.schema.field(index), offsets)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.topic = options["topic"]
        self.config = client_config(options)
        self.reader = options.get("reader", "auto")
        self.max_rows = int(options.get("maxRecordsPerTrigger", "0")) or None
        # Position bases carried over from an earlier checkpoint (`--reset-checkpoint`).
        self.bases: dict[str, int] = json.loads(options.get("bases", "{}"))
        self.waits = BrokerWaits(**json.loads(options.get("waits", "{}")))
        self.target: dict[str, int] | None = None
        self._consumer: Any = None
        self._known: dict[str, tuple[int, int]] | None = None  # the last watermarks read

    # -- broker metadata ---------------------------------------------------------------------
    def _client(self) -> Any:
        if self._consumer is None:
            from confluent_kafka import Consumer

            self._consumer = Consumer(
                {
                    **quiet(self.config),
                    "group.id": "groupscope-metadata",
                    "enable.auto.commit": False,
                    "isolation.level": "read_committed",
                }
            )
        return self._consumer

    def _watermarks(self) -> dict[str, tuple[int, int]]:
        """(earliest, last stable offset) of every partition of the topic.

        While the broker (or the topic) cannot be reached, the last watermarks read stand
        in: planning never goes past offsets the broker had, so the query does not fail
        and plans nothing new once caught up (a range already planned waits in
        `read_range`). Before any were read, this waits for the broker, for at most
        `maxOutage` seconds when set (`BrokerUnavailableError`).
        """
        from confluent_kafka import KafkaException

        try:
            marks = self._read_watermarks()
        except (KafkaException, TopicUnavailableError):
            if self._known is not None:
                return self._known
            outage = Outage("the Kafka broker (planning)", log)
            probe = BrokerProbe(self.config, self.topic)
            self.waits.wait(probe, outage)
            marks = self._read_watermarks()
        self._known = marks
        return marks

    def _read_watermarks(self) -> dict[str, tuple[int, int]]:
        from confluent_kafka import TopicPartition

        client = self._client()
        metadata = client.list_topics(self.topic, timeout=METADATA_TIMEOUT_S)
        topic = metadata.topics.get(self.topic)
        if topic is None or topic.error is not None or not topic.partitions:
            raise TopicUnavailableError(f"topic {self.topic!r} not found: {topic and topic.error}")
        return {
            str(p): client.get_watermark_offsets(
                TopicPartition(self.topic, p), timeout=METADATA_TIMEOUT_S
            )
            for p in sorted(topic.partitions)
        }

    # -- offsets -------------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        return joined_offsets({p: low for p, (low, _) in self._watermarks().items()}, self.bases)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = _highs(self._watermarks())

    def reportLatestOffset(self) -> dict | None:
        return _highs(self._watermarks())

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        start, bases = split_offsets(start)
        marks = self._watermarks()
        resets = went_backwards(start, marks)
        if resets:
            time.sleep(RESET_CONFIRM_S)
            marks = self._watermarks()
            resets = [p for p in went_backwards(start, marks) if p in resets]
        latest = _highs(marks)
        if self.target is not None:  # Trigger.AvailableNow: never beyond the target
            latest = {p: min(high, self.target.get(p, 0)) for p, high in latest.items()}
        # Where retention moved past the checkpoint, from the earliest record still there.
        begin = {p: max(start.get(p, low), low) for p, (low, _) in marks.items()}
        for p in resets:
            low, high = marks[p]
            bases[p] = bases.get(p, 0) + start[p]
            begin[p] = low
            log.error(
                "log reset: topic %s partition %s: last stable offset %d is below the "
                "checkpoint's next offset %d (log replaced?); reading it again from offset "
                "%d, stored at positions from %d",
                self.topic,
                p,
                high,
                start[p],
                low,
                bases[p] + low,
            )
        available = {p: max(latest[p] - begin[p], 0) for p in latest}
        if isinstance(limit, ReadMaxRows):
            grant = share(available, limit.max_rows)
            return joined_offsets({p: begin[p] + grant[p] for p in latest}, bases)
        return joined_offsets({p: max(latest[p], begin[p]) for p in latest}, bases)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        start, old_bases = split_offsets(start)
        end, bases = split_offsets(end)
        incarnation = sum(bases.values())
        ranges: list[InputPartition] = []
        for p, stop in sorted(end.items(), key=lambda kv: int(kv[0])):
            base = bases.get(p, 0)
            # A partition whose base moved was replaced: its new log from its start (a
            # start below the earliest offset reads from the earliest, see range_reader).
            first = start.get(p, 0) if old_bases.get(p, 0) == base else 0
            for lo in range(first, stop, SPLIT):
                ranges.append(
                    KafkaRange(
                        self.topic,
                        int(p),
                        lo,
                        min(lo + SPLIT, stop),
                        self.config,
                        self.reader,
                        base,
                        incarnation,
                        self.waits,
                    )
                )
        return ranges

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, KafkaRange):  # partitions() makes nothing else
            raise TypeError(f"not a Kafka range: {partition!r}")
        r = partition
        batches = read_range(
            r.topic,
            r.partition,
            r.start,
            r.end,
            r.config,
            r.reader,
            incarnation=r.incarnation,
            waits=r.waits,
        )
        return _shifted(batches, r.base) if r.base else batches

    def commit(self, end: dict) -> None:
        """Offsets live in Spark's checkpoint; nothing is committed to Kafka."""

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


class KafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return KafkaStreamReader(self.options)


def kafka_stream(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    config: dict[str, str],
    max_records: int | None,
    bases: dict[str, int] | None = None,
    waits: BrokerWaits = DEFAULT_WAITS,
    range_reader: str | None = None,
) -> DataFrame:
    """`__consumer_offsets` (or `topic`) as a stream, through this source. `bases`: the
    partitions' position bases of an earlier checkpoint, for a new one to start from; a
    broker outage is waited out as `waits` says, at planning and in each range
    (`read_range`). `range_reader`: the reader `chosen_reader` chose (default: choose
    now)."""
    spark.dataSource.register(KafkaDataSource)
    reader = (
        spark.readStream.format(FORMAT)
        .option("bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("config", json.dumps(config))
        .option("reader", range_reader or chosen_reader())
        .option("waits", json.dumps(asdict(waits)))
    )
    if max_records:
        reader = reader.option("maxRecordsPerTrigger", str(max_records))
    if bases:
        reader = reader.option("bases", json.dumps(bases))
    return reader.load()
