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
* rows are yielded as Arrow record batches (`spark_jobs.range_reader` reads a range).
"""

from __future__ import annotations

import json
import logging
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

from services.outage import Outage
from spark_jobs.broker import BrokerProbe, quiet, wait_for_broker
from spark_jobs.range_reader import chosen_reader, read_range

SCHEMA = "topic string, partition int, offset long, timestamp timestamp, key binary, value binary"
FORMAT = "groupscope_kafka"
SPLIT = 1_000_000  # records per input partition at most
METADATA_TIMEOUT_S = 10  # a planning call while the broker is away blocks this long
_log = logging.getLogger("groupscope.kafka")


class TopicUnavailableError(RuntimeError):
    """The topic has no metadata (yet): a broker that restarted without its log, say."""


def client_config(options: dict[str, str]) -> dict[str, Any]:
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
        max_outage: float | None = None,
    ) -> None:
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.config, self.reader, self.max_outage = config, reader, max_outage


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


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict[str, str]) -> None:
        self.topic = options["topic"]
        self.config = client_config(options)
        self.reader = options.get("reader", "auto")
        self.max_rows = int(options.get("maxRecordsPerTrigger", "0")) or None
        self.max_outage = float(options["maxOutage"]) if options.get("maxOutage") else None
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
            outage = Outage("the Kafka broker (planning)", _log)
            probe = BrokerProbe(self.config, self.topic)
            wait_for_broker(probe, outage, self.max_outage)
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
        return {p: low for p, (low, _) in self._watermarks().items()}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = _highs(self._watermarks())

    def reportLatestOffset(self) -> dict | None:
        return _highs(self._watermarks())

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        marks = self._watermarks()
        latest = _highs(marks)
        if self.target is not None:  # Trigger.AvailableNow: never beyond the target
            latest = {p: min(high, self.target.get(p, 0)) for p, high in latest.items()}
        # Where retention moved past the checkpoint, from the earliest record still there.
        begin = {p: max(start.get(p, low), low) for p, (low, _) in marks.items()}
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
                    KafkaRange(
                        self.topic,
                        int(p),
                        lo,
                        min(lo + SPLIT, stop),
                        self.config,
                        self.reader,
                        self.max_outage,
                    )
                )
        return ranges

    def read(self, partition: InputPartition) -> Iterator[Any]:
        r: KafkaRange = partition  # type: ignore[assignment]
        return read_range(r.topic, r.partition, r.start, r.end, r.config, r.reader, r.max_outage)

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
    max_outage: float | None = None,
) -> DataFrame:
    """`__consumer_offsets` (or `topic`) as a stream, through this source; a broker
    outage is waited out, for at most `max_outage` seconds when given."""
    spark.dataSource.register(KafkaDataSource)
    reader = (
        spark.readStream.format(FORMAT)
        .option("bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("config", json.dumps(config))
        .option("reader", chosen_reader())
    )
    if max_records:
        reader = reader.option("maxRecordsPerTrigger", str(max_records))
    if max_outage is not None:
        reader = reader.option("maxOutage", str(max_outage))
    return reader.load()
