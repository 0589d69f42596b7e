"""Where the job's records come from. Every source gives the same row schema as Spark's
Kafka source: `topic`, `partition`, `offset`, `timestamp`, `key`, `value`."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

COLUMNS = ["topic", "partition", "offset", "timestamp", "key", "value"]
JSONL_SCHEMA = "topic string, partition int, offset long, timestamp long, key string, value string"
PARQUET_SCHEMA = (
    "topic string, partition int, offset long, timestamp timestamp, key binary, value binary"
)


def replay(spark: SparkSession, directory: Path, max_files: int | None = None) -> DataFrame:
    """A replay directory (the simulator's output) as a file stream.

    Files under `DIR/records/` are `part-*.parquet` (binary key/value) or `part-*.jsonl`
    (hex key/value, epoch-millisecond timestamps, the `groupscope decode` line format).
    """
    records = directory / "records"
    if not records.is_dir():
        raise FileNotFoundError(f"{directory} is not a replay directory: no records/ folder")
    names = [p.name for p in records.iterdir()]
    reader = spark.readStream
    if max_files:
        reader = reader.option("maxFilesPerTrigger", max_files)
    if any(n.endswith(".jsonl") for n in names) and not any(n.endswith(".parquet") for n in names):
        raw = reader.schema(JSONL_SCHEMA).option("pathGlobFilter", "*.jsonl").json(str(records))
        return raw.select(
            "topic",
            "partition",
            "offset",
            F.timestamp_millis("timestamp").alias("timestamp"),
            F.unhex("key").alias("key"),
            F.unhex("value").alias("value"),
        )
    return (
        reader.schema(PARQUET_SCHEMA)
        .option("pathGlobFilter", "*.parquet")
        .parquet(str(records))
        .select(*COLUMNS)
    )


# Spark's connector lists a topic's partitions through the Admin API since Spark 3.4 and
# leaves out internal topics there (`ConsumerStrategy.retrieveAllPartitions` filters
# `isInternal`), for `subscribe` and `assign` alike: it read no record of
# `__consumer_offsets` at all, silently. Its consumer-based offset reader (this setting)
# reads it. Measured on Apache Kafka 4.3.1 with the 4.2.0 connector.
CONSUMER_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"


def spark_kafka(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    config: dict[str, str],
    max_records: int | None,
    partitions: int,
) -> DataFrame:
    """Spark's official Kafka connector (`spark_jobs.connector` loads it): partitions 0
    to `partitions - 1` of `topic` (`--offsets-partitions`), assigned rather than
    subscribed, since a subscribing consumer joins a group of its own and the
    coordinator writes that group's records into the very topic being read.
    `read_committed`; every client property as `kafka.<key>`; `maxOffsetsPerTrigger`."""
    import json

    spark.conf.set(CONSUMER_OFFSET_FETCHING, "true")
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("assign", json.dumps({topic: list(range(partitions))}))
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")  # compaction and retention delete records
        .option("kafka.isolation.level", "read_committed")
    )
    for key, value in config.items():
        reader = reader.option(f"kafka.{key}", value)
    if max_records:
        reader = reader.option("maxOffsetsPerTrigger", max_records)
    return reader.load().select(*COLUMNS)
