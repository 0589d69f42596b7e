"""Clusters: every stored fact belongs to a named cluster (`services.store.clusters`).

- `cluster` (text, NOT NULL) is added to every table keyed by a group or by a record's
  position in `__consumer_offsets`: groups, generations, rebalances,
  static_replacements, committed_offsets, offset_history (and each of its day
  partitions), decode_failures, record_repairs, pruned_rebalances,
  pruned_decode_failures, pipeline_progress and pipeline_status. The rows stored before
  are the one cluster the store watched: they get the name `default`, or the one
  `groupscope db upgrade --cluster NAME` (or the job's `--cluster`) passes as the
  `cluster` attribute of Alembic's configuration. The column is added with that name
  as its default, which PostgreSQL 11+ records once instead of rewriting the rows, and
  the default is then dropped: a writer that forgets the cluster fails instead of
  filing its rows under another.
- `cluster` leads every primary key, unique constraint, index and foreign key that
  holds a group name or a source position, so the same group (or the same record
  position) on two clusters is two rows.
- `offset_history_batches` is left as it is: nothing reads or writes it, and its rows
  (stored before 0007) are all the one cluster's.
- The views and `rebalance_storms_between` are recreated with `cluster` as their first
  column, every window, join and storm per cluster and group; `assignments` (keyed by
  generation) is unchanged.

Downgrade works on a store of one cluster only (the old keys cannot hold two groups of
one name): it refuses, naming them, when there are several, and otherwise drops the
column (the name is lost).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 08:00:00
"""

import importlib
from collections.abc import Sequence

from alembic import context, op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Each table that gets the column, with its primary key before this revision (None:
# its key is a generation's id, which is unique across clusters already).
TABLES: dict[str, tuple[str, ...] | None] = {
    "groups": ("name",),
    "generations": None,
    "rebalances": None,
    "static_replacements": ("source_partition", "source_offset", "instance_id"),
    "committed_offsets": ("group_name", "topic", "partition"),
    "offset_history": ("group_name", "minute"),
    "decode_failures": ("source_partition", "source_offset"),
    "record_repairs": ("source_partition", "source_offset", "field"),
    "pruned_rebalances": ("group_name", "cause"),
    "pruned_decode_failures": ("category",),
    "pipeline_progress": ("source", "partition"),
    "pipeline_status": ("source",),
}
# The tables whose group_name refers to groups.name.
REFERRING = ("generations", "rebalances", "static_replacements")
# (name before, name after, table, columns after the leading cluster).
INDEXES = (
    (
        "ix_generations_group_name_time",
        "ix_generations_cluster_group_name_time",
        "generations",
        ("group_name", "time"),
    ),
    (
        "ix_generations_group_name_source",
        "ix_generations_cluster_group_name_source",
        "generations",
        ("group_name", "source_partition", "source_offset"),
    ),
    (
        "ix_rebalances_group_name_time",
        "ix_rebalances_cluster_group_name_time",
        "rebalances",
        ("group_name", "time"),
    ),
    (
        "ix_static_replacements_group_name_generation",
        "ix_static_replacements_cluster_group_name_generation",
        "static_replacements",
        ("group_name", "generation"),
    ),
)
GENERATION_POSITION = ("source_partition", "source_offset")

OFFSET_HISTORY_ENTRIES = """
CREATE VIEW offset_history_entries AS
SELECT h.cluster, h.group_name, e.topic, e.partition, e.committed_offset, e.commit_timestamp,
       e.source_offset, e.commits, h.minute
FROM offset_history h
CROSS JOIN LATERAL unnest(h.topics, h.partitions, h.committed_offsets, h.commit_timestamps,
                          h.source_offsets, h.commit_counts)
    AS e(topic, partition, committed_offset, commit_timestamp, source_offset, commits)
"""

# Each committed-offset move (the offset minus the partition's previous one) belongs to
# the generation in effect at its commit time (0002's view, per cluster).
GENERATION_OFFSET_PROGRESS = """
CREATE VIEW generation_offset_progress AS
WITH moves AS (
    SELECT cluster, group_name, commit_timestamp, source_offset,
           committed_offset - lag(committed_offset) OVER (
               PARTITION BY cluster, group_name, topic, partition ORDER BY source_offset)
               AS delta
    FROM offset_history_entries
), marks AS (
    SELECT cluster, group_name, time AS at, 0 AS kind, source_offset, id AS generation_pk,
           NULL::bigint AS delta
    FROM generations
    UNION ALL
    SELECT cluster, group_name, commit_timestamp, 1, source_offset, NULL, delta
    FROM moves
    WHERE commit_timestamp IS NOT NULL
), numbered AS (
    SELECT marks.*,
           sum(1 - kind) OVER (PARTITION BY cluster, group_name
                               ORDER BY at, kind, source_offset
                               ROWS UNBOUNDED PRECEDING) AS interval_number
    FROM marks
)
SELECT cluster, group_name, max(generation_pk) AS generation_pk,
       sum(delta) AS committed_progress
FROM numbered
WHERE interval_number > 0
GROUP BY cluster, group_name, interval_number
"""

# 0009's timeline (0002's, amended by 0005 to 0008), written out whole, per cluster.
GROUP_TIMELINE = """
CREATE VIEW group_timeline AS
SELECT
    g.cluster,
    g.group_name,
    g.generation,
    g.time,
    g.assignor,
    g.leader,
    g.protocol_type,
    g.member_count,
    g.id AS generation_pk,
    g.source_partition,
    g.source_offset,
    g.time - g.previous_time AS since_previous,
    members.keys AS members,
    CASE WHEN g.previous_pk IS NULL THEN '[]'::jsonb
         ELSE members_missing_from(g.id, g.previous_pk) END AS joined_members,
    CASE WHEN g.previous_pk IS NULL THEN '[]'::jsonb
         ELSE members_missing_from(g.previous_pk, g.id) END AS left_members,
    r.from_generation,
    r.elapsed AS rebalance_elapsed,
    r.partitions_moved AS moves_actual,
    r.moves_from_survivors,
    r.baseline_moves AS moves_sticky_baseline,
    r.baseline_assignor,
    r.minimum_moves AS moves_minimum,
    r.partitions_moved - r.baseline_moves AS moves_excess,
    r.partitions_revoked,
    r.partitions_newly_assigned,
    r.cooperative_episode,
    CASE
        WHEN p.committed_progress IS NOT NULL THEN p.committed_progress
        -- Offsets were known and nothing moved during the generation: a stalled group.
        WHEN EXISTS (
            SELECT 1 FROM offset_history h
            WHERE h.cluster = g.cluster AND h.group_name = g.group_name
              AND h.minute < coalesce(g.next_time, 'infinity'))
        THEN 0
    END AS committed_progress,
    r.disruptive,
    r.causes,
    (SELECT coalesce(jsonb_agg(jsonb_build_object(
                'member', s.instance_id, 'old_member_id', s.old_member_id,
                'new_member_id', s.new_member_id, 'time', s.time)
            ORDER BY s.source_offset), '[]'::jsonb)
     FROM static_replacements s
     WHERE s.cluster = g.cluster AND s.group_name = g.group_name
       AND s.generation = g.generation
       AND s.source_partition = g.source_partition AND s.source_offset > g.source_offset
       AND (g.next_time IS NULL OR s.time <= g.next_time)) AS replaced_without_rebalance,
    r.gap_partitions,
    r.gap_waiting,
    r.gap_max,
    r.gap_median
FROM (
    SELECT
        generations.id, generations.cluster, generations.group_name, generations.generation,
        generations.time, generations.assignor, generations.leader,
        generations.protocol_type, generations.member_count, generations.source_partition,
        generations.source_offset,
        lag(id) OVER w AS previous_pk,
        lag(time) OVER w AS previous_time,
        lead(time) OVER w AS next_time
    FROM generations
    WINDOW w AS (PARTITION BY cluster, group_name ORDER BY time, source_offset)
) g
LEFT JOIN rebalances r ON r.to_generation_pk = g.id
CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(coalesce(m.group_instance_id, m.member_id)
                              ORDER BY coalesce(m.group_instance_id, m.member_id)),
                    '{}') AS keys
    FROM generation_members m
    WHERE m.generation_pk = g.id
) members
LEFT JOIN generation_offset_progress p
    ON p.cluster = g.cluster AND p.group_name = g.group_name AND p.generation_pk = g.id
"""

PARTITION_OWNERSHIP = """
CREATE VIEW partition_ownership AS
SELECT
    g.cluster,
    g.group_name,
    a.topic,
    p.partition_text::integer AS partition,
    coalesce(m.group_instance_id, m.member_id) AS member,
    m.member_id,
    m.group_instance_id,
    m.client_id,
    m.client_host,
    g.generation,
    g.id AS generation_pk,
    g.time AS valid_from,
    g.valid_until
FROM (
    SELECT generations.id, generations.cluster, generations.group_name,
           generations.generation, generations.time,
           lead(time) OVER (PARTITION BY cluster, group_name ORDER BY time, source_offset)
               AS valid_until
    FROM generations
) g
JOIN generation_members m ON m.generation_pk = g.id
CROSS JOIN LATERAL json_each(m.assignment) AS a(topic, partitions)
CROSS JOIN LATERAL json_array_elements_text(a.partitions) AS p(partition_text)
"""

# 0005's storms (disruptive rebalances only), per cluster and group.
STORMS_FUNCTION = """
CREATE FUNCTION rebalance_storms_between(
    from_time timestamptz,
    to_time timestamptz,
    storm_window interval,
    min_rebalances integer
) RETURNS TABLE (cluster text, group_name text, rebalances bigint, storm_start timestamptz,
                 storm_end timestamptz)
LANGUAGE sql STABLE AS $$
    WITH r AS (
        SELECT rb.cluster, rb.group_name, rb.time
        FROM rebalances rb
        WHERE rb.disruptive AND rb.time >= from_time AND rb.time < to_time
    ), windows AS (
        SELECT r.cluster, r.group_name, r.time AS window_start,
               count(*) OVER w AS n, max(r.time) OVER w AS window_end
        FROM r
        WINDOW w AS (PARTITION BY r.cluster, r.group_name ORDER BY r.time
                     RANGE BETWEEN CURRENT ROW AND storm_window FOLLOWING)
    ), seeds AS (
        SELECT s.*,
               (s.window_start > max(s.window_end) OVER (
                    PARTITION BY s.cluster, s.group_name ORDER BY s.window_start
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) IS NOT FALSE AS starts
        FROM windows s
        WHERE s.n >= min_rebalances
    ), islands AS (
        SELECT seeds.*,
               sum(starts::int) OVER (PARTITION BY seeds.cluster, seeds.group_name
                                      ORDER BY seeds.window_start) AS island
        FROM seeds
    ), storms AS (
        SELECT i.cluster, i.group_name, min(i.window_start) AS storm_start,
               max(i.window_end) AS storm_end
        FROM islands i
        GROUP BY i.cluster, i.group_name, i.island
    )
    SELECT s.cluster,
           s.group_name,
           (SELECT count(*) FROM r
            WHERE r.cluster = s.cluster AND r.group_name = s.group_name
              AND r.time BETWEEN s.storm_start AND s.storm_end) AS rebalances,
           s.storm_start,
           s.storm_end
    FROM storms s
    ORDER BY rebalances DESC, s.storm_start, s.cluster, s.group_name
$$
"""

STORMS_VIEW = """
CREATE VIEW rebalance_storms AS
SELECT * FROM rebalance_storms_between('-infinity', 'infinity', interval '10 minutes', 5)
"""

STORMS_SIGNATURE = "rebalance_storms_between(timestamptz, timestamptz, interval, integer)"
CLUSTERS = " UNION ".join(
    f"SELECT cluster FROM {table}"
    for table in ("groups", "decode_failures", "pruned_decode_failures", "pipeline_status")
)


def _existing_name() -> str:
    """The name of the cluster the store held: `default` unless the caller set one."""
    from services.store.clusters import DEFAULT_CLUSTER, check_name

    name = context.config.attributes.get("cluster") or DEFAULT_CLUSTER
    return check_name(str(name))  # letters, digits, '.', '_', '-': safe as a literal


def _drop_views() -> None:
    op.execute("DROP VIEW rebalance_storms")
    op.execute(f"DROP FUNCTION {STORMS_SIGNATURE}")
    op.execute("DROP VIEW partition_ownership")
    op.execute("DROP VIEW group_timeline")
    op.execute("DROP VIEW generation_offset_progress")
    op.execute("DROP VIEW offset_history_entries")


def _create_views(views: Sequence[str]) -> None:
    for view in views:
        op.execute(view)


def _views_0009() -> tuple[str, ...]:
    """The views and the storms function as 0009 left them, as CREATE statements."""
    m0005 = importlib.import_module("migrations.versions.0005_disruptive_rebalances")
    m0009 = importlib.import_module("migrations.versions.0009_retention")
    views = m0005._views_0002()
    entries, progress, timeline = m0009._views()
    storms = m0005._amended(
        views.STORMS_FUNCTION,
        m0005.STORMS_RANGE,
        "FROM rebalances rb\n        WHERE rb.disruptive AND rb.time",
    )
    # 0002's `generations.*`, spelt out as it was then: a view made now would otherwise
    # depend on the columns later revisions added, which their downgrades drop.
    ownership = views.PARTITION_OWNERSHIP.replace(
        "SELECT generations.*,",
        "SELECT generations.id, generations.group_name, generations.generation,\n"
        "           generations.time,",
    )
    assert ownership != views.PARTITION_OWNERSHIP, "migration 0002's ownership view changed"
    return (entries, progress, timeline, ownership, storms, views.STORMS_VIEW)


def _foreign_keys(columns: tuple[str, ...], referred: tuple[str, ...], drop: bool) -> None:
    """Create (or drop) the foreign keys of REFERRING on `columns` to groups' `referred`."""
    for table in REFERRING:
        name = f"fk_{table}_{'_'.join(columns)}_groups"
        if drop:
            op.drop_constraint(name, table, type_="foreignkey")
        else:
            op.create_foreign_key(name, table, "groups", list(columns), list(referred))


def upgrade() -> None:
    name = _existing_name()
    _drop_views()
    _foreign_keys(("group_name",), ("name",), drop=True)
    for table, key in TABLES.items():
        op.execute(f"ALTER TABLE {table} ADD COLUMN cluster text NOT NULL DEFAULT '{name}'")
        op.execute(f"ALTER TABLE {table} ALTER COLUMN cluster DROP DEFAULT")
        if key is not None:
            op.execute(f"ALTER TABLE {table} DROP CONSTRAINT pk_{table}")
            op.create_primary_key(f"pk_{table}", table, ["cluster", *key])
    op.drop_constraint("uq_generations_source_partition_source_offset", "generations")
    op.create_unique_constraint(
        "uq_generations_cluster_source_partition_source_offset",
        "generations",
        ["cluster", *GENERATION_POSITION],
    )
    for old, new, table, columns in INDEXES:
        op.drop_index(old, table_name=table)
        op.create_index(new, table, ["cluster", *columns])
    _foreign_keys(("cluster", "group_name"), ("cluster", "name"), drop=False)
    _create_views(
        (
            OFFSET_HISTORY_ENTRIES,
            GENERATION_OFFSET_PROGRESS,
            GROUP_TIMELINE,
            PARTITION_OWNERSHIP,
            STORMS_FUNCTION,
            STORMS_VIEW,
        )
    )


def downgrade() -> None:
    import sqlalchemy as sa

    clusters = [c for (c,) in op.get_bind().execute(sa.text(CLUSTERS + " ORDER BY 1")).all()]
    if len(clusters) > 1:
        raise RuntimeError(
            f"the store holds {len(clusters)} clusters ({', '.join(clusters)}); a store "
            "before revision 0010 holds one: cannot downgrade"
        )
    _drop_views()
    _foreign_keys(("cluster", "group_name"), ("cluster", "name"), drop=True)
    for old, new, table, columns in INDEXES:
        op.drop_index(new, table_name=table)
        op.create_index(old, table, list(columns))
    op.drop_constraint("uq_generations_cluster_source_partition_source_offset", "generations")
    op.create_unique_constraint(
        "uq_generations_source_partition_source_offset", "generations", list(GENERATION_POSITION)
    )
    for table, key in TABLES.items():
        if key is not None:
            op.execute(f"ALTER TABLE {table} DROP CONSTRAINT pk_{table}")
            op.create_primary_key(f"pk_{table}", table, list(key))
        op.drop_column(table, "cluster")
    _foreign_keys(("group_name",), ("name",), drop=False)
    _create_views(_views_0009())
