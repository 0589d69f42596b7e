"""SQLAlchemy models of the history store: the schema the migrations build.

Every row keeps where it came from in `__consumer_offsets` (source partition and offset),
because those positions are what makes writes idempotent and what orders a group's
records: a group lives on one coordinator partition, so its records' offsets are its
log order.

Assignments are compact on purpose: each member's row holds its assignment as
`{"topic": [partitions]}`, so a generation of 2,000 members and 100,000 partitions
costs 2,000 rows and a few hundred kilobytes. The `assignments` view (migration 0002)
shows them as one row per member and topic with an integer array of partitions.
Keeping them in the member row rather than in a table of their own halves the rows a
generation writes, and writes faster. They are `json`, not `jsonb`: PostgreSQL only
validates json on input, which costs the server less CPU and makes smaller rows
(docs/performance.md, "Design measurements": assignments inline).

The bulk tables (generation_members, committed_offsets and offset_history) have no
foreign keys: a foreign key checks every inserted row with a trigger, which cost much
of the write throughput ("Design measurements": no foreign keys), and their parents
are always written
by the same transaction (see `services.store.repository`). Their primary keys start
with the parent's key, so joins to the parent stay index lookups.

Every table keyed by a group or a source position has a `cluster` column leading its
keys (migration 0010, `services.store.clusters`): one store holds several Kafka
clusters, and the same group name or record position on two of them never mixes.
`generation_members` is keyed by its generation's id, `offset_history_batches` holds
rows of the one cluster stores kept before 0007 (nothing reads it).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    Interval,
    LargeBinary,
    MetaData,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSON, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

GROUP_TYPES = ("classic", "consumer", "share", "streams")

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

Timestamp = DateTime(timezone=True)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def cluster_column(primary_key: bool = False) -> Mapped[str]:
    """The cluster a row belongs to (migration 0010): the first column of its keys."""
    return mapped_column(Text, primary_key=primary_key)


def group_reference() -> ForeignKeyConstraint:
    """(cluster, group_name) refers to its group."""
    return ForeignKeyConstraint(["cluster", "group_name"], ["groups.cluster", "groups.name"])


class Group(Base):
    """One consumer group, as long as `__consumer_offsets` ever mentioned it."""

    __tablename__ = "groups"
    __table_args__ = (
        CheckConstraint(
            "type IS NULL OR type IN (" + ", ".join(f"'{t}'" for t in GROUP_TYPES) + ")",
            name="type",
        ),
    )

    cluster: Mapped[str] = cluster_column(primary_key=True)
    name: Mapped[str] = mapped_column(Text, primary_key=True)
    # NULL until a group record says which protocol the group speaks; a group known
    # only from offset commits (consumers using assign()) has no type.
    type: Mapped[str | None] = mapped_column(Text)
    coordinator_partition: Mapped[int | None] = mapped_column(Integer)
    first_seen: Mapped[datetime] = mapped_column(Timestamp)
    last_seen: Mapped[datetime] = mapped_column(Timestamp)
    deleted_at: Mapped[datetime | None] = mapped_column(Timestamp)
    # Offset of the group record that last set type/deleted_at; older records lose.
    state_source_offset: Mapped[int | None] = mapped_column(BigInteger)
    # Every offset commit record of the group, superseded ones included (migration 0003).
    commits_total: Mapped[int] = mapped_column(BigInteger, server_default="0")
    last_commit_timestamp: Mapped[datetime | None] = mapped_column(Timestamp)


class Generation(Base):
    """One generation (classic) or group epoch (KIP-848) of a group."""

    __tablename__ = "generations"
    __table_args__ = (
        UniqueConstraint("cluster", "source_partition", "source_offset"),
        Index("ix_generations_cluster_group_name_time", "cluster", "group_name", "time"),
        Index(
            "ix_generations_cluster_group_name_source",
            "cluster",
            "group_name",
            "source_partition",
            "source_offset",
        ),
        group_reference(),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=False), primary_key=True)
    cluster: Mapped[str] = cluster_column()
    group_name: Mapped[str] = mapped_column(Text)
    generation: Mapped[int] = mapped_column(Integer)
    protocol_type: Mapped[str | None] = mapped_column(Text)
    assignor: Mapped[str | None] = mapped_column(Text)
    leader: Mapped[str | None] = mapped_column(Text)
    state_timestamp: Mapped[datetime | None] = mapped_column(Timestamp)
    # When the generation began: the state timestamp when the record has one, otherwise
    # the record's own timestamp. Every time-based query uses this column.
    time: Mapped[datetime] = mapped_column(Timestamp)
    member_count: Mapped[int] = mapped_column(Integer)
    source_partition: Mapped[int] = mapped_column(Integer)
    source_offset: Mapped[int] = mapped_column(BigInteger)
    source_timestamp: Mapped[datetime] = mapped_column(Timestamp)
    batch_id: Mapped[int] = mapped_column(BigInteger)
    # stable, empty, or rebalancing (a cooperative revocation round).
    state: Mapped[str | None] = mapped_column(Text)
    partition_count: Mapped[int | None] = mapped_column(Integer)


class GenerationMember(Base):
    """A member of one generation, as the group record describes it."""

    __tablename__ = "generation_members"

    generation_pk: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    member_id: Mapped[str] = mapped_column(Text, primary_key=True)
    group_instance_id: Mapped[str | None] = mapped_column(Text)
    client_id: Mapped[str | None] = mapped_column(Text)
    client_host: Mapped[str | None] = mapped_column(Text)
    session_timeout_ms: Mapped[int | None] = mapped_column(Integer)
    rebalance_timeout_ms: Mapped[int | None] = mapped_column(Integer)
    subscribed_topics: Mapped[list[str]] = mapped_column(ARRAY(Text))
    rack: Mapped[str | None] = mapped_column(Text)
    # {"topic": [partition, ...]} as the member reported in its subscription.
    owned_partitions: Mapped[dict[str, list[int]] | None] = mapped_column(JSON)
    reported_generation: Mapped[int | None] = mapped_column(Integer)
    # {"topic": [partition, ...]}: what the generation assigned to this member.
    assignment: Mapped[dict[str, list[int]]] = mapped_column(JSON)


class Rebalance(Base):
    """The change from one generation of a group to a later one, with its churn.

    Keyed by the generation it produced. A cooperative two-step episode is one row from
    the generation before the revocation to the generation that assigned the revoked
    partitions (`cooperative_episode` true); the revocation generation has no row.
    `disruptive` says whether the rebalance counts in storms (docs/architecture.md).
    """

    __tablename__ = "rebalances"
    __table_args__ = (
        Index("ix_rebalances_cluster_group_name_time", "cluster", "group_name", "time"),
        Index("ix_rebalances_time", "time"),
        group_reference(),
    )

    to_generation_pk: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("generations.id", ondelete="CASCADE"), primary_key=True
    )
    # NULL when the earlier generation was never stored (the job started after it).
    from_generation_pk: Mapped[int | None] = mapped_column(
        BigInteger, ForeignKey("generations.id", ondelete="SET NULL"), index=True
    )
    cluster: Mapped[str] = cluster_column()
    group_name: Mapped[str] = mapped_column(Text)
    from_generation: Mapped[int] = mapped_column(Integer)
    to_generation: Mapped[int] = mapped_column(Integer)
    time: Mapped[datetime] = mapped_column(Timestamp)
    # Time between the two generations; NULL when the earlier one is not stored.
    elapsed: Mapped[timedelta | None] = mapped_column(Interval)
    members_joined: Mapped[int] = mapped_column(Integer)
    members_left: Mapped[int] = mapped_column(Integer)
    partitions_moved: Mapped[int] = mapped_column(Integer)
    partitions_revoked: Mapped[int] = mapped_column(Integer)
    partitions_newly_assigned: Mapped[int] = mapped_column(Integer)
    moves_from_survivors: Mapped[int] = mapped_column(Integer)
    baseline_moves: Mapped[int | None] = mapped_column(Integer)
    baseline_assignor: Mapped[str | None] = mapped_column(Text)
    minimum_moves: Mapped[int | None] = mapped_column(Integer)
    cooperative_episode: Mapped[bool] = mapped_column(Boolean)
    # Running members lost partitions (migration 0005): what storms count. False for a
    # group's formation and for rebalances that took nothing from a member that stayed.
    disruptive: Mapped[bool] = mapped_column(Boolean, server_default="true")
    # [{"cause", "explanation", "possible"}] (migration 0006); NULL when stored before.
    causes: Mapped[list[dict[str, object]] | None] = mapped_column(JSONB)
    # The commit gap of the moved partitions (migration 0008; services/tracker/cost.py):
    # partitions measured (committed before the handover and since), partitions still
    # waiting for their first commit, the longest and the median gap. NULL when stored
    # before 0008 (or by a job that had not seen the rebalance's earlier generation).
    gap_partitions: Mapped[int | None] = mapped_column(Integer)
    gap_waiting: Mapped[int | None] = mapped_column(Integer)
    gap_max: Mapped[timedelta | None] = mapped_column(Interval)
    gap_median: Mapped[timedelta | None] = mapped_column(Interval)


class StaticReplacement(Base):
    """A static member that rejoined under a new member id within its session timeout:
    the group was rewritten at the same generation, without a rebalance (0006)."""

    __tablename__ = "static_replacements"
    __table_args__ = (
        Index(
            "ix_static_replacements_cluster_group_name_generation",
            "cluster",
            "group_name",
            "generation",
        ),
        group_reference(),
    )

    cluster: Mapped[str] = cluster_column(primary_key=True)
    source_partition: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_offset: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    instance_id: Mapped[str] = mapped_column(Text, primary_key=True)
    group_name: Mapped[str] = mapped_column(Text)
    generation: Mapped[int] = mapped_column(Integer)
    time: Mapped[datetime] = mapped_column(Timestamp)
    old_member_id: Mapped[str] = mapped_column(Text)
    new_member_id: Mapped[str] = mapped_column(Text)


class CommittedOffset(Base):
    """The latest committed offset per group, topic and partition.

    A tombstone keeps its row with `deleted` set, so that a replayed older commit
    cannot bring a deleted offset back.
    """

    __tablename__ = "committed_offsets"
    # Every batch rewrites most rows; free space on each page lets PostgreSQL update them
    # in place (HOT) without touching the primary key index.
    __table_args__ = ({"postgresql_with": {"fillfactor": 50}},)

    cluster: Mapped[str] = cluster_column(primary_key=True)
    group_name: Mapped[str] = mapped_column(Text, primary_key=True)
    topic: Mapped[str] = mapped_column(Text, primary_key=True)
    partition: Mapped[int] = mapped_column(Integer, primary_key=True)
    committed_offset: Mapped[int | None] = mapped_column(BigInteger)
    leader_epoch: Mapped[int | None] = mapped_column(Integer)
    metadata_: Mapped[str | None] = mapped_column("metadata", Text)
    commit_timestamp: Mapped[datetime | None] = mapped_column(Timestamp)
    expire_timestamp: Mapped[datetime | None] = mapped_column(Timestamp)
    deleted: Mapped[bool] = mapped_column(Boolean)
    source_partition: Mapped[int] = mapped_column(Integer)
    source_offset: Mapped[int] = mapped_column(BigInteger)
    batch_id: Mapped[int] = mapped_column(BigInteger)


class OffsetHistory(Base):
    """How one group's committed offsets moved within one minute of history time.

    One row per group and minute (`minute`, its start) in which any of its partitions
    had a commit or tombstone, with parallel arrays (entry i is topics[i],
    partitions[i], ...): each partition's latest record of that minute, by source
    position. A record's history time is its commit timestamp, else its own timestamp
    in `__consumer_offsets` (a tombstone's), else the batch's time. The rows depend on
    the records alone, not on the micro-batches that carried them: a backlog read in
    one batch leaves the same rows as the same records read live (migration 0007; see
    `services.store.repository.UPSERT_OFFSET_HISTORY`). A partition committing every
    5 s costs one entry a minute, whatever the trigger. The `offset_history_entries`
    view unnests them.

    Partitioned by range of `minute`, a partition per UTC day and a default partition
    for any minute no day covers (migration 0009; `services.store.partitions`), so that
    retention drops a day's rows with its partition.
    """

    __tablename__ = "offset_history"
    __table_args__ = ({"postgresql_partition_by": "RANGE (minute)"},)

    cluster: Mapped[str] = cluster_column(primary_key=True)
    group_name: Mapped[str] = mapped_column(Text, primary_key=True)
    minute: Mapped[datetime] = mapped_column(Timestamp, primary_key=True)
    topics: Mapped[list[str]] = mapped_column(ARRAY(Text))
    partitions: Mapped[list[int]] = mapped_column(ARRAY(Integer))
    # NULL entries are deletions (tombstones).
    committed_offsets: Mapped[list[int | None]] = mapped_column(ARRAY(BigInteger))
    commit_timestamps: Mapped[list[datetime | None]] = mapped_column(ARRAY(Timestamp))
    source_offsets: Mapped[list[int]] = mapped_column(ARRAY(BigInteger))
    # Commit records of the partition in the minute, superseded ones included; NULL for
    # entries moved over from `offset_history_batches` (their counts were per batch).
    commit_counts: Mapped[list[int | None]] = mapped_column(ARRAY(Integer))


class OffsetHistoryBatch(Base):
    """The offset history as stores before migration 0007 kept it: one row per group
    and micro-batch that moved its offsets (the batch's latest commit per partition).

    Nothing writes or reads it any more. Migration 0007 moved its rows into
    `offset_history` (each minute's latest entry per partition) and kept them here,
    because they hold what the new shape has no place for: several points per minute
    at short triggers, batch ids and times, and commit counts per batch rather than per
    partition. Empty in a store created at 0007 or later; `DROP TABLE
    offset_history_batches` reclaims its space once those are not needed.
    """

    __tablename__ = "offset_history_batches"
    __table_args__ = (
        Index("ix_offset_history_batches_group_name_batch_time", "group_name", "batch_time"),
    )

    group_name: Mapped[str] = mapped_column(Text, primary_key=True)
    source_offset: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    batch_id: Mapped[int] = mapped_column(BigInteger)
    batch_time: Mapped[datetime] = mapped_column(Timestamp)
    topics: Mapped[list[str]] = mapped_column(ARRAY(Text))
    partitions: Mapped[list[int]] = mapped_column(ARRAY(Integer))
    committed_offsets: Mapped[list[int | None]] = mapped_column(ARRAY(BigInteger))
    commit_timestamps: Mapped[list[datetime | None]] = mapped_column(ARRAY(Timestamp))
    source_offsets: Mapped[list[int]] = mapped_column(ARRAY(BigInteger))
    commit_count: Mapped[int | None] = mapped_column(Integer)


class DecodeFailure(Base):
    """A record the job could not decode, kept byte for byte."""

    __tablename__ = "decode_failures"

    cluster: Mapped[str] = cluster_column(primary_key=True)
    source_partition: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_offset: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    reason: Mapped[str] = mapped_column(Text)
    # A short, bounded form of the reason, for counting by label.
    category: Mapped[str | None] = mapped_column(Text)
    key: Mapped[bytes | None] = mapped_column(LargeBinary)
    value: Mapped[bytes | None] = mapped_column(LargeBinary)
    source_timestamp: Mapped[datetime | None] = mapped_column(Timestamp)
    batch_id: Mapped[int] = mapped_column(BigInteger)
    # When the row was stored (migration 0009): retention's time for a failure whose
    # record has no timestamp; the upgrade's time for rows stored before it.
    stored_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())


class PipelineProgress(Base):
    """The last processed offset per source partition and the batch that processed it."""

    __tablename__ = "pipeline_progress"

    cluster: Mapped[str] = cluster_column(primary_key=True)
    source: Mapped[str] = mapped_column(Text, primary_key=True)
    partition: Mapped[int] = mapped_column(Integer, primary_key=True)
    last_offset: Mapped[int] = mapped_column(BigInteger)
    batch_id: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(Timestamp)
    # Added to the partition's Kafka offsets after its log went backwards (migration 0004).
    position_base: Mapped[int] = mapped_column(BigInteger, server_default="0")


class PipelineStatus(Base):
    """The streaming job's health, per source: what the exporter publishes."""

    __tablename__ = "pipeline_status"

    cluster: Mapped[str] = cluster_column(primary_key=True)
    source: Mapped[str] = mapped_column(Text, primary_key=True)
    batches_total: Mapped[int] = mapped_column(BigInteger)
    records_total: Mapped[int] = mapped_column(BigInteger)
    last_batch_id: Mapped[int | None] = mapped_column(BigInteger)
    last_batch_time: Mapped[datetime | None] = mapped_column(Timestamp)
    last_batch_records: Mapped[int | None] = mapped_column(BigInteger)
    last_batch_seconds: Mapped[float | None] = mapped_column(Float)
    input_rows_per_second: Mapped[float | None] = mapped_column(Float)
    processed_rows_per_second: Mapped[float | None] = mapped_column(Float)
    # NULL when the source cannot tell (replay directories count files, not records).
    records_behind: Mapped[int | None] = mapped_column(BigInteger)
    caught_up: Mapped[bool] = mapped_column(Boolean)
    updated_at: Mapped[datetime] = mapped_column(Timestamp)
    # Set while the job cannot reach its source; NULL when healthy (migration 0004).
    degraded_reason: Mapped[str | None] = mapped_column(Text)
    degraded_since: Mapped[datetime | None] = mapped_column(Timestamp)
    # Times a source partition's offsets restarted below what the job had read.
    log_resets_total: Mapped[int] = mapped_column(BigInteger, server_default="0")


class RecordRepair(Base):
    """A field of a record that was changed so that it could be stored, with its original.

    `original` holds the field's original UTF-8 bytes (a string with U+0000, or a key
    too long for an index); `original_ms` the raw milliseconds of a timestamp outside
    the range of a date; `stored` what the store holds instead (NULL for a time).
    """

    __tablename__ = "record_repairs"

    cluster: Mapped[str] = cluster_column(primary_key=True)
    source_partition: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_offset: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    # The field's path in the decoded record, e.g. "key.group" or "members[2].client_host".
    field: Mapped[str] = mapped_column(Text, primary_key=True)
    reason: Mapped[str] = mapped_column(Text)
    original: Mapped[bytes | None] = mapped_column(LargeBinary)
    original_ms: Mapped[int | None] = mapped_column(BigInteger)
    stored: Mapped[str | None] = mapped_column(Text)
    batch_id: Mapped[int] = mapped_column(BigInteger)
    # When the row was stored (migration 0009): retention's time for a repair, which has
    # none of its own; the upgrade's time for rows stored before it.
    stored_at: Mapped[datetime] = mapped_column(Timestamp, server_default=func.now())


class PrunedRebalances(Base):
    """The rebalances retention deleted, still counted per group and primary cause
    (`services.store.batch.primary_cause`; migration 0009): the exporter adds them to
    the rows that remain, so that its rebalance and move counters never go down."""

    __tablename__ = "pruned_rebalances"

    cluster: Mapped[str] = cluster_column(primary_key=True)
    group_name: Mapped[str] = mapped_column(Text, primary_key=True)
    cause: Mapped[str] = mapped_column(Text, primary_key=True)
    rebalances: Mapped[int] = mapped_column(BigInteger)
    disruptive: Mapped[int] = mapped_column(BigInteger)
    partitions_moved: Mapped[int] = mapped_column(BigInteger)
    baseline_moves: Mapped[int] = mapped_column(BigInteger)
    minimum_moves: Mapped[int] = mapped_column(BigInteger)


class PrunedDecodeFailures(Base):
    """The decode failures retention deleted, still counted per category (migration
    0009), for the exporter's `groupscope_decode_failures_total`."""

    __tablename__ = "pruned_decode_failures"

    cluster: Mapped[str] = cluster_column(primary_key=True)
    category: Mapped[str] = mapped_column(Text, primary_key=True)
    failures: Mapped[int] = mapped_column(BigInteger)
