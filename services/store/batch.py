"""What one micro-batch writes to the history store: `BatchWrite` and its parts.

The streaming job builds one `BatchWrite` per micro-batch and hands it to
`HistoryStore.write_batch`, which applies all of it in ONE transaction, or nothing::

    from services.store.batch import (
        BatchWrite, Churn, Generation, Member, OffsetCommit, SourceProgress,
    )
    from services.store.repository import HistoryStore
    from services.store.retry import RetryPolicy

    store = HistoryStore(engine)
    batch = BatchWrite(
        batch_id=42,
        source="__consumer_offsets",
        batch_time=now,
        offsets=[OffsetCommit("billing", "orders", 3, 1200, source_partition=35,
                              source_offset=99_812, commit_time=t)],
        generations=[Generation("billing", 7, source_partition=35, source_offset=99_815,
                                source_time=t, assignor="range", leader="c-1",
                                members=[Member("c-1", client_id="app", client_host="/10.0.0.5",
                                                assignment={"orders": [0, 1, 2, 3]})],
                                rebalance=Churn(from_generation=6, from_source_offset=99_700,
                                                members_joined=1, members_left=0, moved=4,
                                                revoked=4, newly_assigned=4,
                                                moves_from_survivors=4, baseline_moves=3,
                                                baseline_assignor="sticky",
                                                minimum_moves=3))],
        progress=[SourceProgress(partition=35, last_offset=99_900)],
    )
    RetryPolicy().run(lambda: store.write_batch(batch))   # then commit the checkpoint

Rules the store relies on:

- **Source positions are identity.** `source_partition`/`source_offset` are where the
  record sits in `__consumer_offsets` (or the replayed capture). A generation is unique
  by its record's position within its cluster, so replaying a batch inserts nothing
  twice. A batch carries no cluster: the `HistoryStore` writing it is bound to one
  (`HistoryStore(engine, cluster="prod-eu")`, default `default`), and so is everything
  it reads back; the jobs of several clusters share one database, each with its own.
- **Offsets never move backwards.** A committed offset replaces the stored one only
  when its `source_offset` is greater. A tombstone (`offset=None`) marks the row
  deleted under the same rule, so an older commit replayed later cannot revive it.
  Several commits of one partition in a batch are fine: the latest position wins.
- **Generations.** One `Generation` per GroupMetadata record (classic) or group epoch
  (KIP-848; use the ConsumerGroupMetadata record's position). `members` carries each
  member's assignment as `{topic: [partitions]}`. A record for an empty group is a
  generation with no members. The group itself is created implicitly.
- **Rebalances.** `Generation.rebalance` is the churn from an earlier generation of
  the same group to this one (`Churn.from_source_offset` is that generation's record
  position on the same source partition; it may have been written by an earlier
  batch). For a cooperative two-step episode, attach one `Churn` with
  `cooperative_episode=True` to the generation that completed it, measured from the
  generation before the revocation, and none to the revocation generation.
  `None` means "no earlier generation known": the first one the job saw.
  `Churn.disruptive` says whether the rebalance stopped running members' consumption
  (the tracker decides, `services.tracker.churn.disruptive`); only those count in storms.
- **Groups.** Every group named anywhere in the batch is created if missing, with
  first/last seen times. `GroupEvent` records a group record that changes its state:
  `deleted=True` for a group tombstone. Later positions win, as for offsets.
- **Progress.** `progress` is the last processed offset of each source partition;
  it never moves backwards either, nor does its position base. The job reads it back with
  `HistoryStore.progress(source)` to check where the store stands.
- **Health.** `health` (records read, seconds spent) adds the batch to the source's
  `pipeline_status` row in the same transaction, once: a batch id no greater than the
  last one counted (a replayed batch) is not counted again. Between batches the job reports
  whether it has caught up with `HistoryStore.report_status`.
- **Costs.** `costs` sets each listed rebalance's commit gaps (`RebalanceCost`), for
  a rebalance of this batch or of an earlier one; a rebalance not stored is skipped.
  Each is the tracker's whole current state of that rebalance, so applying one twice,
  or an older one after a newer one, never lowers what is stored (`measured` only
  grows).
- **Repairs.** A value PostgreSQL cannot hold is made storable, and the change recorded
  in `record_repairs` with the original (`services.store.sanitize`): the store replaces
  U+0000 in any string and shortens over-long keys itself; the job turns a time out of
  the range of a date into None and hands the raw milliseconds over as a `Repair` in
  `repairs`. Replaying a batch records nothing twice.
- **Failure.** If the database is unreachable or goes away mid-batch, `write_batch`
  raises `StoreUnavailableError` and nothing of the batch is kept: do not advance the
  checkpoint; retry (with `RetryPolicy`) or fail the query. `BatchRejectedError`
  means the data broke a constraint; retrying the same batch will not help.

- **Offset history.** The store keeps, per group, topic, partition and minute of
  history time, the latest commit (or tombstone) it was given: its history time is the
  commit timestamp, else the record's own timestamp (`OffsetCommit.record_time`, a
  tombstone's), else the batch time. A minute's entry is replaced only by a later
  source position, so the history depends on the records alone, not on how they were
  cut into batches: a backlog read in one batch leaves the same history as the same
  records read live. Give the store every minute's latest commit of each partition
  (`offsets` may hold several commits per partition: the latest position sets the
  committed offset, the latest of each minute its history entry); `commits` counts
  the records each stands for, which the store adds to the group's count once, and
  `latest_commit_time` the latest commit time among them.

Times are timezone-aware `datetime`s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

# The offset history keeps a partition's latest commit of each such interval of its
# history time (see "Offset history" above); the job reduces commits to it in Spark.
HISTORY_INTERVAL_MS = 60_000


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """An offset commit record (key types 0 and 1), or its tombstone (`offset=None`)."""

    group: str
    topic: str
    partition: int
    offset: int | None
    source_partition: int
    source_offset: int
    commit_time: datetime | None = None
    leader_epoch: int | None = None
    metadata: str | None = None
    expire_time: datetime | None = None
    # Commit records this one stands for: the job keeps only a batch's latest commit
    # per partition and minute, but counts the ones it superseded (the exporter's
    # commit rate).
    commits: int = 1
    # The record's own timestamp in __consumer_offsets: a tombstone's history time.
    record_time: datetime | None = None
    # The latest commit time of the records this one stands for, where it is not this
    # one's own (a tombstone superseded commits); None: `commit_time`. The group's last
    # commit time (`groups.last_commit_timestamp`) is the latest of these.
    latest_commit_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class GroupEvent:
    """A group record that changes the group's state: its type, or its deletion."""

    group: str
    time: datetime
    source_partition: int
    source_offset: int
    type: str | None = None
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class Member:
    """One member of a generation, with its assignment as `{topic: [partitions]}`."""

    member_id: str
    client_id: str | None = None
    client_host: str | None = None
    group_instance_id: str | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    subscribed_topics: Sequence[str] = ()
    rack: str | None = None
    owned_partitions: Mapping[str, Sequence[int]] | None = None
    reported_generation: int | None = None
    assignment: Mapping[str, Sequence[int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Churn:
    """How a rebalance moved partitions, computed by the job against the assignors."""

    from_generation: int
    from_source_offset: int
    members_joined: int
    members_left: int
    moved: int
    revoked: int
    newly_assigned: int
    moves_from_survivors: int
    baseline_moves: int | None = None
    baseline_assignor: str | None = None
    minimum_moves: int | None = None
    cooperative_episode: bool = False
    # Whether running members lost partitions: what storms count (docs/architecture.md,
    # "Storms"). False for a group's formation and for rebalances that took nothing
    # from a member that stayed (a cooperative or KIP-848 leave, an epoch moving nothing).
    disruptive: bool = True


CAUSES = (
    "scale_out",
    "scale_in",
    "restart",
    "session_timeout",
    "poll_timeout",
    "subscription_change",
    "partitions_added",
    "unknown",
)


@dataclass(frozen=True, slots=True)
class Cause:
    """Why a rebalance happened: one of `CAUSES`, with a one-line explanation.
    `possible` marks a candidate that the evidence does not settle (the rebalance lists
    every cause that remains possible, never a guess)."""

    cause: str
    explanation: str
    possible: bool = False

    def as_dict(self) -> dict[str, object]:
        return {"cause": self.cause, "explanation": self.explanation, "possible": self.possible}


def primary_cause(causes: Sequence[Cause]) -> str:
    """One bounded label per rebalance (the exporter's `cause`): its first settled cause
    in `CAUSES` order, else `unknown`."""
    settled = {c.cause for c in causes if not c.possible}
    return next((c for c in CAUSES if c in settled), "unknown")


def primary_cause_sql(r: str) -> str:
    """`primary_cause` of the `rebalances` row `r`, as a SQL expression over its `causes`
    JSON: `unknown` for the rows stored before revision 0006, whose causes are NULL.
    Only names in `CAUSES` count, so the exporter's `cause` label stays bounded."""
    names = "ARRAY[" + ", ".join(f"'{c}'" for c in CAUSES) + "]::text[]"
    return f"""coalesce((
        SELECT c->>'cause'
        FROM jsonb_array_elements(
            CASE WHEN jsonb_typeof({r}.causes) = 'array' THEN {r}.causes ELSE '[]'::jsonb END
        ) c
        WHERE c->>'cause' = ANY({names})
            AND NOT (CASE WHEN jsonb_typeof(c->'possible') = 'boolean'
                THEN (c->>'possible')::boolean ELSE false END)
        ORDER BY array_position({names}, c->>'cause')
        LIMIT 1
    ), 'unknown')"""


@dataclass(frozen=True, slots=True)
class RebalanceCost:
    """How long a rebalance's moved partitions went without an offset commit
    (services/tracker/cost.py): for each moved partition, the gap from its last commit
    before the new owner held it to its first commit after. Keyed by the rebalance's
    generation record (`source_partition`, `source_offset`: the `Generation` that carries
    the `Churn`). The tracker sends it again whenever more partitions resume; the store
    keeps the latest, so a replay changes nothing.

    `measured`: moved partitions whose gap is known; `waiting`: moved partitions that
    committed before and not yet since (the rest of the moves had no commit before, so
    no gap to measure). `gap_max` and `gap_median` are over the measured ones (None
    while there are none)."""

    group: str
    source_partition: int
    source_offset: int
    measured: int
    waiting: int
    gap_max: timedelta | None = None
    gap_median: timedelta | None = None


@dataclass(frozen=True, slots=True)
class StaticReplacement:
    """A static member (group.instance.id) that rejoined under a new member id within its
    session timeout: the coordinator rewrote the group at the same generation, with no
    rebalance (KIP-345)."""

    group: str
    generation: int
    time: datetime
    source_partition: int
    source_offset: int
    instance_id: str
    old_member_id: str
    new_member_id: str


@dataclass(frozen=True, slots=True)
class Generation:
    """One generation (classic) or group epoch (KIP-848) of a group."""

    group: str
    generation: int
    source_partition: int
    source_offset: int
    source_time: datetime
    members: Sequence[Member] = ()
    group_type: str = "classic"
    protocol_type: str | None = "consumer"
    assignor: str | None = None
    leader: str | None = None
    state_time: datetime | None = None
    rebalance: Churn | None = None
    # "rebalancing" for a cooperative revocation round; None derives stable or empty.
    state: str | None = None
    # Why the group rebalanced (set with `rebalance`): services/tracker/causes.py.
    causes: Sequence[Cause] = ()

    @property
    def group_state(self) -> str:
        """stable, empty or rebalancing: what the group looked like after this record."""
        return self.state or ("stable" if self.members else "empty")

    @property
    def partition_count(self) -> int:
        """Partitions assigned across the members."""
        return sum(len(ps) for m in self.members for ps in m.assignment.values())

    @property
    def time(self) -> datetime:
        """When the generation began: the state timestamp if the record has one."""
        return self.state_time or self.source_time


@dataclass(frozen=True, slots=True)
class DecodeFailure:
    """A record the job could not decode, kept byte for byte."""

    source_partition: int
    source_offset: int
    reason: str
    key: bytes | None
    value: bytes | None
    source_time: datetime | None = None
    category: str | None = None  # a short, bounded reason; None: the reason itself


@dataclass(frozen=True, slots=True)
class Repair:
    """A field of a record changed so that it could be stored, with its original.

    `field` is its path in the decoded record (`key.group`, `metadata`,
    `members[2].client_host`, `current_state_timestamp`); `original` its UTF-8 bytes,
    `original_ms` the raw milliseconds of a time out of the range of a date, `stored`
    what the store holds instead (None for such a time: stored as NULL).
    """

    source_partition: int
    source_offset: int
    field: str
    reason: str
    original: bytes | None = None
    original_ms: int | None = None
    stored: str | None = None


@dataclass(frozen=True, slots=True)
class SourceProgress:
    """The last offset of one source partition that this batch processed."""

    partition: int
    last_offset: int
    # What the source adds to the partition's Kafka offsets to make positions: 0 until its
    # log went backwards (`spark_jobs.kafka_source`). Never lowered in the store.
    base: int = 0


@dataclass(frozen=True, slots=True)
class BatchHealth:
    """How big the batch was and how long building it took: pipeline health."""

    records: int
    seconds: float
    # Source partitions whose log went backwards in this batch (`pipeline_status.
    # log_resets_total`); counted, like the batch, once however often it is replayed.
    log_resets: int = 0


@dataclass(frozen=True, slots=True)
class BatchWrite:
    """Everything one micro-batch writes; applied in one transaction."""

    batch_id: int
    source: str
    batch_time: datetime
    offsets: Sequence[OffsetCommit] = ()
    group_events: Sequence[GroupEvent] = ()
    generations: Sequence[Generation] = ()
    decode_failures: Sequence[DecodeFailure] = ()
    progress: Sequence[SourceProgress] = ()
    health: BatchHealth | None = None
    # Changes the job made (times out of range); the store adds its own (strings).
    repairs: Sequence[Repair] = ()
    # Static members replaced without a rebalance (same-generation rewrites).
    replacements: Sequence[StaticReplacement] = ()
    # The commit gaps of rebalances of this batch or earlier ones (latest state of each).
    costs: Sequence[RebalanceCost] = ()


@dataclass(frozen=True, slots=True)
class PipelineReport:
    """The job's view of its source between batches (`HistoryStore.report_status`)."""

    source: str
    at: datetime
    caught_up: bool
    records_behind: int | None = None  # None when the source cannot count records
    input_rate: float | None = None  # rows/s of the last batch, as Spark reports it
    processed_rate: float | None = None
    # Set while a dependency (the broker) is unreachable and the job waits for it;
    # None clears them (the exporter publishes both).
    degraded_reason: str | None = None
    degraded_since: datetime | None = None
