"""Disruptive rebalances: only rebalances that took partitions from running members storm.

- `rebalances.disruptive`: whether running members lost partitions in the rebalance
  (docs/architecture.md, "Storms"). The job's tracker decides it for new rows
  (`services.tracker.churn`); existing rows are filled in here by the same rules, from
  what the store kept:
  - a group's *formation* is never disruptive: the rebalances from the first generation
    with members after an empty one (or a group's generation 1) for as long as no
    member leaves and the record times stay within that generation's longest member
    rebalance timeout (5 minutes when none is stored);
  - eager groups (classic, no cooperative assignor): disruptive when a member that
    stayed owned partitions before (it revoked them all); when the earlier generation
    is not stored, when any member stayed;
  - cooperative and KIP-848 groups: disruptive when partitions moved away from members
    that stayed (`moves_from_survivors > 0`).
- `rebalance_storms_between` (and so the `rebalance_storms` view) counts disruptive
  rebalances only.
- `group_timeline` gains the `disruptive` column (last, as CREATE OR REPLACE VIEW
  requires).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 18:40:00
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFAULT_REBALANCE_TIMEOUT_MS = 300_000

# One row per rebalance: whether its generation was part of the group's formation, and
# whether (after formation) the protocol's rule finds running members that lost
# partitions. `boundary` starts a new stretch of a group's generations: a formation start
# (members after an empty generation, or generation 1 first), an empty generation, or a
# member leaving; a stretch that began with a formation start is forming while its
# record times stay within the start's rebalance timeout.
BACKFILL = f"""
WITH gens AS (
    SELECT g.id, g.group_name, g.generation, g.source_timestamp, g.member_count, g.assignor,
           coalesce(grp.type, 'classic') AS group_type,
           lag(g.id) OVER w AS previous_pk,
           lag(g.member_count) OVER w AS previous_members,
           row_number() OVER w AS n
    FROM generations g
    JOIN groups grp ON grp.name = g.group_name
    WINDOW w AS (PARTITION BY g.group_name ORDER BY g.source_partition, g.source_offset)
), flagged AS (
    SELECT gens.*,
           member_count > 0 AND (previous_members = 0 OR (n = 1 AND generation <= 1))
               AS starts_forming,
           member_count = 0
               OR previous_members = 0
               OR (n = 1 AND generation <= 1)
               OR (previous_pk IS NOT NULL
                   AND jsonb_array_length(members_missing_from(previous_pk, id)) > 0)
               AS boundary,
           source_timestamp + make_interval(secs => coalesce(
               (SELECT max(m.rebalance_timeout_ms) FROM generation_members m
                WHERE m.generation_pk = gens.id AND m.rebalance_timeout_ms > 0),
               {DEFAULT_REBALANCE_TIMEOUT_MS}) / 1000.0) AS timeout_end
    FROM gens
), stretches AS (
    SELECT flagged.*,
           sum(boundary::int) OVER (PARTITION BY group_name ORDER BY n) AS stretch
    FROM flagged
), forming AS (
    SELECT s.id, s.group_type, s.assignor, s.member_count,
           coalesce(bool_or(s.starts_forming) FILTER (WHERE s.boundary) OVER p, false)
               AND s.source_timestamp
                   <= max(s.timeout_end) FILTER (WHERE s.boundary) OVER p
               AS forming
    FROM stretches s
    WINDOW p AS (PARTITION BY s.group_name, s.stretch)
)
UPDATE rebalances r
SET disruptive = NOT f.forming AND CASE
    WHEN f.group_type = 'classic' AND coalesce(f.assignor, '') NOT LIKE '%cooperative%' THEN
        CASE WHEN r.from_generation_pk IS NULL THEN f.member_count - r.members_joined > 0
        ELSE EXISTS (
            SELECT 1 FROM generation_members b
            WHERE b.generation_pk = r.from_generation_pk
              AND EXISTS (SELECT 1 FROM json_each(b.assignment) e
                          WHERE json_array_length(e.value) > 0)
              AND EXISTS (
                  SELECT 1 FROM generation_members a
                  WHERE a.generation_pk = r.to_generation_pk
                    AND coalesce(a.group_instance_id, a.member_id)
                        = coalesce(b.group_instance_id, b.member_id)))
        END
    ELSE r.moves_from_survivors > 0
END
FROM forming f
WHERE f.id = r.to_generation_pk
"""

STORMS_RANGE = "FROM rebalances rb\n        WHERE rb.time"
TIMELINE_END = "    END AS committed_progress\nFROM ("
# The timeline's inner `generations.*`, spelt out: a view made now would otherwise depend
# on the columns later revisions added (0003's), which their downgrades drop.
TIMELINE_COLUMNS = (
    "generations.*,",
    "generations.id, generations.group_name, generations.generation, generations.time,\n"
    "        generations.assignor, generations.leader, generations.protocol_type,\n"
    "        generations.member_count, generations.source_partition, generations.source_offset,",
)


def _views_0002() -> ModuleType:
    """Migration 0002, whose view and function texts this one amends."""
    path = Path(__file__).with_name("0002_postmortem_views.py")
    spec = importlib.util.spec_from_file_location("groupscope_migration_0002", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _amended(sql: str, old: str, new: str) -> str:
    assert sql.count(old) == 1, f"migration 0002 changed: {old!r} not found once"
    sql = sql.replace(old, new)
    return sql.replace("CREATE VIEW", "CREATE OR REPLACE VIEW", 1).replace(
        "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1
    )


def _timeline(views: ModuleType, end: str) -> str:
    return _amended(_amended(views.GROUP_TIMELINE, *TIMELINE_COLUMNS), TIMELINE_END, end)


def upgrade() -> None:
    views = _views_0002()
    op.add_column(
        "rebalances",
        sa.Column("disruptive", sa.Boolean(), server_default="true", nullable=False),
    )
    op.execute(BACKFILL)
    op.execute(
        _amended(
            views.STORMS_FUNCTION,
            STORMS_RANGE,
            "FROM rebalances rb\n        WHERE rb.disruptive AND rb.time",
        )
    )
    op.execute(_timeline(views, "    END AS committed_progress,\n    r.disruptive\nFROM ("))


def downgrade() -> None:
    views = _views_0002()
    op.execute("DROP VIEW group_timeline")
    op.execute(_timeline(views, TIMELINE_END))
    op.execute(_amended(views.STORMS_FUNCTION, STORMS_RANGE, STORMS_RANGE))
    op.drop_column("rebalances", "disruptive")
