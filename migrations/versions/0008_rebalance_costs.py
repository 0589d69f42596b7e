"""Rebalance costs: how long the moved partitions went without an offset commit.

- `rebalances.gap_partitions`, `gap_waiting`, `gap_max`, `gap_median`: for the partitions
  the rebalance moved, how many have a measured commit gap (a commit before the new
  owner held them and one since), how many still wait for their first commit, and the
  longest and the median gap (services/tracker/cost.py). The job sets them when it
  stores the rebalance and again as moved partitions commit. NULL for rebalances
  stored before this revision: the store keeps each partition's latest commit per
  batch, not every commit, so their gaps cannot be recovered.
- `group_timeline` gains the four columns, last (as CREATE OR REPLACE VIEW requires).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 00:30:00
"""

import importlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = (
    ("gap_partitions", sa.Integer()),
    ("gap_waiting", sa.Integer()),
    ("gap_max", sa.Interval()),
    ("gap_median", sa.Interval()),
)
_LAST = "AS replaced_without_rebalance\nFROM ("


def _timeline(extra: bool) -> str:
    """0007's `group_timeline`, with this revision's columns after it when `extra`."""
    sql: str = importlib.import_module(
        "migrations.versions.0007_offset_history_by_minute"
    ).timeline()
    assert sql.count(_LAST) == 1
    if extra:
        columns = ", ".join(f"r.{name}" for name, _ in COLUMNS)
        sql = sql.replace(_LAST, f"AS replaced_without_rebalance,\n    {columns}\nFROM (", 1)
    return sql


def upgrade() -> None:
    for name, kind in COLUMNS:
        op.add_column("rebalances", sa.Column(name, kind))
    op.execute(_timeline(extra=True))


def downgrade() -> None:
    op.execute("DROP VIEW group_timeline")
    op.execute(_timeline(extra=False).replace("CREATE OR REPLACE VIEW", "CREATE VIEW", 1))
    for name, _ in reversed(COLUMNS):
        op.drop_column("rebalances", name)
