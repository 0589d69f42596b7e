"""Read what the exporter publishes from the history store, in a few set-based queries.

Each refresh reads every group's latest generation, its rebalance totals, its last
rebalance, the committed offsets, the decode failures by category and the pipeline's
status. Nothing is kept per scrape: a refresh builds a `StoreSnapshot`, and the
exposition is rendered from it once (`services.exporter.exposition`).

The committed offsets are the big part (10,000 groups x 50 partitions = 500,000 rows),
so they travel by `COPY ... TO STDOUT` and land in numpy arrays, not Python objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import psycopg
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from services.store.errors import StoreUnavailableError

GROUPS = """
SELECT g.name, g.type, extract(epoch FROM g.deleted_at)::float8, g.commits_total,
    extract(epoch FROM g.last_commit_timestamp)::float8,
    l.generation, l.protocol_type, l.assignor, l.member_count, l.state, l.partition_count,
    extract(epoch FROM l.time)::float8
FROM groups g
LEFT JOIN (
    SELECT DISTINCT ON (group_name) *
    FROM generations
    ORDER BY group_name, source_partition DESC, source_offset DESC
) l ON l.group_name = g.name
"""

REBALANCES = """
SELECT group_name, count(*), sum(partitions_moved), coalesce(sum(baseline_moves), 0),
    coalesce(sum(minimum_moves), 0),
    count(*) FILTER (WHERE time > now() - make_interval(secs => %(window)s))
FROM rebalances
GROUP BY group_name
"""

LAST_REBALANCES = """
SELECT DISTINCT ON (r.group_name) r.group_name, extract(epoch FROM r.time)::float8,
    r.partitions_moved, r.baseline_moves, t.partition_count
FROM rebalances r
JOIN generations t ON t.id = r.to_generation_pk
ORDER BY r.group_name, r.time DESC, r.to_generation_pk DESC
"""

FAILURES = """
SELECT coalesce(category, reason), count(*) FROM decode_failures GROUP BY 1 ORDER BY 1
"""

PIPELINE = """
SELECT source, batches_total, records_total, extract(epoch FROM last_batch_time)::float8,
    last_batch_seconds, input_rows_per_second, processed_rows_per_second, records_behind,
    caught_up, extract(epoch FROM updated_at)::float8
FROM pipeline_status
ORDER BY source
"""

OFFSETS = """
COPY (
    SELECT group_name, topic, partition, committed_offset
    FROM committed_offsets
    WHERE NOT deleted AND committed_offset IS NOT NULL
    ORDER BY group_name, topic, partition
) TO STDOUT
"""


@dataclass(frozen=True, slots=True)
class GroupRow:
    """One group's latest state."""

    name: str
    type: str | None
    deleted_at: float | None
    commits_total: int
    last_commit: float | None
    generation: int | None
    protocol_type: str | None
    assignor: str | None
    members: int | None
    state: str | None
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
        if self.generation is None:
            return "unknown"
        return self.state or ("stable" if self.members else "empty")

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
    in_window: int


@dataclass(frozen=True, slots=True)
class LastRebalance:
    time: float
    moved: int
    baseline: int | None
    partitions: int | None


@dataclass(frozen=True, slots=True)
class PipelineRow:
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


@dataclass
class Offsets:
    """Committed offsets as parallel arrays, sorted by group, topic and partition.

    `pair[i]` indexes `pairs` (the distinct (group, topic)), `tp[i]` indexes
    `topic_partitions` (the distinct (topic, partition), which is what lag needs).
    """

    pairs: list[tuple[str, str]] = field(default_factory=list)
    topic_partitions: list[tuple[str, int]] = field(default_factory=list)
    pair: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tp: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    partition: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    committed: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __len__(self) -> int:
        return len(self.committed)


@dataclass
class StoreSnapshot:
    """Everything a refresh read from the store."""

    taken_at: float
    groups: list[GroupRow]
    rebalances: dict[str, RebalanceTotals]
    last_rebalances: dict[str, LastRebalance]
    failures: list[tuple[str, int]]
    pipeline: list[PipelineRow]
    offsets: Offsets


def read_snapshot(engine: Engine, storm_window_s: float, now: datetime) -> StoreSnapshot:
    """One consistent read (a REPEATABLE READ transaction) of everything published.

    Raises `StoreUnavailableError` when the database cannot be read.
    """
    try:
        with engine.connect() as conn:
            raw = conn.connection.driver_connection
            with raw.transaction(), raw.cursor() as cur:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                cur.execute(GROUPS)
                groups = [GroupRow(*row) for row in cur.fetchall()]
                cur.execute(REBALANCES, {"window": storm_window_s})
                totals = {r[0]: RebalanceTotals(*r[1:]) for r in cur.fetchall()}
                cur.execute(LAST_REBALANCES)
                last = {r[0]: LastRebalance(*r[1:]) for r in cur.fetchall()}
                cur.execute(FAILURES)
                failures = [(reason, n) for reason, n in cur.fetchall()]
                cur.execute(PIPELINE)
                pipeline = [PipelineRow(*row) for row in cur.fetchall()]
                offsets = _read_offsets(cur)
    except (psycopg.Error, DBAPIError, OSError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise StoreUnavailableError(f"the history store could not be read: {first}") from exc
    return StoreSnapshot(now.timestamp(), groups, totals, last, failures, pipeline, offsets)


def _read_offsets(cur: psycopg.Cursor) -> Offsets:
    """COPY the live committed offsets into arrays (text format, one pass)."""
    with cur.copy(OFFSETS) as copy:
        data = b"".join(bytes(block) for block in copy)
    if not data:
        return Offsets()
    lines = data.decode("utf-8").split("\n")
    lines.pop()  # the trailing newline
    pairs: list[tuple[str, str]] = []
    pair_index: dict[tuple[str, str], int] = {}
    tps: list[tuple[str, int]] = []
    tp_index: dict[tuple[str, int], int] = {}
    n = len(lines)
    pair = np.empty(n, np.int64)
    tp = np.empty(n, np.int64)
    partition = np.empty(n, np.int64)
    committed = np.empty(n, np.int64)
    last_pair: tuple[str, str] | None = None
    pi = -1
    for i, line in enumerate(lines):
        group, topic, part, offset = line.split("\t")
        if "\\" in group or "\\" in topic:
            group, topic = _unescape(group), _unescape(topic)
        key = (group, topic)
        if key != last_pair:
            pi = pair_index.get(key, -1)
            if pi < 0:
                pi = pair_index[key] = len(pairs)
                pairs.append(key)
            last_pair = key
        p = int(part)
        tkey = (topic, p)
        ti = tp_index.get(tkey)
        if ti is None:
            ti = tp_index[tkey] = len(tps)
            tps.append(tkey)
        pair[i], tp[i], partition[i], committed[i] = pi, ti, p, int(offset)
    return Offsets(pairs, tps, pair, tp, partition, committed)


_ESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", "v": "\v"}


def _unescape(text: str) -> str:
    """Undo COPY's text-format escaping (backslash sequences)."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)
