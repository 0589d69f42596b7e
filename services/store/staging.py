"""Staging tables: per-transaction temp tables filled with binary COPY.

Bulk rows go to the server in one COPY per table, then plain SQL moves them into the
real tables with `INSERT … ON CONFLICT`. That is several times faster than row-wise
inserts, and it lets one statement resolve a whole batch's conflicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import psycopg


@dataclass(frozen=True)
class StagingTable:
    """A temp table dropped at commit, declared as (column, PostgreSQL type) pairs."""

    name: str
    columns: tuple[tuple[str, str], ...]

    def create(self, cursor: psycopg.Cursor) -> None:
        columns = ", ".join(f"{name} {pgtype}" for name, pgtype in self.columns)
        cursor.execute(f"CREATE TEMP TABLE {self.name} ({columns}) ON COMMIT DROP")

    def copy(self, cursor: psycopg.Cursor, rows: Iterable[tuple]) -> None:
        names = ", ".join(name for name, _ in self.columns)
        with cursor.copy(f"COPY {self.name} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([pgtype for _, pgtype in self.columns])
            for row in rows:
                copy.write_row(row)


GROUP_EVENTS = StagingTable(
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

OFFSETS = StagingTable(
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
    ),
)

GENERATIONS = StagingTable(
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
    ),
)

MEMBERS = StagingTable(
    "stage_members",
    (
        ("source_partition", "int4"),
        ("source_offset", "int8"),
        ("member_id", "text"),
        ("group_instance_id", "text"),
        ("client_id", "text"),
        ("client_host", "text"),
        ("session_timeout_ms", "int4"),
        ("rebalance_timeout_ms", "int4"),
        ("subscribed_topics", "text[]"),
        ("rack", "text"),
        ("owned_partitions", "jsonb"),
        ("reported_generation", "int4"),
    ),
)

ASSIGNMENTS = StagingTable(
    "stage_assignments",
    (
        ("source_partition", "int4"),
        ("source_offset", "int8"),
        ("member_id", "text"),
        ("topic", "text"),
        ("partitions", "int4[]"),
    ),
)

REBALANCES = StagingTable(
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
    ),
)

DECODE_FAILURES = StagingTable(
    "stage_decode_failures",
    (
        ("source_partition", "int4"),
        ("source_offset", "int8"),
        ("reason", "text"),
        ("key", "bytea"),
        ("value", "bytea"),
        ("source_timestamp", "timestamptz"),
    ),
)
