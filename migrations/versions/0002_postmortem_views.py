"""Postmortem views: group_timeline, partition_ownership, rebalance_storms and more.

They answer the postmortem questions in plain SQL, for psql or Grafana's PostgreSQL
data source; the `groupscope postmortem`, `owner` and `storms` commands read them too.

- `assignments`: one row per generation, member and topic with the partitions as an
  integer array (generation_members keeps them as JSON in the member's row).
- `offset_history_entries`: offset_history unnested, one row per group, topic,
  partition and batch that moved it (committed_offset NULL: deleted).
- `members_missing_from(generation_pk, other_pk)`: the members of one generation that
  are not in the other, as a JSON array (so joined = missing_from(this, previous) and
  left = missing_from(previous, this)).
- `group_timeline`: one row per generation with its time, assignor, leader, members,
  the members that joined and left since the previous generation (objects with
  member, member_id, client_id and host; a member is its group instance id when it has
  one, else its member id), the rebalance's churn (NULL for the first generation
  seen), the time since the previous generation and the committed-offset progress
  made during the generation (from generation_offset_progress; 0 when offsets were
  known but none moved, NULL when the group had no offset history yet).
- `generation_offset_progress`: per generation, how far the group's committed offsets
  advanced (net, summed over partitions) between its start and the next generation.
- `partition_ownership`: one row per generation, topic and partition with the member
  that owned it from `valid_from` until `valid_until` (NULL: still the latest).
- `rebalance_storms_between(from, to, window, min_rebalances)`: storms, worst first:
  runs of at least min_rebalances rebalances of one group within window, merged when
  they overlap. `rebalance_storms` is that function with the defaults (10 minutes, 5).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 07:10:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ASSIGNMENTS = """
CREATE VIEW assignments AS
SELECT m.generation_pk, m.member_id, a.topic,
       ARRAY(SELECT json_array_elements_text(a.partitions)::integer) AS partitions
FROM generation_members m
CROSS JOIN LATERAL json_each(m.assignment) AS a(topic, partitions)
"""

OFFSET_HISTORY_ENTRIES = """
CREATE VIEW offset_history_entries AS
SELECT h.group_name, e.topic, e.partition, e.committed_offset, e.commit_timestamp,
       e.source_offset, h.batch_id, h.batch_time
FROM offset_history h
CROSS JOIN LATERAL unnest(h.topics, h.partitions, h.committed_offsets, h.commit_timestamps,
                          h.source_offsets)
    AS e(topic, partition, committed_offset, commit_timestamp, source_offset)
"""

# Each committed-offset move (the offset minus the partition's previous one) belongs to
# the generation in effect at its commit time. One pass over a group's history: the
# generations and the moves are merged by time, and a running count of generations
# numbers the interval each move falls in.
GENERATION_OFFSET_PROGRESS = """
CREATE VIEW generation_offset_progress AS
WITH moves AS (
    SELECT group_name, commit_timestamp, source_offset,
           committed_offset - lag(committed_offset) OVER (
               PARTITION BY group_name, topic, partition ORDER BY source_offset) AS delta
    FROM offset_history_entries
), marks AS (
    SELECT group_name, time AS at, 0 AS kind, source_offset, id AS generation_pk,
           NULL::bigint AS delta
    FROM generations
    UNION ALL
    SELECT group_name, commit_timestamp, 1, source_offset, NULL, delta
    FROM moves
    WHERE commit_timestamp IS NOT NULL
), numbered AS (
    SELECT marks.*,
           sum(1 - kind) OVER (PARTITION BY group_name ORDER BY at, kind, source_offset
                               ROWS UNBOUNDED PRECEDING) AS interval_number
    FROM marks
)
SELECT group_name, max(generation_pk) AS generation_pk, sum(delta) AS committed_progress
FROM numbered
WHERE interval_number > 0
GROUP BY group_name, interval_number
"""

MEMBERS_MISSING_FUNCTION = """
CREATE FUNCTION members_missing_from(generation bigint, other bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'member', coalesce(m.group_instance_id, m.member_id),
               'member_id', m.member_id, 'client_id', m.client_id, 'host', m.client_host)
           ORDER BY coalesce(m.group_instance_id, m.member_id)), '[]')
    FROM generation_members m
    WHERE m.generation_pk = generation
      AND NOT EXISTS (
          SELECT 1 FROM generation_members o
          WHERE o.generation_pk = other
            AND coalesce(o.group_instance_id, o.member_id)
                = coalesce(m.group_instance_id, m.member_id))
$$
"""

GROUP_TIMELINE = """
CREATE VIEW group_timeline AS
SELECT
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
            WHERE h.group_name = g.group_name
              AND h.batch_time < coalesce(g.next_time, 'infinity'))
        THEN 0
    END AS committed_progress
FROM (
    SELECT
        generations.*,
        lag(id) OVER w AS previous_pk,
        lag(time) OVER w AS previous_time,
        lead(time) OVER w AS next_time
    FROM generations
    WINDOW w AS (PARTITION BY group_name ORDER BY time, source_offset)
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
    ON p.group_name = g.group_name AND p.generation_pk = g.id
"""

PARTITION_OWNERSHIP = """
CREATE VIEW partition_ownership AS
SELECT
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
    SELECT generations.*,
           lead(time) OVER (PARTITION BY group_name ORDER BY time, source_offset) AS valid_until
    FROM generations
) g
JOIN generation_members m ON m.generation_pk = g.id
CROSS JOIN LATERAL json_each(m.assignment) AS a(topic, partitions)
CROSS JOIN LATERAL json_array_elements_text(a.partitions) AS p(partition_text)
"""

STORMS_FUNCTION = """
CREATE FUNCTION rebalance_storms_between(
    from_time timestamptz,
    to_time timestamptz,
    storm_window interval,
    min_rebalances integer
) RETURNS TABLE (group_name text, rebalances bigint, storm_start timestamptz,
                 storm_end timestamptz)
LANGUAGE sql STABLE AS $$
    WITH r AS (
        SELECT rb.group_name, rb.time
        FROM rebalances rb
        WHERE rb.time >= from_time AND rb.time < to_time
    ), windows AS (
        SELECT r.group_name, r.time AS window_start,
               count(*) OVER w AS n, max(r.time) OVER w AS window_end
        FROM r
        WINDOW w AS (PARTITION BY r.group_name ORDER BY r.time
                     RANGE BETWEEN CURRENT ROW AND storm_window FOLLOWING)
    ), seeds AS (
        SELECT s.*,
               (s.window_start > max(s.window_end) OVER (
                    PARTITION BY s.group_name ORDER BY s.window_start
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) IS NOT FALSE AS starts
        FROM windows s
        WHERE s.n >= min_rebalances
    ), islands AS (
        SELECT seeds.*,
               sum(starts::int) OVER (PARTITION BY seeds.group_name
                                      ORDER BY seeds.window_start) AS island
        FROM seeds
    ), storms AS (
        SELECT i.group_name, min(i.window_start) AS storm_start, max(i.window_end) AS storm_end
        FROM islands i
        GROUP BY i.group_name, i.island
    )
    SELECT s.group_name,
           (SELECT count(*) FROM r
            WHERE r.group_name = s.group_name
              AND r.time BETWEEN s.storm_start AND s.storm_end) AS rebalances,
           s.storm_start,
           s.storm_end
    FROM storms s
    ORDER BY rebalances DESC, s.storm_start, s.group_name
$$
"""

STORMS_VIEW = """
CREATE VIEW rebalance_storms AS
SELECT * FROM rebalance_storms_between('-infinity', 'infinity', interval '10 minutes', 5)
"""


def upgrade() -> None:
    op.execute(ASSIGNMENTS)
    op.execute(OFFSET_HISTORY_ENTRIES)
    op.execute(GENERATION_OFFSET_PROGRESS)
    op.execute(MEMBERS_MISSING_FUNCTION)
    op.execute(GROUP_TIMELINE)
    op.execute(PARTITION_OWNERSHIP)
    op.execute(STORMS_FUNCTION)
    op.execute(STORMS_VIEW)


def downgrade() -> None:
    op.execute("DROP VIEW rebalance_storms")
    op.execute(
        "DROP FUNCTION rebalance_storms_between(timestamptz, timestamptz, interval, integer)"
    )
    op.execute("DROP VIEW partition_ownership")
    op.execute("DROP VIEW group_timeline")
    op.execute("DROP FUNCTION members_missing_from(bigint, bigint)")
    op.execute("DROP VIEW generation_offset_progress")
    op.execute("DROP VIEW offset_history_entries")
    op.execute("DROP VIEW assignments")
