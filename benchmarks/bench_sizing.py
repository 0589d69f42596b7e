"""How much disk the history store takes: bytes per stored fact, and per day.

Writes through `HistoryStore.write_batch` (as the job does) into the embedded PostgreSQL
and measures the growth (`pg_database_size`, and the offset history's own tables with
their indexes, after `VACUUM`, so dead tuples of updated rows count as the space they
keep):

- **offset history, live**: 1,000 groups x 10 partitions, each partition committing every
  5 s, a micro-batch every 5 s (the job's default trigger): 12 batches a minute, for
  10 minutes (1.2 million commits). The offset history keeps a partition's latest commit
  of each minute, so each group's row of the current minute is rewritten by every batch
  of that minute; a `VACUUM` after each simulated minute stands in for autovacuum, which
  makes the dead versions' space reusable;
- **offset history, backlog**: the same commits read as one backlog batch (the job
  hands the store each minute's latest commit per partition, counting the rest): each
  row written once;
- **generations**: 1,000 generations of one 20-member group (members, assignments and
  each rebalance's churn row);
- **a day of a cluster**: 1,000 groups committing every 5 s: extrapolated per stored
  entry (a partition's minute), 1,440 a day whatever the trigger, with the number of
  partitions per group as a parameter.

`GROUPSCOPE_BENCH_SIZING_SCALE` (default 1.0) scales the offset and generation cases
down for a quick run; `GROUPSCOPE_BENCH_DATABASE_URL` measures an external server.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, Engine, text

from benchmarks.bench_store import bench_database
from benchmarks.settings import settings
from services.store.batch import BatchWrite, Churn, Generation, Member, OffsetCommit
from services.store.database import create_store_engine
from services.store.migrate import upgrade
from services.store.repository import HistoryStore

T0 = datetime(2026, 3, 1, tzinfo=UTC)
GROUPS = 1_000
PARTITIONS = 10
MINUTES = 10
BATCHES_PER_MINUTE = 12  # a commit every 5 s, a batch every 5 s
GENERATIONS = 1_000
MEMBERS = 20
HISTORY_TABLES = ("offset_history",)


def database_bytes(engine: Engine) -> int:
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM"))
        return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one())


def history_bytes(engine: Engine) -> int:
    """The offset history's tables with their indexes and TOAST, after VACUUM."""
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM"))
        return sum(table_bytes(conn, t) for t in HISTORY_TABLES)


def table_bytes(conn: Connection, table: str) -> int:
    """A table's size with its indexes and TOAST; a partitioned table has no storage of
    its own, so its partitions' (migration 0009)."""
    sql = "SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree(CAST(:t AS regclass))"
    return int(conn.execute(text(sql), {"t": table}).scalar_one())


def commit_of(group: int, partition: int, batch: int, groups: int, commits: int = 1):
    """Partition `partition` of group `group` at its `batch`-th commit (5 s apart)."""
    return OffsetCommit(
        group=f"group-{group:04d}",
        topic="orders",
        partition=partition,
        offset=1_000 * batch + partition,
        source_partition=group % 50,
        source_offset=(batch * groups + group) * PARTITIONS + partition,
        commit_time=T0 + timedelta(seconds=5 * batch),
        leader_epoch=3,
        metadata="",
        commits=commits,
    )


def offsets_batch(batch: int, groups: int) -> BatchWrite:
    """A live batch: every partition's one commit of the last 5 s."""
    rows = [commit_of(g, p, batch, groups) for g in range(groups) for p in range(PARTITIONS)]
    return BatchWrite(batch, "__consumer_offsets", T0 + timedelta(seconds=5 * batch), offsets=rows)


def backlog_batch(groups: int, minutes: int) -> BatchWrite:
    """All of the live batches' commits in one batch, as the job hands them over: each
    partition's latest commit of each minute, standing for the minute's 12."""
    rows = [
        commit_of(g, p, (m + 1) * BATCHES_PER_MINUTE - 1, groups, commits=BATCHES_PER_MINUTE)
        for m in range(minutes)
        for g in range(groups)
        for p in range(PARTITIONS)
    ]
    return BatchWrite(1, "__consumer_offsets", T0, offsets=rows)


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
    scale = settings().sizing_scale
    groups = max(1, int(GROUPS * scale))
    generations = max(2, int(GENERATIONS * scale))
    entries = groups * PARTITIONS * MINUTES  # stored: a partition's minute each
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    per_entry = {}
    with bench_database() as url:
        upgrade(url)
        engine = create_store_engine(url, pool_size=1, max_overflow=0)
        store = HistoryStore(engine)
        try:
            empty, empty_history = database_bytes(engine), history_bytes(engine)
            started = time.perf_counter()
            for minute in range(MINUTES):
                for b in range(minute * BATCHES_PER_MINUTE, (minute + 1) * BATCHES_PER_MINUTE):
                    store.write_batch(offsets_batch(b, groups))
                history_bytes(engine)  # VACUUM, as autovacuum would
            seconds = time.perf_counter() - started
            live = history_bytes(engine) - empty_history
            after_offsets = database_bytes(engine)
            per_entry["live"] = live / entries
            print(
                f"offset history, live: {MINUTES * BATCHES_PER_MINUTE * groups * PARTITIONS:,}"
                f" commits ({groups:,} groups x {PARTITIONS} partitions, a commit and a batch"
                f" every 5 s, {MINUTES} minutes) in {seconds:.1f}s: {entries:,} entries,"
                f" offset history {live:,} bytes, {per_entry['live']:.1f} bytes an entry;"
                f" database {after_offsets - empty:,} bytes"
            )
            with engine.begin() as conn:
                conn.execute(text("TRUNCATE offset_history"))
            base = history_bytes(engine)
            started = time.perf_counter()
            store.write_batch(backlog_batch(groups, MINUTES))
            backlog = history_bytes(engine) - base
            per_entry["backlog"] = backlog / entries
            print(
                f"offset history, the same as one backlog batch in "
                f"{time.perf_counter() - started:.1f}s: {backlog:,} bytes, "
                f"{per_entry['backlog']:.1f} bytes an entry"
            )
            before_generations = database_bytes(engine)
            for batch, first in enumerate(range(1, generations + 1, 100), start=1_000):
                count = min(100, generations - first + 1)
                store.write_batch(generations_batch(batch, first, count))
            grown = database_bytes(engine) - before_generations
            print(
                f"generations: {generations:,} of a {MEMBERS}-member group: {grown:,} bytes, "
                f"{grown / generations * 1000 / 2**20:,.1f} MiB per 1,000"
            )
            for partitions in (10, 50):
                for how, size in per_entry.items():
                    day = size * GROUPS * partitions * 1_440
                    print(
                        f"a day of {GROUPS:,} groups x {partitions} partitions committing at"
                        f" least once a minute ({how}): {day / 2**30:,.2f} GiB of offset"
                        f" history ({size * 1_440 / 1_000:,.0f} kB a partition; extrapolated"
                        " per entry)"
                    )
        finally:
            engine.dispose()
    print(f"load average after: {os.getloadavg()[0]:.2f}")
