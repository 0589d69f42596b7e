"""The Spark glue's environment-only knobs, read and checked once.

Every `GROUPSCOPE_*` variable the session, its defaults, the class-data archive, the
Kafka source's reader choice and the connector's version depend on is read here, by
`SparkSettings.from_environment`, and the result is passed to `spark_jobs.session`,
`spark_conf`, `jvm_archive`, `range_reader` and `connector`. A bad value is a one-line
`UsageError` naming the variable (exit status 2 under the CLI), before Spark starts.

The variables that belong to Spark, PySpark and Java themselves (`SPARK_CONF_DIR`,
`SPARK_HOME`, `SPARK_LOCAL_IP`, `PYSPARK_SUBMIT_ARGS`, `PYSPARK_GATEWAY_PORT`,
`PYSPARK_PYTHON`, `JAVA_HOME`) stay where they are read (`spark_conf`, `session`,
`jvm_archive`): they are Spark's contract, read the way spark-submit reads them.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

# The throughput collector: on local[2] it ran the offset-commit batches faster than the
# JVM's default G1, with less peak memory (benchmarks/bench_stream.py, commits case;
# docs/performance.md, "Design measurements": garbage collector).
JAVA_OPTIONS = "-XX:+UseParallelGC"
DRIVER_MEMORY = "2g"
LOG_LEVEL = "WARN"
SHUFFLE_PARTITIONS = 4
READERS = ("auto", "native", "python")

# Spark's SparkContext.VALID_LOG_LEVELS (setLogLevel upper-cases its argument).
LOG_LEVELS = ("ALL", "DEBUG", "ERROR", "FATAL", "INFO", "OFF", "TRACE", "WARN")
# A JVM memory size as Spark reads spark.driver.memory (JavaUtils.byteStringAs).
_MEMORY = re.compile(r"\d+([kmgtp]b?|b)?", re.IGNORECASE)
_VERSION = re.compile(r"\d+\.\d+\.\d+([-.+][0-9A-Za-z.-]+)?")
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class SparkSettings:
    """The Spark glue's settings from `GROUPSCOPE_*` variables, defaults where unset."""

    driver_java_options: str = JAVA_OPTIONS  # GROUPSCOPE_DRIVER_JAVA_OPTIONS ("" allowed)
    driver_memory: str = DRIVER_MEMORY  # GROUPSCOPE_DRIVER_MEMORY
    log_level: str = LOG_LEVEL  # GROUPSCOPE_SPARK_LOG_LEVEL
    shuffle_partitions: int = SHUFFLE_PARTITIONS  # GROUPSCOPE_SHUFFLE
    jvm_archive: str = ""  # GROUPSCOPE_JVM_ARCHIVE: "" the default place, "off", a path
    kafka_reader: str = "auto"  # GROUPSCOPE_KAFKA_READER
    spark_kafka_version: str | None = None  # GROUPSCOPE_SPARK_KAFKA_VERSION

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> SparkSettings:
        """The settings in `environ` (default: this process's), each checked."""
        from services.cli import UsageError

        env = os.environ if environ is None else environ

        def bad(name: str, value: str, expected: str) -> UsageError:
            return UsageError(f"{name}={value!r}: expected {expected}")

        options = env.get("GROUPSCOPE_DRIVER_JAVA_OPTIONS", JAVA_OPTIONS)
        try:
            shlex.split(options)
        except ValueError as exc:
            raise bad("GROUPSCOPE_DRIVER_JAVA_OPTIONS", options, f"JVM options ({exc})") from None

        memory = env.get("GROUPSCOPE_DRIVER_MEMORY", DRIVER_MEMORY)
        if not _MEMORY.fullmatch(memory):
            raise bad("GROUPSCOPE_DRIVER_MEMORY", memory, "a JVM memory size such as 2g or 512m")

        level = env.get("GROUPSCOPE_SPARK_LOG_LEVEL", LOG_LEVEL)
        if level.upper() not in LOG_LEVELS:
            raise bad("GROUPSCOPE_SPARK_LOG_LEVEL", level, f"one of {', '.join(LOG_LEVELS)}")

        shuffle = env.get("GROUPSCOPE_SHUFFLE", str(SHUFFLE_PARTITIONS))
        if not shuffle.strip().isdigit() or not 0 < int(shuffle) <= _INT32_MAX:
            raise bad("GROUPSCOPE_SHUFFLE", shuffle, "a positive number of partitions")

        reader = env.get("GROUPSCOPE_KAFKA_READER", "auto")
        if reader not in READERS:
            raise bad("GROUPSCOPE_KAFKA_READER", reader, f"one of {READERS}")

        version = env.get("GROUPSCOPE_SPARK_KAFKA_VERSION") or None
        if version is not None and not _VERSION.fullmatch(version):
            raise bad("GROUPSCOPE_SPARK_KAFKA_VERSION", version, "a Spark version such as 4.1.1")

        return cls(
            driver_java_options=options,
            driver_memory=memory,
            log_level=level,
            shuffle_partitions=int(shuffle),
            jvm_archive=env.get("GROUPSCOPE_JVM_ARCHIVE", ""),
            kafka_reader=reader,
            spark_kafka_version=version,
        )


def current(settings: SparkSettings | None) -> SparkSettings:
    """`settings`, or this process's environment read now (callers outside the stream
    command: the test fixtures, `python -m spark_jobs.jvm_archive`, the connector's
    coordinate for spark-submit)."""
    return settings if settings is not None else SparkSettings.from_environment()
