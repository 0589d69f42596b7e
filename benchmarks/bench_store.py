"""History store write throughput on the embedded PostgreSQL.

Times `HistoryStore.write_batch` end to end (rows built from the batch's dataclasses,
COPY into staging, merge, commit) for:
- committed offsets: 100,000-row batches, first as inserts, then as updates of the same
  partitions from later source offsets, then a replay of that batch (a no-op);
- generations: 1,000 generations of 100 members each (one topic, 10 partitions per
  member) per batch, each with its rebalance.
Targets (issue 5): at least 100,000 offset rows/s and 1,000 generations/s.
Set GROUPSCOPE_BENCH_DATABASE_URL to measure an external server instead.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from services.store.batch import BatchWrite, Churn, Generation, Member, OffsetCommit
from services.store.database import create_store_engine
from services.store.embedded import EmbeddedPostgres
from services.store.migrate import upgrade
from services.store.repository import HistoryStore

OFFSET_ROWS = 100_000
GENERATIONS = 1_000
MEMBERS = 100
PARTITIONS_PER_MEMBER = 10
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def offset_batch(batch_id: int, first_source_offset: int) -> BatchWrite:
    """100,000 commits: 1,000 groups x 100 partitions of one topic."""
    offsets = [
        OffsetCommit(
            group=f"group-{i // 100}",
            topic="orders",
            partition=i % 100,
            offset=first_source_offset + i,
            source_partition=(i // 100) % 50,
            source_offset=first_source_offset + i,
            commit_time=T0 + timedelta(milliseconds=i),
            leader_epoch=3,
            metadata="",
        )
        for i in range(OFFSET_ROWS)
    ]
    return BatchWrite(batch_id, "__consumer_offsets", T0, offsets=offsets)


def generation_batch(batch_id: int, first_generation: int) -> BatchWrite:
    """1,000 generations of one group each, 100 members, each with its churn."""
    generations = []
    for i in range(GENERATIONS):
        number = first_generation + i
        members = [
            Member(
                member_id=f"consumer-{m}-6f1c2a7e-1d55-4a4b-9a43-{number:012d}",
                client_id=f"consumer-{m}",
                client_host=f"/10.0.{m // 250}.{m % 250}",
                session_timeout_ms=45_000,
                rebalance_timeout_ms=300_000,
                subscribed_topics=("orders",),
                assignment={
                    "orders": range(m * PARTITIONS_PER_MEMBER, (m + 1) * PARTITIONS_PER_MEMBER)
                },
            )
            for m in range(MEMBERS)
        ]
        churn = Churn(
            from_generation=number - 1,
            from_source_offset=number - 1,
            members_joined=1,
            members_left=1,
            moved=10,
            revoked=10,
            newly_assigned=10,
            moves_from_survivors=0,
            baseline_moves=10,
            baseline_assignor="sticky",
            minimum_moves=10,
        )
        generations.append(
            Generation(
                group=f"group-{i}",
                generation=number,
                source_partition=i % 50,
                source_offset=number,
                source_time=T0 + timedelta(seconds=number),
                members=members,
                assignor="range",
                leader=members[0].member_id,
                rebalance=churn,
            )
        )
    return BatchWrite(batch_id, "__consumer_offsets", T0, generations=generations)


def timed(write: Callable[[], None]) -> float:
    started = time.perf_counter()
    write()
    return time.perf_counter() - started


@contextmanager
def bench_database():
    external = os.environ.get("GROUPSCOPE_BENCH_DATABASE_URL")
    if external:
        yield external
        return
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedPostgres(Path(tmp) / "pg", delete_on_stop=True) as embedded,
    ):
        yield embedded.uri()


def main() -> None:
    with bench_database() as url:
        upgrade(url)
        engine = create_store_engine(url)
        store = HistoryStore(engine)
        try:
            run_offsets(store)
            run_generations(store)
        finally:
            engine.dispose()


def run_offsets(store: HistoryStore) -> None:
    rates = {}
    inserts = offset_batch(1, 1_000_000)
    rates["insert"] = OFFSET_ROWS / timed(lambda: store.write_batch(inserts))
    updates = [offset_batch(n, 1_000_000 + n * OFFSET_ROWS) for n in range(2, 5)]
    seconds = sum(timed(lambda b=b: store.write_batch(b)) for b in updates)
    rates["update"] = len(updates) * OFFSET_ROWS / seconds
    rates["replay (no-op)"] = OFFSET_ROWS / timed(lambda: store.write_batch(updates[-1]))
    for kind, rate in rates.items():
        print(f"committed offsets, {kind:<15} {rate:>10,.0f} rows/s  (batches of {OFFSET_ROWS:,})")


def run_generations(store: HistoryStore) -> None:
    batches = [generation_batch(10 + n, 1 + n * GENERATIONS) for n in range(3)]
    seconds = sum(timed(lambda b=b: store.write_batch(b)) for b in batches)
    rate = len(batches) * GENERATIONS / seconds
    print(
        f"generations ({MEMBERS} members, {MEMBERS * PARTITIONS_PER_MEMBER} partitions each) "
        f"{rate:>8,.0f} generations/s  = {rate * MEMBERS:,.0f} member rows/s  "
        f"(batches of {GENERATIONS:,})"
    )
    replay = batches[-1]
    rate = GENERATIONS / timed(lambda: store.write_batch(replay))
    print(f"generations, replay (no-op)         {rate:>8,.0f} generations/s")
