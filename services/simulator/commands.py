"""``groupscope simulate``: scenarios -> a replay directory or a Kafka topic."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from services.settings import env

EPILOG_HEAD = """\
scenarios (combine with commas, e.g. steady,crash-loop):
"""

EPILOG_TAIL = """
--set KEY=VALUE tunes the scenarios; keys every scenario takes: members, partitions,
assignor (range, roundrobin, sticky, cooperative-sticky; KIP-848: uniform, server-range),
static (true: group.instance.id, classic groups only), session_timeout,
max_poll_interval, commit_interval (durations), rate (messages/s per partition),
metadata, transactional (share of commits in transactions), aborted (share of those
aborted), delete_after (a duration). Scenario keys are listed above in parentheses.

output:
  --out DIR writes DIR/records/part-NNNNN.parquet (or .jsonl with --format jsonl), rows
  as Spark's Kafka source shows them (topic, partition, offset, timestamp, key, value),
  and the ground truth in DIR/truth/ (events, generations, rebalances, commits, aborted).
  --bootstrap-servers HOST:PORT --topic T produces the same records to topic T (created
  with 50 partitions if missing); --truth DIR keeps the ground truth as well.

examples:
  groupscope simulate mixed --out demo/ --seed 7
  groupscope simulate rolling-restart --set static=true --set members=6 --out rr/ --format jsonl
  groupscope simulate many-groups --groups 10000 --duration 5m --out load/
  groupscope simulate crash-loop --bootstrap-servers 127.0.0.1:9092 --topic offsets --wall-clock
"""


def _epilog() -> str:
    from services.simulator.scenarios import SCENARIOS

    lines = [f"  {s.name:<24}{s.summary}" for s in SCENARIOS.values()]
    return EPILOG_HEAD + "\n".join(lines) + "\n" + EPILOG_TAIL


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="simulate Kafka's group coordinator: byte-exact __consumer_offsets records",
        description="Run named scenarios of consumer groups through a simulation of Kafka's "
        "group coordinator (classic and KIP-848 protocols). Every record the coordinator "
        "would write goes to the group's partition of __consumer_offsets, byte for byte, "
        "with the ground truth of what happened beside it.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="scenario name(s), comma-separated")
    parser.add_argument(
        "--groups",
        type=int,
        metavar="N",
        help="copies of each scenario's groups (many-groups: how many groups; default 10000)",
    )
    parser.add_argument(
        "--duration", metavar="D", help="simulated time, e.g. 90s, 10m, 1h (default per scenario)"
    )
    parser.add_argument("--out", metavar="DIR", help="write a replay directory and ground truth")
    parser.add_argument(
        "--bootstrap-servers",
        metavar="HOST:PORT",
        default=env("GROUPSCOPE_BOOTSTRAP_SERVERS"),
        help="produce to a Kafka-protocol broker instead (env GROUPSCOPE_BOOTSTRAP_SERVERS)",
    )
    parser.add_argument("--topic", metavar="T", help="the topic that plays __consumer_offsets")
    parser.add_argument("--truth", metavar="DIR", help="with a broker: where to write the truth")
    parser.add_argument(
        "--kafka-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra producer property (repeatable), e.g. security.protocol=SASL_SSL",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    parser.add_argument(
        "--rows-per-file", type=int, default=200_000, metavar="N", help="rows per replay file"
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=env("GROUPSCOPE_OFFSETS_PARTITIONS", "50"),
        metavar="N",
        help="partitions of the offsets topic (env GROUPSCOPE_OFFSETS_PARTITIONS; default 50)",
    )
    parser.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a scenario parameter (repeatable)",
    )
    parser.add_argument(
        "--wall-clock", action="store_true", help="run in real time instead of fast-forward"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(func=run_simulate)


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    from services.cli import UsageError

    pairs = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag} needs KEY=VALUE, got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def _sink(args: argparse.Namespace) -> tuple[Any, str | None, str]:
    from services.cli import UsageError
    from services.simulator.replay import ReplayDirectory

    if args.out and args.bootstrap_servers and args.topic:
        raise UsageError("choose one output: --out DIR or --bootstrap-servers with --topic")
    if args.out:
        records = os.path.join(args.out, "records")
        if os.path.isdir(records) and os.listdir(records):
            raise UsageError(f"{args.out} already holds a replay; choose a new directory")
        if args.rows_per_file < 1:
            raise UsageError("--rows-per-file must be at least 1")
        return (
            ReplayDirectory(args.out, fmt=args.format, rows_per_file=args.rows_per_file),
            args.out,
            args.out,
        )
    if args.topic and args.bootstrap_servers:
        from confluent_kafka import KafkaException

        from services.simulator.kafka_sink import KafkaTopic, create_offsets_topic

        config = _pairs(args.kafka_config, "--kafka-config")
        try:
            create_offsets_topic(args.bootstrap_servers, args.topic, args.partitions, config)
        except KafkaException as exc:
            raise UsageError(f"cannot create topic {args.topic}: {exc}") from None
        sink = KafkaTopic(args.bootstrap_servers, args.topic, config)
        return sink, args.truth, f"{args.topic} on {args.bootstrap_servers}"
    if args.topic:
        raise UsageError("--topic needs --bootstrap-servers (or GROUPSCOPE_BOOTSTRAP_SERVERS)")
    raise UsageError("give an output: --out DIR, or --bootstrap-servers HOST:PORT --topic T")


class _Progress:
    """One line on stderr at most every second: simulated time, records, rate."""

    def __init__(self, duration_ms: int) -> None:
        self.duration_ms = duration_ms
        self.started = time.perf_counter()
        self.shown = self.started

    def __call__(self, elapsed_ms: int, records: int) -> None:
        now = time.perf_counter()
        if now - self.shown < 1.0:
            return
        self.shown = now
        share = 100 * elapsed_ms / max(self.duration_ms, 1)
        rate = records / max(now - self.started, 1e-9)
        print(
            f"\rsimulated {elapsed_ms / 1000:,.0f}s of {self.duration_ms / 1000:,.0f}s "
            f"({share:.0f}%), {records:,} records, {rate:,.0f} records/s",
            end="",
            file=sys.stderr,
            flush=True,
        )


def run_simulate(args: argparse.Namespace) -> int:
    from services.cli import UsageError
    from services.limits import MAX_OFFSETS_PARTITIONS, MAX_SIMULATED_GROUPS, at_most
    from services.simulator.params import ParamError, Params, parse_duration
    from services.simulator.runner import simulate
    from services.simulator.scenarios import build, scenario_names

    try:
        names = scenario_names(args.scenario)
    except ParamError as exc:
        raise UsageError(str(exc)) from None
    if args.groups is not None and args.groups < 1:
        raise UsageError("--groups must be at least 1")
    at_most("--groups", args.groups or 0, MAX_SIMULATED_GROUPS)
    if args.partitions < 1:
        raise UsageError("--partitions must be at least 1")
    at_most("--partitions", args.partitions, MAX_OFFSETS_PARTITIONS)
    params = Params(_pairs(args.settings, "--set"))
    try:
        specs, default_duration = build(names, params, args.groups)
        duration = default_duration if args.duration is None else parse_duration(args.duration)
    except ParamError as exc:
        raise UsageError(str(exc)) from None
    if params.unused():
        raise UsageError(f"unknown --set key(s) for {args.scenario}: {', '.join(params.unused())}")
    if duration <= 0:
        raise UsageError("--duration must be positive")
    sink, truth_dir, where = _sink(args)
    progress = None if args.quiet else _Progress(duration)
    started = time.perf_counter()
    summary = simulate(
        specs,
        sink,
        truth_dir,
        duration,
        seed=args.seed,
        wall_clock=args.wall_clock,
        partitions=args.partitions,
        progress=progress,
        label=args.scenario,
    )
    if progress is not None:
        print(file=sys.stderr)
    seconds = time.perf_counter() - started
    print(
        f"{summary['records']:,} records from {len(specs):,} groups "
        f"({duration / 1000:,.0f}s simulated) to {where} in {seconds:.1f}s"
    )
    return 0
