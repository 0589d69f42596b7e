"""The postmortem questions, asked of the store's views (see migrations 0002).

Each function takes a SQLAlchemy connection and returns plain dataclasses; rendering
lives in `services.postmortem.render`. The SQL views are the single definition of each
answer, so psql users and these commands always agree; `owners` alone asks its view's
question in SQL of its own, for speed at 100,000 groups, and tests/postmortem checks that
the two agree. Names are looked up as the store
keeps them (`storable_key`): a group id too long for an index is found by its full name.
Every question is about one cluster's history (`services.store.clusters`): the same
group name on another cluster is another group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, SupportsInt

from sqlalchemy import Connection, text

from services.postmortem.timeparse import iso
from services.store.clusters import DEFAULT_CLUSTER
from services.store.sanitize import storable_key

FAR_PAST = datetime.fromisoformat("0001-01-01T00:00:00+00:00")
FAR_FUTURE = datetime.fromisoformat("9999-12-31T00:00:00+00:00")


class NotFound(LookupError):
    """The question has no answer in the stored history; the message says why."""


@dataclass(frozen=True)
class MemberRef:
    member: str
    member_id: str
    client_id: str | None
    host: str | None


@dataclass(frozen=True)
class Moves:
    actual: int
    from_survivors: int
    sticky_baseline: int | None
    minimum: int | None
    baseline_assignor: str | None
    revoked: int
    newly_assigned: int
    cooperative_episode: bool
    # Running members lost partitions: the rebalance counts in storms.
    disruptive: bool = True

    @property
    def excess(self) -> int | None:
        return None if self.sticky_baseline is None else self.actual - self.sticky_baseline


@dataclass(frozen=True)
class CommitGap:
    """How long the rebalance's moved partitions went without an offset commit
    (services/tracker/cost.py): `partitions` measured, `waiting` for their first commit
    still, the longest and the median gap of the measured ones."""

    partitions: int
    waiting: int
    longest: timedelta | None
    median: timedelta | None


@dataclass(frozen=True)
class TimelineEntry:
    generation: int
    time: datetime
    assignor: str | None
    leader: str | None
    members: list[str]
    joined: list[MemberRef]
    left: list[MemberRef]
    moves: Moves | None
    since_previous: timedelta | None
    committed_progress: int | None
    # {"cause", "explanation", "possible"} per cause; None: not a rebalance, or one
    # stored before causes were inferred.
    causes: list[dict[str, Any]] | None = None
    # Static members that rejoined during the generation without a rebalance.
    replaced_without_rebalance: list[dict[str, Any]] = field(default_factory=list)
    # None: not a rebalance, or one stored before its cost was measured (0008).
    gap: CommitGap | None = None


@dataclass(frozen=True)
class Ownership:
    group: str
    topic: str
    partition: int
    member: str
    member_id: str
    group_instance_id: str | None
    client_id: str | None
    host: str | None
    generation: int
    valid_from: datetime
    valid_until: datetime | None


@dataclass(frozen=True)
class Storm:
    group: str
    rebalances: int
    start: datetime
    end: datetime


def group_exists(conn: Connection, group: str, cluster: str = DEFAULT_CLUSTER) -> bool:
    query = text("SELECT 1 FROM groups WHERE cluster = :cluster AND name = :group")
    found = conn.execute(query, {"cluster": cluster, "group": storable_key(group)})
    return found.first() is not None


def _of(cluster: str) -> str:
    """ " of cluster 'NAME'" in answers about a named cluster; nothing for the default."""
    return "" if cluster == DEFAULT_CLUSTER else f" of cluster {cluster!r}"


def _require_group(conn: Connection, group: str, cluster: str) -> None:
    if not group_exists(conn, group, cluster):
        raise NotFound(
            f"unknown group {group!r}{_of(cluster)}: it never appeared in __consumer_offsets"
        )


def timeline(
    conn: Connection,
    group: str,
    since: datetime | None,
    until: datetime | None,
    cluster: str = DEFAULT_CLUSTER,
) -> list[TimelineEntry]:
    """The group's generations with `since <= time < until`, oldest first."""
    _require_group(conn, group, cluster)
    rows = conn.execute(
        text(
            "SELECT * FROM group_timeline WHERE cluster = :cluster AND group_name = :group "
            "AND time >= :since AND time < :until ORDER BY time, source_offset"
        ),
        {
            "cluster": cluster,
            "group": storable_key(group),
            "since": since or FAR_PAST,
            "until": until or FAR_FUTURE,
        },
    ).mappings()
    entries = [_timeline_entry(row) for row in rows]
    if not entries:
        raise NotFound(f"no generations of group {group!r}{_of(cluster)} {_range(since, until)}")
    return entries


# A Kafka topic name's characters (org.apache.kafka.common.internals.Topic, LEGAL_CHARS):
# every JSON encoder writes them as they are, so such a name appears in a member's stored
# `assignment` text exactly as `"name"`.
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")

# `partition_ownership` (migration 0010), asked about one topic and one time: the same
# rows, without numbering every generation of every group. A generation is valid from its
# time until the time of its group's next generation in (time, source_offset) order, so
# at `at` exactly one generation of a group is current: the last with time <= at. The
# members holding the partition come first (one scan of the members' text for the topic,
# not an expansion of every assignment); the generation of each is kept when the next
# one (an index lookup) begins after `at`. MATERIALIZED keeps those lookups to the
# holders. `id` only breaks a tie of (time, source_offset), which the view leaves to
# chance.
_OWNERS = """
WITH holders AS MATERIALIZED (
    SELECT m.generation_pk, coalesce(m.group_instance_id, m.member_id) AS member,
           m.member_id, m.group_instance_id, m.client_id, m.client_host
    FROM generation_members m
    CROSS JOIN LATERAL json_each(m.assignment) AS a(topic, partitions)
    CROSS JOIN LATERAL json_array_elements_text(a.partitions) AS p(partition_text)
    WHERE {holds_topic}{in_group}
      AND a.topic = :topic AND p.partition_text::integer = :partition
)
SELECT g.group_name, h.member, h.member_id, h.group_instance_id, h.client_id,
       h.client_host, g.generation, g.time AS valid_from, next_generation.time AS valid_until
FROM holders h
JOIN generations g ON g.id = h.generation_pk
LEFT JOIN LATERAL (
    SELECT n.time FROM generations n
    WHERE n.cluster = g.cluster AND n.group_name = g.group_name AND n.time >= g.time
      AND (n.time, n.source_offset, n.id) > (g.time, g.source_offset, g.id)
    ORDER BY n.time, n.source_offset, n.id
    LIMIT 1
) next_generation ON true
WHERE g.cluster = :cluster AND g.time <= :at
  AND (next_generation.time IS NULL OR next_generation.time > :at)
ORDER BY g.group_name, h.member
"""
_IN_GROUP = (
    " AND m.generation_pk IN "
    "(SELECT id FROM generations WHERE cluster = :cluster AND group_name = :group)"
)


def owners(
    conn: Connection,
    topic: str,
    partition: int,
    at: datetime,
    group: str | None,
    cluster: str = DEFAULT_CLUSTER,
) -> list[Ownership]:
    """Who owned `topic`-`partition` of `cluster` at `at`, in every group or in `group`:
    the rows of `partition_ownership` valid at `at`."""
    if group is not None:
        _require_group(conn, group, cluster)
    # A prefilter only: json_each in `_OWNERS` decides. Any other name (a corrupt record's)
    # is looked up in the parsed JSON, which is exact whatever its escapes.
    holds_topic = (
        "strpos(m.assignment::text, :quoted) > 0"
        if _LEGAL_TOPIC.fullmatch(topic)
        else "(m.assignment -> :topic) IS NOT NULL"
    )
    in_group = "" if group is None else _IN_GROUP
    rows = conn.execute(
        text(_OWNERS.format(holds_topic=holds_topic, in_group=in_group)),
        {
            "cluster": cluster,
            "topic": topic,
            "quoted": f'"{topic}"',
            "partition": partition,
            "at": at,
            "group": None if group is None else storable_key(group),
        },
    ).mappings()
    found = [
        Ownership(
            group=row["group_name"],
            topic=topic,
            partition=partition,
            member=row["member"],
            member_id=row["member_id"],
            group_instance_id=row["group_instance_id"],
            client_id=row["client_id"],
            host=row["client_host"],
            generation=row["generation"],
            valid_from=row["valid_from"],
            valid_until=row["valid_until"],
        )
        for row in rows
    ]
    if not found:
        scope = f"in group {group!r}" if group else "in any group"
        scope += _of(cluster)
        raise NotFound(f"{topic}-{partition} was not assigned {scope} at {iso(at)}")
    return found


def storms(
    conn: Connection,
    since: datetime | None,
    until: datetime | None,
    window: timedelta,
    min_rebalances: int,
    cluster: str = DEFAULT_CLUSTER,
) -> list[Storm]:
    """Groups of `cluster` with at least `min_rebalances` rebalances within `window`,
    worst first."""
    rows = conn.execute(
        text(
            "SELECT * FROM rebalance_storms_between(:since, :until, :window, :min) "
            "WHERE cluster = :cluster"
        ),
        {
            "cluster": cluster,
            "since": since or FAR_PAST,
            "until": until or FAR_FUTURE,
            "window": window,
            "min": min_rebalances,
        },
    ).mappings()
    return [
        Storm(row["group_name"], row["rebalances"], row["storm_start"], row["storm_end"])
        for row in rows
    ]


def _timeline_entry(row) -> TimelineEntry:
    moves = None
    if row["moves_actual"] is not None:
        moves = Moves(
            actual=row["moves_actual"],
            from_survivors=row["moves_from_survivors"],
            sticky_baseline=row["moves_sticky_baseline"],
            minimum=row["moves_minimum"],
            baseline_assignor=row["baseline_assignor"],
            revoked=row["partitions_revoked"],
            newly_assigned=row["partitions_newly_assigned"],
            cooperative_episode=row["cooperative_episode"],
            disruptive=row["disruptive"],
        )
    return TimelineEntry(
        generation=row["generation"],
        time=row["time"],
        assignor=row["assignor"],
        leader=row["leader"],
        members=list(row["members"]),
        joined=[MemberRef(**m) for m in row["joined_members"]],
        left=[MemberRef(**m) for m in row["left_members"]],
        moves=moves,
        since_previous=row["since_previous"],
        committed_progress=_int_or_none(row["committed_progress"]),
        causes=row.get("causes") if moves is not None else None,
        replaced_without_rebalance=list(row.get("replaced_without_rebalance") or []),
        gap=_gap(row) if moves is not None else None,
    )


def _gap(row: Any) -> CommitGap | None:
    if row.get("gap_partitions") is None:
        return None
    return CommitGap(row["gap_partitions"], row["gap_waiting"], row["gap_max"], row["gap_median"])


def _int_or_none(value: SupportsInt | None) -> int | None:
    return None if value is None else int(value)


def _range(since: datetime | None, until: datetime | None) -> str:
    def when(moment: datetime) -> str:
        return iso(moment.replace(microsecond=0))

    if since and until:
        return f"between {when(since)} and {when(until)}"
    if since:
        return f"since {when(since)}"
    if until:
        return f"before {when(until)}"
    return "in the stored history"
