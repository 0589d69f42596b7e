"""Offset history per minute of commit time, not per micro-batch.

- `offset_history` is rebuilt: one row per group and minute of history time (the commit
  timestamp, else the record's timestamp, else the batch's time) with each partition's
  latest record of that minute, so that it no longer depends on how the records were cut
  into micro-batches (`services.store.models.OffsetHistory`). Each entry counts the
  commit records of its minute (`commit_counts`).
- The rows stored before are moved over: each partition's latest entry of each minute
  (by source position), at the minute of its commit timestamp, else of its batch's time
  (the only time those rows kept for a tombstone). Their counts were per batch, not per
  partition, so the moved entries' counts are NULL.
- The old table is kept, renamed `offset_history_batches`, with every row it had: at a
  short trigger it holds several points per partition and minute, and the batch ids and
  times, which the new shape has no place for, and an upgrade deletes nothing.
  Nothing writes or reads it; `DROP TABLE offset_history_batches` reclaims the space.
- `offset_history_entries` shows the new rows (`minute` and `commits` instead of
  `batch_id` and `batch_time`); `generation_offset_progress` reads it as before; in
  `group_timeline`, "offsets were known before the generation ended" (a stalled
  generation's 0 rather than NULL) compares the history's minutes, not batch times, with
  the next generation's start.

Downgrade moves the entries stored since the upgrade (those past each group's last
position in `offset_history_batches`) back as one old-style row per group and minute,
stamped with batch id -1 and the minute as batch time, and drops the new table.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 09:00:00
"""

import importlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Timestamp = sa.DateTime(timezone=True)
# services.store.batch.HISTORY_INTERVAL_MS when this revision was written.
INTERVAL = "INTERVAL '60000 milliseconds'"

OFFSET_HISTORY_ENTRIES = """
CREATE VIEW offset_history_entries AS
SELECT h.group_name, e.topic, e.partition, e.committed_offset, e.commit_timestamp,
       e.source_offset, e.commits, h.minute
FROM offset_history h
CROSS JOIN LATERAL unnest(h.topics, h.partitions, h.committed_offsets, h.commit_timestamps,
                          h.source_offsets, h.commit_counts)
    AS e(topic, partition, committed_offset, commit_timestamp, source_offset, commits)
"""

MOVE_OVER = f"""
INSERT INTO offset_history (group_name, minute, topics, partitions, committed_offsets,
    commit_timestamps, source_offsets, commit_counts)
SELECT group_name, minute,
    array_agg(topic ORDER BY source_offset, topic, partition),
    array_agg(partition ORDER BY source_offset, topic, partition),
    array_agg(committed_offset ORDER BY source_offset, topic, partition),
    array_agg(commit_timestamp ORDER BY source_offset, topic, partition),
    array_agg(source_offset ORDER BY source_offset, topic, partition),
    array_agg(NULL::integer)
FROM (
    SELECT DISTINCT ON (h.group_name, minute, e.topic, e.partition)
        h.group_name, e.*,
        date_bin({INTERVAL}, coalesce(e.commit_timestamp, h.batch_time), TIMESTAMPTZ 'epoch')
            AS minute
    FROM offset_history_batches h
    CROSS JOIN LATERAL unnest(h.topics, h.partitions, h.committed_offsets,
        h.commit_timestamps, h.source_offsets)
        AS e(topic, partition, committed_offset, commit_timestamp, source_offset)
    ORDER BY h.group_name, minute, e.topic, e.partition, e.source_offset DESC
) latest
GROUP BY group_name, minute
"""

MOVE_BACK = """
INSERT INTO offset_history_batches AS b (group_name, source_offset, batch_id, batch_time,
    topics, partitions, committed_offsets, commit_timestamps, source_offsets, commit_count)
SELECT group_name, max(source_offset), -1, minute,
    array_agg(topic ORDER BY source_offset), array_agg(partition ORDER BY source_offset),
    array_agg(committed_offset ORDER BY source_offset),
    array_agg(commit_timestamp ORDER BY source_offset),
    array_agg(source_offset ORDER BY source_offset), sum(commits)
FROM (
    SELECT h.group_name, h.minute, e.*
    FROM offset_history h
    CROSS JOIN LATERAL unnest(h.topics, h.partitions, h.committed_offsets,
        h.commit_timestamps, h.source_offsets, h.commit_counts)
        AS e(topic, partition, committed_offset, commit_timestamp, source_offset, commits)
    WHERE e.source_offset > coalesce(
        (SELECT max(o.source_offset) FROM offset_history_batches o
         WHERE o.group_name = h.group_name), -1)
) since
GROUP BY group_name, minute
ON CONFLICT DO NOTHING
"""

STALL_BEFORE = "h.batch_time < coalesce(g.next_time, 'infinity')"
STALL_AFTER = "h.minute < coalesce(g.next_time, 'infinity')"


def _views() -> tuple[str, str, str]:
    """0002's entries and progress views, and 0006's timeline (which 0005 and 0006
    amended from 0002's), as CREATE statements."""
    m0005 = importlib.import_module("migrations.versions.0005_disruptive_rebalances")
    m0006 = importlib.import_module("migrations.versions.0006_rebalance_causes")
    views = m0005._views_0002()
    timeline: str = m0006._timeline(extra=True).replace("CREATE OR REPLACE VIEW", "CREATE VIEW", 1)
    assert timeline.count(STALL_BEFORE) == 1, "migration 0002's timeline changed"
    return views.OFFSET_HISTORY_ENTRIES, views.GENERATION_OFFSET_PROGRESS, timeline


def timeline() -> str:
    """This revision's `group_timeline` (0006's, with stalls read from the minutes), as
    CREATE OR REPLACE VIEW, for the revisions that amend it."""
    m0006 = importlib.import_module("migrations.versions.0006_rebalance_causes")
    sql: str = m0006._timeline(extra=True)
    assert sql.count(STALL_BEFORE) == 1, "migration 0002's timeline changed"
    return sql.replace(STALL_BEFORE, STALL_AFTER)


def _drop_views() -> None:
    op.execute("DROP VIEW group_timeline")
    op.execute("DROP VIEW generation_offset_progress")
    op.execute("DROP VIEW offset_history_entries")


def upgrade() -> None:
    _, progress, timeline = _views()
    _drop_views()
    op.rename_table("offset_history", "offset_history_batches")
    op.execute("ALTER INDEX pk_offset_history RENAME TO pk_offset_history_batches")
    op.execute(
        "ALTER INDEX ix_offset_history_group_name_batch_time "
        "RENAME TO ix_offset_history_batches_group_name_batch_time"
    )
    op.create_table(
        "offset_history",
        sa.Column("group_name", sa.Text(), nullable=False),
        sa.Column("minute", Timestamp, nullable=False),
        sa.Column("topics", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("partitions", postgresql.ARRAY(sa.Integer()), nullable=False),
        sa.Column("committed_offsets", postgresql.ARRAY(sa.BigInteger()), nullable=False),
        sa.Column("commit_timestamps", postgresql.ARRAY(Timestamp), nullable=False),
        sa.Column("source_offsets", postgresql.ARRAY(sa.BigInteger()), nullable=False),
        sa.Column("commit_counts", postgresql.ARRAY(sa.Integer()), nullable=False),
        sa.PrimaryKeyConstraint("group_name", "minute", name=op.f("pk_offset_history")),
    )
    op.execute(MOVE_OVER)
    op.execute(OFFSET_HISTORY_ENTRIES)
    op.execute(progress)
    op.execute(timeline.replace(STALL_BEFORE, STALL_AFTER))


def downgrade() -> None:
    entries, progress, timeline = _views()
    _drop_views()
    op.execute(MOVE_BACK)
    op.drop_table("offset_history")
    op.execute(
        "ALTER INDEX ix_offset_history_batches_group_name_batch_time "
        "RENAME TO ix_offset_history_group_name_batch_time"
    )
    op.execute("ALTER INDEX pk_offset_history_batches RENAME TO pk_offset_history")
    op.rename_table("offset_history_batches", "offset_history")
    op.execute(entries)
    op.execute(progress)
    op.execute(timeline)
