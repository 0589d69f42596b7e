"""The streaming job end to end: `python -m benchmarks stream`.

Targets (issue "The streaming job"): >= 500,000 offset-commit records/s end to end
(source -> decode -> PostgreSQL) on local[2], sustained over >= 20 M records; rebalance
analysis of 1,000 groups x 20 members in one batch within a 5 s trigger; driver plus
executors under 4 GB.

Environment: GROUPSCOPE_BENCH_RECORDS (default 20,000,000), GROUPSCOPE_BENCH_FILES
(records per replay file, default 1,000,000).
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from services.codec import encode_key, encode_value, partition_for

GROUPS = 2_000
PARTITIONS_PER_GROUP = 12
VALUE = struct.Struct(">hqih0sq")  # v3: version, offset, leader epoch, "" metadata, time


def write_commits(directory: Path, total: int, per_file: int) -> None:
    """`total` offset commits over 24,000 (group, topic, partition) keys, in log order."""
    keys = []
    for g in range(GROUPS):
        group = f"bench-service-{g}-consumer"
        for p in range(PARTITIONS_PER_GROUP):
            key = encode_key("offset_commit", {"group": group, "topic": "events", "partition": p})
            keys.append((partition_for(group), key))
    records = directory / "records"
    records.mkdir(parents=True)
    next_offset = [0] * 50
    written = 0
    base_ms = 1_767_225_600_000
    while written < total:
        n = min(per_file, total - written)
        parts, offsets, stamps, ks, vs = [], [], [], [], []
        for i in range(written, written + n):
            source, key = keys[i % len(keys)]
            parts.append(source)
            offsets.append(next_offset[source])
            next_offset[source] += 1
            stamps.append(base_ms + i // 1000)
            ks.append(key)
            vs.append(VALUE.pack(3, i // len(keys), 7, 0, b"", base_ms + i // 1000))
        table = pa.table(
            {
                "topic": pa.array(["__consumer_offsets"] * n, pa.string()),
                "partition": pa.array(parts, pa.int32()),
                "offset": pa.array(offsets, pa.int64()),
                "timestamp": pa.array(stamps, pa.timestamp("ms", tz="UTC")),
                "key": pa.array(ks, pa.binary()),
                "value": pa.array(vs, pa.binary()),
            }
        )
        pq.write_table(table, records / f"part-{written // per_file:05d}.parquet")
        written += n


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


class PeakMemory(threading.Thread):
    """Peak RSS of a process and its children (the JVM, Python workers), from /proc."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0, True

    def tree(self) -> list[int]:
        out = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(self.pid)], capture_output=True, text=True
        ).stdout.split()
        pids = [self.pid]
        for child in map(int, out):
            pids += PeakMemory(child).tree()
        return pids

    def run(self) -> None:
        while self.running:
            total = 0
            for pid in self.tree():
                try:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1]) * 1024
                except OSError:
                    pass
            self.peak = max(self.peak, total)
            time.sleep(0.5)


def run_stream(capture: Path, work: Path, extra: list[str]) -> tuple[float, str, int]:
    env = {
        **os.environ,
        "GROUPSCOPE_DATA_DIR": str(work / "data"),
        "GROUPSCOPE_MASTER": "local[2]",
        "GROUPSCOPE_SPARK_MASTER": "local[2]",
    }
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "services.cli",
            "stream",
            "--source",
            "replay",
            str(capture),
            "--once",
            "--checkpoint",
            str(work / "ck"),
            *extra,
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    memory = PeakMemory(process.pid)
    memory.start()
    _, err = process.communicate()
    memory.running = False
    if process.returncode:
        raise RuntimeError(err[-3000:])
    return time.perf_counter() - started, err, memory.peak


def batch_seconds(log: str) -> list[float]:
    return [
        float(line.rsplit(" ", 1)[1].rstrip("s"))
        for line in log.splitlines()
        if "groupscope.stream batch" in line
    ]


def main() -> None:
    total = int(os.environ.get("GROUPSCOPE_BENCH_RECORDS", "20000000"))
    per_file = int(os.environ.get("GROUPSCOPE_BENCH_FILES", "1000000"))
    with tempfile.TemporaryDirectory(prefix="gs-bench-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        write_commits(root / "commits", total, per_file)
        print(f"wrote {total:,} offset commits in {time.perf_counter() - started:.0f}s", flush=True)
        wall, log, peak = run_stream(
            root / "commits", root / "w1", ["--max-files-per-trigger", "4"]
        )
        seconds = batch_seconds(log)
        steady = sum(seconds[1:]) or sum(seconds)
        print(
            f"offset commits end to end: {total / wall:,.0f} records/s over {total:,} "
            f"({wall:.1f}s wall incl. Spark start); batches: {len(seconds)}, "
            f"{sum(seconds):.1f}s in batches, after the first: "
            f"{total * (len(seconds) - 1) / max(len(seconds), 1) / steady:,.0f} records/s; "
            f"peak memory {peak / 2**30:.2f} GiB",
            flush=True,
        )

        write_rebalances(root / "rebalances", 1_000, 20)
        wall, log, peak = run_stream(root / "rebalances", root / "w2", [])
        print(
            f"1,000 groups x 20 members rebalancing in one batch: batch "
            f"{batch_seconds(log)} s (wall {wall:.1f}s incl. Spark start), "
            f"peak memory {peak / 2**30:.2f} GiB",
            flush=True,
        )


if __name__ == "__main__":
    main()
