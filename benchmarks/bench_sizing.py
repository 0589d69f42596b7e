"""How much disk the history store takes: bytes per stored fact, and per day.

Writes through `HistoryStore.write_batch` (as the job does) into the embedded PostgreSQL
and measures the database's growth (`pg_database_size` after `VACUUM`, so dead tuples
of updated rows are counted as the space they keep):

- **offset commits**: 1,000 groups x 10 partitions, one commit per partition per
  micro-batch (the job keeps a partition's latest commit of a batch), 100 batches: one
  million stored commits. They land in `committed_offsets` (one row per partition,
  updated) and `offset_history` (one row per group and batch, arrays of its partitions);
- **generations**: 1,000 generations of one 20-member group (members, assignments and
  each rebalance's churn row);
- **a day of a cluster**: 1,000 groups committing every 5 s with the job's default
  5 s trigger is one stored commit per partition per batch, 17,280 batches a day:
  extrapolated from the offset case per stored commit (stated as such), with the number
  of partitions per group as a parameter.

`GROUPSCOPE_BENCH_SIZING_SCALE` (default 1.0) scales the offset and generation cases
down for a quick run; `GROUPSCOPE_BENCH_DATABASE_URL` measures an external server.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, text

from benchmarks.bench_store import bench_database
from services.store.batch import BatchWrite, Churn, Generation, Member, OffsetCommit
from services.store.database import create_store_engine
from services.store.migrate import upgrade
from services.store.repository import HistoryStore

T0 = datetime(2026, 3, 1, tzinfo=UTC)
GROUPS = 1_000
PARTITIONS = 10
BATCHES = 100
GENERATIONS = 1_000
MEMBERS = 20
DAY_BATCHES = 86_400 // 5


def database_bytes(engine: Engine) -> int:
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM"))
        return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one())


def offsets_batch(batch: int, groups: int) -> BatchWrite:
    at = T0 + timedelta(seconds=5 * batch)
    rows = [
        OffsetCommit(
            group=f"group-{g:04d}",
            topic="orders",
            partition=p,
            offset=1_000 * batch + p,
            source_partition=g % 50,
            source_offset=(batch * groups + g) * PARTITIONS + p,
            commit_time=at,
            leader_epoch=3,
            metadata="",
        )
        for g in range(groups)
        for p in range(PARTITIONS)
    ]
    return BatchWrite(batch, "__consumer_offsets", at, offsets=rows)


def generations_batch(batch: int, first: int, count: int) -> BatchWrite:
    """`count` generations of one 20-member group, 3 topics x 20 partitions, one member
    replaced per generation (a rolling restart)."""
    generations = []
    for number in range(first, first + count):
        members = [
            Member(
                member_id=f"consumer-payments-{m}-{number + m:08d}-6f1c2a7e-1d55-4a4b",
                client_id=f"consumer-payments-{m}",
                client_host=f"/10.0.0.{m}",
                session_timeout_ms=45_000,
                rebalance_timeout_ms=300_000,
                subscribed_topics=("orders", "payments", "refunds"),
                assignment={t: [m] for t in ("orders", "payments", "refunds")},
            )
            for m in range(MEMBERS)
        ]
        generations.append(
            Generation(
                group="payments",
                generation=number,
                source_partition=7,
                source_offset=number,
                source_time=T0 + timedelta(seconds=number),
                members=members,
                protocol_type="consumer",
                assignor="cooperative-sticky",
                leader=members[0].member_id,
                rebalance=Churn(
                    from_generation=number - 1,
                    from_source_offset=number - 1,
                    members_joined=1,
                    members_left=1,
                    moved=3,
                    revoked=3,
                    newly_assigned=3,
                    moves_from_survivors=0,
                    baseline_moves=3,
                    baseline_assignor="cooperative-sticky",
                    minimum_moves=3,
                )
                if number > 1
                else None,
            )
        )
    return BatchWrite(batch, "__consumer_offsets", T0, generations=generations)


def main() -> None:
    scale = float(os.environ.get("GROUPSCOPE_BENCH_SIZING_SCALE", "1"))
    groups = max(1, int(GROUPS * scale))
    generations = max(2, int(GENERATIONS * scale))
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with bench_database() as url:
        upgrade(url)
        engine = create_store_engine(url, pool_size=1, max_overflow=0)
        store = HistoryStore(engine)
        try:
            empty = database_bytes(engine)
            started = time.perf_counter()
            for batch in range(1, BATCHES + 1):
                store.write_batch(offsets_batch(batch, groups))
            commits = BATCHES * groups * PARTITIONS
            after_offsets = database_bytes(engine)
            per_commit = (after_offsets - empty) / commits
            print(
                f"offset commits: {commits:,} stored ({groups:,} groups x {PARTITIONS} "
                f"partitions x {BATCHES} batches) in {time.perf_counter() - started:.1f}s: "
                f"{after_offsets - empty:,} bytes, {per_commit:.1f} bytes each, "
                f"{per_commit * 1_000_000 / 2**20:,.0f} MiB per million"
            )
            for batch, first in enumerate(range(1, generations + 1, 100), start=BATCHES + 1):
                count = min(100, generations - first + 1)
                store.write_batch(generations_batch(batch, first, count))
            grown = database_bytes(engine) - after_offsets
            print(
                f"generations: {generations:,} of a {MEMBERS}-member group: {grown:,} bytes, "
                f"{grown / generations * 1000 / 2**20:,.1f} MiB per 1,000"
            )
            for partitions in (10, 50):
                day = per_commit * GROUPS * partitions * DAY_BATCHES
                print(
                    f"a day of {GROUPS:,} groups x {partitions} partitions committing every "
                    f"5 s (5 s trigger, {DAY_BATCHES:,} batches): {day / 2**30:,.1f} GiB "
                    "(extrapolated per stored commit)"
                )
        finally:
            engine.dispose()
    print(f"load average after: {os.getloadavg()[0]:.2f}")
