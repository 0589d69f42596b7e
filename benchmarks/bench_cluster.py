"""The price of distribution: `python -m benchmarks cluster`.

The same replay records through `groupscope stream --once` in local mode (`local[2]`)
and on a Spark standalone cluster of one and of two workers (one core and 1 GB each, on
this machine: `tests/fixtures/spark_cluster.py`), the driver beside them. Two cases:

- throughput: GROUPSCOPE_BENCH_CLUSTER_RECORDS offset commits (default 4,000,000) in
  batches of 1M, records/s from the first batch's start to the last one's end, and
  over the batches after the first (cold) one;
- per-batch overhead: 10 batches of 1,000 records, the median batch duration (planning,
  scheduling tasks on executors, the shuffle, the store's transaction).

On one machine the workers share its cores with the driver: the figures show what a
cluster costs, not what more machines would give.
"""

from __future__ import annotations

import os
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.bench_stream import (
    batch_lines,
    batch_records,
    batch_seconds,
    logged_at,
    replay,
    run_stream,
    timeline,
    write_commits,
)
from benchmarks.settings import settings
from tests.fixtures.spark_cluster import StandaloneCluster

SMALL_BATCHES, SMALL_RECORDS = 10, 1_000


def measure(label: str, root: Path, master: list[str]) -> None:
    total = settings().cluster_records
    work = root / label.replace(" ", "-").replace("[", "").replace("]", "")
    run = run_stream(replay(root / "big"), work / "big", [*master, "--max-files-per-trigger", "2"])
    seconds, records = batch_seconds(run.log), batch_records(run.log)
    ends = [logged_at(line) for line in batch_lines(run.log)]
    processing = ends[-1] - (ends[0] - seconds[0])
    steady = sum(records[1:]) / sum(seconds[1:]) if len(seconds) > 1 else 0.0
    print(
        f"{label}: {sum(records):,} of {total:,} records, {sum(records) / processing:,.0f}/s "
        f"from the first batch's start to the last one's end ({processing:.1f}s, "
        f"{len(seconds)} batches), {steady:,.0f}/s after the first, {run.wall:.1f}s wall",
        flush=True,
    )
    print(f"  timeline: {timeline(run)}", flush=True)
    small = run_stream(
        replay(root / "small"), work / "small", [*master, "--max-files-per-trigger", "1"]
    )
    durations = batch_seconds(small.log)
    print(
        f"  per-batch overhead: median {statistics.median(durations[1:]):.2f}s a batch of "
        f"{SMALL_RECORDS:,} records (min {min(durations[1:]):.2f}s, first "
        f"{durations[0]:.2f}s, {len(durations)} batches)",
        flush=True,
    )


def main() -> None:
    total = settings().cluster_records
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="groupscope-bench-cluster-") as tmp:
        root = Path(tmp)
        write_commits(root / "big", total, 500_000)
        write_commits(root / "small", SMALL_BATCHES * SMALL_RECORDS, SMALL_RECORDS)
        measure("local[2]", root, ["--master", "local[2]"])
        for workers in (1, 2):
            directory = root / f"cluster-{workers}"
            directory.mkdir()
            cluster = StandaloneCluster(directory, workers=workers)
            started = time.perf_counter()
            try:
                cluster.start()
                print(f"cluster of {workers} up in {time.perf_counter() - started:.1f}s")
                measure(
                    f"{workers} worker{'s' if workers > 1 else ''}",
                    root,
                    ["--master", cluster.master_url],
                )
            finally:
                cluster.stop()
