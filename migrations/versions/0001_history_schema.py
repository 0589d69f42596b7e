"""History schema: groups, generations with members and assignments, rebalances, offsets.

Revision ID: 0001
Revises:
Create Date: 2026-11-21 07:04:47.618158
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "decode_failures",
        sa.Column("source_partition", sa.Integer(), nullable=False),
        sa.Column("source_offset", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("key", sa.LargeBinary(), nullable=True),
        sa.Column("value", sa.LargeBinary(), nullable=True),
        sa.Column("source_timestamp", sa.DateTime(timezone=True), nullable=True),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "source_partition", "source_offset", name=op.f("pk_decode_failures")
        ),
    )
    op.create_table(
        "groups",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("type", sa.Text(), nullable=True),
        sa.Column("coordinator_partition", sa.Integer(), nullable=True),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("state_source_offset", sa.BigInteger(), nullable=True),
        sa.CheckConstraint(
            "type IS NULL OR type IN ('classic', 'consumer', 'share', 'streams')",
            name=op.f("ck_groups_type"),
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_groups")),
    )
    op.create_table(
        "pipeline_progress",
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("last_offset", sa.BigInteger(), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("source", "partition", name=op.f("pk_pipeline_progress")),
    )
    op.create_table(
        "committed_offsets",
        sa.Column("group_name", sa.Text(), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("committed_offset", sa.BigInteger(), nullable=True),
        sa.Column("leader_epoch", sa.Integer(), nullable=True),
        sa.Column("metadata", sa.Text(), nullable=True),
        sa.Column("commit_timestamp", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expire_timestamp", sa.DateTime(timezone=True), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("source_partition", sa.Integer(), nullable=False),
        sa.Column("source_offset", sa.BigInteger(), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "group_name", "topic", "partition", name=op.f("pk_committed_offsets")
        ),
        postgresql_with={"fillfactor": 50},
    )
    op.create_table(
        "generations",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("group_name", sa.Text(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("protocol_type", sa.Text(), nullable=True),
        sa.Column("assignor", sa.Text(), nullable=True),
        sa.Column("leader", sa.Text(), nullable=True),
        sa.Column("state_timestamp", sa.DateTime(timezone=True), nullable=True),
        sa.Column("time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("member_count", sa.Integer(), nullable=False),
        sa.Column("source_partition", sa.Integer(), nullable=False),
        sa.Column("source_offset", sa.BigInteger(), nullable=False),
        sa.Column("source_timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_name"], ["groups.name"], name=op.f("fk_generations_group_name_groups")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_generations")),
        sa.UniqueConstraint(
            "source_partition",
            "source_offset",
            name=op.f("uq_generations_source_partition_source_offset"),
        ),
    )
    op.create_index(
        "ix_generations_group_name_time", "generations", ["group_name", "time"], unique=False
    )
    op.create_table(
        "offset_history",
        sa.Column("group_name", sa.Text(), nullable=False),
        sa.Column("source_offset", sa.BigInteger(), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.Column("batch_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("topics", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("partitions", postgresql.ARRAY(sa.Integer()), nullable=False),
        sa.Column("committed_offsets", postgresql.ARRAY(sa.BigInteger()), nullable=False),
        sa.Column(
            "commit_timestamps", postgresql.ARRAY(sa.DateTime(timezone=True)), nullable=False
        ),
        sa.Column("source_offsets", postgresql.ARRAY(sa.BigInteger()), nullable=False),
        sa.PrimaryKeyConstraint("group_name", "source_offset", name=op.f("pk_offset_history")),
    )
    op.create_index(
        "ix_offset_history_group_name_batch_time",
        "offset_history",
        ["group_name", "batch_time"],
        unique=False,
    )
    op.create_table(
        "generation_members",
        sa.Column("generation_pk", sa.BigInteger(), nullable=False),
        sa.Column("member_id", sa.Text(), nullable=False),
        sa.Column("group_instance_id", sa.Text(), nullable=True),
        sa.Column("client_id", sa.Text(), nullable=True),
        sa.Column("client_host", sa.Text(), nullable=True),
        sa.Column("session_timeout_ms", sa.Integer(), nullable=True),
        sa.Column("rebalance_timeout_ms", sa.Integer(), nullable=True),
        sa.Column("subscribed_topics", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("rack", sa.Text(), nullable=True),
        sa.Column("owned_partitions", postgresql.JSON(astext_type=sa.Text()), nullable=True),
        sa.Column("reported_generation", sa.Integer(), nullable=True),
        sa.Column("assignment", postgresql.JSON(astext_type=sa.Text()), nullable=False),
        sa.PrimaryKeyConstraint("generation_pk", "member_id", name=op.f("pk_generation_members")),
    )
    op.create_table(
        "rebalances",
        sa.Column("to_generation_pk", sa.BigInteger(), nullable=False),
        sa.Column("from_generation_pk", sa.BigInteger(), nullable=True),
        sa.Column("group_name", sa.Text(), nullable=False),
        sa.Column("from_generation", sa.Integer(), nullable=False),
        sa.Column("to_generation", sa.Integer(), nullable=False),
        sa.Column("time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("elapsed", sa.Interval(), nullable=True),
        sa.Column("members_joined", sa.Integer(), nullable=False),
        sa.Column("members_left", sa.Integer(), nullable=False),
        sa.Column("partitions_moved", sa.Integer(), nullable=False),
        sa.Column("partitions_revoked", sa.Integer(), nullable=False),
        sa.Column("partitions_newly_assigned", sa.Integer(), nullable=False),
        sa.Column("moves_from_survivors", sa.Integer(), nullable=False),
        sa.Column("baseline_moves", sa.Integer(), nullable=True),
        sa.Column("baseline_assignor", sa.Text(), nullable=True),
        sa.Column("minimum_moves", sa.Integer(), nullable=True),
        sa.Column("cooperative_episode", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["from_generation_pk"],
            ["generations.id"],
            name=op.f("fk_rebalances_from_generation_pk_generations"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["group_name"], ["groups.name"], name=op.f("fk_rebalances_group_name_groups")
        ),
        sa.ForeignKeyConstraint(
            ["to_generation_pk"],
            ["generations.id"],
            name=op.f("fk_rebalances_to_generation_pk_generations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("to_generation_pk", name=op.f("pk_rebalances")),
    )
    op.create_index(
        op.f("ix_rebalances_from_generation_pk"), "rebalances", ["from_generation_pk"], unique=False
    )
    op.create_index(
        "ix_rebalances_group_name_time", "rebalances", ["group_name", "time"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_rebalances_group_name_time", table_name="rebalances")
    op.drop_index(op.f("ix_rebalances_from_generation_pk"), table_name="rebalances")
    op.drop_table("rebalances")
    op.drop_table("generation_members")
    op.drop_index("ix_offset_history_group_name_batch_time", table_name="offset_history")
    op.drop_table("offset_history")
    op.drop_index("ix_generations_group_name_time", table_name="generations")
    op.drop_table("generations")
    op.drop_table("committed_offsets")
    op.drop_table("pipeline_progress")
    op.drop_table("groups")
    op.drop_table("decode_failures")
