"""Records made storable, and a pipeline that says when it is degraded.

- `record_repairs`: one row per field of a record that had to be changed before it
  could be stored, with the original kept: a string with U+0000 (PostgreSQL text
  cannot hold it), a key too long for a btree index (stored as a shortened, hash-suffixed
  key), a timestamp outside the range of a date (stored as NULL, the raw milliseconds
  kept here). Keyed by the record's source position and the field's path, so a replayed
  batch adds nothing twice.
- `pipeline_status.degraded_reason` / `degraded_since`: set while the job cannot reach
  its source (or, read back later, its store), cleared when it recovers.
- `pipeline_status.log_resets_total`: how often a source partition's offsets restarted
  below what the job had already read (the offsets topic recreated, a cluster replaced).
- `pipeline_progress.position_base`: what the job adds to a source partition's Kafka
  offsets to make its positions, raised after such a reset so that the new log's records
  are stored above every earlier position (`spark_jobs.kafka_source`); kept here so that a
  new checkpoint starts from it.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 15:05:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Timestamp = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "record_repairs",
        sa.Column("source_partition", sa.Integer(), nullable=False),
        sa.Column("source_offset", sa.BigInteger(), nullable=False),
        sa.Column("field", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("original", sa.LargeBinary(), nullable=True),
        sa.Column("original_ms", sa.BigInteger(), nullable=True),
        sa.Column("stored", sa.Text(), nullable=True),
        sa.Column("batch_id", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "source_partition", "source_offset", "field", name=op.f("pk_record_repairs")
        ),
    )
    op.add_column("pipeline_status", sa.Column("degraded_reason", sa.Text(), nullable=True))
    op.add_column("pipeline_status", sa.Column("degraded_since", Timestamp, nullable=True))
    op.add_column(
        "pipeline_status",
        sa.Column("log_resets_total", sa.BigInteger(), server_default="0", nullable=False),
    )
    op.add_column(
        "pipeline_progress",
        sa.Column("position_base", sa.BigInteger(), server_default="0", nullable=False),
    )


def downgrade() -> None:
    op.drop_column("pipeline_progress", "position_base")
    op.drop_column("pipeline_status", "log_resets_total")
    op.drop_column("pipeline_status", "degraded_since")
    op.drop_column("pipeline_status", "degraded_reason")
    op.drop_table("record_repairs")
