"""groupscope's own Kafka source, on Spark 4's Python Data Source API and confluent-kafka.

Spark's official Kafka connector cannot be loaded where Maven Central is out of reach
(DESIGN.md §5), so the job carries this one. It keeps Spark's Kafka-source contract:

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
* rows are yielded as Arrow record batches.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

SCHEMA = "topic string, partition int, offset long, timestamp timestamp, key binary, value binary"
FORMAT = "groupscope_kafka"
SPLIT = 1_000_000  # records per input partition at most
ARROW_ROWS = 65_536
CONSUME_BATCH = 10_000
POLL_SECONDS = 1.0
IDLE_POLLS = 30  # give up on a range after this many empty polls in a row


def client_config(options: dict[str, str]) -> dict[str, Any]:
    config = json.loads(options.get("config", "{}"))
    config["bootstrap.servers"] = options["bootstrap.servers"]
    return config


class KafkaRange(InputPartition):
    """Offsets [start, end) of one Kafka partition."""

    def __init__(self, topic: str, partition: int, start: int, end: int, config: dict) -> None:
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.config = config


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


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict[str, str]) -> None:
        self.topic = options["topic"]
        self.config = client_config(options)
        self.max_rows = int(options.get("maxRecordsPerTrigger", "0")) or None
        self.target: dict[str, int] | None = None
        self._consumer: Any = None

    # -- broker metadata ---------------------------------------------------------------------
    def _client(self) -> Any:
        if self._consumer is None:
            from confluent_kafka import Consumer

            self._consumer = Consumer(
                {
                    **self.config,
                    "group.id": "groupscope-metadata",
                    "enable.auto.commit": False,
                    "isolation.level": "read_committed",
                }
            )
        return self._consumer

    def _watermarks(self) -> dict[str, tuple[int, int]]:
        """(earliest, last stable offset) of every partition of the topic."""
        from confluent_kafka import TopicPartition

        client = self._client()
        metadata = client.list_topics(self.topic, timeout=30)
        topic = metadata.topics.get(self.topic)
        if topic is None or topic.error is not None:
            raise RuntimeError(f"topic {self.topic!r} not found: {topic and topic.error}")
        return {
            str(p): client.get_watermark_offsets(TopicPartition(self.topic, p), timeout=30)
            for p in sorted(topic.partitions)
        }

    # -- offsets -------------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        return {p: low for p, (low, _) in self._watermarks().items()}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = {p: high for p, (_, high) in self._watermarks().items()}

    def reportLatestOffset(self) -> dict | None:
        return {p: high for p, (_, high) in self._watermarks().items()}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        marks = self._watermarks()
        latest = {p: high for p, (_, high) in marks.items()}
        if self.target is not None:  # Trigger.AvailableNow: never beyond the target
            latest = {p: min(high, self.target.get(p, 0)) for p, high in latest.items()}
        begin = {p: start.get(p, low) for p, (low, _) in marks.items()}
        begin = {p: max(b, marks[p][0]) for p, b in begin.items()}  # retention moved on
        available = {p: max(latest[p] - begin[p], 0) for p in latest}
        if isinstance(limit, ReadMaxRows):
            grant = share(available, limit.max_rows)
            return {p: begin[p] + grant[p] for p in latest}
        return {p: max(latest[p], begin[p]) for p in latest}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        ranges: list[InputPartition] = []
        for p, stop in sorted(end.items(), key=lambda kv: int(kv[0])):
            first = start.get(p, 0)
            for lo in range(first, stop, SPLIT):
                ranges.append(
                    KafkaRange(self.topic, int(p), lo, min(lo + SPLIT, stop), self.config)
                )
        return ranges

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_range(partition)  # type: ignore[arg-type]

    def commit(self, end: dict) -> None:
        """Offsets live in Spark's checkpoint; nothing is committed to Kafka."""

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


_readers: dict[str, Any] = {}  # one consumer per client config, in each worker process


def _reader(config: dict) -> Any:
    """This worker process's consumer for `config`, created on first use.

    Spark reuses Python workers across tasks (`spark.python.worker.reuse`), so a consumer
    outlives its range and is reassigned to the next: creating one cost about 27 ms of
    CPU (threads, bootstrap, metadata), and a batch has one range per partition.
    """
    from confluent_kafka import Consumer

    key = json.dumps(config, sort_keys=True)
    if key not in _readers:
        _readers[key] = Consumer(
            {
                # librdkafka stops fetching once its queue holds queued.min.messages and
                # then waits fetch.queue.backoff.ms (1 s by default) before fetching
                # again: a 1M-record range idled about 1 s in every 1.1 s (133,000
                # records/s against 790,000). What it fetches past a range's end is
                # dropped at the next assign, so the queue is kept small.
                "queued.min.messages": 10_000,
                "fetch.queue.backoff.ms": 10,
                # A range ends at offsets known to exist, so waiting on the broker for
                # new records is never useful; and a reused consumer's next range waits
                # for the last fetch of its previous one (500 ms by default at a
                # partition's end): about 3 s more per 4M-record batch on 50 partitions.
                "fetch.wait.max.ms": 10,
                **config,
                "group.id": "groupscope-reader",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                # A start offset deleted by retention or compaction: resume at the
                # earliest record still there, never at the end (librdkafka's default).
                "auto.offset.reset": "earliest",
                "fetch.max.bytes": 52_428_800,
            }
        )
    return _readers[key]


def _drop_reader(config: dict) -> None:
    consumer = _readers.pop(json.dumps(config, sort_keys=True), None)
    if consumer is not None:
        consumer.close()


def read_range(part: KafkaRange) -> Iterator[Any]:
    """Consume [start, end) of one partition as Arrow record batches."""
    import pyarrow as pa
    from confluent_kafka import KafkaError, TopicPartition

    if part.end <= part.start:
        return
    consumer = _reader(part.config)
    # The exact start offset, even 0: a logical offset (OFFSET_BEGINNING) costs a lookup
    # that took 0.5 s per range on tansu, and a start that no longer exists resets to the
    # earliest record anyway (auto.offset.reset).
    consumer.assign([TopicPartition(part.topic, part.partition, part.start)])
    schema = pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
            ("key", pa.binary()),
            ("value", pa.binary()),
        ]
    )
    offsets: list[int] = []
    stamps: list[int] = []
    keys: list[bytes] = []
    values: list[bytes | None] = []

    def flush() -> Any:
        n = len(offsets)
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array([part.topic] * n, pa.string()),
                pa.array([part.partition] * n, pa.int32()),
                pa.array(offsets, pa.int64()),
                pa.array(stamps, pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC")),
                pa.array(keys, pa.binary()),
                pa.array(values, pa.binary()),
            ],
            schema=schema,
        )
        for column in (offsets, stamps, keys, values):
            column.clear()
        return batch

    idle, expected = 0, part.start
    try:
        while True:
            # Never ask for more records than the range can still hold: librdkafka waits
            # for the full count or the timeout, so asking for more idles at every range's
            # end. (Fewer arrive only where compaction or control records left gaps.)
            want = max(1, min(CONSUME_BATCH, part.end - expected))
            messages = consumer.consume(want, timeout=POLL_SECONDS)
            if not messages:
                idle += 1
                if idle >= IDLE_POLLS:
                    raise TimeoutError(
                        f"{part.topic}-{part.partition}: no records for {IDLE_POLLS} polls "
                        f"before offset {part.end}"
                    )
                continue
            idle = 0
            done = False
            for m in messages:
                error = m.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        done = True
                        break
                    raise RuntimeError(f"{part.topic}-{part.partition}: {error}")
                offset = m.offset()
                if offset >= part.end:
                    done = True
                    break
                expected = offset + 1
                offsets.append(offset)
                stamps.append(m.timestamp()[1])
                keys.append(m.key())
                values.append(m.value())
                if offset == part.end - 1:
                    done = True
                    break
            if len(offsets) >= ARROW_ROWS:
                yield flush()
            if done or _position(consumer, part) >= part.end:
                break
    except BaseException:
        _drop_reader(part.config)  # a consumer in an unknown state is not reused
        raise
    consumer.unassign()  # no prefetching for this range while the worker waits
    if offsets:
        yield flush()


def _position(consumer: Any, part: KafkaRange) -> int:
    from confluent_kafka import TopicPartition

    (tp,) = consumer.position([TopicPartition(part.topic, part.partition)])
    return tp.offset if tp.offset >= 0 else -1


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
) -> DataFrame:
    """`__consumer_offsets` (or `topic`) as a stream, through this source."""
    spark.dataSource.register(KafkaDataSource)
    reader = (
        spark.readStream.format(FORMAT)
        .option("bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("config", json.dumps(config))
    )
    if max_records:
        reader = reader.option("maxRecordsPerTrigger", str(max_records))
    return reader.load()
