"""``groupscope workload``: real consumer groups that scale, restart and crash on a schedule."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from services.settings import env

if TYPE_CHECKING:
    from services.workload.config import WorkloadConfig

EPILOG = """\
what runs:
  topics   <prefix>-orders and <prefix>-payments (created if missing), fed a steady
           trickle of --rate messages/s
  groups   <prefix>-range               eager range over both topics
           <prefix>-cooperative         cooperative-sticky over the orders topic
           <prefix>-kip848              with --kip848: group.protocol=consumer (KIP-848,
                                        Apache Kafka 4.0+) over both topics
  Every member is a process (confluent-kafka) that commits its offsets every 2s.

schedule: every --step-interval (90s), the next step of the cycle (--steps) goes to the
next group in turn; steps that start a member wait for its first assignment:
  scale-up     one more member joins (at most --members + 2)
  scale-down   the newest member stops cleanly and leaves (at least 1 stays)
  restart      the oldest member stops cleanly and a new one joins in its place
  crash-loop   the oldest member is killed (SIGKILL, no LeaveGroup), then each
               replacement is killed shortly after it joins, --crashes (5) times in
               all; each crash holds the group until --session-timeout (10s): a storm
               (5 rebalances within 10 minutes)

The default cycle starts with a crash-loop: the first generations appear within seconds,
the first storm after --step-interval; the next crash-loop hits the next group about 10
minutes later, and in between each group rebalances two to four times per 10 minutes.
Progress goes to stderr. SIGTERM or Ctrl-C (or the end of --duration or --cycles)
stops every member cleanly and prints a summary on stdout.

examples:
  groupscope workload --bootstrap-servers localhost:9094
  groupscope workload --bootstrap-servers localhost:9094 --kip848 --step-interval 20s
  groupscope workload --bootstrap-servers b:9093 --duration 10m --steps crash-loop \\
      --kafka-config-file client.properties
"""

TRUE = ("1", "true", "yes", "on")
# Upper bounds: each member is a consumer this process runs; a topic's replication
# factor is an int16 in CreateTopics; librdkafka takes session.timeout.ms up to 1 h.
MAX_MEMBERS = 1_000
MAX_REPLICATION_FACTOR = 32_767
MAX_RATE = 1_000_000.0


def register(subparsers: argparse._SubParsersAction) -> None:
    from services.kafka_options import add_kafka_arguments

    parser = subparsers.add_parser(
        "workload",
        help="run real consumer groups that scale, restart and crash, for rebalances to watch",
        description="Create a few topics, produce a steady trickle of messages, and run "
        "consumer groups with different assignors (range, cooperative-sticky and, with "
        "--kip848, the KIP-848 protocol) that commit offsets and, on a schedule, scale up "
        "and down, restart members and crash-loop, so that the cluster's "
        "__consumer_offsets holds real rebalances.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_kafka_arguments(parser, " to run the workload on")
    parser.add_argument(
        "--prefix",
        default=env("GROUPSCOPE_WORKLOAD_PREFIX", "workload"),
        help="prefix of the topic and group names (env GROUPSCOPE_WORKLOAD_PREFIX; "
        "default workload)",
    )
    parser.add_argument(
        "--members",
        type=int,
        default=env("GROUPSCOPE_WORKLOAD_MEMBERS", "3") or "3",
        metavar="N",
        help="members each group starts with (env GROUPSCOPE_WORKLOAD_MEMBERS; default 3)",
    )
    parser.add_argument(
        "--kip848",
        action="store_true",
        default=(env("GROUPSCOPE_WORKLOAD_KIP848", "") or "").lower() in TRUE,
        help="add a KIP-848 group (group.protocol=consumer; Apache Kafka 4.0+) "
        "(env GROUPSCOPE_WORKLOAD_KIP848=true)",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=6,
        metavar="N",
        help="partitions of each topic it creates (default 6)",
    )
    parser.add_argument(
        "--replication-factor",
        type=int,
        default=-1,
        metavar="N",
        help="replication factor of the topics it creates (default: the broker's default)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=env("GROUPSCOPE_WORKLOAD_RATE", "20") or "20",
        metavar="N",
        help="messages per second over all topics (env GROUPSCOPE_WORKLOAD_RATE; default 20)",
    )
    parser.add_argument(
        "--step-interval",
        default=env("GROUPSCOPE_WORKLOAD_STEP_INTERVAL", "90s"),
        metavar="D",
        help="time between steps (env GROUPSCOPE_WORKLOAD_STEP_INTERVAL; default 90s)",
    )
    parser.add_argument(
        "--steps",
        default=env("GROUPSCOPE_WORKLOAD_STEPS"),
        metavar="KINDS",
        help="the cycle of steps, comma-separated (env GROUPSCOPE_WORKLOAD_STEPS; default "
        "crash-loop,scale-up,restart,scale-up,scale-down,restart,scale-down)",
    )
    parser.add_argument(
        "--crashes", type=int, default=5, metavar="N", help="kills per crash-loop (default 5)"
    )
    parser.add_argument(
        "--session-timeout",
        default="10s",
        metavar="D",
        help="session.timeout.ms of the classic members (default 10s)",
    )
    parser.add_argument(
        "--join-timeout",
        default="60s",
        metavar="D",
        help="warn when a group has had no assignment for this long (default 60s)",
    )
    parser.add_argument(
        "--duration",
        metavar="D",
        help="stop after this long, e.g. 10m (default: run until SIGTERM or Ctrl-C)",
    )
    parser.add_argument(
        "--cycles",
        type=int,
        metavar="N",
        help="stop after N cycles of the schedule (default: run until stopped)",
    )
    parser.add_argument(
        "--progress-interval",
        default="15s",
        metavar="D",
        help="time between progress lines on stderr (default 15s)",
    )
    parser.add_argument(
        "--health-file",
        default=env("GROUPSCOPE_WORKLOAD_HEALTH_FILE"),
        metavar="PATH",
        help="touch PATH every moment the workload is alive, for container health checks "
        "(env GROUPSCOPE_WORKLOAD_HEALTH_FILE)",
    )
    parser.set_defaults(func=run)


def _seconds(text: str, flag: str) -> float:
    from services.cli import UsageError
    from services.durations import duration_ms

    try:
        seconds = duration_ms(text) / 1000
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None
    if seconds <= 0:
        raise UsageError(f"{flag} must be positive")
    return seconds


def _upper_bounds(args: argparse.Namespace) -> None:
    """Each member is a real consumer, each partition a real one on the broker."""
    from services.cli import UsageError
    from services.limits import MAX_OFFSETS_PARTITIONS, at_most

    at_most("--members", args.members, MAX_MEMBERS)
    at_most("--partitions", args.partitions, MAX_OFFSETS_PARTITIONS)
    at_most("--replication-factor", args.replication_factor, MAX_REPLICATION_FACTOR)
    at_most("--rate", args.rate, MAX_RATE)
    at_most("--crashes", args.crashes, MAX_MEMBERS)
    if _seconds(args.session_timeout, "--session-timeout") > 3600:
        raise UsageError(f"--session-timeout must be at most 1h, got {args.session_timeout!r}")


def build_config(args: argparse.Namespace) -> WorkloadConfig:
    """The `WorkloadConfig` the flags describe; UsageError for bad input."""
    from services.cli import UsageError
    from services.kafka_options import kafka_config
    from services.workload.config import (
        DEFAULT_STEPS,
        GroupSpec,
        WorkloadConfig,
        default_groups,
        parse_steps,
    )

    if not args.bootstrap_servers:
        raise UsageError("give --bootstrap-servers (or GROUPSCOPE_BOOTSTRAP_SERVERS)")
    for flag, value in (("--members", args.members), ("--partitions", args.partitions)):
        if value < 1:
            raise UsageError(f"{flag} must be at least 1")
    if args.crashes < 1:
        raise UsageError("--crashes must be at least 1")
    if args.cycles is not None and args.cycles < 1:
        raise UsageError("--cycles must be at least 1")
    if args.replication_factor == 0 or args.replication_factor < -1:
        raise UsageError("--replication-factor must be at least 1 (or -1: the broker's default)")
    if not args.rate > 0:  # also NaN
        raise UsageError("--rate must be positive")
    _upper_bounds(args)
    if not args.prefix.strip() or any(c.isspace() for c in args.prefix):
        raise UsageError("--prefix must be a non-empty name without spaces")
    try:
        steps = parse_steps(args.steps) if args.steps is not None else DEFAULT_STEPS
    except ValueError as exc:
        raise UsageError(f"--steps: {exc}") from None
    topics, groups = default_groups(args.prefix, args.kip848, args.members)
    groups = [
        GroupSpec(g.name, g.topics, g.assignor, g.members, 1, args.members + 2) for g in groups
    ]
    return WorkloadConfig(
        bootstrap_servers=args.bootstrap_servers,
        groups=groups,
        topics=topics,
        partitions=args.partitions,
        replication_factor=args.replication_factor,
        rate=args.rate,
        step_interval_s=_seconds(args.step_interval, "--step-interval"),
        steps=steps,
        duration_s=None if args.duration is None else _seconds(args.duration, "--duration"),
        session_timeout_ms=int(_seconds(args.session_timeout, "--session-timeout") * 1000),
        crashes=args.crashes,
        cycles=args.cycles,
        join_timeout_s=_seconds(args.join_timeout, "--join-timeout"),
        progress_interval_s=_seconds(args.progress_interval, "--progress-interval"),
        kafka_config=kafka_config(args),
        health_file=args.health_file,
    )


def run(args: argparse.Namespace) -> int:
    import signal
    import sys
    import threading

    from confluent_kafka import KafkaException

    from services.cli import UsageError
    from services.workload.config import ClientConfigError
    from services.workload.runner import run_workload

    config = build_config(args)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: object) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        summary = run_workload(config, stop)
    except ClientConfigError as exc:
        raise UsageError(f"--kafka-config: {exc}") from None
    except (KafkaException, TimeoutError) as exc:
        reason = exc.args[0].str() if isinstance(exc, KafkaException) else str(exc)
        print(f"groupscope workload: Kafka at {args.bootstrap_servers}: {reason}", file=sys.stderr)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for line in summary.lines():
        print(line)
    for warning in summary.warnings:
        print(f"warning: {warning}")
    return 0
