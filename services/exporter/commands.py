"""`groupscope exporter`: Prometheus metrics of every consumer group, with lag."""

from __future__ import annotations

import argparse
import logging
import sys

EPILOG = """\
endpoints:
  /metrics   every groupscope_* metric (see docs/metrics.md)
  /healthz   200 while the exporter's refresh loop runs
  /readyz    200 once the streaming job has caught up with __consumer_offsets on every
             source that reported within --source-stale-after, none of them degraded;
             503 with the reason otherwise

outages:
  The exporter starts and serves even when the database is unreachable or not yet
  migrated (/readyz says which), and retries every --interval. Meanwhile the last
  metrics stay up, the "seconds since" gauges keep moving and
  groupscope_exporter_refresh_errors_total counts each failed refresh.

lag:
  With --bootstrap-servers, the exporter polls the log-end offset of every partition a
  group has committed, in one ListOffsets request per broker, every --interval, and
  publishes offset lag and time lag (estimated from the last --lag-history samples).
  The log end is the last stable offset, what a read_committed consumer can read: an
  open transaction's records count only once it commits.
  Without --bootstrap-servers, groups, rebalances, churn and committed offsets are
  still published.

clusters:
  One exporter publishes every cluster the store holds, each series with a cluster
  label. --bootstrap-servers is the brokers of the cluster named by --cluster
  (GROUPSCOPE_CLUSTER; default: default); --cluster-bootstrap NAME=SERVERS (repeatable)
  adds another cluster's brokers. A cluster without brokers gets no lag series, never
  another cluster's.
  --kafka-config-file and --kafka-config apply to every cluster. A cluster's own
  credentials or trust store go in --cluster-kafka-config-file NAME=FILE (one per
  cluster) and --cluster-kafka-config NAME:KEY=VALUE, applied on top, key by key:
  shared file, shared flags, the cluster's file, the cluster's flags (later wins).
  bootstrap.servers always comes from --bootstrap-servers / --cluster-bootstrap.

examples:
  groupscope exporter --bootstrap-servers broker:9092
  groupscope exporter --port 9308 --interval 30s --storm-rebalances 3 --storm-window 5m
  groupscope exporter --groups-include '^payments-' --groups-exclude '-(test|canary)$'
  groupscope exporter --bootstrap-servers broker:9093 --kafka-config-file client.properties \\
      --database-url postgresql://groupscope@db/groupscope --per-partition
  groupscope exporter --cluster eu --bootstrap-servers eu-broker:9092 \\
      --cluster-bootstrap us=us-broker:9092
  groupscope exporter --cluster eu --bootstrap-servers eu-broker:9093 \\
      --cluster-bootstrap us=us-broker:9093 --kafka-config security.protocol=SASL_SSL \\
      --cluster-kafka-config-file eu=eu.properties --cluster-kafka-config-file us=us.properties
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from services.exporter.clusters import add_cluster_arguments
    from services.groupfilter import add_group_filter_arguments
    from services.kafka_options import add_kafka_arguments
    from services.settings import env
    from services.store.options import add_database_url_argument

    parser = subparsers.add_parser(
        "exporter",
        help="serve Prometheus metrics: groups, rebalances, churn, lag, pipeline health",
        description="Serve /metrics, /healthz and /readyz for Prometheus. Metrics come from "
        "the history store the streaming job writes, and lag from log-end offsets polled "
        "from the Kafka cluster.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--port",
        type=int,
        default=env("GROUPSCOPE_EXPORTER_PORT", "9308"),
        help="port to listen on (env GROUPSCOPE_EXPORTER_PORT; default 9308; 0: any free)",
    )
    parser.add_argument(
        "--host",
        "--listen",
        dest="host",
        metavar="ADDRESS",
        default=env("GROUPSCOPE_EXPORTER_HOST", "0.0.0.0"),
        help="address to listen on, IPv4 or IPv6 (env GROUPSCOPE_EXPORTER_HOST; default "
        "0.0.0.0, every IPv4 interface, because Prometheus usually scrapes from another "
        "host or container; 127.0.0.1 keeps it on this machine, :: listens on IPv6 too)",
    )
    parser.add_argument(
        "--http-timeout",
        metavar="DURATION",
        default=env("GROUPSCOPE_EXPORTER_HTTP_TIMEOUT", "10s"),
        help="a client must send its request, and take the response, within this; "
        "idle connections are closed after it (env GROUPSCOPE_EXPORTER_HTTP_TIMEOUT; "
        "default 10s, Prometheus's default scrape timeout)",
    )
    parser.add_argument(
        "--max-connections",
        metavar="N",
        type=int,
        default=env("GROUPSCOPE_EXPORTER_MAX_CONNECTIONS", "64"),
        help="open HTTP connections at most; beyond it the oldest idle one is closed "
        "(env GROUPSCOPE_EXPORTER_MAX_CONNECTIONS; default 64). Requests are served by "
        "4 threads, whatever the number of connections",
    )
    add_kafka_arguments(parser, " to poll log-end offsets from (optional)")
    add_cluster_arguments(parser)
    add_database_url_argument(parser)
    parser.add_argument(
        "--interval",
        default=env("GROUPSCOPE_EXPORTER_INTERVAL", "15s"),
        help="how often to refresh from the store and poll log-end offsets (default 15s)",
    )
    parser.add_argument(
        "--connect-timeout",
        metavar="DURATION",
        default=env("GROUPSCOPE_DATABASE_CONNECT_TIMEOUT", "5s"),
        help="give up a connection attempt to the database after this, so that a "
        "refresh fails (and counts) instead of hanging while the database host is "
        "unreachable (env GROUPSCOPE_DATABASE_CONNECT_TIMEOUT; default 5s; whole "
        "seconds, at least 2, as libpq counts them)",
    )
    parser.add_argument(
        "--source-stale-after",
        metavar="DURATION",
        default=env("GROUPSCOPE_SOURCE_STALE_AFTER", "10m"),
        help="a source of the streaming job that has not reported for this long (a job "
        "that ended or moved to another source) no longer counts for /readyz and is "
        "marked groupscope_pipeline_stale (env GROUPSCOPE_SOURCE_STALE_AFTER; default "
        "10m; a running job reports at least every 15s)",
    )
    parser.add_argument(
        "--storm-rebalances",
        type=int,
        default=env("GROUPSCOPE_STORM_REBALANCES", "5"),
        help="rebalances within --storm-window that make a storm (default 5)",
    )
    parser.add_argument(
        "--storm-window",
        default=env("GROUPSCOPE_STORM_WINDOW", "10m"),
        help="the storm window (default 10m)",
    )
    parser.add_argument(
        "--per-partition",
        action="store_true",
        default=env("GROUPSCOPE_EXPORTER_PER_PARTITION", "") not in ("", "0", "false"),
        help="also publish committed offset and lag per partition (many more series)",
    )
    add_group_filter_arguments(
        parser,
        (
            "GROUPSCOPE_EXPORTER_GROUPS_INCLUDE",
            "publish only the groups it matches (default: every group)",
        ),
        (
            "GROUPSCOPE_EXPORTER_GROUPS_EXCLUDE",
            "do not publish the groups it matches, even if included (pipeline and decode "
            "failure metrics stay)",
        ),
    )
    parser.add_argument(
        "--lag-history",
        type=int,
        default=env("GROUPSCOPE_LAG_HISTORY", "16"),
        help="log-end offset samples kept per partition for time lag (default 16)",
    )
    parser.set_defaults(func=run)


MAX_LAG_HISTORY = 10_000
MAX_CONNECTIONS = 10_000


def config_from(args: argparse.Namespace):  # -> ExporterConfig
    """Validate the flags into an ExporterConfig (UsageError on bad input)."""
    from services.cli import UsageError
    from services.durations import seconds_flag
    from services.exporter.app import ExporterConfig
    from services.groupfilter import group_filter
    from services.limits import INT32_MAX, at_most

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0-65535, got {args.port}")
    if args.storm_rebalances < 1:
        raise UsageError("--storm-rebalances must be at least 1")
    at_most("--storm-rebalances", args.storm_rebalances, INT32_MAX)
    # Each partition keeps this many samples in a numpy array: 16 is the default and
    # 10,000 already costs 160 kB per partition.
    if not 2 <= args.lag_history <= MAX_LAG_HISTORY:
        raise UsageError(f"--lag-history must be 2-{MAX_LAG_HISTORY:,}, got {args.lag_history}")
    if not 1 <= args.max_connections <= MAX_CONNECTIONS:
        raise UsageError(
            f"--max-connections must be 1-{MAX_CONNECTIONS:,}, got {args.max_connections}"
        )
    return ExporterConfig(
        host=args.host,
        port=args.port,
        interval_s=seconds_flag("--interval", args.interval),
        storm_rebalances=args.storm_rebalances,
        storm_window_s=seconds_flag("--storm-window", args.storm_window),
        per_partition=args.per_partition,
        history_depth=args.lag_history,
        source_stale_after_s=seconds_flag("--source-stale-after", args.source_stale_after),
        http_timeout_s=seconds_flag("--http-timeout", args.http_timeout),
        max_connections=args.max_connections,
        groups=group_filter(args),
    )


def connect_timeout(args: argparse.Namespace) -> int:
    """--connect-timeout in libpq's whole seconds (UsageError below 2)."""
    import math

    from services.cli import UsageError
    from services.durations import seconds_flag

    seconds = math.ceil(seconds_flag("--connect-timeout", args.connect_timeout))
    if seconds < 2:
        raise UsageError(f"--connect-timeout must be at least 2s, got {args.connect_timeout!r}")
    return seconds


def run(args: argparse.Namespace) -> int:
    from services.shutdown import stoppable
    from services.store.options import store_command

    return stoppable(store_command(_serve))(args)


def _serve(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException

    from services import shutdown
    from services.exporter.app import Exporter
    from services.exporter.clusters import cluster_clients
    from services.exporter.lag import LogEndPoller
    from services.kafka_options import kafka_config, redact
    from services.store.database import create_store_engine, database_url, redacted

    config = config_from(args)
    timeout = connect_timeout(args)
    clients = cluster_clients(args, kafka_config(args))
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s"
    )
    logging.getLogger("groupscope").setLevel(logging.INFO)
    fetch = {}
    for cluster, properties in clients.items():
        logging.getLogger("groupscope.exporter").info(
            "lag of cluster %s from %s", cluster, redact(properties)
        )
        try:
            fetch[cluster] = LogEndPoller(properties)
        except KafkaException as exc:  # librdkafka refused a property (a Java-only one)
            from services.cli import UsageError

            raise UsageError(
                f"cluster {cluster}'s client properties: {exc.args[0].str()}"
            ) from None
    with database_url(args.database_url) as url:
        engine = create_store_engine(url, connect_args={"connect_timeout": timeout})
        try:
            exporter = Exporter(config, engine, fetch)
            try:
                exporter.start()
            except OSError as exc:
                from services.cli import UsageError

                raise UsageError(
                    f"cannot listen on {config.host}:{config.port}: {exc.strerror}"
                ) from None
            if config.groups.active:
                logging.getLogger("groupscope.exporter").info(
                    "groups: %s", config.groups.describe()
                )
            print(
                f"groupscope exporter: {exporter.metrics_url} "
                f"({exporter.exposition.samples} samples; store {redacted(url)}; "
                f"lag {'of ' + ', '.join(fetch) if fetch else 'off'}; "
                f"{'ready' if exporter.readiness.ready else 'not ready'}: "
                f"{exporter.readiness.reason})",
                file=sys.stderr,
                flush=True,
            )
            try:
                while not shutdown.wait(1.0):
                    pass
            finally:
                exporter.stop()
        finally:
            engine.dispose()
    return 0
