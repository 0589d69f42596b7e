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


def spark_kafka(
    spark: SparkSession, bootstrap: str, topic: str, config: dict[str, str], max_records: int | None
) -> DataFrame:
    """Spark's official Kafka connector, where the cluster can load it (`--packages`)."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")  # compaction and retention delete records
        .option("kafka.isolation.level", "read_committed")
    )
    for key, value in config.items():
        reader = reader.option(f"kafka.{key}", value)
    if max_records:
        reader = reader.option("maxOffsetsPerTrigger", max_records)
    return reader.load().select(*COLUMNS)
