"""The race (`GROUPSCOPE_BENCH_CASES=sources python -m benchmarks stream`): groupscope's
Kafka sources and Burrow reading the same `__consumer_offsets`-shaped records from a
real Apache Kafka broker, one after another, each from a clean start.

The records: the simulator's `many-groups` (2,000 classic groups of 3 members on a
12-partition topic, 5% with a crash and its rebalance), run until about N records
(GROUPSCOPE_BENCH_RECORDS): offset commits with the groups' GroupMetadata records among
them, written as a replay directory with its ground truth (services/simulator), then
produced once into a 50-partition topic standing in for `__consumer_offsets`, each
record in its group's partition. The consumed topics are created with their partitions
(Burrow drops commits of topics the broker does not have).

The contenders (GROUPSCOPE_BENCH_SOURCES, default kafka,spark-kafka,burrow):
`groupscope stream --once` with `--source kafka` and `--source spark-kafka` (into a
fresh embedded PostgreSQL each, at the job's default read limit), and Burrow
(benchmarks/burrow.py), done when its HTTP API shows every group's final committed
offsets as the ground truth has them. Each groupscope contender's store is held to the
same truth: its `committed_offsets` must equal the produced final offset of every group
and partition, or the case fails (after the report) naming what differs. For each:
records/s from the first record to the last (groupscope: the first batch's start to
the last one's end, from its log; Burrow: the first group shown to every final offset
shown), start-up (launch to the first batch or the first group), wall time from launch
to exit, CPU seconds of its whole process tree (benchmarks/proctree.py), where that CPU
went, and the machine's load average while it ran. The ratios per CPU-second and per
wall-second are printed beside each other.

GROUPSCOPE_BENCH_KAFKA_VERSIONS (default: the project's Kafka, tests/kafka/pom.xml)
races on each named release in turn, a broker of its own each; a release other than the
project's is resolved from Maven Central with the same pom (`mvn`, into the venv beside
`make kafka`'s classpath). Burrow 1.2.1 cannot read from Kafka 4 (see
benchmarks/burrow.py); 3.9.1 is the last release it can.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.burrow import BurrowRun, BurrowUnavailableError, run_burrow

if TYPE_CHECKING:
    from services.simulator import GroupSpec
    from tests.fixtures.real_kafka import RealKafka

GROUPS = 2_000
PARTITIONS = 12  # of each group's topic
COMMIT_INTERVAL_S = 5  # the simulator's default
TOPIC = "bench-consumer-offsets"
# offset commit keys are versions 0 and 1 (Kafka's GroupCoordinatorRecordHelpers)
COMMIT_KEY_VERSIONS = (b"\x00\x00", b"\x00\x01")


Offsets = dict[str, dict[tuple[str, int], int]]  # group -> (topic, partition) -> offset


@dataclass
class Records:
    """What was produced: the replay directory's records and the truth about them."""

    directory: Path
    count: int
    expected: Offsets  # final committed offsets
    topics: dict[str, int]  # consumed topic -> partitions
    tails: list[str]  # per log partition, the group of its last offset commit
    oldest_commit_ms: int


@dataclass
class Result:
    contender: str
    kafka: str
    records: int
    startup: float | None
    processing: float | None  # first record to last, seconds
    wall: float
    cpu: float
    load: str
    where: str
    error: str | None = None
    offsets_wrong: bool = False  # groupscope: stored committed offsets not the produced ones

    @property
    def rate(self) -> float:
        return self.records / self.processing if self.processing else 0.0


def simulate_replay(specs: list[GroupSpec], root: Path, duration: int) -> dict[str, Any]:
    """`specs` simulated for `duration` ms into a replay directory (files of 1M records)
    with its ground truth, timed; returns the simulator's summary."""
    from services.simulator import ReplayDirectory, simulate

    started = time.perf_counter()
    summary = simulate(specs, ReplayDirectory(root, rows_per_file=1_000_000), root, duration)
    print(
        f"simulated {summary['records']:,} records ({duration / 60_000:.0f} min of "
        f"{len(specs):,} groups) in {time.perf_counter() - started:.0f}s",
        flush=True,
    )
    return summary


def simulate_records(root: Path, total: int) -> Records:
    """About `total` records of the simulated mix, in `root/records`, with the truth."""
    from services.simulator import Params, build

    rate = GROUPS * PARTITIONS / COMMIT_INTERVAL_S  # commits/s so that each has 12
    params = Params({"commits_per_second": str(rate), "churn": "0.05"})
    specs, _ = build(["many-groups"], params, GROUPS)
    summary = simulate_replay(specs, root, int(total / rate * 1000))
    expected: dict[str, dict[tuple[str, int], int]] = {}
    topics: dict[str, int] = {}
    oldest = None
    for line in (root / "truth" / "commits.jsonl").read_text().splitlines():
        row = json.loads(line)
        expected.setdefault(row["group"], {})[(row["topic"], row["partition"])] = row["offset"]
        topics[row["topic"]] = max(topics.get(row["topic"], 0), row["partition"] + 1)
        oldest = min(oldest or row["commit_timestamp"], row["commit_timestamp"])
    return Records(root, summary["records"], expected, topics, tail_groups(root), oldest or 0)


def files(root: Path) -> list[Path]:
    return sorted((root / "records").glob("*.parquet"))


def tail_groups(root: Path) -> list[str]:
    """The group of each log partition's last offset commit (read from the last file
    backwards until every partition has one)."""
    tails: dict[int, str] = {}
    for path in reversed(files(root)):
        table = pq.read_table(path, columns=["partition", "key"])
        rows = zip(
            table.column("partition").to_pylist(), table.column("key").to_pylist(), strict=True
        )
        for partition, key in reversed(list(rows)):
            if partition not in tails and key[:2] in COMMIT_KEY_VERSIONS:
                length = int.from_bytes(key[2:4], "big")
                tails[partition] = key[4 : 4 + length].decode()
        if len(tails) == 50:
            break
    return sorted(set(tails.values()))


def replay_tables(root: Path) -> Iterator[pa.Table]:
    for path in files(root):
        yield pq.read_table(path, columns=["partition", "key", "value"])


def kafka_classpath(version: str) -> Path | None:
    """The classpath file of Kafka `version`: None for the project's own (`make kafka`);
    another release's resolved with Maven from tests/kafka/pom.xml, once."""
    from tests.fixtures.real_kafka import KAFKA_VERSION, classpath_file

    if version == KAFKA_VERSION:
        return None
    path = classpath_file().with_name(f"kafka-{version}.classpath")
    if not path.is_file():
        pom = Path(__file__).parent.parent / "tests" / "kafka" / "pom.xml"
        done = subprocess.run(
            [
                "mvn",
                "-q",
                "-B",
                "-f",
                str(pom),
                f"-Dkafka.version={version}",
                "dependency:build-classpath",
                f"-Dmdep.outputFile={path}",
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise RuntimeError(f"Kafka {version} not resolved: {done.stdout[-2000:]}")
    return path


class OffsetsMismatchError(RuntimeError):
    """A groupscope contender stored committed offsets other than those produced."""


def stored_offsets(work: Path) -> Offsets:
    """The committed offsets a contender's embedded PostgreSQL (in `work`) holds, as
    `{group: {(topic, partition): offset}}`; deleted (tombstoned) ones left out."""
    from sqlalchemy import text

    from services.store.database import create_store_engine
    from services.store.embedded import EmbeddedPostgres

    with EmbeddedPostgres(work / "data" / "pg") as server:
        engine = create_store_engine(server.uri())
        try:
            with engine.connect() as conn:
                rows = conn.execute(
                    text(
                        "SELECT group_name, topic, partition, committed_offset "
                        "FROM committed_offsets WHERE NOT deleted"
                    )
                ).all()
        finally:
            engine.dispose()
    out: Offsets = {}
    for group, topic, partition, offset in rows:
        out.setdefault(group, {})[(topic, partition)] = offset
    return out


def offset_mismatches(expected: Offsets, stored: Offsets) -> list[str]:
    """Every (group, topic, partition) whose stored offset is not the produced one
    (missing on either side included), one line each, sorted."""
    wrong = []
    for group in sorted(expected.keys() | stored.keys()):
        want, got = expected.get(group, {}), stored.get(group, {})
        for topic, partition in sorted(want.keys() | got.keys()):
            produced, kept = want.get((topic, partition)), got.get((topic, partition))
            if produced != kept:
                wrong.append(f"{group} {topic}[{partition}]: stored {kept}, produced {produced}")
    return wrong


def check_offsets(contender: str, work: Path, records: Records) -> str | None:
    """None when the contender stored every produced final offset and nothing else;
    else what differs, printed in full and summed up in the returned line."""
    wrong = offset_mismatches(records.expected, stored_offsets(work))
    partitions = sum(len(p) for p in records.expected.values())
    if not wrong:
        print(
            f"race: {contender}: committed offsets equal the produced ones "
            f"({len(records.expected):,} groups, {partitions:,} partitions)",
            flush=True,
        )
        return None
    print(f"race: {contender}: {len(wrong):,} committed offsets differ:", flush=True)
    for line in wrong[:20]:
        print(f"  {line}", flush=True)
    if len(wrong) > 20:
        print(f"  ... and {len(wrong) - 20:,} more", flush=True)
    return f"{len(wrong):,} of {partitions:,} committed offsets differ from the produced ones"


def groupscope(source: str, kafka: str, bootstrap: str, work: Path, records: Records) -> Result:
    from benchmarks.bench_stream import (
        batch_lines,
        batch_records,
        batch_seconds,
        logged_at,
        report_throughput,
        run_stream,
    )

    run = run_stream(
        ["--source", source, "--bootstrap-servers", bootstrap, "--topic", TOPIC], work, []
    )
    report_throughput(f"race: groupscope --source {source} on Kafka {kafka}", records.count, run)
    for line in run.log.splitlines():  # each batch, and its second Spark job if it ran one
        if "groupscope.stream batch" in line or "commits around the group records" in line:
            print(f"  {line.split('groupscope.stream ', 1)[1]}", flush=True)
    ends = [logged_at(line) for line in batch_lines(run.log)]
    seconds = batch_seconds(run.log)
    first = ends[0] - seconds[0]
    done = sum(batch_records(run.log))
    error = None if done == records.count else f"read {done:,} of {records.count:,} records"
    wrong = check_offsets(f"groupscope --source {source} on Kafka {kafka}", work, records)
    return Result(
        f"groupscope --source {source}",
        kafka,
        done,
        first - run.started,
        ends[-1] - first,
        run.wall,
        run.cpu,
        run.load,
        run.breakdown,
        "; ".join(e for e in (error, wrong) if e) or None,
        offsets_wrong=wrong is not None,
    )


def burrow(kafka: str, broker: RealKafka, work: Path, records: Records) -> Result:
    try:
        run: BurrowRun = run_burrow(
            work,
            broker.bootstrap_servers,
            TOPIC,
            records.expected,
            records.tails,
            records.oldest_commit_ms,
            broker.log,
        )
    except BurrowUnavailableError as exc:
        print(f"race: Burrow skipped: {exc}", flush=True)
        return Result("Burrow 1.2.1", kafka, 0, None, None, 0.0, 0.0, "", "", str(exc))
    processing = run.last - run.first if run.last is not None and run.first is not None else None
    result = Result(
        "Burrow 1.2.1",
        kafka,
        records.count if run.error is None else 0,
        run.first,
        processing,
        run.wall,
        run.cpu,
        run.load,
        run.breakdown,
        run.error,
    )
    if run.error:
        print(f"race: Burrow on Kafka {kafka} failed: {run.error}", flush=True)
    else:
        print(
            f"race: Burrow on Kafka {kafka}: every group's final offsets shown "
            f"{run.last:.1f}s after launch ({run.first:.1f}s to the first group); "
            f"{result.rate:,.0f} records/s first to last; CPU {run.cpu:.1f}s",
            flush=True,
        )
    for line in run.log.splitlines():
        print(f"  {line}", flush=True)
    return result


def race_on(version: str, root: Path, records: Records, contenders: list[str]) -> list[Result]:
    from benchmarks.bench_stream import produce_tables
    from tests.fixtures.real_kafka import Settings, launch

    directory = root / f"kafka-{version}"
    directory.mkdir()
    broker = launch(directory, Settings(classpath=kafka_classpath(version)))
    results = []
    try:
        broker.create_topic(TOPIC, 50)
        for topic, partitions in records.topics.items():
            broker.create_topic(topic, partitions)
        produce_tables(
            broker.bootstrap_servers,
            TOPIC,
            replay_tables(records.directory),
            records.count,
            f"Apache Kafka {version}",
        )
        for contender in contenders:
            work = root / f"{contender}-{version}"
            if contender == "burrow":
                results.append(burrow(version, broker, work, records))
            else:
                results.append(
                    groupscope(contender, version, broker.bootstrap_servers, work, records)
                )
    finally:
        broker.stop()
    return results


def report(results: list[Result]) -> None:
    print(
        "\ncontender | Kafka | records | start-up | first→last | records/s first→last | "
        "wall | records/s wall | CPU | records/CPU-s | load (first/max/last)"
    )
    for r in results:
        if r.error and not r.processing:
            print(
                f"{r.contender} | {r.kafka} | failed: {r.error.splitlines()[0]} | CPU {r.cpu:.1f}s"
            )
            continue
        print(
            f"{r.contender} | {r.kafka} | {r.records:,} | {r.startup:.1f}s | "
            f"{r.processing:.1f}s | {r.rate:,.0f} | {r.wall:.1f}s | {r.records / r.wall:,.0f} | "
            f"{r.cpu:.1f}s | {r.records / r.cpu:,.0f} | {r.load}"
            + (f" | {r.error}" if r.error else "")
        )
    for r in results:
        print(f"  {r.contender} on {r.kafka}, CPU by process: {r.where}")
    for kafka in dict.fromkeys(r.kafka for r in results):
        done = [r for r in results if r.kafka == kafka and r.processing and not r.error]
        burrows = [r for r in done if r.contender.startswith("Burrow")]
        ours = [r for r in done if r.contender.startswith("groupscope")]
        if not burrows or not ours:
            continue
        b, g = burrows[0], max(ours, key=lambda r: r.rate)
        print(
            f"on Kafka {kafka}, {g.contender} / Burrow: "
            f"{(g.records / g.cpu) / (b.records / b.cpu):.2f}x per CPU-second, "
            f"{(g.records / g.wall) / (b.records / b.wall):.2f}x per wall-second "
            f"(start-up included), {g.rate / b.rate:.2f}x first record to last",
            flush=True,
        )


def race_case(root: Path, total: int) -> None:
    from benchmarks.settings import settings
    from tests.fixtures.real_kafka import KAFKA_VERSION

    contenders = list(settings().stream_sources)
    versions = list(settings().kafka_versions) or [KAFKA_VERSION]
    print(f"machine: {os.cpu_count()} cores; Python {sys.version.split()[0]}", flush=True)
    records = simulate_records(root / "race", total)
    results = []
    for version in versions:
        results += race_on(version, root, records, contenders)
    report(results)
    wrong = [r for r in results if r.offsets_wrong]
    if wrong:
        raise OffsetsMismatchError(
            "the race stored wrong committed offsets: "
            + "; ".join(f"{r.contender} on Kafka {r.kafka}: {r.error}" for r in wrong)
        )
