"""Read what the exporter publishes from the history store, in a few set-based queries.

Each refresh reads every group's latest generation, its rebalance totals (and their
count by primary cause), its last rebalance, the committed offsets, the decode failures
by category and the pipeline's status. Nothing is kept per scrape: a refresh builds a
`StoreSnapshot`, and the exposition is rendered from it once
(`services.exporter.exposition`).

Every group is keyed by its cluster and name (`GroupKey`): the store holds several
clusters (migration 0010), and the same group name on two of them is two groups. The
pipeline's status is read per cluster: its newest source's row (an older source of the
same cluster is a job that moved, e.g. to another bootstrap address).

The committed offsets are the big part (10,000 groups x 50 partitions = 500,000 rows),
so they travel as packed binary arrays and land in numpy arrays, not Python objects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

import numpy as np
import psycopg
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from services.groupfilter import GroupFilter
from services.store.batch import primary_cause_sql
from services.store.database import psycopg_connection
from services.store.errors import SchemaOutdatedError, StoreUnavailableError, first_line

# (cluster, group name): how every group is keyed.
GroupKey = tuple[str, str]

GROUPS = """
SELECT g.cluster, g.name, g.type, extract(epoch FROM g.deleted_at)::float8, g.commits_total,
    extract(epoch FROM g.last_commit_timestamp)::float8,
    l.generation, l.protocol_type, l.assignor, l.member_count, l.state, l.partition_count,
    extract(epoch FROM l.time)::float8
FROM groups g
LEFT JOIN LATERAL (
    SELECT * FROM generations
    WHERE cluster = g.cluster AND group_name = g.name
    ORDER BY source_partition DESC, source_offset DESC
    LIMIT 1
) l ON true
"""

# Rebalances pruned by retention count on in `pruned_rebalances` (migration 0009), so
# that the counters built from these totals never go down.
REBALANCES = """
SELECT cluster, group_name, sum(n)::bigint, sum(moved)::bigint, sum(baseline)::bigint,
    sum(minimum)::bigint, sum(in_window)::bigint, sum(disruptive)::bigint
FROM (
    SELECT cluster, group_name, count(*) AS n, sum(partitions_moved) AS moved,
        coalesce(sum(baseline_moves), 0) AS baseline, coalesce(sum(minimum_moves), 0) AS minimum,
        count(*) FILTER (WHERE disruptive AND time > %(now)s - make_interval(secs => %(window)s))
            AS in_window,
        count(*) FILTER (WHERE disruptive) AS disruptive
    FROM rebalances
    GROUP BY cluster, group_name
    UNION ALL
    SELECT cluster, group_name, rebalances, partitions_moved, baseline_moves, minimum_moves, 0,
        disruptive
    FROM pruned_rebalances
) t
GROUP BY cluster, group_name
"""

# Each rebalance counted under its primary cause (`services.store.batch.primary_cause`),
# the pruned ones too.
REBALANCE_CAUSES = f"""
SELECT cluster, group_name, cause, sum(n)::bigint
FROM (
    SELECT r.cluster, r.group_name, {primary_cause_sql("r")} AS cause, count(*) AS n
    FROM rebalances r
    GROUP BY 1, 2, 3
    UNION ALL
    SELECT cluster, group_name, cause, rebalances FROM pruned_rebalances
) t
GROUP BY 1, 2, 3
"""

LAST_REBALANCES = """
SELECT DISTINCT ON (r.cluster, r.group_name) r.cluster, r.group_name,
    extract(epoch FROM r.time)::float8,
    r.partitions_moved, r.baseline_moves, t.partition_count,
    extract(epoch FROM r.gap_max)::float8, coalesce(r.gap_waiting, 0)
FROM rebalances r
JOIN generations t ON t.id = r.to_generation_pk
ORDER BY r.cluster, r.group_name, r.time DESC, r.to_generation_pk DESC
"""

FAILURES = """
SELECT cluster, category, sum(n)::bigint
FROM (
    SELECT cluster, coalesce(category, reason) AS category, count(*) AS n
    FROM decode_failures GROUP BY 1, 2
    UNION ALL
    SELECT cluster, category, failures FROM pruned_decode_failures
) t
GROUP BY 1, 2 ORDER BY 1, 2
"""

# Per cluster, its newest source's row.
PIPELINE = """
SELECT DISTINCT ON (cluster) cluster, source, batches_total, records_total,
    extract(epoch FROM last_batch_time)::float8,
    last_batch_seconds, input_rows_per_second, processed_rows_per_second, records_behind,
    caught_up, extract(epoch FROM updated_at)::float8, degraded_reason,
    extract(epoch FROM degraded_since)::float8, log_resets_total
FROM pipeline_status
ORDER BY cluster, updated_at DESC, source
"""

# The offsets travel as four packed binary arrays (int4send/int8send, big-endian) plus
# the distinct (group, topic) pairs: no Python object per row on the client. COPY or a
# row per partition left fragmented heap behind (docs/performance.md, "Design
# measurements": packed offsets).
LIVE_OFFSETS = """
WITH live AS (
    SELECT cluster, group_name, topic, partition, committed_offset,
        coalesce((extract(epoch FROM commit_timestamp) * 1000)::int8, -1) AS commit_ms,
        dense_rank() OVER (ORDER BY cluster, group_name, topic) - 1 AS pair
    FROM committed_offsets
    WHERE NOT deleted AND committed_offset IS NOT NULL
)
SELECT string_agg(int4send(pair::int4), '' ORDER BY pair, partition),
    string_agg(int4send(partition), '' ORDER BY pair, partition),
    string_agg(int8send(committed_offset), '' ORDER BY pair, partition),
    string_agg(int8send(commit_ms), '' ORDER BY pair, partition)
FROM live
"""

OFFSET_PAIRS = """
SELECT DISTINCT cluster, group_name, topic
FROM committed_offsets
WHERE NOT deleted AND committed_offset IS NOT NULL
ORDER BY cluster, group_name, topic
"""


@dataclass(frozen=True, slots=True)
class GroupRow:
    """One group's latest state."""

    cluster: str
    name: str
    type: str | None
    deleted_at: float | None
    commits_total: int
    last_commit: float | None
    generation: int | None
    protocol_type: str | None
    assignor: str | None
    members: int | None
    state: str | None  # None when the group has no generation
    partitions: int | None
    generation_time: float | None

    @property
    def current_state(self) -> str:
        """stable, empty, rebalancing or dead; unknown for a group known only from
        offset commits (consumers using assign() never form a group)."""
        if self.deleted_at is not None and (
            self.generation_time is None or self.deleted_at >= self.generation_time
        ):
            return "dead"
        return self.state or "unknown"

    @property
    def state_since(self) -> float | None:
        if self.current_state == "dead":
            return self.deleted_at
        return self.generation_time


@dataclass(frozen=True, slots=True)
class RebalanceTotals:
    rebalances: int
    moved: int
    baseline: int
    minimum: int
    in_window: int  # disruptive rebalances within the storm window
    disruptive: int


@dataclass(frozen=True, slots=True)
class LastRebalance:
    time: float
    moved: int
    baseline: int | None
    partitions: int | None
    gap: float | None = None  # seconds: the longest commit gap of its moved partitions
    waiting: int = 0  # moved partitions that have not committed since the handover


@dataclass(frozen=True, slots=True)
class PipelineRow:
    cluster: str
    source: str
    batches_total: int
    records_total: int
    last_batch_time: float | None
    last_batch_seconds: float | None
    input_rate: float | None
    processed_rate: float | None
    records_behind: int | None
    caught_up: bool
    updated_at: float
    degraded_reason: str | None = None
    degraded_since: float | None = None
    log_resets_total: int = 0

    @property
    def degraded(self) -> bool:
        return self.degraded_reason is not None or self.degraded_since is not None


@dataclass
class Offsets:
    """Committed offsets as parallel arrays, sorted by cluster, group, topic and partition.

    Names are stored once (`groups`, `topics`, each with its cluster: a topic of one
    cluster is not the same-named topic of another, whose log ends are polled from its
    own brokers); rows refer to them by index, so 500,000 partitions cost a few arrays
    instead of 500,000 tuples. `pair[i]` numbers the distinct (cluster, group, topic)
    in order; `pair_group`/`pair_topic` name each pair.
    """

    groups: list[GroupKey] = field(default_factory=list)
    topics: list[tuple[str, str]] = field(default_factory=list)  # (cluster, topic)
    pair_group: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    pair_topic: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    pair: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    topic: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    partition: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    committed: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    commit_ms: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # -1: none

    def __len__(self) -> int:
        return len(self.committed)

    @cached_property
    def pairs(self) -> list[tuple[str, str, str]]:
        """(cluster, group, topic) of each pair; built once per snapshot (the lag status
        and the exposition both read it)."""
        return [
            (*self.groups[g], self.topics[t][1])
            for g, t in zip(self.pair_group.tolist(), self.pair_topic.tolist(), strict=True)
        ]

    def only(self, keeps: Callable[[str], bool]) -> Offsets:
        """The rows of the groups whose names `keeps` keeps, renumbered (names, pairs) as
        if only they had been read."""
        kept_group = np.fromiter((keeps(g) for _, g in self.groups), bool, len(self.groups))
        kept_pair = kept_group[self.pair_group]
        rows = kept_pair[self.pair]
        renumbered = np.cumsum(kept_pair) - 1  # old pair index -> new, where kept
        pair = renumbered[self.pair[rows]]
        groups, pair_group = np.unique(self.pair_group[kept_pair], return_inverse=True)
        topics, pair_topic = np.unique(self.pair_topic[kept_pair], return_inverse=True)
        return Offsets(
            groups=[self.groups[g] for g in groups.tolist()],
            topics=[self.topics[t] for t in topics.tolist()],
            pair_group=pair_group.astype(np.int64),
            pair_topic=pair_topic.astype(np.int64),
            pair=pair,
            topic=pair_topic.astype(np.int64)[pair],
            partition=self.partition[rows],
            committed=self.committed[rows],
            commit_ms=self.commit_ms[rows],
        )

    def distinct_partitions(self) -> tuple[np.ndarray, np.ndarray]:
        """(topic index, partition) of every distinct topic-partition: what to poll."""
        keys = np.unique((self.topic << 32) | self.partition)
        return keys >> 32, keys & 0xFFFFFFFF


@dataclass
class StoreSnapshot:
    """Everything a refresh read from the store."""

    taken_at: float
    groups: list[GroupRow]
    rebalances: dict[GroupKey, RebalanceTotals]
    last_rebalances: dict[GroupKey, LastRebalance]
    failures: list[tuple[str, str, int]]  # (cluster, category, failures)
    pipeline: list[PipelineRow]
    offsets: Offsets
    # group -> primary cause -> rebalances (see REBALANCE_CAUSES); sums to `rebalances`
    rebalance_causes: dict[GroupKey, dict[str, int]] = field(default_factory=dict)


def only_groups(snapshot: StoreSnapshot, groups: GroupFilter) -> StoreSnapshot:
    """`snapshot` as if the store held only the groups `groups` keeps: the exporter's
    `--groups-include`/`--groups-exclude`. Decode failures and pipeline rows are no
    group's, and stay."""
    if not groups.active:
        return snapshot
    keeps = groups.keeps
    return replace(
        snapshot,
        groups=[g for g in snapshot.groups if keeps(g.name)],
        rebalances={g: r for g, r in snapshot.rebalances.items() if keeps(g[1])},
        last_rebalances={g: r for g, r in snapshot.last_rebalances.items() if keeps(g[1])},
        offsets=snapshot.offsets.only(keeps),
        rebalance_causes={g: c for g, c in snapshot.rebalance_causes.items() if keeps(g[1])},
    )


def read_snapshot(
    engine: Engine, storm_window_s: float, now: datetime, schema: str | None = None
) -> StoreSnapshot:
    """One consistent read (a REPEATABLE READ transaction) of everything published.

    The storm window ends at `now`, the exporter's clock (as every "seconds since" gauge
    is), not the database server's.

    With `schema` (an Alembic revision), first checks that the database is at it.
    Raises `StoreUnavailableError` when the database cannot be read, and
    `SchemaOutdatedError` when it is not at `schema`.
    """
    try:
        with engine.connect() as conn:
            raw = psycopg_connection(conn)
            with raw.transaction(), raw.cursor() as cur:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                if schema is not None:
                    _require_revision(cur, schema)
                cur.execute(GROUPS)
                groups = [GroupRow(*row) for row in cur.fetchall()]
                cur.execute(REBALANCES, {"window": storm_window_s, "now": now})
                totals = {(r[0], r[1]): RebalanceTotals(*r[2:]) for r in cur.fetchall()}
                cur.execute(REBALANCE_CAUSES)
                causes: dict[GroupKey, dict[str, int]] = {}
                for cluster, group, cause, n in cur.fetchall():
                    causes.setdefault((cluster, group), {})[cause] = n
                cur.execute(LAST_REBALANCES)
                last = {(r[0], r[1]): LastRebalance(*r[2:]) for r in cur.fetchall()}
                cur.execute(FAILURES)
                failures = [(cluster, reason, n) for cluster, reason, n in cur.fetchall()]
                cur.execute(PIPELINE)
                pipeline = [PipelineRow(*row) for row in cur.fetchall()]
                offsets = _read_offsets(cur)
    except (psycopg.Error, DBAPIError, OSError) as exc:
        raise StoreUnavailableError(
            f"the history store could not be read: {first_line(exc)}"
        ) from exc
    return StoreSnapshot(now.timestamp(), groups, totals, last, failures, pipeline, offsets, causes)


def _require_revision(cur: psycopg.Cursor, schema: str) -> None:
    """Raise `SchemaOutdatedError` unless the database is at revision `schema`."""
    cur.execute("SELECT to_regclass('alembic_version') IS NOT NULL")
    (versioned,) = _one_row(cur)
    current = None
    if versioned:
        cur.execute("SELECT version_num FROM alembic_version")
        row = cur.fetchone()
        current = row[0] if row else None
    if current != schema:
        state = f"is at revision {current}" if current else "has no groupscope schema"
        raise SchemaOutdatedError(
            f"the database {state}, not {schema}; run 'groupscope db upgrade'"
        )


def _one_row(cur: psycopg.Cursor) -> tuple[Any, ...]:
    """The row of a query that always returns one (a scalar, an aggregate)."""
    row = cur.fetchone()
    if row is None:
        raise StoreUnavailableError("the history store could not be read: a query had no row")
    return row


def _read_offsets(cur: psycopg.Cursor) -> Offsets:
    """The live committed offsets as arrays (see LIVE_OFFSETS)."""
    cur.execute(OFFSET_PAIRS)
    pairs = cur.fetchall()
    if not pairs:
        return Offsets()
    cur.execute(LIVE_OFFSETS, binary=True)
    pair, partition, committed, commit_ms = _one_row(cur)
    groups: dict[GroupKey, int] = {}
    topics: dict[tuple[str, str], int] = {}
    pair_group = np.fromiter(
        (groups.setdefault((c, g), len(groups)) for c, g, _ in pairs), np.int64, len(pairs)
    )
    pair_topic = np.fromiter(
        (topics.setdefault((c, t), len(topics)) for c, _, t in pairs), np.int64, len(pairs)
    )
    pair_index = np.frombuffer(pair, ">i4").astype(np.int64)
    return Offsets(
        groups=list(groups),
        topics=list(topics),
        pair_group=pair_group,
        pair_topic=pair_topic,
        pair=pair_index,
        topic=pair_topic[pair_index],
        partition=np.frombuffer(partition, ">i4").astype(np.int64),
        committed=np.frombuffer(committed, ">i8").astype(np.int64),
        commit_ms=np.frombuffer(commit_ms, ">i8").astype(np.int64),
    )
