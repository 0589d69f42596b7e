"""History store write throughput on the embedded PostgreSQL.

Times `HistoryStore.write_batch` end to end (rows built from the batch's dataclasses,
COPY into staging, merge, commit) for:
- committed offsets: 100,000-row batches, first as inserts, then as updates of the same
  partitions from later source offsets, then a replay of that batch (a no-op);
- generations: 1,000 generations of 100 members each (one topic, 10 partitions per
  member) per batch, each with its rebalance.
Targets (issue 5): at least 100,000 offset rows/s and 1,000 generations/s. Each line
gives the wall-clock rate and the CPU seconds the client and the server backend spent.
Set GROUPSCOPE_BENCH_DATABASE_URL to measure an external server instead.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, text

from benchmarks.settings import settings
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
                # dict of lists, as the streaming job builds it
                assignment={
                    "orders": list(
                        range(m * PARTITIONS_PER_MEMBER, (m + 1) * PARTITIONS_PER_MEMBER)
                    )
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


@dataclass
class Meter:
    """Wall time, and the CPU time of this process and of its PostgreSQL backend.

    On a busy machine the wall time includes waiting for a core; the CPU times say
    what the work itself cost. The backend's CPU comes from /proc, so only for a server
    on this host (None otherwise).
    """

    engine: Engine
    wall: float = 0.0
    client_cpu: float = 0.0
    server_cpu: float | None = 0.0

    def run(self, write: Callable[[], None]) -> None:
        server_before = self._server_cpu()
        client_before, started = time.process_time(), time.perf_counter()
        write()
        self.wall += time.perf_counter() - started
        self.client_cpu += time.process_time() - client_before
        server_after = self._server_cpu()
        if self.server_cpu is None or server_before is None or server_after is None:
            self.server_cpu = None
        else:
            self.server_cpu += server_after - server_before

    def report(self, what: str, count: int, unit: str) -> None:
        server = "n/a" if self.server_cpu is None else f"{self.server_cpu:.2f}s"
        print(
            f"{what:<44} {count / self.wall:>9,.0f} {unit}/s"
            f"   (wall {self.wall:.2f}s, CPU: client {self.client_cpu:.2f}s, server {server})"
        )

    def _server_cpu(self) -> float | None:
        with self.engine.connect() as conn:
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def bench_database() -> Iterator[str]:
    external = settings().database_url
    if external:
        yield external
        return
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedPostgres(Path(tmp) / "pg", delete_on_stop=True) as embedded,
    ):
        yield embedded.uri()


def main() -> None:
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with bench_database() as url:
        upgrade(url)
        # One connection, so that every write runs on the backend the meter watches.
        engine = create_store_engine(url, pool_size=1, max_overflow=0)
        store = HistoryStore(engine)
        try:
            run_offsets(store, engine)
            run_generations(store, engine)
        finally:
            engine.dispose()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def run_offsets(store: HistoryStore, engine: Engine) -> None:
    inserts = Meter(engine)
    first = offset_batch(1, 1_000_000)
    inserts.run(lambda: store.write_batch(first))
    inserts.report("committed offsets, new partitions", OFFSET_ROWS, "rows")
    updates = Meter(engine)
    batches = [offset_batch(n, 1_000_000 + n * OFFSET_ROWS) for n in range(2, 5)]
    for b in batches:
        updates.run(lambda b=b: store.write_batch(b))
    updates.report("committed offsets, later commits (updates)", len(batches) * OFFSET_ROWS, "rows")
    replay = Meter(engine)
    replay.run(lambda: store.write_batch(batches[-1]))
    replay.report("committed offsets, replayed batch (no-op)", OFFSET_ROWS, "rows")


def run_generations(store: HistoryStore, engine: Engine) -> None:
    batches = [generation_batch(10 + n, 1 + n * GENERATIONS) for n in range(3)]
    new = Meter(engine)
    for b in batches:
        new.run(lambda b=b: store.write_batch(b))
    new.report(f"generations of {MEMBERS} members", len(batches) * GENERATIONS, "generations")
    replay = Meter(engine)
    replay.run(lambda: store.write_batch(batches[-1]))
    replay.report("generations, replayed batch (no-op)", GENERATIONS, "generations")
