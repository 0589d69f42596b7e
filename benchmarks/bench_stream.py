"""The streaming job end to end: `python -m benchmarks stream`.

Targets (issue "The streaming job"): >= 500,000 offset-commit records/s end to end
(source -> decode -> PostgreSQL) on local[2], sustained over >= 20 M records; rebalance
analysis of 1,000 groups x 20 members in one batch within a 5 s trigger; driver plus
executors under 4 GB; a restart catches up with the backlog it left within 30 s.

Each run is a fresh `groupscope stream --once` process, so its wall time includes
start-up. The timeline (from the job's own log timestamps) splits it: start-up until the
first batch begins (Python, the embedded PostgreSQL, the JVM, query start), the first
(cold) batch, the later batches, the gaps between batches, and shutdown.

Environment: GROUPSCOPE_BENCH_RECORDS (default 20,000,000), GROUPSCOPE_BENCH_FILES
(records per replay file, default 1,000,000), GROUPSCOPE_BENCH_BACKLOG (records left
behind for the restart case, default 4,000,000), GROUPSCOPE_BENCH_CASES (default
commits,rebalances,restart,broker; `sources` races both Kafka sources and Burrow on
Apache Kafka itself, benchmarks/race.py, with GROUPSCOPE_BENCH_SOURCES and
GROUPSCOPE_BENCH_KAFKA_VERSIONS; `filter`
runs the commits with `--groups-include`/`--groups-exclude` filters keeping all, half
and 1/200 of the groups, to show where a filtered record's cost goes; `backfill` reads
GROUPSCOPE_BENCH_BACKFILL_MINUTES simulated minutes, default 10, as one batch),
GROUPSCOPE_BENCH_COMMIT_SECONDS (unset: the commit times advance 1 ms per 1,000 records,
so that 20M records span 20 s, a minute of history; N: each partition commits every N
seconds, so that with 5 the 20M span 69 minutes and a backlog batch holds each
partition's history of a quarter of an hour, one entry a minute).
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.proctree import Sampler
from benchmarks.race import race_case, simulate_replay
from benchmarks.settings import settings
from services.codec import encode_key, encode_value, partition_for

GROUPS = 2_000
PARTITIONS_PER_GROUP = 12
VALUE = struct.Struct(">hqih0sq")  # v3: version, offset, leader epoch, "" metadata, time


def commit_chunks(total: int, per_chunk: int) -> Iterator[pa.Table]:
    """`total` offset commits over 24,000 (group, topic, partition) keys, in log order,
    as tables of at most `per_chunk` records with the source's row schema; their commit
    times as GROUPSCOPE_BENCH_COMMIT_SECONDS says (see above)."""
    every = settings().commit_seconds
    keys = []
    for g in range(GROUPS):
        group = f"bench-service-{g}-consumer"
        for p in range(PARTITIONS_PER_GROUP):
            key = encode_key("offset_commit", {"group": group, "topic": "events", "partition": p})
            keys.append((partition_for(group), key))
    next_offset = [0] * 50
    written = 0
    base_ms = 1_767_225_600_000
    while written < total:
        n = min(per_chunk, total - written)
        parts, offsets, stamps, ks, vs = [], [], [], [], []
        for i in range(written, written + n):
            source, key = keys[i % len(keys)]
            parts.append(source)
            offsets.append(next_offset[source])
            next_offset[source] += 1
            ms = base_ms + (i // len(keys) * int(every * 1000) if every else i // 1000)
            stamps.append(ms)
            ks.append(key)
            vs.append(VALUE.pack(3, i // len(keys), 7, 0, b"", ms))
        yield pa.table(
            {
                "topic": pa.array(["__consumer_offsets"] * n, pa.string()),
                "partition": pa.array(parts, pa.int32()),
                "offset": pa.array(offsets, pa.int64()),
                "timestamp": pa.array(stamps, pa.timestamp("ms", tz="UTC")),
                "key": pa.array(ks, pa.binary()),
                "value": pa.array(vs, pa.binary()),
            }
        )
        written += n


def write_commits(directory: Path, total: int, per_file: int) -> None:
    """`commit_chunks` as a replay directory, one parquet file per chunk."""
    records = directory / "records"
    records.mkdir(parents=True)
    for i, table in enumerate(commit_chunks(total, per_file)):
        pq.write_table(table, records / f"part-{i:05d}.parquet")


def write_rebalances(directory: Path, groups: int, members: int) -> None:
    """Two generations of `groups` eager groups; a 21st member joins in the second."""

    def member(g: int, m: int, assigned: list[int]) -> dict:
        return {
            "member_id": f"m-{g}-{m}",
            "group_instance_id": None,
            "client_id": f"c-{m}",
            "client_host": f"/10.0.{g % 250}.{m}",
            "rebalance_timeout": 300_000,
            "session_timeout": 45_000,
            "subscription": {
                "version": 3,
                "topics": ["orders"],
                "user_data": None,
                "owned_partitions": [],
                "generation_id": -1,
                "rack_id": None,
            },
            "assignment": {
                "version": 3,
                "user_data": None,
                "assigned_partitions": [{"topic": "orders", "partitions": assigned}],
            },
        }

    partitions = 60
    rows: list[tuple[int, bytes, bytes]] = []
    for g in range(groups):
        group = f"bench-rebalance-{g}"
        for generation, size in ((1, members), (2, members + 1)):
            ms = [member(g, m, list(range(m, partitions, size))) for m in range(size)]
            value = encode_value(
                "group_metadata",
                3,
                {
                    "protocol_type": "consumer",
                    "generation": generation,
                    "protocol": "roundrobin",
                    "leader": ms[0]["member_id"],
                    "current_state_timestamp": generation,
                    "members": ms,
                },
            )
            rows.append(
                (partition_for(group), encode_key("group_metadata", {"group": group}), value)
            )
    offsets = [0] * 50
    out = []
    for source, key, value in rows:
        out.append((source, offsets[source], key, value))
        offsets[source] += 1
    records = directory / "records"
    records.mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "topic": pa.array(["__consumer_offsets"] * len(out)),
                "partition": pa.array([r[0] for r in out], pa.int32()),
                "offset": pa.array([r[1] for r in out], pa.int64()),
                "timestamp": pa.array([0] * len(out), pa.timestamp("ms", tz="UTC")),
                "key": pa.array([r[2] for r in out], pa.binary()),
                "value": pa.array([r[3] for r in out], pa.binary()),
            }
        ),
        records / "part-00000.parquet",
    )


@dataclass
class Run:
    """One `groupscope stream --once` process: wall time, log and peak memory."""

    started: float  # epoch seconds at launch
    wall: float
    log: str
    peak: int
    cpu: float = 0.0  # user + system seconds of the job's process tree (proctree.Sampler)
    load: str = ""  # the machine's 1-minute load average while it ran: first/highest/last
    breakdown: str = ""  # where the CPU went, by process and Java thread (proctree.Sampler)


def replay(capture: Path) -> list[str]:
    return ["--source", "replay", str(capture)]


def run_stream(source: list[str], work: Path, extra: list[str]) -> Run:
    env = {
        **os.environ,
        "GROUPSCOPE_DATA_DIR": str(work / "data"),
        "GROUPSCOPE_SPARK_MASTER": "local[2]",
    }
    launched, started = time.time(), time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "services.cli",
            "stream",
            *source,
            "--once",
            "--checkpoint",
            str(work / "ck"),
            *extra,
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the embedded PostgreSQL's server daemonizes out of the tree: adopted by its data dir
    tree = Sampler(process.pid, root="driver", adopt=str(work / "data"))
    _, err = process.communicate()
    tree.stop()
    if process.returncode:
        raise RuntimeError(err[-3000:])
    wall = time.perf_counter() - started
    return Run(launched, wall, err, tree.peak, tree.cpu, tree.load(), tree.breakdown())


def batch_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if "groupscope.stream batch" in line]


def batch_seconds(log: str) -> list[float]:
    return [float(line.rsplit(" ", 1)[1].rstrip("s")) for line in batch_lines(log)]


def batch_records(log: str) -> list[int]:
    """Records of each batch, as the job logged them."""
    return [int(line.split(": ", 1)[1].split(" ", 1)[0]) for line in batch_lines(log)]


def logged_at(line: str) -> float:
    """Epoch seconds of a log line (`%(asctime)s`, local time, milliseconds)."""
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def timeline(run: Run) -> str:
    """Where the wall time went: start-up, first batch, later batches, gaps, shutdown."""
    ends = [logged_at(line) for line in batch_lines(run.log)]
    seconds = batch_seconds(run.log)
    if not ends:
        return f"no batches in {run.wall:.1f}s"
    starts = [end - s for end, s in zip(ends, seconds, strict=True)]
    store = [logged_at(line) for line in run.log.splitlines() if "history store" in line]
    gaps = [start - end for start, end in zip(starts[1:], ends, strict=False)]
    later = sum(seconds[1:])
    parts = [
        f"start-up {starts[0] - run.started:.1f}s"
        + (f" (embedded PostgreSQL up at {store[0] - run.started:.1f}s)" if store else ""),
        f"first batch {seconds[0]:.1f}s",
        f"{len(seconds) - 1} later batches {later:.1f}s",
        f"gaps between batches {sum(gaps):.1f}s (max {max(gaps, default=0):.2f}s)",
        f"shutdown {run.started + run.wall - ends[-1]:.1f}s",
    ]
    return ", ".join(parts)


def commits_case(root: Path, total: int, per_file: int) -> None:
    """20 M offset commits in batches of 4 files: end to end, and after the first batch."""
    started = time.perf_counter()
    write_commits(root / "commits", total, per_file)
    print(f"wrote {total:,} offset commits in {time.perf_counter() - started:.0f}s", flush=True)
    run = run_stream(replay(root / "commits"), root / "w1", ["--max-files-per-trigger", "4"])
    report_throughput("offset commits end to end (replay)", total, run)


# The commits' groups are bench-service-0-consumer ... bench-service-1999-consumer.
GROUP_FILTERS = [
    ("every group", []),
    ("half (--groups-exclude '[13579]-consumer$')", ["--groups-exclude", "[13579]-consumer$"]),
    ("1/200 (--groups-include '^bench-service-1.-')", ["--groups-include", "^bench-service-1.-"]),
]


def filter_case(root: Path, total: int, per_file: int) -> None:
    """The same commits with and without group filters: what a dropped record still
    costs (read and reduced in Spark, carried to the driver as one row per key) against
    a kept one (decoded, tracked, stored)."""
    write_commits(root / "filtered", total, per_file)
    print("filter | batches after the first | CPU of the job's processes | records filtered")
    for n, (label, flags) in enumerate(GROUP_FILTERS):
        run = run_stream(
            replay(root / "filtered"), root / f"f{n}", ["--max-files-per-trigger", "1", *flags]
        )
        later = batch_seconds(run.log)[1:]
        dropped = sum(
            int(line.split(", ")[2].split(" ")[0])
            for line in batch_lines(run.log)
            if "of filtered groups" in line
        )
        print(
            f"{label}: {sum(later):.1f}s for {len(later)} batches "
            f"({sum(later) / max(len(later), 1):.2f}s each), CPU {run.cpu:.0f}s, "
            f"{dropped:,} filtered",
            flush=True,
        )


def report_throughput(label: str, total: int, run: Run) -> None:
    """Records/s over the wall time (JVM start included), from the first batch's start to
    the last one's end, and over the batches after the first (cold) one. The records are
    those the job logged; a broker whose end offsets fall short (tansu reports the start
    of a partition's last record batch) leaves fewer than `total`."""
    seconds = batch_seconds(run.log)
    records = batch_records(run.log)
    done = sum(records)
    ends = [logged_at(line) for line in batch_lines(run.log)]
    processing = ends[-1] - (ends[0] - seconds[0])
    steady = sum(records[1:]) / sum(seconds[1:]) if len(seconds) > 1 else 0
    print(
        f"{label}: {done / run.wall:,.0f} records/s over {done:,} of {total:,} "
        f"({run.wall:.1f}s wall incl. Spark start); {done / processing:,.0f} records/s from "
        f"the first batch's start to the last one's end ({processing:.1f}s, {len(seconds)} "
        f"batches); after the first batch: {steady:,.0f} records/s; "
        f"peak memory {run.peak / 2**30:.2f} GiB; CPU {run.cpu:.1f}s "
        f"({run.cpu / max(done, 1) * 1e6:.1f} µs a record, start-up included)",
        flush=True,
    )
    print(f"  timeline: {timeline(run)}", flush=True)


def produce_commits(bootstrap: str, topic: str, total: int, broker: str) -> None:
    """`total` offset commits (`commit_chunks`) into a new 50-partition `topic`, each in
    the partition Kafka would keep its group's records in."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 50, 1)]).values():
        future.result(30)
    produce_tables(bootstrap, topic, commit_chunks(total, 1_000_000), total, broker)


def produce_tables(
    bootstrap: str, topic: str, tables: Iterable[pa.Table], total: int, broker: str
) -> None:
    """The records of `tables` (partition, key, value columns) into the existing `topic`,
    each in its partition, in order."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
        }
    )
    started = time.perf_counter()
    for chunk in tables:
        columns = [chunk.column(c).to_pylist() for c in ("partition", "key", "value")]
        for partition, key, value in zip(*columns, strict=True):
            while True:
                try:
                    producer.produce(topic, value, key, partition=partition)
                    break
                except BufferError:
                    producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(300)
    if left:
        raise RuntimeError(f"{left} records not delivered to the broker")
    print(
        f"produced {total:,} records into {broker} in {time.perf_counter() - started:.0f}s",
        flush=True,
    )


def broker_case(root: Path, total: int) -> None:
    """The same commits produced into a 50-partition topic on a real Kafka-protocol broker
    (tansu, in memory, on this machine), then read by the job's own Kafka source."""
    from tests.fixtures.kafka import running_tansu

    topic = "bench-consumer-offsets"
    with running_tansu(root) as bootstrap:
        produce_commits(bootstrap, topic, total, "tansu")
        source = ["--source", "kafka", "--bootstrap-servers", bootstrap, "--topic", topic]
        run = run_stream(source, root / "w4", [])  # the job's default read limit
        report_throughput("offset commits end to end (broker)", total, run)


def restart_case(root: Path, first: int, backlog: int, per_file: int) -> None:
    """A job stops after `first` records while `backlog` more arrive; the restart resumes
    from the checkpoint. Caught up = the restarted `--once` run has processed the whole
    backlog (its last batch is written); the target is 30 s from the restart."""
    staging, capture = root / "restart-all", root / "restart"
    write_commits(staging, first + backlog, per_file)
    files = sorted((staging / "records").iterdir())
    (capture / "records").mkdir(parents=True)
    before = -(-first // per_file)
    for f in files[:before]:
        f.rename(capture / "records" / f.name)
    run_stream(replay(capture), root / "w3", ["--max-files-per-trigger", "4"])
    for f in files[before:]:
        f.rename(capture / "records" / f.name)
    run = run_stream(replay(capture), root / "w3", ["--max-files-per-trigger", "4"])
    ends = [logged_at(line) for line in batch_lines(run.log)]
    caught_up = (ends[-1] - run.started) if ends else float("nan")
    print(
        f"restart with a backlog of {sum(batch_records(run.log)):,} records "
        f"(after {first:,}): caught up {caught_up:.1f}s after the restart "
        f"({len(ends)} batches, {run.wall:.1f}s wall to exit)",
        flush=True,
    )
    print(f"  timeline: {timeline(run)}", flush=True)


def rebalances_case(root: Path) -> None:
    """1,000 groups x 20 members rebalancing in one batch, in a running job: a first batch
    of 200,000 offset commits warms the job up (as any batch before a storm would), then
    the storm arrives as the second batch. The first batch is reported too: a job that
    starts in the middle of a storm pays for its cold start there."""
    capture = root / "rebalances"
    write_rebalances(capture, 1_000, 20)
    storm = capture / "records" / "part-00001-storm.parquet"
    (capture / "records" / "part-00000.parquet").rename(storm)
    write_commits(root / "warm-up", 200_000, 200_000)
    (root / "warm-up" / "records" / "part-00000.parquet").rename(
        capture / "records" / "part-00000-warm-up.parquet"
    )
    later = time.time() + 1  # the file source takes files oldest first
    os.utime(storm, (later, later))
    run = run_stream(replay(capture), root / "w2", ["--max-files-per-trigger", "1"])
    seconds = batch_seconds(run.log)
    print(
        f"1,000 groups x 20 members rebalancing in one batch: {seconds[-1]:.2f}s in a running "
        f"job (after a first batch of 200,000 commits in {seconds[0]:.2f}s, cold); "
        f"peak memory {run.peak / 2**30:.2f} GiB",
        flush=True,
    )
    print(f"  timeline: {timeline(run)}", flush=True)
    alone = root / "rebalances-cold"
    (alone / "records").mkdir(parents=True)
    storm.rename(alone / "records" / storm.name)
    run = run_stream(replay(alone), root / "w2c", [])
    print(
        f"  the same storm as a fresh job's first batch: {batch_seconds(run.log)[0]:.2f}s "
        f"(cold; wall {run.wall:.1f}s incl. Spark start)",
        flush=True,
    )


def backfill_case(root: Path, minutes: int) -> None:
    """A backfill: `minutes` simulated minutes of 2,000 groups (many-groups, 10,000
    commits/s, 5% with a crash) and 100 crash-loop groups (a crash every 30 s), read as
    ONE batch. Such a batch holds many commits of each partition around the group
    records, so the job runs its second Spark job for them (`spark_jobs/evidence.py`);
    its line in the log gives its share."""
    from services.simulator import Params, build

    capture = root / "backfill"
    duration = minutes * 60_000
    specs, _ = build(
        ["many-groups"], Params({"commits_per_second": "10000", "churn": "0.05"}), 2_000
    )
    crashes = str(duration // 30_000)
    specs += build(["crash-loop"], Params({"crashes": crashes}), 100)[0]
    summary = simulate_replay(specs, capture, duration)
    run = run_stream(replay(capture), root / "w6", ["--max-files-per-trigger", "1000"])
    [seconds] = batch_seconds(run.log)
    around = [line for line in run.log.splitlines() if "commits around the group records" in line]
    print(
        f"backfill of {summary['records']:,} records as one batch: {seconds:.1f}s "
        f"({summary['records'] / seconds:,.0f} records/s; wall {run.wall:.1f}s incl. Spark "
        f"start); peak memory {run.peak / 2**30:.2f} GiB; CPU {run.cpu:.1f}s",
        flush=True,
    )
    print(f"  {around[0].split('groupscope.stream ', 1)[1] if around else 'no second job'}")
    print(f"  timeline: {timeline(run)}", flush=True)


def main() -> None:
    chosen = settings()
    total, per_file, backlog = chosen.stream_records, chosen.stream_files, chosen.stream_backlog
    cases = chosen.stream_cases
    with tempfile.TemporaryDirectory(prefix="gs-bench-") as tmp:
        root = Path(tmp)
        if "commits" in cases:
            commits_case(root, total, per_file)
        if "rebalances" in cases:
            rebalances_case(root)
        if "broker" in cases:
            broker_case(root, total)
        if "sources" in cases:
            race_case(root, total)
        if "filter" in cases:
            filter_case(root, total, per_file)
        if "restart" in cases:
            restart_case(root, min(total, 4 * per_file), backlog, per_file)
        if "backfill" in cases:
            backfill_case(root, chosen.backfill_minutes)


if __name__ == "__main__":
    main()
