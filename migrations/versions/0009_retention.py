"""Retention: the offset history partitioned by day, and a stored time on every row.

- `offset_history` becomes a table partitioned by range of `minute`, one partition a
  UTC day (`offset_history_pYYYYMMDD`, from midnight to midnight), so that pruning a
  day drops its partition instead of deleting its rows one by one
  (`services.store.partitions`). A default partition (`offset_history_default`) takes
  any minute no day partition covers, so that no write ever fails for want of a
  partition; the job creates the days ahead.
- Its rows are moved over, every one: a partition is created for each day that has
  rows from 366 days ago (the longest retention) to two days ahead (what the job creates
  ahead); rows outside that range (commit timestamps far in the past or the future) go
  to the default partition. The views that read it (`offset_history_entries`,
  `generation_offset_progress`, `group_timeline`) are recreated as they were.
- `pruned_rebalances` and `pruned_decode_failures`: what retention deleted, still
  counted (per group and primary cause: rebalances, disruptive ones, partition moves;
  per failure category: failures), so that the exporter's counters built from those
  rows (`groupscope_group_rebalances_total`, `..._partition_moves_total`,
  `groupscope_decode_failures_total`) never go down when rows are pruned.
- `decode_failures.stored_at` and `record_repairs.stored_at`: when the row was stored.
  A repair has no time of its own, and a decode failure's record may have none; rows
  stored before this revision get the time of the upgrade, so that retention counts
  their age from it (kept longer, never pruned early).

Downgrade moves the rows back into one plain table (every partition's, the default's
included) and drops the two columns and the two tables (the pruned counts go: the
exporter's counters then drop by what was pruned, as a counter reset).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 04:00:00
"""

import importlib
from collections.abc import Sequence
from datetime import UTC

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Timestamp = sa.DateTime(timezone=True)
COLUMNS = """
    group_name text NOT NULL,
    minute timestamp with time zone NOT NULL,
    topics text[] NOT NULL,
    partitions integer[] NOT NULL,
    committed_offsets bigint[] NOT NULL,
    commit_timestamps timestamp with time zone[] NOT NULL,
    source_offsets bigint[] NOT NULL,
    commit_counts integer[] NOT NULL,
    CONSTRAINT pk_offset_history PRIMARY KEY (group_name, minute)
"""
# The days that get a partition of their own when rows are moved over: within the
# longest retention (services.durations.MAX_DURATION_MS) and the days the job creates
# ahead (services.store.partitions.DAYS_AHEAD), as they were when this was written.
DAYS = """
SELECT DISTINCT date_bin(INTERVAL '1 day', minute, TIMESTAMPTZ '2000-01-01 00:00:00+00') AS day
FROM offset_history_unpartitioned
WHERE minute >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                - INTERVAL '366 days'
  AND minute < date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                + INTERVAL '3 days'
ORDER BY day
"""
TABLES = ("decode_failures", "record_repairs")
COUNTS = ("rebalances", "disruptive", "partitions_moved", "baseline_moves", "minimum_moves")


def _views() -> tuple[str, str, str]:
    """The views on `offset_history` as 0008 left them, as CREATE statements."""
    m0007 = importlib.import_module("migrations.versions.0007_offset_history_by_minute")
    m0008 = importlib.import_module("migrations.versions.0008_rebalance_costs")
    _, progress, _ = m0007._views()  # 0002's progress view, unchanged since
    timeline: str = m0008._timeline(extra=True)
    return m0007.OFFSET_HISTORY_ENTRIES, progress, timeline


def _drop_views() -> None:
    op.execute("DROP VIEW group_timeline")
    op.execute("DROP VIEW generation_offset_progress")
    op.execute("DROP VIEW offset_history_entries")


def _create_views() -> None:
    for view in _views():
        op.execute(view)


def upgrade() -> None:
    _drop_views()
    op.rename_table("offset_history", "offset_history_unpartitioned")
    op.execute("ALTER INDEX pk_offset_history RENAME TO pk_offset_history_unpartitioned")
    op.execute(f"CREATE TABLE offset_history ({COLUMNS}) PARTITION BY RANGE (minute)")
    op.execute("CREATE TABLE offset_history_default PARTITION OF offset_history DEFAULT")
    for (found,) in op.get_bind().execute(sa.text(DAYS)).all():
        day = found.astimezone(UTC)
        op.execute(
            f"CREATE TABLE offset_history_p{day:%Y%m%d} PARTITION OF offset_history "
            f"FOR VALUES FROM ('{day.isoformat()}') "
            f"TO ('{day.isoformat()}'::timestamptz + INTERVAL '1 day')"
        )
    op.execute("INSERT INTO offset_history SELECT * FROM offset_history_unpartitioned")
    op.drop_table("offset_history_unpartitioned")
    _create_views()
    for table in TABLES:
        op.add_column(
            table,
            sa.Column("stored_at", Timestamp, server_default=sa.text("now()"), nullable=False),
        )
    op.create_table(
        "pruned_rebalances",
        sa.Column("group_name", sa.Text(), nullable=False),
        sa.Column("cause", sa.Text(), nullable=False),
        *(sa.Column(name, sa.BigInteger(), nullable=False) for name in COUNTS),
        sa.PrimaryKeyConstraint("group_name", "cause", name=op.f("pk_pruned_rebalances")),
    )
    op.create_table(
        "pruned_decode_failures",
        sa.Column("category", sa.Text(), nullable=False),
        sa.Column("failures", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("category", name=op.f("pk_pruned_decode_failures")),
    )


def downgrade() -> None:
    op.drop_table("pruned_decode_failures")
    op.drop_table("pruned_rebalances")
    for table in TABLES:
        op.drop_column(table, "stored_at")
    _drop_views()
    op.execute(f"CREATE TABLE offset_history_unpartitioned ({COLUMNS.replace('pk_', 'pk_u_')})")
    op.execute("INSERT INTO offset_history_unpartitioned SELECT * FROM offset_history")
    op.drop_table("offset_history")  # and every partition with it
    op.rename_table("offset_history_unpartitioned", "offset_history")
    op.execute("ALTER INDEX pk_u_offset_history RENAME TO pk_offset_history")
    _create_views()
