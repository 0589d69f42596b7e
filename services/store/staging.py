"""COPY targets: per-transaction staging tables, and the append-only member table.

Rows that may conflict with stored ones (groups, generations, offsets, ...) go by one
COPY per table into a temp staging table, and plain SQL merges them into the real
tables with `INSERT … ON CONFLICT`: one statement resolves a whole batch's conflicts.
The members of a generation that the batch newly created cannot conflict with
anything, so they are COPYed straight into their table, the fastest path PostgreSQL
has.

Most tables travel in binary format. The member table travels as text, with its
arrays and JSON already written out as PostgreSQL literals by `text_array` and
`json_text`: psycopg dumps lists element by element in Python, which made the client
the slower side of a large member COPY (docs/performance.md, "Design measurements":
member COPY as text).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import psycopg


@dataclass(frozen=True)
class CopyTable:
    """A table to COPY into, declared as (column, PostgreSQL type) pairs."""

    name: str
    columns: tuple[tuple[str, str], ...]
    binary: bool = True

    def create_temp(self, cursor: psycopg.Cursor) -> None:
        """Create it as a temp table that is dropped at commit."""
        columns = ", ".join(f"{name} {pgtype}" for name, pgtype in self.columns)
        cursor.execute(f"CREATE TEMP TABLE {self.name} ({columns}) ON COMMIT DROP")

    def copy(self, cursor: psycopg.Cursor, rows: Iterable[tuple[object, ...]]) -> None:
        names = ", ".join(name for name, _ in self.columns)
        form = "BINARY" if self.binary else "TEXT"
        with cursor.copy(f"COPY {self.name} ({names}) FROM STDIN (FORMAT {form})") as copy:
            if self.binary:
                copy.set_types([pgtype for _, pgtype in self.columns])
            for row in rows:
                copy.write_row(row)


def text_array(values: Sequence[str]) -> str:
    """A PostgreSQL text[] literal: every element quoted, `\\` and `"` escaped."""
    if not values:
        return "{}"
    escaped = [v.replace("\\", "\\\\").replace('"', '\\"') for v in values]
    return '{"' + '","'.join(escaped) + '"}'


_encode_json = json.JSONEncoder(separators=(",", ":")).encode


def json_text(partitions_by_topic: Mapping[str, Sequence[int]]) -> str:
    """`{"topic": [partitions]}` as JSON text, for a json column."""
    try:
        return _encode_json(partitions_by_topic)
    except TypeError:  # not dicts of lists: a mapping view, ranges, sets ...
        return _encode_json(
            {topic: list(partitions) for topic, partitions in partitions_by_topic.items()}
        )


GROUP_EVENTS = CopyTable(
    "stage_group_events",
    (
        ("group_name", "text"),
        ("time", "timestamptz"),
        ("source_partition", "int4"),
        ("source_offset", "int8"),
        ("type", "text"),
        ("deleted", "bool"),
    ),
)

OFFSETS = CopyTable(
    "stage_offsets",
    (
        ("group_name", "text"),
        ("topic", "text"),
        ("partition", "int4"),
        ("committed_offset", "int8"),
        ("leader_epoch", "int4"),
        ("metadata", "text"),
        ("commit_timestamp", "timestamptz"),
        ("expire_timestamp", "timestamptz"),
        ("source_partition", "int4"),
        ("source_offset", "int8"),
        ("commits", "int4"),
        ("record_time", "timestamptz"),
        ("latest_commit_time", "timestamptz"),
    ),
)

GENERATIONS = CopyTable(
    "stage_generations",
    (
        ("group_name", "text"),
        ("generation", "int4"),
        ("protocol_type", "text"),
        ("assignor", "text"),
        ("leader", "text"),
        ("state_timestamp", "timestamptz"),
        ("time", "timestamptz"),
        ("member_count", "int4"),
        ("source_partition", "int4"),
        ("source_offset", "int8"),
        ("source_timestamp", "timestamptz"),
        ("state", "text"),
        ("partition_count", "int4"),
    ),
)

MEMBERS = CopyTable(
    "generation_members",
    (
        ("generation_pk", "int8"),
        ("member_id", "text"),
        ("group_instance_id", "text"),
        ("client_id", "text"),
        ("client_host", "text"),
        ("session_timeout_ms", "int4"),
        ("rebalance_timeout_ms", "int4"),
        ("subscribed_topics", "text[]"),
        ("rack", "text"),
        ("owned_partitions", "json"),
        ("reported_generation", "int4"),
        ("assignment", "json"),
    ),
    binary=False,
)

REBALANCES = CopyTable(
    "stage_rebalances",
    (
        ("source_partition", "int4"),
        ("source_offset", "int8"),
        ("from_source_offset", "int8"),
        ("from_generation", "int4"),
        ("members_joined", "int4"),
        ("members_left", "int4"),
        ("partitions_moved", "int4"),
        ("partitions_revoked", "int4"),
        ("partitions_newly_assigned", "int4"),
        ("moves_from_survivors", "int4"),
        ("baseline_moves", "int4"),
        ("baseline_assignor", "text"),
        ("minimum_moves", "int4"),
        ("cooperative_episode", "bool"),
        ("disruptive", "bool"),
        ("causes", "text"),  # JSON, cast on insert
    ),
)

COSTS = CopyTable(
    "stage_rebalance_costs",
    (
        ("source_partition", "int4"),
        ("source_offset", "int8"),
        ("measured", "int4"),
        ("waiting", "int4"),
        ("gap_max", "interval"),
        ("gap_median", "interval"),
    ),
)

REPLACEMENTS = CopyTable(
    "stage_static_replacements",
    (
        ("source_partition", "int4"),
        ("source_offset", "int8"),
        ("instance_id", "text"),
        ("group_name", "text"),
        ("generation", "int4"),
        ("time", "timestamptz"),
        ("old_member_id", "text"),
        ("new_member_id", "text"),
    ),
)

DECODE_FAILURES = CopyTable(
    "stage_decode_failures",
    (
        ("source_partition", "int4"),
        ("source_offset", "int8"),
        ("reason", "text"),
        ("key", "bytea"),
        ("value", "bytea"),
        ("source_timestamp", "timestamptz"),
        ("category", "text"),
    ),
)

REPAIRS = CopyTable(
    "stage_repairs",
    (
        ("source_partition", "int4"),
        ("source_offset", "int8"),
        ("field", "text"),
        ("reason", "text"),
        ("original", "bytea"),
        ("original_ms", "int8"),
        ("stored", "text"),
    ),
)
