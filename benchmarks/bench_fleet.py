"""A fleet of 100,000 groups through job, store, query commands and exporter:
`python -m benchmarks fleet`.

Issue 18's scale target: the simulator's `many-groups` scenario with 100,000 groups
(GROUPSCOPE_BENCH_FLEET_GROUPS) of 3 members, a topic each (`--set topics=N`: 500,000
distinct partitions at the default 100,000 commits/s, the exporter's worst case),
simulated for GROUPSCOPE_BENCH_FLEET_MINUTES (default 2), then:
1. the job: `groupscope stream --source replay --once` into a running embedded
   PostgreSQL, in batches of about a simulated minute. It keeps up when it stores a
   batch in less time than the simulated cluster took to write it; the first batch holds
   every group's first join;
2. the query commands, each a fresh `groupscope` process (Python's start-up included),
   three times: `postmortem` and `owner` of the group with the most rebalances, and
   `storms` over the whole fleet (target: each under 1 s);
3. the exporter, in a child process so that its peak RSS is the exporter's alone, with
   synthetic log ends (`bench_exporter.GrowingLog`: no broker here holds 500,000
   partitions): three refreshes, scrapes plain and gzip (target: under 1 s and 500 MB),
   `lag-status` of every group and of one; then the same with `--groups-include` keeping
   a tenth, and a hundredth, of the groups.
GROUPSCOPE_BENCH_DATABASE_URL: an external PostgreSQL (an empty database) instead.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.bench_stream import (
    batch_records,
    batch_seconds,
    replay,
    report_throughput,
    run_stream,
)
from benchmarks.race import simulate_replay
from benchmarks.settings import settings

RUNS = 3
# Replay files hold 1M records: 6 a batch is about a minute of the fleet's commits, what a
# live job's batches grow to when each partition's commits of a minute are one row.
FILES_PER_BATCH = 6
# Group names are many-groups-00000 ...: "0$" keeps one in ten, "00$" one in a hundred.
FILTERS = [("every group", []), ("--groups-include 0$", ["0$"]), ("--groups-include 00$", ["00$"])]


def simulate(root: Path, groups: int, minutes: int) -> dict:
    from services.simulator import Params, build

    specs, _ = build(["many-groups"], Params({"topics": str(groups)}), groups)
    return simulate_replay(specs, root, minutes * 60_000)


def busiest(root: Path) -> tuple[str, int, int]:
    """The group with the most rebalance episodes, and the times (ms) of its first two
    generations (the owner query asks between them)."""
    counts: dict[str, int] = {}
    for line in (root / "truth" / "rebalances.jsonl").read_text().splitlines():
        row = json.loads(line)
        counts[row["group"]] = counts.get(row["group"], 0) + 1
    group = max(sorted(counts), key=lambda g: counts[g])
    times = sorted(
        row["time"]
        for row in map(json.loads, (root / "truth" / "generations.jsonl").read_text().splitlines())
        if row["group"] == group
    )
    return group, times[0], times[1] if len(times) > 1 else times[0] + 1000


def timed_command(args: list[str], answer: str = "") -> tuple[list[float], int]:
    """Wall seconds of RUNS fresh `groupscope` processes, and the last one's output lines.
    A failure with `answer` in its message is an answer too (lag-status of a group
    whose windows are not yet full)."""
    seconds, lines = [], 0
    for _ in range(RUNS):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "services.cli", *args], capture_output=True, text=True
        )
        seconds.append(time.perf_counter() - started)
        if done.returncode and not (answer and answer in done.stderr):
            raise RuntimeError(f"groupscope {' '.join(args)}: {done.stderr[-2000:]}")
        lines = done.stdout.count("\n")
    return seconds, lines


def report_command(label: str, args: list[str]) -> None:
    seconds, lines = timed_command(args)
    print(
        f"  {label}: median {statistics.median(seconds):.2f}s, max {max(seconds):.2f}s "
        f"({lines:,} lines of output)",
        flush=True,
    )


def queries(url: str, root: Path) -> None:
    group, first, second = busiest(root)
    at = datetime.fromtimestamp((first + second) / 2000, UTC).isoformat()
    topic = f"orders-{int(group.rsplit('-', 1)[1]):05d}"
    db = ["--database-url", url]
    print(f"query commands, {RUNS} fresh processes each (Python start-up included):")
    report_command(f"postmortem {group}", ["postmortem", group, *db])
    report_command(f"postmortem {group} --json", ["postmortem", group, "--json", *db])
    report_command(f"owner {topic} 0 --at {at}", ["owner", topic, "0", "--at", at, *db])
    report_command("storms (every group, whole history)", ["storms", *db])
    report_command(
        "storms --min-rebalances 2 --json", ["storms", "--min-rebalances", "2", "--json", *db]
    )
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import services.cli"], check=True)
    print(f"  (a bare `import services.cli`: {time.perf_counter() - started:.2f}s)", flush=True)


def peak_rss_mb() -> float:
    """This process's peak RSS since its exec (VmHWM): `getrusage`'s ru_maxrss would
    count the parent's before the fork (the simulation's gigabytes)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def exporter_child(url: str, include: list[str], group: str) -> None:
    """Serve the store as the exporter does; print its figures as one JSON line."""
    import logging

    from benchmarks.bench_exporter import GrowingLog, scrape
    from services.exporter.app import Exporter, ExporterConfig
    from services.groupfilter import GroupFilter
    from services.store.clusters import DEFAULT_CLUSTER
    from services.store.database import create_store_engine

    logging.getLogger("groupscope.exporter").setLevel(logging.ERROR)  # "not ready": no job
    engine = create_store_engine(url)
    config = ExporterConfig(host="127.0.0.1", port=0, groups=GroupFilter.of(include, []))
    exporter = Exporter(config, engine, {DEFAULT_CLUSTER: GrowingLog()})
    started = time.perf_counter()
    exporter.start()
    refreshes = [time.perf_counter() - started]
    for _ in range(2):
        started = time.perf_counter()
        exporter.refresh()
        refreshes.append(time.perf_counter() - started)
    plain = [scrape(exporter.port, False) for _ in range(RUNS)]
    gzipped = [scrape(exporter.port, True) for _ in range(RUNS)]
    status = ["lag-status", "--exporter", f"http://127.0.0.1:{exporter.port}"]
    every, every_lines = timed_command(status)
    # Three refreshes of an unchanging store fill no window of 10 commits: the answer is
    # "no partition with a lag status", found in the same /status?group= lookup.
    one = (
        timed_command([*status, group], "no partition with a lag status")[0] if not include else []
    )
    figures = {
        "refreshes": refreshes,
        "samples": exporter.exposition.samples,
        "plain": [s for s, _, _ in plain],
        "plain_bytes": plain[0][1],
        "gzip": [s for s, _, _ in gzipped],
        "gzip_bytes": gzipped[0][1],
        "lag_status_every": every,
        "lag_status_lines": every_lines,
        "lag_status_one": one,
        "peak_rss_mb": peak_rss_mb(),
    }
    exporter.stop()
    engine.dispose()
    print(json.dumps(figures), flush=True)


def exporter_runs(url: str, root: Path) -> None:
    group, _, _ = busiest(root)
    print("exporter, a child process each, synthetic log ends:")
    for label, include in FILTERS:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_fleet", "--exporter", url, group, *include],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise RuntimeError(done.stderr[-3000:])
        f = json.loads(done.stdout.strip().splitlines()[-1])
        refreshes = ", ".join(f"{s:.1f}" for s in f["refreshes"])
        print(
            f"  {label}: {f['samples']:,} samples; refreshes {refreshes}s; scrape plain "
            f"{max(f['plain']) * 1000:.0f} ms at most ({f['plain_bytes'] / 1e6:.1f} MB), gzip "
            f"{max(f['gzip']) * 1000:.0f} ms ({f['gzip_bytes'] / 1e6:.1f} MB); peak RSS "
            f"{f['peak_rss_mb']:.0f} MB",
            flush=True,
        )
        line = (
            f"    lag-status (every group, {f['lag_status_lines']:,} lines): median "
            f"{statistics.median(f['lag_status_every']):.2f}s"
        )
        if f["lag_status_one"]:
            line += f"; lag-status {group}: median {statistics.median(f['lag_status_one']):.2f}s"
        print(line, flush=True)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--exporter":
        exporter_child(sys.argv[2], sys.argv[4:], sys.argv[3])
        return
    from services.store.embedded import EmbeddedPostgres

    groups, minutes = settings().fleet_groups, settings().fleet_minutes
    with tempfile.TemporaryDirectory(prefix="gs-fleet-") as tmp:
        root = Path(tmp)
        capture = root / "fleet"
        summary = simulate(capture, groups, minutes)
        produced = summary["records"] / (minutes * 60)
        print(f"the simulated cluster wrote {produced:,.0f} records/s", flush=True)
        work = root / "job"
        external = settings().database_url
        server = None if external else EmbeddedPostgres(work / "data" / "pg-fleet")
        url = external or server.start()
        try:
            run = run_stream(
                replay(capture),
                work,
                ["--database-url", url, "--max-files-per-trigger", str(FILES_PER_BATCH)],
            )
            report_throughput(f"the job, {groups:,} groups", summary["records"], run)
            for i, (n, seconds) in enumerate(
                zip(batch_records(run.log), batch_seconds(run.log), strict=True)
            ):
                print(
                    f"  batch {i}: {n:,} records, {n / produced:.0f}s of the cluster's "
                    f"production, in {seconds:.1f}s",
                    flush=True,
                )
            queries(url, capture)
            exporter_runs(url, capture)
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
