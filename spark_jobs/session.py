"""The Spark session for the job: local mode by default, any cluster via spark-submit."""

from __future__ import annotations

import os
import sys

from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

# The throughput collector: on local[2] it ran the offset-commit batches faster than the
# JVM's default G1, with less peak memory (benchmarks/bench_stream.py, commits case;
# docs/performance.md, "Design measurements": garbage collector).
JAVA_OPTIONS = "-XX:+UseParallelGC"


def java_options(archive: bool = True) -> str:
    """The driver JVM's options (in local mode the executors share it), with the
    class-data-sharing archive where `make setup` built one (`spark_jobs.jvm_archive`).
    They apply only when this process starts the JVM, not under spark-submit."""
    from spark_jobs.jvm_archive import archive_options

    options = os.environ.get("GROUPSCOPE_DRIVER_JAVA_OPTIONS", JAVA_OPTIONS)
    return f"{options} {archive_options()}".strip() if archive else options


def spark_session(
    master: str | None = None, app_name: str = "groupscope", extra_java_options: str = ""
) -> SparkSession:
    """Get or create the session.

    Workers must run this interpreter (with pyarrow and the project installed), not the
    system Python, whose workers time out (docs/architecture.md, "The Kafka source").
    Under spark-submit the master and resources come from the submit command; locally
    the default is local[*].
    A JVM that cannot start with the class-data-sharing archive is started again without.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    if master or not os.environ.get("SPARK_SUBMIT_CONF"):
        builder = builder.master(master or os.environ.get("GROUPSCOPE_SPARK_MASTER", "local[*]"))
    builder = (
        builder.config("spark.sql.shuffle.partitions", os.environ.get("GROUPSCOPE_SHUFFLE", "4"))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", os.environ.get("GROUPSCOPE_DRIVER_MEMORY", "2g"))
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        # Keys one task's hash aggregate holds before it sorts instead (default 128):
        # the batch reduction (spark_jobs.batch) holds one per committed partition.
        .config("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", "100000")
    )
    options = f"{java_options()} {extra_java_options}".strip()
    try:
        session = builder.config("spark.driver.extraJavaOptions", options).getOrCreate()
    except PySparkRuntimeError as exc:
        if "SharedArchiveFile" not in options:
            raise
        print(
            f"JVM start-up failed with the class-data archive, retrying without: {exc}",
            file=sys.stderr,
        )
        options = f"{java_options(archive=False)} {extra_java_options}".strip()
        session = builder.config("spark.driver.extraJavaOptions", options).getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("GROUPSCOPE_SPARK_LOG_LEVEL", "WARN"))
    return session
