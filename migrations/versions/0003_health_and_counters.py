"""Pipeline health and the exporter's counters.

- `pipeline_status`: one row per source with the streaming job's health (batches and
  records processed, the last batch's size, duration and rates, how far behind it is,
  and whether it has caught up). The job updates it after every batch; the exporter
  publishes it and `/readyz` waits for `caught_up`.
- `groups.commits_total` and `groups.last_commit_timestamp`: every offset commit record
  counted once, including the ones a later commit of the same partition superseded in
  the same batch (`offset_history.commit_count` keeps each batch's share).
- `generations.state` (stable, empty or rebalancing: a cooperative revocation round) and
  `generations.partition_count`, so that the exporter does not unpack assignments;
  existing generations are filled in from their members.
- `decode_failures.category`: a short, bounded reason for counting by label.
- An index on `rebalances.time` for storm windows over all groups, and one on each
  group's generations by source position, so that the latest generation of every group
  is an index probe per group rather than a sort of the whole history.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 08:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "pipeline_status",
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("batches_total", sa.BigInteger(), nullable=False),
        sa.Column("records_total", sa.BigInteger(), nullable=False),
        sa.Column("last_batch_id", sa.BigInteger(), nullable=True),
        sa.Column("last_batch_time", Timestamp, nullable=True),
        sa.Column("last_batch_records", sa.BigInteger(), nullable=True),
        sa.Column("last_batch_seconds", sa.Float(), nullable=True),
        sa.Column("input_rows_per_second", sa.Float(), nullable=True),
        sa.Column("processed_rows_per_second", sa.Float(), nullable=True),
        sa.Column("records_behind", sa.BigInteger(), nullable=True),
        sa.Column("caught_up", sa.Boolean(), nullable=False),
        sa.Column("updated_at", Timestamp, nullable=False),
        sa.PrimaryKeyConstraint("source", name=op.f("pk_pipeline_status")),
    )
    op.add_column(
        "groups",
        sa.Column("commits_total", sa.BigInteger(), server_default="0", nullable=False),
    )
    op.add_column("groups", sa.Column("last_commit_timestamp", Timestamp, nullable=True))
    op.add_column("offset_history", sa.Column("commit_count", sa.Integer(), nullable=True))
    op.add_column("generations", sa.Column("state", sa.Text(), nullable=True))
    op.add_column("generations", sa.Column("partition_count", sa.Integer(), nullable=True))
    # Generations written before this revision: stable or empty by their members (a
    # cooperative revocation round cannot be told apart afterwards), and the partitions
    # their members' assignments hold.
    op.execute(
        "UPDATE generations SET state = CASE WHEN member_count > 0 THEN 'stable' ELSE 'empty' END"
    )
    op.execute(
        """
        UPDATE generations g SET partition_count = (
            SELECT coalesce(sum(json_array_length(e.value)), 0)
            FROM generation_members m, json_each(m.assignment) e
            WHERE m.generation_pk = g.id)
        """
    )
    op.add_column("decode_failures", sa.Column("category", sa.Text(), nullable=True))
    op.create_index(op.f("ix_rebalances_time"), "rebalances", ["time"])
    op.create_index(
        "ix_generations_group_name_source",
        "generations",
        ["group_name", "source_partition", "source_offset"],
    )


def downgrade() -> None:
    op.drop_index("ix_generations_group_name_source", table_name="generations")
    op.drop_index(op.f("ix_rebalances_time"), table_name="rebalances")
    op.drop_column("decode_failures", "category")
    op.drop_column("generations", "partition_count")
    op.drop_column("generations", "state")
    op.drop_column("offset_history", "commit_count")
    op.drop_column("groups", "last_commit_timestamp")
    op.drop_column("groups", "commits_total")
    op.drop_table("pipeline_status")
