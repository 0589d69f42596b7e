"""Exporter at scale: 10,000 groups x 50 partitions (issue 7: scrape < 1 s, < 500 MB).

The store (embedded PostgreSQL) is filled by a child process, so that this process holds
only what the exporter holds. Every group has a generation of 5 members and its own
50-partition topic (500,000 distinct partitions: the worst case for the lag history);
one group in ten has two rebalances. Log-end offsets come from a synthetic function
(committed offset plus a random lag that grows every poll): no broker here holds
500,000 partitions, and the request path is measured against a real broker in the
tests. It measures:
- a refresh: the store snapshot, the lag over all partitions, and the rendering;
- a scrape of /metrics over HTTP, plain and gzip (what Prometheus sends);
- peak RSS of the process after three refreshes;
- then the series published with `--groups-include`/`--groups-exclude` filters that keep
  a tenth and a hundredth of the groups, with and without `--per-partition`, and the
  refresh time of each (docs/operations.md, "Fleets of groups").
Set GROUPSCOPE_BENCH_DATABASE_URL to use an external server.
"""

from __future__ import annotations

import gzip
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from benchmarks.settings import settings

PARTITIONS = 50
MEMBERS = 5


def fill(url: str) -> None:
    """Write the groups, generations, rebalances and offsets (run in a child process)."""
    from services.store.batch import BatchWrite, Churn, Generation, Member, OffsetCommit
    from services.store.database import create_store_engine
    from services.store.migrate import upgrade
    from services.store.repository import HistoryStore

    upgrade(url)
    store = HistoryStore(create_store_engine(url))
    now = datetime.now(UTC)
    per_batch = 1000
    position = 0
    for first in range(0, settings().exporter_groups, per_batch):
        generations, offsets = [], []
        for g in range(first, min(first + per_batch, settings().exporter_groups)):
            name, topic = f"group-{g:05d}", f"topic-{g:05d}"
            members = [
                Member(
                    f"consumer-{m}-{g}",
                    client_id=f"app-{g}",
                    client_host=f"/10.0.{m}.{g % 250}",
                    subscribed_topics=(topic,),
                    assignment={topic: list(range(m, PARTITIONS, MEMBERS))},
                )
                for m in range(MEMBERS)
            ]
            count = 3 if g % 10 == 0 else 1
            for gen in range(1, count + 1):
                position += 1
                churn = None
                if gen > 1:
                    churn = Churn(gen - 1, position - 1, 1, 1, 12, 12, 12, 8, 10, "sticky", 10)
                generations.append(
                    Generation(
                        name,
                        gen,
                        source_partition=g % 50,
                        source_offset=position,
                        source_time=now - timedelta(minutes=30 - gen),
                        members=members,
                        assignor="range",
                        leader=members[0].member_id,
                        rebalance=churn,
                    )
                )
            for p in range(PARTITIONS):
                position += 1
                offsets.append(
                    OffsetCommit(name, topic, p, 1_000_000 + p, g % 50, position, commit_time=now)
                )
        store.write_batch(
            BatchWrite(first // per_batch, "__consumer_offsets", now, offsets, (), generations)
        )


class GrowingLog:
    """Synthetic log-end offsets: every poll, each partition gains 0-99 records."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(1)
        self.ends: np.ndarray | None = None

    def __call__(self, topics: list[str], topic_index: np.ndarray, partitions: np.ndarray):
        if self.ends is None or len(self.ends) != len(partitions):
            self.ends = 1_000_000 + partitions.astype(np.int64)
        self.ends = self.ends + self.rng.integers(0, 100, len(partitions))
        return self.ends


def scrape(port: int, gzipped: bool) -> tuple[float, int, int]:
    headers = {"Accept-Encoding": "gzip"} if gzipped else {}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as response:
        body = response.read()
    elapsed = time.perf_counter() - started
    size = len(body)
    if gzipped:
        body = gzip.decompress(body)
    return elapsed, size, body.count(b"\n")


def measure(url: str) -> None:
    from services.exporter.app import Exporter, ExporterConfig
    from services.store.clusters import DEFAULT_CLUSTER
    from services.store.database import create_store_engine

    engine = create_store_engine(url)
    exporter = Exporter(
        ExporterConfig(host="127.0.0.1", port=0), engine, {DEFAULT_CLUSTER: GrowingLog()}
    )
    started = time.perf_counter()
    exporter.start()
    print(f"first refresh (start): {time.perf_counter() - started:.2f}s")
    for _ in range(2):
        started = time.perf_counter()
        exporter.refresh()
        print(
            f"refresh: {time.perf_counter() - started:.2f}s "
            f"({exporter.exposition.samples} samples, "
            f"{len(exporter.exposition.plain) / 1e6:.1f} MB text)"
        )
    for gzipped in (False, True, False, True):
        elapsed, size, lines = scrape(exporter.port, gzipped)
        kind = "gzip " if gzipped else "plain"
        print(
            f"scrape {kind}: {elapsed * 1000:.0f} ms, {size / 1e6:.1f} MB on the wire, "
            f"{lines} lines"
        )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the exporter process: {rss:.0f} MB")
    print(f"lag history: {len(exporter.history)} partitions x {exporter.history.depth} samples")
    exporter.stop()
    filtered(engine)
    engine.dispose()


# Group names are group-00000 ...: "0$" keeps one in ten, as "[1-9]$" drops nine in
# ten; "00$" keeps one in a hundred.
FILTERS = [
    ("every group", [], []),
    ("--groups-include 0$", ["0$"], []),
    ("--groups-exclude [1-9]$", [], ["[1-9]$"]),
    ("--groups-include 00$", ["00$"], []),
]


def filtered(engine) -> None:
    """Series published under each of FILTERS, per group and per partition."""
    import logging

    from services.exporter.app import Exporter, ExporterConfig
    from services.groupfilter import GroupFilter
    from services.store.clusters import DEFAULT_CLUSTER

    logging.getLogger("groupscope.exporter").setLevel(logging.ERROR)  # "not ready": no job
    print("filter                  | groups | series (refresh) | --per-partition (refresh)")
    for name, include, exclude in FILTERS:
        cells = []
        for per_partition in (False, True):
            config = ExporterConfig(
                per_partition=per_partition, groups=GroupFilter.of(include, exclude)
            )
            exporter = Exporter(config, engine, {DEFAULT_CLUSTER: GrowingLog()})
            exporter.refresh()
            started = time.perf_counter()
            exporter.refresh()
            elapsed = time.perf_counter() - started
            kept = exporter.exposition.plain.count(b"\ngroupscope_group_info{")
            cells.append(f"{exporter.exposition.samples:>9,} ({elapsed:.2f}s)")
        print(f"{name:23s} | {kept:6d} | {cells[0]:>16s} | {cells[1]:>25s}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--fill":
        fill(sys.argv[2])
        return
    external = settings().database_url
    with tempfile.TemporaryDirectory() as tmp:
        if external:
            url, server = external, None
        else:
            from services.store.embedded import EmbeddedPostgres

            server = EmbeddedPostgres(Path(tmp) / "pg")
            url = server.start()
        try:
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "benchmarks.bench_exporter", "--fill", url], check=True
            )
            print(
                f"filled {settings().exporter_groups} groups x {PARTITIONS} partitions in "
                f"{time.perf_counter() - started:.1f}s"
            )
            measure(url)
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
