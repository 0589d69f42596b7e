"""Rebalance causes, and static members replaced without a rebalance.

- `rebalances.causes`: why the group rebalanced, as a JSON array of
  `{"cause", "explanation", "possible"}` (services/tracker/causes.py); NULL for
  rebalances stored before this revision.
- `static_replacements`: one row per GroupMetadata record that rewrote a generation
  because a static member (group.instance.id) rejoined under a new member id within its
  session timeout: the group did not rebalance. Keyed by the record's source position.
- `group_timeline` gains `causes` and `replaced_without_rebalance` (the static
  replacements during the generation, as `{"member", "old_member_id", "new_member_id",
  "time"}` objects).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 19:00:00
"""

import importlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Timestamp = sa.DateTime(timezone=True)

_EXTRA_COLUMNS = """,
    r.causes,
    (SELECT coalesce(jsonb_agg(jsonb_build_object(
                'member', s.instance_id, 'old_member_id', s.old_member_id,
                'new_member_id', s.new_member_id, 'time', s.time)
            ORDER BY s.source_offset), '[]'::jsonb)
     FROM static_replacements s
     WHERE s.group_name = g.group_name AND s.generation = g.generation
       AND s.source_partition = g.source_partition AND s.source_offset > g.source_offset
       AND (g.next_time IS NULL OR s.time <= g.next_time)) AS replaced_without_rebalance
FROM ("""


def _timeline(extra: bool) -> str:
    """0005's `group_timeline` (0002's with its columns named and `disruptive` last),
    with this revision's columns after it when `extra`."""
    m0005 = importlib.import_module("migrations.versions.0005_disruptive_rebalances")
    sql: str = m0005._timeline(
        m0005._views_0002(), "    END AS committed_progress,\n    r.disruptive\nFROM ("
    )
    if extra:
        sql = sql.replace("\nFROM (", _EXTRA_COLUMNS, 1)
    return sql


def upgrade() -> None:
    op.add_column("rebalances", sa.Column("causes", JSONB()))
    op.create_table(
        "static_replacements",
        sa.Column("source_partition", sa.Integer(), nullable=False),
        sa.Column("source_offset", sa.BigInteger(), nullable=False),
        sa.Column("group_name", sa.Text(), sa.ForeignKey("groups.name"), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("time", Timestamp, nullable=False),
        sa.Column("instance_id", sa.Text(), nullable=False),
        sa.Column("old_member_id", sa.Text(), nullable=False),
        sa.Column("new_member_id", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("source_partition", "source_offset", "instance_id"),
    )
    op.create_index(
        "ix_static_replacements_group_name_generation",
        "static_replacements",
        ["group_name", "generation"],
    )
    op.execute(_timeline(extra=True))


def downgrade() -> None:
    op.execute("DROP VIEW group_timeline")
    op.execute(_timeline(extra=False).replace("CREATE OR REPLACE VIEW", "CREATE VIEW", 1))
    op.drop_table("static_replacements")
    op.drop_column("rebalances", "causes")
