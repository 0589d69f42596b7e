"""The streaming job's entry point: `groupscope stream ...` locally, or on a cluster

    spark-submit --master spark://host:7077 spark_jobs/stream.py --bootstrap-servers ...

Reads `__consumer_offsets` (or a replay directory), and writes generations, rebalances,
committed offsets and pipeline progress to the history store, one transaction per
micro-batch. The checkpoint keeps the source offsets; restarting resumes exactly there.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.kafka_options import redact
from services.outage import Outage, OutageError
from spark_jobs import health
from spark_jobs.stream_config import StreamConfig

if TYPE_CHECKING:
    from collections.abc import Callable

    from services.store.retention import Maintenance
    from spark_jobs.connector_outage import QuietConnector
    from spark_jobs.dependencies import BrokerWatch

log = logging.getLogger("groupscope.stream")

# Records per micro-batch from Kafka. A batch's fixed costs (planning, one task and one
# consumer seek per partition) are paid per batch, so a backlog is read faster in large
# batches (benchmarks/bench_stream.py, broker case; docs/performance.md, "Design
# measurements": read limit). A live job's batches are far smaller.
MAX_RECORDS_PER_TRIGGER = 10_000_000
CONNECT_TIMEOUT_S = 10

EPILOG = """\
sources:
  --source kafka         groupscope's own Kafka source (confluent-kafka; default when
                         --bootstrap-servers is given)
  --source spark-kafka   Spark's official Kafka connector, added to spark.jars.packages
                         (under spark-submit: --packages `python -m spark_jobs.connector`);
                         see docs/operations.md, "Choosing the Kafka source"
  --source replay DIR    a replay directory, as `groupscope simulate --out DIR` writes

examples:
  groupscope stream --source replay ./capture --once
  groupscope stream --bootstrap-servers broker:9092 --trigger 10s
  groupscope stream --bootstrap-servers broker:9093 --kafka-config security.protocol=SASL_SSL \\
      --kafka-config sasl.mechanism=SCRAM-SHA-512 --kafka-config-file client.properties
  groupscope stream --master spark://host:7077 --bootstrap-servers b:9092 \\
      --conf spark.archives=dist/groupscope-env.tar.gz#environment \\
      --conf spark.pyspark.python=./environment/bin/python
  spark-submit --master spark://host:7077 --archives dist/groupscope-env.tar.gz#environment \\
      --conf spark.pyspark.python=./environment/bin/python \\
      --conf spark.pyspark.driver.python=python spark_jobs/stream.py --bootstrap-servers b:9092 \\
      --database-url postgresql://groupscope@db/groupscope
  (the archive from `make dist`, also unpacked into ./environment where the job starts;
  see docs/operations.md, "Running on a Spark cluster")

Spark settings: the job keeps every setting it is given (spark-submit's flags, --conf,
--master, spark-defaults.conf) and fills in only unset ones:
  spark.sql.shuffle.partitions=4      a batch shuffles a few thousand keys; Spark's 200
                                      would cost 200 tasks a batch ($GROUPSCOPE_SHUFFLE)
  spark.sql.session.timeZone=UTC      stored times independent of the driver's zone
  spark.sql.execution.arrow.pyspark.enabled=true   batches reach the driver as Arrow
  spark.sql.objectHashAggregate.sortBased.fallbackThreshold=100000   one key per
                                      committed partition before sorting (Spark: 128)
  spark.sql.streaming.forceDeleteTempCheckpointLocation=true
  when this process starts the JVM: spark.driver.memory=2g ($GROUPSCOPE_DRIVER_MEMORY),
                                      spark.driver.extraJavaOptions=-XX:+UseParallelGC
                                      and the class-data archive (make setup)
  spark.ui.showConsoleProgress=false  the job prints its own progress
  local mode only: spark.ui.enabled=false (a port and start-up time saved),
                                      spark.driver.host and spark.driver.bindAddress
                                      127.0.0.1 unless $SPARK_LOCAL_IP is set

stopping: SIGTERM or Ctrl-C lets the batch in flight finish (or replays it on the next
start), stops Spark and the embedded PostgreSQL, and exits 143 (SIGTERM) or 130 (SIGINT).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from services.groupfilter import add_group_filter_arguments
    from services.kafka_options import add_kafka_arguments
    from services.settings import env
    from services.store.options import add_cluster_argument, add_database_url_argument

    parser.add_argument(
        "--source",
        nargs="+",
        metavar=("KIND", "DIR"),
        help="kafka | spark-kafka | replay DIR (default: kafka when --bootstrap-servers is given)",
    )
    parser.add_argument(
        "--topic",
        default=env("GROUPSCOPE_TOPIC", "__consumer_offsets"),
        help="the topic to read (default: __consumer_offsets)",
    )
    add_kafka_arguments(parser)
    add_database_url_argument(parser)
    add_cluster_argument(
        parser,
        "the name of the Kafka cluster this job reads (env GROUPSCOPE_CLUSTER; default: "
        "default). Every row it stores is filed under it, so jobs for several clusters "
        "share one database (and one exporter) without mixing groups of the same name; "
        "each gets its own default checkpoint",
        default=True,
    )
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=env("GROUPSCOPE_CHECKPOINT"),
        help="checkpoint directory (env GROUPSCOPE_CHECKPOINT; default: "
        "<data dir>/checkpoints/<hash of the source, the database and --cluster>, the data "
        "dir being $GROUPSCOPE_DATA_DIR or ./.groupscope, so a new database or cluster gets "
        "a new checkpoint)",
    )
    # No GROUPSCOPE_* variable on purpose: left set in a deployment, it would replay the
    # whole source on every restart.
    parser.add_argument(
        "--reset-checkpoint",
        action="store_true",
        help="move the checkpoint aside (to <checkpoint>.reset-<time>) and replay the "
        "source from its start; needed when the database lacks batches the checkpoint "
        "has committed (a new or restored database). Writes are idempotent",
    )
    parser.add_argument(
        "--trigger",
        default=env("GROUPSCOPE_TRIGGER", "5s"),
        help="micro-batch interval, e.g. 5s or 1m (default: 5s)",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="process everything available now, in as many batches as the read limit needs, "
        "then exit",
    )
    parser.add_argument(
        "--max-outage",
        default=env("GROUPSCOPE_MAX_OUTAGE"),
        metavar="DURATION",
        help="how long to wait for an unreachable database or Kafka broker before giving "
        "up with exit status 1, e.g. 2m, or 'none' to wait without limit. Default: without "
        "limit for a live job (it waits, logs the outage and reports itself degraded), 2m "
        "with --once. With --once a dependency unreachable at start-up fails at once",
    )
    parser.add_argument(
        "--retry-max-delay",
        default=env("GROUPSCOPE_RETRY_MAX_DELAY", "10s"),
        metavar="DURATION",
        help="the longest wait between two attempts to reach an unavailable database or "
        "Kafka broker: the waits start at 0.5-1s and double up to it, so a recovery is "
        "noticed at most this late (default: 10s)",
    )
    parser.add_argument(
        "--read-stall-timeout",
        default=env("GROUPSCOPE_READ_STALL_TIMEOUT", "30s"),
        metavar="DURATION",
        help="--source kafka: a range that gets no record for this long while its "
        "records are due asks the broker; if it is away the range waits for it, if it "
        "answers the batch fails (default: 30s)",
    )
    parser.add_argument(
        "--max-records-per-trigger",
        type=int,
        default=env("GROUPSCOPE_MAX_RECORDS_PER_TRIGGER", str(MAX_RECORDS_PER_TRIGGER)),
        help="read limit per micro-batch from Kafka (default: %(default)s). Every batch "
        "costs a task and a consumer seek per partition, so a backlog is read faster in "
        "large batches; a smaller limit shows progress sooner",
    )
    parser.add_argument(
        "--max-files-per-trigger",
        type=int,
        default=None,
        help="read limit per micro-batch for replay directories (files)",
    )
    parser.add_argument(
        "--retention",
        default=env("GROUPSCOPE_RETENTION"),
        metavar="DURATION",
        help="delete the history older than this, e.g. 90d or 12h (at least 1h), at most "
        "once an hour between batches, as 'groupscope db prune --older-than' does; each "
        "group's latest generation and the committed offsets always stay. Default: off, "
        'every row is kept for good (docs/operations.md, "Retention")',
    )
    parser.add_argument(
        "--offsets-partitions",
        type=int,
        default=env("GROUPSCOPE_OFFSETS_PARTITIONS", "50"),
        help="offsets.topic.num.partitions of the cluster (default: 50)",
    )
    add_group_filter_arguments(
        parser,
        (
            "GROUPSCOPE_STREAM_GROUPS_INCLUDE",
            "track and store only the groups it matches (default: every group)",
        ),
        (
            "GROUPSCOPE_STREAM_GROUPS_EXCLUDE",
            "neither track nor store the groups it matches, even if included (their "
            "records are read, counted in the batch log line and dropped)",
        ),
    )
    parser.add_argument(
        "--master",
        default=env("GROUPSCOPE_SPARK_MASTER"),
        help="Spark master: local[N], local[*], spark://HOST:PORT, yarn or k8s://URL (env "
        "GROUPSCOPE_SPARK_MASTER; default: spark-defaults.conf's, else local[*]). Under "
        "spark-submit, give it to spark-submit",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark property, as spark-submit's --conf; repeatable. Settings from "
        "spark-submit and spark-defaults.conf ($SPARK_CONF_DIR) are kept too; the job only "
        "fills in what is unset (see 'Spark settings' below)",
    )


def _session(config: StreamConfig) -> Any:
    """The Spark session; a --master that contradicts spark-submit's is a usage error.

    For `spark-kafka`, a JVM this process starts gets Spark's Kafka connector through
    `spark.jars.packages` (`spark_jobs.connector`), unless the user's settings name it
    already; a session that cannot load it ends the job with one line."""
    from pyspark import SparkContext
    from pyspark.errors import PySparkRuntimeError

    from services.cli import UsageError
    from spark_jobs import connector
    from spark_jobs.session import SubmittedMasterError, spark_session, under_spark_submit
    from spark_jobs.spark_conf import configured_before_launch

    kind, master = config.kind, config.master
    conf = dict(config.spark_conf)
    launching = not under_spark_submit() and SparkContext._gateway is None
    if kind == "spark-kafka" and launching:
        given = configured_before_launch(conf | ({"spark.master": master} if master else {}))
        conf = connector.with_connector(conf, given, config.spark)
        if conf.get("spark.jars.packages") != given.get("spark.jars.packages"):
            log.info("Spark's Kafka connector: spark.jars.packages=%s", conf["spark.jars.packages"])
    try:
        spark = spark_session(master, conf=conf, settings=config.spark)
    except SubmittedMasterError as exc:
        raise UsageError(str(exc)) from None
    except PySparkRuntimeError as exc:
        if kind != "spark-kafka" or "spark.jars.packages" not in conf:
            raise
        raise connector.ConnectorMissingError(
            f"--source spark-kafka: Spark did not start with its Kafka connector "
            f"{conf['spark.jars.packages']} (Ivy's resolution failed, see above; "
            f"`make kafka` caches it): {str(exc).splitlines()[0]}"
        ) from None
    if kind == "spark-kafka" and not connector.loaded(spark):
        raise connector.ConnectorMissingError(connector.missing_message())
    return spark


def run(args: argparse.Namespace) -> int:
    """Validate the arguments (into a `StreamConfig`), then run the query until it
    stops (or once)."""
    from spark_jobs.checkpoint import default_location
    from spark_jobs.connector import ConnectorMissingError

    config = StreamConfig.from_arguments(args)
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s"
    )
    logging.getLogger("groupscope").setLevel(logging.INFO)
    from services.codec.records import accelerated

    if not accelerated():
        log.warning(
            "services.codec._speedups cannot be loaded: group records decode in pure Python"
        )
    name = config.name
    checkpoint = config.checkpoint or default_location(name, config.database_url, config.cluster)
    log.info(
        "cluster %s, source %s, client config %s, checkpoint %s",
        config.cluster,
        name,
        redact(dict(config.kafka)),
        checkpoint,
    )
    if config.groups.active:
        log.info(
            "groups: %s; the records of other groups are counted and dropped",
            config.groups.describe(),
        )
    try:
        return _run_query(config, checkpoint)
    except (OutageError, ConnectorMissingError) as exc:
        print(f"groupscope stream: {exc}", file=sys.stderr)
        return 1


def _run_query(config: StreamConfig, checkpoint: Path) -> int:
    from services.store.database import create_store_engine, database_url, redacted
    from services.store.repository import HistoryStore
    from services.store.retention import Maintenance
    from services.store.retry import RetryPolicy
    from services.store.snapshots import latest_generations
    from spark_jobs.batch import BatchProcessor
    from spark_jobs.broker import BrokerProbe
    from spark_jobs.checkpoint import prepare
    from spark_jobs.connector_outage import JavaBrokerProbe, QuietConnector
    from spark_jobs.dependencies import await_broker, prepare_store
    from spark_jobs.replica_racks import ReplicaRacks
    from spark_jobs.sources import replay, spark_kafka
    from spark_jobs.topic_names import TopicNames

    kind, directory, name, limit = config.kind, config.directory, config.name, config.max_outage
    client = dict(config.kafka)
    cluster = client | {"bootstrap.servers": config.bootstrap_servers}
    with database_url(config.database_url) as url:
        log.info("history store %s", redacted(url))
        # A connect that hangs (a host that drops packets) counts as a failed attempt.
        engine = create_store_engine(url, connect_args={"connect_timeout": CONNECT_TIMEOUT_S})
        try:
            store_outage = Outage("the database", log)
            known = prepare_store(
                url,
                engine,
                lambda: latest_generations(engine, config.cluster),
                config.once,
                limit,
                store_outage,
                config.cluster,
                config.backoff,
            )
            bases = prepare(
                checkpoint,
                HistoryStore(engine, cluster=config.cluster),
                name,
                redacted(config.database_url),
                config.reset_checkpoint,
            )
            watch, quiet = None, None
            if kind == "kafka":
                probe = BrokerProbe(cluster, config.topic)
                watch = await_broker(
                    probe, config.bootstrap_servers, config.once, limit, config.broker_backoff
                )
            spark = _session(config)
            if kind == "spark-kafka":
                quiet = QuietConnector(spark)
                # the connector's own Java client, once the JVM that holds it has started
                java = JavaBrokerProbe(spark, cluster, config.topic)
                watch = await_broker(
                    java, config.bootstrap_servers, config.once, limit, config.broker_backoff
                )
            if kind == "replay":
                df = replay(spark, directory, config.max_files_per_trigger)  # type: ignore[arg-type]
            elif kind == "spark-kafka":
                df = spark_kafka(
                    spark,
                    config.bootstrap_servers,
                    config.topic,
                    client,
                    config.max_records_per_trigger,
                    config.offsets_partitions,
                )
            else:
                from spark_jobs.broker import BrokerWaits
                from spark_jobs.kafka_source import kafka_stream

                df = kafka_stream(
                    spark,
                    config.bootstrap_servers,
                    config.topic,
                    client,
                    config.max_records_per_trigger,
                    bases,
                    BrokerWaits(limit, config.retry_max_delay, config.read_stall_timeout),
                    config.reader,
                )
            processor = BatchProcessor(
                HistoryStore(engine, cluster=config.cluster),
                name,
                config.offsets_partitions,
                known,
                # Without a count: a live job writes through an outage of any length.
                RetryPolicy(attempts=None, max_delay=config.retry_max_delay, max_outage=limit),
                state_dir=checkpoint / "groupscope",
                checkpoint=checkpoint,
                end_quietly=True,
                topic_names=None if kind == "replay" else TopicNames(cluster),
                store_outage=store_outage,
                replica_racks=None if kind == "replay" else ReplicaRacks(cluster),
                groups=config.groups,
            )
            writer = df.writeStream.foreachBatch(processor).option(
                "checkpointLocation", str(checkpoint)
            )
            if config.once:
                writer = writer.trigger(availableNow=True)
            else:
                writer = writer.trigger(processingTime=f"{int(config.trigger * 1000)} milliseconds")
            maintenance = Maintenance(engine, config.retention, log)
            maintenance.prepare()
            _follow(writer.start, processor, watch, limit, maintenance, quiet)
        finally:
            engine.dispose()
    return 0


def _follow(
    start: Callable[[], Any],
    processor: Any,
    watch: BrokerWatch | None = None,
    limit: float | None = None,
    maintenance: Maintenance | None = None,
    quiet: QuietConnector | None = None,
) -> None:
    """Start the query and wait for it, printing progress to stderr and reporting the
    pipeline's health to the store every few seconds (degraded while `watch` finds the
    broker away), and keeping the store up (partitions ahead, retention) between
    batches, once batches have been written; a run that ends (`--once`) prunes once
    more. A query that failed because a dependency stayed away past `--max-outage` ends
    with that one line.

    With `quiet` (Spark's connector, whose query fails when the broker stays away long
    enough), the connector's logs are quieted while the broker is away, and a query that
    failed while it was away is started again from its checkpoint once it answers, as a
    restarted job would: the batch it had not committed is replayed, idempotently."""
    progress = _Progress()
    while True:
        begun = time.monotonic()
        query = start()
        if not _watch(query, processor, progress, watch, limit, maintenance, quiet):
            return  # stopped by a signal
        error = query.exception()
        if error is None:
            break
        if processor.gave_up is not None:
            raise processor.gave_up
        from spark_jobs.broker import unavailable_message

        message = unavailable_message(error)
        if message is not None:
            raise OutageError(message)
        if quiet is None or watch is None:
            raise RuntimeError(f"the streaming query failed: {error}")
        watch.poll(force=True)
        if not watch.away_since(begun):
            quiet.off()
            raise RuntimeError(f"the streaming query failed: {error}")
        log.warning(
            "the streaming query failed while %s was unreachable (%s); restarting it from "
            "its checkpoint once the broker answers",
            watch.outage.what,
            _first_line(error),
        )
        if not _wait_for_broker(processor, watch, limit, progress):
            return  # stopped by a signal
    _report(
        processor,
        health.report(processor.source, {}, query.lastProgress, True),
        progress.reported,
    )
    if maintenance is not None:
        maintenance.tick(final=True)


class _Progress:
    """What `_follow` has shown and reported, across the queries it starts."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.shown = -1
        self.reported: Any = None


def _watch(
    query: Any,
    processor: Any,
    progress: _Progress,
    watch: BrokerWatch | None,
    limit: float | None,
    maintenance: Maintenance | None,
    quiet: QuietConnector | None,
) -> bool:
    """Follow one query until it ends (True) or a signal stops it (False)."""
    from pyspark.errors import StreamingQueryException

    from services import shutdown

    while query.isActive:
        if shutdown.requested():
            # Waits for the batch in flight: its transaction commits or rolls back whole,
            # and a batch whose commit Spark did not log is replayed, idempotently, on restart.
            log.info("stopping: waiting for the batch in flight")
            query.stop()
            return False
        try:
            query.awaitTermination(2)
        except StreamingQueryException:
            break  # query.exception() says why
        if processor.batches != progress.shown:
            progress.shown = processor.batches
            last = processor.last
            print(
                f"[{time.monotonic() - progress.started:6.0f}s] batches {processor.batches}, "
                f"last: {last.records} records, {last.generations} generations, "
                f"{sum(last.failures.values())} failures, "
                f"{f'{last.filtered} filtered, ' if processor.groups.active else ''}"
                f"{last.seconds:.1f}s",
                file=sys.stderr,
                flush=True,
            )
        if query.isActive:
            report = health.report(processor.source, query.status, query.lastProgress)
            if watch is not None:
                watch.poll()
                if quiet is not None:
                    (quiet.on if watch.outage.is_down else quiet.off)()
                report = watch.apply(report)
                if limit is not None and watch.outage.elapsed() >= limit:
                    _stop_quietly(query)
                    raise OutageError(watch.outage.give_up_message(limit))
            progress.reported = _report(processor, report, progress.reported)
        if maintenance is not None and processor.batches:
            maintenance.tick()
    return True


def _wait_for_broker(
    processor: Any, watch: BrokerWatch, limit: float | None, progress: _Progress
) -> bool:
    """Probe until the broker answers (True), reporting the pipeline degraded
    meanwhile; False on a signal, `OutageError` past `limit`."""
    from services import shutdown

    while watch.outage.is_down:
        if shutdown.requested():
            return False
        if limit is not None and watch.outage.elapsed() >= limit:
            raise OutageError(watch.outage.give_up_message(limit))
        report = watch.apply(health.report(processor.source, {}, None))
        progress.reported = _report(processor, report, progress.reported)
        time.sleep(2)
        watch.poll()
    return not shutdown.requested()


def _first_line(error: object) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _stop_quietly(query: Any) -> None:
    """Stop a query the job gives up on; the tasks and the batch it cancels are not
    news (Spark logs each, py4j the batch's exception with its traceback)."""
    from pyspark.sql import SparkSession

    SparkSession.builder.getOrCreate().sparkContext.setLogLevel("OFF")
    logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)
    query.stop()


def _report(processor: Any, report: Any, previous: Any) -> Any:
    """Write the report when it changed or every 15 s; a store outage only logs (once,
    through the outage the batch writes share)."""
    from services.store.errors import StoreError, StoreUnavailableError

    same = previous is not None and (
        previous.caught_up,
        previous.records_behind,
        previous.degraded_reason is None,
    ) == (report.caught_up, report.records_behind, report.degraded_reason is None)
    if same and (report.at - previous.at).total_seconds() < 15:
        return previous
    try:
        processor.store.report_status(report)
    except StoreUnavailableError as exc:
        processor.store_outage.down(str(exc))
        return previous
    except StoreError as exc:
        log.warning("pipeline status not written: %s", exc)
        return previous
    processor.store_outage.up()
    return report


def main(argv: list[str] | None = None) -> int:
    """spark-submit entry point."""
    parser = argparse.ArgumentParser(
        prog="spark_jobs/stream.py",
        description=__doc__.split("\n\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.command = "stream"
    from services.cli import UsageError
    from services.shutdown import stoppable
    from services.store.options import store_command

    try:
        # A store error is one line, as under the CLI.
        return store_command(stoppable(run))(args)
    except UsageError as exc:
        print(f"stream: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
