"""`HistoryStore`: applies one micro-batch (`services.store.batch.BatchWrite`) atomically.

See `services.store.batch` for the contract the streaming job writes against. Here is
how it is kept, all in one transaction:
1. the batch's groups, offsets, generations, rebalances and decode failures are COPYed
   into temp staging tables;
2. groups are upserted and generations inserted, skipping those already stored (their
   record position is their identity); the insert returns the new generations' keys;
3. the members (with their assignments) of exactly those new generations are COPYed
   straight into their table: nothing can conflict there, so no per-row conflict
   check is paid;
4. rebalances, committed offsets, their per-minute history, decode failures and
   record repairs are merged from staging with `INSERT … ON CONFLICT`.
Before staging, every string is made storable (`services.store.sanitize`: no U+0000,
keys short enough for an index) and each change becomes a `record_repairs` row.
Conflicts resolve by natural key plus source position, so a replayed batch is a no-op.
Every row is the store's cluster's (`HistoryStore(..., cluster=)`, migration 0010): the
statements write it and read only its rows, so jobs of several clusters share the store.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, astuple, replace

import psycopg
import psycopg.errors
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from services.store import sanitize, staging
from services.store.batch import (
    HISTORY_INTERVAL_MS,
    BatchWrite,
    Generation,
    PipelineReport,
    Repair,
)
from services.store.clusters import DEFAULT_CLUSTER
from services.store.database import psycopg_connection
from services.store.errors import (
    BatchRejectedError,
    StoreError,
    StoreUnavailableError,
    first_line,
)

# Every group named in the batch exists afterwards, with first/last seen widened.
# (Generations are staged as group events too, so they count here.)
UPSERT_GROUPS = """
INSERT INTO groups AS g (cluster, name, coordinator_partition, first_seen, last_seen)
SELECT %(cluster)s, group_name, min(source_partition), min(time), max(time)
FROM (
    SELECT group_name, source_partition, time FROM stage_group_events
    UNION ALL
    SELECT group_name, source_partition, coalesce(commit_timestamp, %(batch_time)s)
    FROM stage_offsets
) seen
GROUP BY group_name
ON CONFLICT (cluster, name) DO UPDATE SET
    first_seen = least(g.first_seen, excluded.first_seen),
    last_seen = greatest(g.last_seen, excluded.last_seen),
    coordinator_partition = coalesce(g.coordinator_partition, excluded.coordinator_partition)
"""

# The latest group record of the batch sets type and deletion, unless a later one did.
APPLY_GROUP_EVENTS = """
UPDATE groups AS g SET
    type = coalesce(e.type, g.type),
    deleted_at = CASE WHEN e.deleted THEN e.time END,
    coordinator_partition = e.source_partition,
    state_source_offset = e.source_offset
FROM (
    SELECT DISTINCT ON (group_name) *
    FROM stage_group_events
    ORDER BY group_name, source_offset DESC
) e
WHERE g.cluster = %(cluster)s AND g.name = e.group_name
  AND (g.state_source_offset IS NULL OR g.state_source_offset < e.source_offset)
"""

INSERT_GENERATIONS = """
INSERT INTO generations (cluster, group_name, generation, protocol_type, assignor, leader,
    state_timestamp, time, member_count, source_partition, source_offset,
    source_timestamp, batch_id, state, partition_count)
SELECT %(cluster)s, group_name, generation, protocol_type, assignor, leader,
    state_timestamp, time, member_count, source_partition, source_offset,
    source_timestamp, %(batch_id)s, state, partition_count
FROM stage_generations
ON CONFLICT (cluster, source_partition, source_offset) DO NOTHING
RETURNING id, source_partition, source_offset
"""

INSERT_REBALANCES = """
INSERT INTO rebalances (to_generation_pk, from_generation_pk, cluster, group_name,
    from_generation, to_generation, time, elapsed, members_joined, members_left,
    partitions_moved, partitions_revoked, partitions_newly_assigned, moves_from_survivors,
    baseline_moves, baseline_assignor, minimum_moves, cooperative_episode, disruptive, causes)
SELECT t.id, f.id, t.cluster, t.group_name, r.from_generation,
    t.generation, t.time, t.time - f.time, r.members_joined, r.members_left,
    r.partitions_moved, r.partitions_revoked, r.partitions_newly_assigned,
    r.moves_from_survivors, r.baseline_moves, r.baseline_assignor, r.minimum_moves,
    r.cooperative_episode, r.disruptive, r.causes::jsonb
FROM stage_rebalances r
JOIN generations t ON t.cluster = %(cluster)s
    AND t.source_partition = r.source_partition AND t.source_offset = r.source_offset
LEFT JOIN generations f ON f.cluster = %(cluster)s
    AND f.source_partition = r.source_partition AND f.source_offset = r.from_source_offset
ON CONFLICT (to_generation_pk) DO NOTHING
"""

# The batch's latest record per partition replaces the stored one only if it is later.
# Existing partitions are updated and new ones inserted by separate sub-statements, which
# costs the server less CPU than INSERT … ON CONFLICT DO UPDATE (docs/performance.md,
# "Design measurements": update, then insert); that also locks each row it updates. Both
# see the snapshot from before the statement, so no partition is both updated and
# inserted. One writer per source partition is assumed (the streaming job); a second
# writer inserting the same new partition at the same moment gets a unique-key error
# (BatchRejectedError) rather than a silently dropped commit.
UPSERT_OFFSETS = """
WITH latest AS (
    SELECT DISTINCT ON (group_name, topic, partition) *
    FROM stage_offsets
    ORDER BY group_name, topic, partition, source_offset DESC
), updated AS (
    UPDATE committed_offsets AS c SET
        committed_offset = l.committed_offset,
        leader_epoch = l.leader_epoch,
        metadata = l.metadata,
        commit_timestamp = l.commit_timestamp,
        expire_timestamp = l.expire_timestamp,
        deleted = l.committed_offset IS NULL,
        source_partition = l.source_partition,
        source_offset = l.source_offset,
        batch_id = %(batch_id)s
    FROM latest l
    WHERE c.cluster = %(cluster)s
      AND c.group_name = l.group_name AND c.topic = l.topic AND c.partition = l.partition
      AND c.source_offset < l.source_offset
)
INSERT INTO committed_offsets (cluster, group_name, topic, partition, committed_offset,
    leader_epoch, metadata, commit_timestamp, expire_timestamp, deleted,
    source_partition, source_offset, batch_id)
SELECT %(cluster)s, group_name, topic, partition, committed_offset,
    leader_epoch, metadata, commit_timestamp, expire_timestamp, committed_offset IS NULL,
    source_partition, source_offset, %(batch_id)s
FROM latest l
WHERE NOT EXISTS (
    SELECT 1 FROM committed_offsets c
    WHERE c.cluster = %(cluster)s
      AND c.group_name = l.group_name AND c.topic = l.topic AND c.partition = l.partition)
"""

# The offset history: per group and minute of history time (the commit timestamp, else
# the record's timestamp, else the batch's time) one row, with parallel arrays of each
# partition's latest record in that minute. The batch's latest record of each partition
# and minute is merged into the stored row: it replaces the partition's entry only if
# its position is later, so the history depends on the records alone, not on how they
# were cut into batches (a backlog read in one batch leaves what a live job leaves).
# Only rows the batch changed are rewritten, so a replayed batch writes nothing. An
# entry counts the commit records of its minute; the records behind an entry the batch
# wins are added to the group's commits_total, so a replay counts nothing twice. The
# group's last commit time is the latest of all the commit records' times (a minute's
# tombstone does not hide the commits before it), however they were batched.
UPSERT_OFFSET_HISTORY = f"""
WITH entries AS (
    SELECT DISTINCT ON (group_name, minute, topic, partition)
        group_name, minute, topic, partition, committed_offset, commit_timestamp,
        source_offset, sum(commits) OVER (PARTITION BY group_name, minute, topic, partition)
            AS commits
    FROM (
        SELECT *, date_bin(INTERVAL '{HISTORY_INTERVAL_MS} milliseconds',
            coalesce(commit_timestamp, record_time, %(batch_time)s), TIMESTAMPTZ 'epoch')
            AS minute
        FROM stage_offsets
    ) s
    ORDER BY group_name, minute, topic, partition, source_offset DESC
), stored AS (
    SELECT h.group_name, h.minute, e.*
    FROM offset_history h
    JOIN (SELECT DISTINCT group_name, minute FROM entries) touched
        ON h.cluster = %(cluster)s AND h.group_name = touched.group_name
        AND h.minute = touched.minute
    CROSS JOIN LATERAL unnest(h.topics, h.partitions, h.committed_offsets,
        h.commit_timestamps, h.source_offsets, h.commit_counts)
        AS e(topic, partition, committed_offset, commit_timestamp, source_offset, commits)
), joined AS (
    SELECT group_name, minute, topic, partition, n.commits AS new_commits,
        s.source_offset IS NULL AS first,
        n.source_offset IS NOT NULL
            AND (s.source_offset IS NULL OR n.source_offset > s.source_offset) AS won,
        n.committed_offset AS new_offset, s.committed_offset AS old_offset,
        n.commit_timestamp AS new_time, s.commit_timestamp AS old_time,
        n.source_offset AS new_position, s.source_offset AS old_position,
        s.commits AS old_commits
    FROM entries n FULL JOIN stored s USING (group_name, minute, topic, partition)
), merged AS (
    SELECT group_name, minute, topic, partition, won,
        CASE WHEN won THEN new_commits ELSE 0 END AS added,
        CASE WHEN won THEN new_offset ELSE old_offset END AS committed_offset,
        CASE WHEN won THEN new_time ELSE old_time END AS commit_timestamp,
        CASE WHEN won THEN new_position ELSE old_position END AS source_offset,
        -- NULL stays NULL: entries moved over from before migration 0007 have no count.
        CASE WHEN NOT won THEN old_commits WHEN first THEN new_commits
             ELSE old_commits + new_commits END AS commits
    FROM joined
), history AS (
    INSERT INTO offset_history AS h (cluster, group_name, minute, topics, partitions,
        committed_offsets, commit_timestamps, source_offsets, commit_counts)
    SELECT %(cluster)s, group_name, minute,
        array_agg(topic ORDER BY source_offset, topic, partition),
        array_agg(partition ORDER BY source_offset, topic, partition),
        array_agg(committed_offset ORDER BY source_offset, topic, partition),
        array_agg(commit_timestamp ORDER BY source_offset, topic, partition),
        array_agg(source_offset ORDER BY source_offset, topic, partition),
        array_agg(commits ORDER BY source_offset, topic, partition)
    FROM merged
    GROUP BY group_name, minute
    HAVING bool_or(won)
    ON CONFLICT (cluster, group_name, minute) DO UPDATE SET
        topics = excluded.topics,
        partitions = excluded.partitions,
        committed_offsets = excluded.committed_offsets,
        commit_timestamps = excluded.commit_timestamps,
        source_offsets = excluded.source_offsets,
        commit_counts = excluded.commit_counts
)
UPDATE groups AS g SET
    commits_total = g.commits_total + coalesce(w.added, 0),
    last_commit_timestamp = greatest(g.last_commit_timestamp, s.last_commit)
FROM (
    SELECT group_name, max(coalesce(latest_commit_time, commit_timestamp)) AS last_commit
    FROM stage_offsets GROUP BY group_name
) s
LEFT JOIN (
    SELECT group_name, sum(added) AS added FROM merged WHERE won GROUP BY group_name
) w USING (group_name)
WHERE g.cluster = %(cluster)s AND g.name = s.group_name
  AND (w.added > 0 OR s.last_commit > coalesce(g.last_commit_timestamp, '-infinity'))
"""

INSERT_DECODE_FAILURES = """
INSERT INTO decode_failures (cluster, source_partition, source_offset, reason, key, value,
    source_timestamp, batch_id, category)
SELECT %(cluster)s, source_partition, source_offset, reason, key, value, source_timestamp,
    %(batch_id)s, coalesce(category, reason)
FROM stage_decode_failures
ON CONFLICT (cluster, source_partition, source_offset) DO NOTHING
"""

UPSERT_PROGRESS = """
INSERT INTO pipeline_progress AS p (cluster, source, partition, last_offset, batch_id,
    updated_at, position_base)
VALUES (%(cluster)s, %(source)s, %(partition)s, %(last_offset)s, %(batch_id)s, %(batch_time)s,
    %(base)s)
ON CONFLICT (cluster, source, partition) DO UPDATE SET
    last_offset = excluded.last_offset,
    position_base = greatest(p.position_base, excluded.position_base),
    batch_id = excluded.batch_id,
    updated_at = excluded.updated_at
WHERE p.last_offset < excluded.last_offset
"""

# A written batch adds itself to its source's health row, once: a batch replayed after a
# crash between this write and Spark's checkpoint commit has an id no greater than the
# last one counted, so it only refreshes the batch's details. A new checkpoint restarts
# batch ids at 0; the job clears last_batch_id first (`HistoryStore.restart_batches`).
_NEW_BATCH = "(s.last_batch_id IS NULL OR s.last_batch_id < excluded.last_batch_id)"
COUNT_BATCH = f"""
INSERT INTO pipeline_status AS s (cluster, source, batches_total, records_total,
    log_resets_total, last_batch_id, last_batch_time, last_batch_records, last_batch_seconds,
    caught_up, updated_at)
VALUES (%(cluster)s, %(source)s, 1, %(records)s, %(log_resets)s, %(batch_id)s, %(batch_time)s,
    %(records)s, %(seconds)s, false, %(batch_time)s)
ON CONFLICT (cluster, source) DO UPDATE SET
    batches_total = s.batches_total + CASE WHEN {_NEW_BATCH} THEN 1 ELSE 0 END,
    records_total = s.records_total
        + CASE WHEN {_NEW_BATCH} THEN excluded.records_total ELSE 0 END,
    log_resets_total = s.log_resets_total
        + CASE WHEN {_NEW_BATCH} THEN excluded.log_resets_total ELSE 0 END,
    last_batch_id = greatest(s.last_batch_id, excluded.last_batch_id),
    last_batch_time = excluded.last_batch_time,
    last_batch_records = excluded.last_batch_records,
    last_batch_seconds = excluded.last_batch_seconds,
    updated_at = excluded.updated_at
"""

REPORT_STATUS = """
INSERT INTO pipeline_status AS s (cluster, source, batches_total, records_total, caught_up,
    records_behind, input_rows_per_second, processed_rows_per_second, updated_at,
    degraded_reason, degraded_since)
VALUES (%(cluster)s, %(source)s, 0, 0, %(caught_up)s, %(records_behind)s, %(input_rate)s,
    %(processed_rate)s, %(at)s, %(degraded_reason)s, %(degraded_since)s)
ON CONFLICT (cluster, source) DO UPDATE SET
    caught_up = excluded.caught_up,
    records_behind = excluded.records_behind,
    degraded_reason = excluded.degraded_reason,
    degraded_since = excluded.degraded_since,
    input_rows_per_second = coalesce(excluded.input_rows_per_second, s.input_rows_per_second),
    processed_rows_per_second =
        coalesce(excluded.processed_rows_per_second, s.processed_rows_per_second),
    updated_at = excluded.updated_at
"""

# A replayed batch rewrites the same static replacements: nothing is added twice.
INSERT_REPLACEMENTS = """
INSERT INTO static_replacements (cluster, source_partition, source_offset, instance_id,
    group_name, generation, time, old_member_id, new_member_id)
SELECT %(cluster)s, source_partition, source_offset, instance_id, group_name, generation, time,
    old_member_id, new_member_id
FROM stage_static_replacements
ON CONFLICT DO NOTHING
"""

# Each cost is its rebalance's whole state as the tracker sees it now: it replaces what
# is stored unless that measured more (an older state applied late changes nothing).
# The rebalance is found by its generation's record position; one not stored is skipped.
UPDATE_COSTS = """
UPDATE rebalances AS r SET
    gap_partitions = c.measured,
    gap_waiting = c.waiting,
    gap_max = c.gap_max,
    gap_median = c.gap_median
FROM stage_rebalance_costs c
JOIN generations t ON t.cluster = %(cluster)s
    AND t.source_partition = c.source_partition AND t.source_offset = c.source_offset
WHERE r.to_generation_pk = t.id
  AND (r.gap_partitions IS NULL OR r.gap_partitions <= c.measured)
"""

# A replayed batch repairs the same fields of the same records: nothing is added twice.
INSERT_REPAIRS = """
INSERT INTO record_repairs (cluster, source_partition, source_offset, field, reason,
    original, original_ms, stored, batch_id)
SELECT %(cluster)s, source_partition, source_offset, field, reason, original, original_ms, stored,
    %(batch_id)s
FROM stage_repairs
ON CONFLICT (cluster, source_partition, source_offset, field) DO NOTHING
"""

# Run after the generations and their members are in.
MERGES = (
    INSERT_REBALANCES,
    UPSERT_OFFSETS,
    UPSERT_OFFSET_HISTORY,
    INSERT_DECODE_FAILURES,
)

# psycopg errors that mean the server, not the data, failed: lost connections, shutdowns,
# and (as subclasses of OperationalError) deadlocks, serialization failures and full
# disks. All are worth a retry.
_CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError)
# Also an OperationalError, but the data's doing (SQLSTATE class 54: an index entry too
# big, too many values): a retry fails the same way, so it is a rejection.
_DATA_LIMITS = (psycopg.errors.ProgramLimitExceeded,)


class Statements:
    """Runs a batch write's merge statements, in order, on the transaction's cursor.

    The store's seam for failure tests: a subclass passed to `HistoryStore` can stop the
    server or end the connection between two statements (`execute`) or after the last
    one, just before the commit (`before_commit`), and so put a real fault at an exact
    point of the transaction. The job uses this class as it is.
    """

    def execute(self, cursor: psycopg.Cursor, statement: str, params: Mapping[str, object]) -> None:
        cursor.execute(statement, params)

    def before_commit(self, cursor: psycopg.Cursor) -> None:
        """Called once the whole batch is merged, before the transaction commits."""


class HistoryStore:
    """The streaming job's handle on the store: one `write_batch` per micro-batch.

    Bound to one cluster (`services.store.clusters`): it writes every row under that
    name, and its reads (progress, batch counts) see only that cluster's rows.
    """

    def __init__(
        self,
        engine: Engine,
        statements: Statements | None = None,
        *,
        cluster: str = DEFAULT_CLUSTER,
    ) -> None:
        self.engine = engine
        self.statements = statements or Statements()
        self.cluster = cluster

    def write_batch(self, batch: BatchWrite) -> None:
        """Apply the whole batch in one transaction, or raise and keep none of it.

        Raises `StoreUnavailableError` when the database is unreachable or the
        connection dies mid-batch, and `BatchRejectedError` when the data breaks a
        constraint. In both cases the transaction rolled back.
        """
        with self._transaction(f"batch {batch.batch_id} of {batch.source} not written") as cur:
            _merge(cur, _stage(cur, batch), self.statements, self.cluster)
            self.statements.before_commit(cur)

    def rejection(self, batch: BatchWrite) -> str | None:
        """Why the database would reject `batch` (its first line), or None if it would take it.

        A dry run: the batch is written in a transaction that is then rolled back.
        Raises `StoreUnavailableError` like `write_batch`.
        """
        try:
            with self._transaction(f"batch {batch.batch_id} rejected", keep=False) as cur:
                _merge(cur, _stage(cur, batch), self.statements, self.cluster)
        except BatchRejectedError as exc:
            return first_line(exc.__cause__ or exc)
        return None

    def report_status(self, status: PipelineReport) -> None:
        """Record whether the job has caught up with its source, between batches.

        Raises `StoreUnavailableError` or `BatchRejectedError` like `write_batch`.
        """
        with self._transaction(f"status of {status.source} not written") as cursor:
            cursor.execute(REPORT_STATUS, {**asdict(status), "cluster": self.cluster})

    @contextmanager
    def _transaction(self, failure: str, *, keep: bool = True) -> Iterator[psycopg.Cursor]:
        """A psycopg cursor in one transaction, committed unless `keep` is false; errors
        become store errors naming `failure`."""
        try:
            with self.engine.connect() as conn, conn.begin() as transaction:
                with psycopg_connection(conn).cursor() as cursor:
                    yield cursor
                if not keep:
                    transaction.rollback()
        except (DBAPIError, psycopg.Error) as exc:
            raise store_error(exc, failure) from exc
        except UnicodeEncodeError as exc:  # a lone surrogate: no encoding can send it
            raise BatchRejectedError(f"{failure}: {exc}") from exc

    def progress(self, source: str) -> dict[int, tuple[int, int]]:
        """`{source partition: (last processed offset, batch id)}` as stored."""
        query = text(
            "SELECT partition, last_offset, batch_id FROM pipeline_progress "
            "WHERE cluster = :c AND source = :s"
        )
        try:
            with self.engine.connect() as conn:
                rows = conn.execute(query, {"c": self.cluster, "s": source}).all()
        except DBAPIError as exc:
            raise store_error(exc, f"progress of {source} not read") from exc
        return {partition: (offset, batch_id) for partition, offset, batch_id in rows}

    def position_bases(self, source: str) -> dict[int, int]:
        """`{source partition: position base}` where a base was raised (see
        `SourceProgress.base`), for a new checkpoint to start from."""
        query = text(
            "SELECT partition, position_base FROM pipeline_progress "
            "WHERE cluster = :c AND source = :s AND position_base > 0"
        )
        try:
            with self.engine.connect() as conn:
                rows = conn.execute(query, {"c": self.cluster, "s": source}).all()
            return {partition: base for partition, base in rows}
        except DBAPIError as exc:
            raise store_error(exc, f"position bases of {source} not read") from exc

    def last_batch(self, source: str) -> int | None:
        """The newest batch id of `source` the store holds (and has counted), or None."""
        query = text("SELECT last_batch_id FROM pipeline_status WHERE cluster = :c AND source = :s")
        try:
            with self.engine.connect() as conn:
                return conn.execute(query, {"c": self.cluster, "s": source}).scalar_one_or_none()
        except DBAPIError as exc:
            raise store_error(exc, f"last batch of {source} not read") from exc

    def restart_batches(self, source: str) -> None:
        """Count `source`'s batches from id 0 again: a new checkpoint restarts Spark's
        batch ids, and `COUNT_BATCH` counts only ids above the last one counted."""
        query = text(
            "UPDATE pipeline_status SET last_batch_id = NULL WHERE cluster = :c AND source = :s"
        )
        try:
            with self.engine.begin() as conn:
                conn.execute(query, {"c": self.cluster, "s": source})
        except DBAPIError as exc:
            raise store_error(exc, f"batch count of {source} not restarted") from exc


def store_error(exc: DBAPIError | psycopg.Error, what: str) -> StoreError:
    """`StoreUnavailableError` if the server failed, else `BatchRejectedError`; the message
    is `what` and the first line of what the database said."""
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    message = f"{what}: {first_line(exc)}"
    invalidated = isinstance(exc, DBAPIError) and exc.connection_invalidated
    if invalidated or (
        isinstance(cause, _CONNECTION_ERRORS) and not isinstance(cause, _DATA_LIMITS)
    ):
        return StoreUnavailableError(message)
    return BatchRejectedError(message)


def _stage(cursor: psycopg.Cursor, batch: BatchWrite) -> BatchWrite:
    """COPY the batch into the staging tables; returns it as stored, repairs included."""
    repairs = list(batch.repairs)
    batch = replace(
        batch,
        group_events=[sanitize.group_event(e, repairs) for e in batch.group_events],
        generations=[sanitize.generation(g, repairs) for g in batch.generations],
        decode_failures=[sanitize.decode_failure(f, repairs) for f in batch.decode_failures],
    )
    tables = (
        (staging.GROUP_EVENTS, _group_event_rows(batch)),
        (staging.OFFSETS, _offset_rows(batch, repairs)),  # repairs its rows as it goes
        (staging.GENERATIONS, _generation_rows(batch)),
        (staging.REBALANCES, _rebalance_rows(batch)),
        (staging.DECODE_FAILURES, _decode_failure_rows(batch)),
    )
    for table, rows in tables:
        table.create_temp(cursor)
        table.copy(cursor, rows)
    if repairs:
        staging.REPAIRS.create_temp(cursor)
        staging.REPAIRS.copy(cursor, (astuple(r) for r in repairs))
    if batch.replacements:
        staging.REPLACEMENTS.create_temp(cursor)
        staging.REPLACEMENTS.copy(cursor, _replacement_rows(batch))
    if batch.costs:
        staging.COSTS.create_temp(cursor)
        staging.COSTS.copy(cursor, (astuple(c)[1:] for c in batch.costs))  # all but group
    return replace(batch, repairs=repairs)


def _merge(cursor: psycopg.Cursor, batch: BatchWrite, statements: Statements, cluster: str) -> None:
    params: dict[str, object] = {
        "batch_id": batch.batch_id,
        "batch_time": batch.batch_time,
        "cluster": cluster,
    }
    # Sorting 100,000 staged offsets needs ~15 MB; the 4 MB default spills to disk.
    cursor.execute("SET LOCAL work_mem = '64MB'")
    statements.execute(cursor, UPSERT_GROUPS, params)
    statements.execute(cursor, APPLY_GROUP_EVENTS, params)
    statements.execute(cursor, INSERT_GENERATIONS, params)
    created = {(sp, so): pk for pk, sp, so in cursor.fetchall()}
    if created:
        staging.MEMBERS.copy(cursor, _member_rows(batch, created))
    for statement in MERGES:
        statements.execute(cursor, statement, params)
    if batch.repairs:
        statements.execute(cursor, INSERT_REPAIRS, params)
    if batch.replacements:
        statements.execute(cursor, INSERT_REPLACEMENTS, params)
    if batch.costs:
        statements.execute(cursor, UPDATE_COSTS, params)
    cursor.executemany(
        UPSERT_PROGRESS,
        [
            {
                **params,
                "source": batch.source,
                "partition": p.partition,
                "last_offset": p.last_offset,
                "base": p.base,
            }
            for p in batch.progress
        ],
    )
    if batch.health is not None:
        health = {
            "records": batch.health.records,
            "seconds": batch.health.seconds,
            "log_resets": batch.health.log_resets,
        }
        cursor.execute(COUNT_BATCH, {**params, **health, "source": batch.source})


def _group_event_rows(batch: BatchWrite) -> Iterator[tuple[object, ...]]:
    for e in batch.group_events:
        yield (e.group, e.time, e.source_partition, e.source_offset, e.type, e.deleted)
    # A generation record also says which protocol the group speaks and that it lives.
    for g in batch.generations:
        yield (g.group, g.time, g.source_partition, g.source_offset, g.group_type, False)


def _offset_rows(batch: BatchWrite, repairs: list[Repair]) -> Iterator[tuple[object, ...]]:
    """The offsets' rows. The hot path: a clean row costs five cheap string checks."""
    limit, nul = sanitize.KEY_LIMIT_CHARS, sanitize.NUL
    for o in batch.offsets:
        group, topic, metadata = o.group, o.topic, o.metadata
        if (
            nul in group
            or nul in topic
            or len(group) > limit
            or len(topic) > limit
            or (metadata is not None and nul in metadata)
        ):
            o = sanitize.offset_commit(o, repairs)
            group, topic, metadata = o.group, o.topic, o.metadata
        yield (
            group,
            topic,
            o.partition,
            o.offset,
            o.leader_epoch,
            metadata,
            o.commit_time,
            o.expire_time,
            o.source_partition,
            o.source_offset,
            o.commits,
            o.record_time,
            o.latest_commit_time,
        )


def _generation_rows(batch: BatchWrite) -> Iterator[tuple[object, ...]]:
    for g in batch.generations:
        yield (
            g.group,
            g.generation,
            g.protocol_type,
            g.assignor,
            g.leader,
            g.state_time,
            g.time,
            len(g.members),
            g.source_partition,
            g.source_offset,
            g.source_time,
            g.group_state,
            g.partition_count,
        )


def _created(
    batch: BatchWrite, created: dict[tuple[int, int], int]
) -> Iterator[tuple[int, Generation]]:
    """(primary key, generation) for each generation of the batch that is new."""
    for g in batch.generations:
        pk = created.get((g.source_partition, g.source_offset))
        if pk is not None:
            yield pk, g


def _member_rows(
    batch: BatchWrite, created: dict[tuple[int, int], int]
) -> Iterator[tuple[object, ...]]:
    for pk, g in _created(batch, created):
        for m in g.members:
            owned = m.owned_partitions
            yield (
                pk,
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.session_timeout_ms,
                m.rebalance_timeout_ms,
                staging.text_array(m.subscribed_topics),
                m.rack,
                None if owned is None else staging.json_text(owned),
                m.reported_generation,
                staging.json_text(m.assignment),
            )


def _rebalance_rows(batch: BatchWrite) -> Iterator[tuple[object, ...]]:
    for g in batch.generations:
        r = g.rebalance
        if r is None:
            continue
        yield (
            g.source_partition,
            g.source_offset,
            r.from_source_offset,
            r.from_generation,
            r.members_joined,
            r.members_left,
            r.moved,
            r.revoked,
            r.newly_assigned,
            r.moves_from_survivors,
            r.baseline_moves,
            r.baseline_assignor,
            r.minimum_moves,
            r.cooperative_episode,
            r.disruptive,
            _causes_json([c.as_dict() for c in g.causes]),
        )


def _causes_json(causes: list[dict[str, object]]) -> str:
    """jsonb refuses U+0000, which a client id or host may hold: replaced by U+FFFD."""
    return json.dumps(causes).replace("\\u0000", "\ufffd")


def _replacement_rows(batch: BatchWrite) -> Iterator[tuple[object, ...]]:
    for r in batch.replacements:
        yield (
            r.source_partition,
            r.source_offset,
            r.instance_id.replace("\0", "\ufffd"),
            r.group,
            r.generation,
            r.time,
            r.old_member_id.replace("\0", "\ufffd"),
            r.new_member_id.replace("\0", "\ufffd"),
        )


def _decode_failure_rows(batch: BatchWrite) -> Iterator[tuple[object, ...]]:
    for f in batch.decode_failures:
        yield (
            f.source_partition,
            f.source_offset,
            f.reason,
            f.key,
            f.value,
            f.source_time,
            f.category,
        )
