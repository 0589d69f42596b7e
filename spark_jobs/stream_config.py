"""`groupscope stream`'s configuration: its parsed flags and the Spark glue's
`GROUPSCOPE_*` knobs (`spark_jobs.settings`), checked once into one frozen
`StreamConfig` that `spark_jobs.stream` passes around instead of the argparse
namespace. Every check is a one-line `UsageError` (exit status 2), before Spark starts.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.groupfilter import GroupFilter
from services.outage import RETRY_MAX_DELAY_S, Backoff
from spark_jobs.settings import SparkSettings


@dataclass(frozen=True)
class StreamConfig:
    """What the stream command runs with."""

    kind: str  # kafka | spark-kafka | replay
    directory: Path | None  # the replay directory
    bootstrap_servers: str  # "" for a replay
    topic: str
    kafka: Mapping[str, str]  # client properties: --kafka-config-file, then --kafka-config
    database_url: str | None
    checkpoint: Path | None  # --checkpoint; None: the default location for the source
    reset_checkpoint: bool
    trigger: float  # seconds between micro-batches
    once: bool
    max_outage: float | None  # seconds; None waits without limit
    max_records_per_trigger: int
    max_files_per_trigger: int | None
    offsets_partitions: int
    groups: GroupFilter  # --groups-include, --groups-exclude: the groups kept
    master: str | None
    spark_conf: Mapping[str, str]  # --conf
    spark: SparkSettings
    reader: str | None  # the Kafka source's range reader (kind kafka only)
    retention: float | None = None  # --retention in seconds; None keeps every row
    cluster: str = "default"  # --cluster: the name the store files this job's rows under
    retry_max_delay: float = RETRY_MAX_DELAY_S  # --retry-max-delay in seconds
    read_stall_timeout: float = 30.0  # --read-stall-timeout in seconds (kind kafka)

    @classmethod
    def from_arguments(
        cls, args: argparse.Namespace, environ: Mapping[str, str] | None = None
    ) -> StreamConfig:
        """The parsed flags and the environment's knobs, checked in the order the
        command has always checked them."""
        from services.cli import UsageError
        from services.durations import seconds_flag
        from services.groupfilter import group_filter
        from services.kafka_options import kafka_config
        from spark_jobs.dependencies import max_outage
        from spark_jobs.spark_conf import check_master, parse_conf

        kind, directory = resolve_source(args)
        kafka = kafka_config(args)
        trigger = parse_seconds(args.trigger)
        check_numbers(args)
        groups = group_filter(args)
        master = check_master(args.master) if args.master else args.master
        spark_conf = parse_conf(args.conf)
        limit = max_outage(args.max_outage, args.once)
        retry_max_delay = seconds_flag("--retry-max-delay", args.retry_max_delay)
        read_stall_timeout = seconds_flag("--read-stall-timeout", args.read_stall_timeout)
        retention = parse_retention(args.retention)
        cluster = parse_cluster(args.cluster)
        spark = SparkSettings.from_environment(environ)
        reader = None
        if kind == "kafka":
            from spark_jobs.range_reader import chosen_reader

            try:
                reader = chosen_reader(spark)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        return cls(
            kind=kind,
            directory=directory,
            bootstrap_servers=args.bootstrap_servers or "",
            topic=args.topic,
            kafka=kafka,
            database_url=args.database_url,
            checkpoint=args.checkpoint,
            reset_checkpoint=args.reset_checkpoint,
            trigger=trigger,
            once=args.once,
            max_outage=limit,
            max_records_per_trigger=args.max_records_per_trigger,
            max_files_per_trigger=args.max_files_per_trigger,
            offsets_partitions=args.offsets_partitions,
            groups=groups,
            master=master,
            spark_conf=spark_conf,
            spark=spark,
            reader=reader,
            retention=retention,
            cluster=cluster,
            retry_max_delay=retry_max_delay,
            read_stall_timeout=read_stall_timeout,
        )

    @property
    def backoff(self) -> Backoff:
        """The waits between attempts to reach the database."""
        return Backoff().capped(self.retry_max_delay)

    @property
    def broker_backoff(self) -> Backoff:
        """The waits between probes of an unreachable broker, on the driver."""
        from spark_jobs.broker import backoff

        return backoff(self.retry_max_delay)

    @property
    def name(self) -> str:
        """The source's name, as the store and the default checkpoint know it."""
        if self.directory is not None:
            return f"replay:{self.directory.resolve()}"
        return f"{self.kind}:{self.bootstrap_servers}/{self.topic}"


def parse_seconds(text: str) -> float:
    """The --trigger interval in seconds (0 runs batches back to back)."""
    from services.durations import seconds_flag

    return seconds_flag("--trigger", text, positive=False)


def parse_cluster(text: str) -> str:
    """--cluster, checked (`services.store.clusters.check_name`)."""
    from services.cli import UsageError
    from services.store.clusters import check_name
    from services.store.errors import ClusterChoiceError

    try:
        return check_name(text)
    except ClusterChoiceError as exc:
        raise UsageError(str(exc)) from None


def parse_retention(text: str | None) -> float | None:
    """--retention in seconds; None (keep everything) when unset, empty or `off`."""
    if text is None or text.strip().lower() in ("", "off"):
        return None
    from services.store.retention import retention_seconds

    return retention_seconds("--retention", text)


def check_numbers(args: argparse.Namespace) -> None:
    """The read limits and partition count within what Spark and Kafka take."""
    from services.cli import UsageError
    from services.limits import INT32_MAX, INT64_MAX, MAX_OFFSETS_PARTITIONS, at_most

    if args.offsets_partitions <= 0:
        raise UsageError("--offsets-partitions must be positive")
    at_most("--offsets-partitions", args.offsets_partitions, MAX_OFFSETS_PARTITIONS)
    if args.max_records_per_trigger <= 0:
        raise UsageError("--max-records-per-trigger must be positive")
    at_most("--max-records-per-trigger", args.max_records_per_trigger, INT64_MAX)
    if args.max_files_per_trigger is not None:  # Spark's maxFilesPerTrigger is an int
        if args.max_files_per_trigger <= 0:
            raise UsageError("--max-files-per-trigger must be positive")
        at_most("--max-files-per-trigger", args.max_files_per_trigger, INT32_MAX)


def resolve_source(args: argparse.Namespace) -> tuple[str, Path | None]:
    """--source (or --bootstrap-servers alone): the kind, and a replay's directory."""
    from services.cli import UsageError

    source = args.source or (["kafka"] if args.bootstrap_servers else None)
    if not source:
        raise UsageError("give --bootstrap-servers (a Kafka cluster) or --source replay DIR")
    kind = source[0]
    if kind == "replay":
        if len(source) != 2:
            raise UsageError("--source replay needs a directory: --source replay DIR")
        directory = Path(source[1])
        if not (directory / "records").is_dir():
            raise UsageError(f"{directory} is not a replay directory (no records/ folder)")
        return kind, directory
    if kind not in ("kafka", "spark-kafka") or len(source) != 1:
        raise UsageError(f"unknown --source {' '.join(source)!r}: kafka, spark-kafka or replay DIR")
    if not args.bootstrap_servers:
        raise UsageError(f"--source {kind} needs --bootstrap-servers")
    return kind, None
