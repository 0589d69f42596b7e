"""Simulator speed and memory (issue 4).

Targets: at least 200,000 records/s generated into a replay directory on one core, and
the many-groups scenario at 10,000 groups in under 1 GB. Each workload runs in a fresh
Python process pinned to one CPU, so that its peak RSS is its own; the rate counts every
record written over the whole run, setup and the ground truth included.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

WORKER = """
import json, os, resource, sys, time
from services.simulator import Params, ReplayDirectory, build, parse_duration, simulate
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
scenario, groups, duration, fmt, out, settings = json.loads(sys.argv[1])
specs, _ = build(scenario.split(","), Params(settings), groups)
started = time.perf_counter()
summary = simulate(specs, ReplayDirectory(out, fmt=fmt), out, parse_duration(duration), seed=1)
seconds = time.perf_counter() - started
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"records": summary["records"], "seconds": seconds, "rss_mb": rss_mb}))
"""

WORKLOADS = (
    # label, scenario, groups, duration, format, settings
    ("1,000 groups x 500 partitions, 100k commits/s", "many-groups", 1_000, "30s", "parquet", {}),
    ("10,000 groups x 50 partitions, 100k commits/s", "many-groups", 10_000, "1m", "parquet", {}),
    ("10,000 groups, 5 min simulated (memory)", "many-groups", 10_000, "5m", "parquet", {}),
    ("1,000 groups x 500 partitions, JSON Lines", "many-groups", 1_000, "30s", "jsonl", {}),
    ("mixed x 100 (rebalance-heavy)", "mixed", 100, "10m", "parquet", {}),
)


def _measure(scenario: str, groups: int, duration: str, fmt: str, settings: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="groupscope-bench-") as out:
        args = json.dumps([scenario, groups, duration, fmt, out, settings])
        done = subprocess.run(
            [sys.executable, "-c", WORKER, args], capture_output=True, text=True, check=True
        )
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    print(f"  {'workload':<48} {'records':>11} {'seconds':>8} {'records/s':>10} {'peak RSS':>9}")
    for label, scenario, groups, duration, fmt, settings in WORKLOADS:
        m = _measure(scenario, groups, duration, fmt, settings)
        rate = m["records"] / m["seconds"]
        print(
            f"  {label:<48} {m['records']:>11,} {m['seconds']:>8.1f} {rate:>10,.0f}"
            f" {m['rss_mb']:>6,.0f} MB",
            flush=True,
        )
    print("  targets: >= 200,000 records/s; 10,000 groups under 1 GB peak RSS")


if __name__ == "__main__":
    main()
