"""What a prune costs: `groupscope db prune` on days of history, while a job writes.

Fills the embedded PostgreSQL (at migration 0008) with full UTC days before today of
offset history (`GROUPSCOPE_BENCH_PRUNE_DAYS`), groups x 10 partitions
(`GROUPSCOPE_BENCH_PRUNE_GROUPS`), one row per group and minute (what
a group committing at least once a minute leaves: 1,440 rows a day, each with its 10
partitions' entries), written with SQL for speed, plus 24 generations of 20 members a
group and day, and times the upgrade to head (migration 0009 moves every row of the
offset history into day partitions). Then prunes with a retention of one day: the days
before yesterday are dropped whole, yesterday's rows before this time of day are
deleted row by row, and so are the older generations with their members.

While it prunes, a writer thread stands in for the live job: it writes a batch of 1,000
commits of today through `HistoryStore.write_batch` every 0.2 s; the figures say how
long its batches took before and during the prune (the locks a prune takes are what
could hold them up). Each dropped partition's time is the time its transaction held
`offset_history` exclusively.

`GROUPSCOPE_BENCH_PRUNE_GROUPS` (default 100) and `GROUPSCOPE_BENCH_PRUNE_DAYS` (default
8) scale it; `GROUPSCOPE_BENCH_DATABASE_URL` measures an external server.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, text

from benchmarks.bench_sizing import table_bytes
from benchmarks.bench_store import bench_database
from benchmarks.settings import settings
from services.store.batch import BatchWrite, OffsetCommit
from services.store.database import create_store_engine
from services.store.migrate import upgrade
from services.store.partitions import ensure_days
from services.store.repository import HistoryStore
from services.store.retention import prune

GENERATIONS_A_DAY = 24
MEMBERS = 20

FILL_DAY = """
INSERT INTO offset_history
SELECT 'group-' || lpad(g::text, 4, '0'), m,
    array_fill('orders'::text, ARRAY[10]), '{0,1,2,3,4,5,6,7,8,9}'::int[],
    array_fill(extract(epoch FROM m)::bigint * 7 + g, ARRAY[10]), array_fill(m, ARRAY[10]),
    array_fill(extract(epoch FROM m)::bigint * 1000 + g, ARRAY[10]), array_fill(12, ARRAY[10])
FROM generate_series(0, :groups - 1) g,
     generate_series(CAST(:day AS timestamptz), CAST(:day AS timestamptz) + interval '1439 minutes',
                     interval '1 minute') m
"""
FILL_GENERATIONS = """
WITH made AS (
    INSERT INTO generations (group_name, generation, time, member_count, source_partition,
        source_offset, source_timestamp, batch_id, assignor)
    SELECT 'group-' || lpad(g::text, 4, '0'), n, CAST(:day AS timestamptz) + n * interval '1 hour',
        20, g % 50, :base + g * 100 + n, CAST(:day AS timestamptz) + n * interval '1 hour', 1,
        'range'
    FROM generate_series(0, :groups - 1) g, generate_series(0, 23) n
    RETURNING id
)
INSERT INTO generation_members (generation_pk, member_id, client_id, client_host,
    subscribed_topics, assignment)
SELECT id, 'consumer-' || m || '-6f1c2a7e-1d55-4a4b-9d1c-' || id, 'consumer-' || m,
    '/10.0.0.' || m, '{orders}', json_build_object('orders', json_build_array(m))
FROM made, generate_series(0, 19) m
"""


def fill(engine: Engine, groups: int, days: list[datetime]) -> None:
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO groups (name, first_seen, last_seen) SELECT "
                "'group-' || lpad(g::text, 4, '0'), now(), now() "
                "FROM generate_series(0, :groups - 1) g"
            ),
            {"groups": groups},
        )
    for i, day in enumerate(days):
        with engine.begin() as conn:
            conn.execute(text(FILL_DAY), {"groups": groups, "day": day})
            base = (i + 1) * 1_000_000
            conn.execute(text(FILL_GENERATIONS), {"groups": groups, "day": day, "base": base})
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))


class Writer(threading.Thread):
    """A live job's batches: 1,000 commits of now every 0.2 s, each batch's time kept."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(daemon=True)
        self.store = HistoryStore(engine)
        self.stop = threading.Event()
        self.timings: list[tuple[float, float]] = []  # (start, seconds)
        self.batch = 0

    def run(self) -> None:
        while not self.stop.wait(0.2):
            self.batch += 1
            now, position = datetime.now(UTC), self.batch * 1_000
            commits = [
                OffsetCommit(
                    f"live-{g:03d}", "orders", p, self.batch, 3, position + g * 10 + p, now
                )
                for g in range(100)
                for p in range(10)
            ]
            started = time.monotonic()
            self.store.write_batch(BatchWrite(self.batch, "bench", now, offsets=commits))
            self.timings.append((started, time.monotonic() - started))


def main() -> None:
    groups, days_count = settings().prune_groups, settings().prune_days
    now = datetime.now(UTC)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    days = [today - timedelta(days=d) for d in range(days_count, 0, -1)]
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with bench_database() as url:
        # Filled at 0008, then upgraded: migration 0009 moves the rows into partitions.
        upgrade(url, "0008")
        engine = create_store_engine(url)
        try:
            started = time.perf_counter()
            fill(engine, groups, days)
            filled = time.perf_counter() - started
            started = time.perf_counter()
            upgrade(url)
            print(f"migration 0009: {time.perf_counter() - started:.1f}s")
            ensure_days(engine, [today.date()])
            with engine.connect() as conn:  # the row estimates, as autovacuum would
                conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE"))
            with engine.connect() as conn:
                size = table_bytes(conn, "offset_history")
            rows = groups * 1_440 * days_count
            print(
                f"filled {days_count} days x {groups} groups x 10 partitions: {rows:,} offset "
                f"history rows ({int(size) / 2**20:,.0f} MiB), "
                f"{groups * GENERATIONS_A_DAY * days_count:,} generations of {MEMBERS} members, "
                f"in {filled:.1f}s"
            )
            writer = Writer(engine)
            writer.start()
            time.sleep(5)
            marks: list[tuple[float, str, float]] = []
            prune_started = time.monotonic()
            report = prune(
                engine,
                now - timedelta(days=1),
                progress=lambda table, n, f: marks.append((time.monotonic(), table, f)),
            )
            prune_ended = time.monotonic()
            time.sleep(2)
            writer.stop.set()
            writer.join()
        finally:
            engine.dispose()
    # Each mark ends a transaction: a dropped partition (fraction 0) or a delete.
    steps = [
        (end - start, table, fraction)
        for (start, _, _), (end, table, fraction) in zip(
            [(prune_started, "", 0.0), *marks], marks, strict=False
        )
    ]
    drop_times = [seconds for seconds, _, fraction in steps if fraction == 0.0]
    print(report.summary())
    print(
        f"partitions dropped: {len(report.partitions)}, each in "
        f"{min(drop_times) * 1000:.0f}-{max(drop_times) * 1000:.0f} ms "
        f"(median {statistics.median(drop_times) * 1000:.0f} ms)"
        if drop_times
        else "no partition dropped"
    )
    for table in sorted({table for _, table, fraction in steps if fraction > 0}):
        deletes = [s for s, t, fraction in steps if t == table and fraction > 0]
        print(
            f"{table}: {len(deletes)} delete transaction(s), {sum(deletes):.2f}s in all, "
            f"the longest {max(deletes):.2f}s"
        )
    before = [s for at, s in writer.timings if at < prune_started]
    during = [s for at, s in writer.timings if prune_started <= at < prune_ended]
    for name, timing in (("before", before), ("during", during)):
        if timing:
            print(
                f"writer's batches {name} the prune: {len(timing)}, median "
                f"{statistics.median(timing) * 1000:.0f} ms, longest {max(timing) * 1000:.0f} ms"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
