"""The tracker's state types: record positions, group snapshots, KIP-848 group state.

Also the conversion of record times (epoch milliseconds) shared with the offset path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from services.store.batch import Cause, Member, Repair

if TYPE_CHECKING:
    from services.codec.types import TopicIdPartitions

Assignment = dict[str, list[tuple[str, int]]]  # identity -> [(topic, partition)]


@dataclass(frozen=True)
class Position:
    """Where a record sits in the source: partition, offset and time."""

    partition: int
    offset: int
    time: datetime


@dataclass
class Snapshot:
    """The last generation of a group, as the tracker remembers it."""

    generation: int
    position: Position
    assignment: Assignment
    topics: dict[str, tuple[str, ...]]  # identity -> subscribed topics
    protocol: str | None
    revoking_from: Snapshot | None = None  # set on a cooperative revocation round
    # The group's longest member rebalance timeout (ms) in this generation, if known.
    rebalance_timeout_ms: int | None = None
    # While the group is forming (members joining an empty group): the end of its first
    # rebalance timeout. None once it has formed, or when its formation was not seen.
    forming_until: datetime | None = None
    # identity -> (member id, client id, host, session timeout ms, rebalance timeout ms):
    # the evidence for a rebalance's causes (services/tracker/causes.py).
    details: dict[str, MemberDetails] = field(default_factory=dict)
    # Causes found in a cooperative episode's revocation rounds, reported at its end.
    pending: list[Cause] = field(default_factory=list)
    # Since when each partition has had its current owner (set by the tracker).
    since: dict[tuple[str, int], datetime] = field(default_factory=dict)
    # identity -> rack (`client.rack`) of the members that state one: the consumer racks
    # of the baseline into this generation (KIP-881). Not saved: a snapshot loaded from a
    # saved state is only ever the generation a rebalance starts from.
    racks: dict[str, str] = field(default_factory=dict)


MemberDetails = tuple[str, str | None, str | None, int | None, int | None]


def member_details(members: Iterable[Member]) -> dict[str, MemberDetails]:
    """identity -> a generation's evidence for causes of each member (a KIP-848 member's
    session timeout is the broker's, not in the records: None)."""
    return {
        identity(m.member_id, m.group_instance_id): (
            m.member_id,
            m.client_id,
            m.client_host,
            m.session_timeout_ms,
            m.rebalance_timeout_ms,
        )
        for m in members
    }


def member_racks(members: Iterable[Member]) -> dict[str, str]:
    """identity -> rack of the members that state one; Kafka ignores an empty rack id
    (`AbstractPartitionAssignor`'s consumer racks, `MemberSubscription.rackId`)."""
    return {identity(m.member_id, m.group_instance_id): m.rack for m in members if m.rack}


MEMBER_FIELDS = (
    "instance_id",
    "rack_id",
    "client_id",
    "client_host",
    "subscribed_topic_names",
    "subscribed_topic_regex",
    "rebalance_timeout_ms",
    "server_assignor",
)


@dataclass
class Kip848State:
    """A KIP-848 group's state between its records."""

    epoch: int | None = None
    epoch_position: Position | None = None
    topic_names: dict[str, str] = field(default_factory=dict)
    partition_counts: dict[str, int] = field(default_factory=dict)
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    targets: dict[str, list[TopicIdPartitions]] = field(default_factory=dict)
    regexes: dict[str, list[str]] = field(default_factory=dict)  # regex -> resolved topics

    def subscribed(self, member: Mapping[str, Any]) -> tuple[str, ...]:
        """A member's topics: those it names and those its regex resolved to (Kafka
        4.x, KIP-848's broker-side regexes); a regex not resolved yet matches none."""
        regex = member.get("subscribed_topic_regex")  # absent in older saved states
        resolved = self.regexes.get(regex, []) if regex else []
        return tuple(sorted({*member["subscribed_topic_names"], *resolved}))


def identity(member_id: str, group_instance_id: str | None) -> str:
    """Static members keep their identity across restarts (KIP-345)."""
    return group_instance_id or member_id


# The last millisecond of year 9999: Python's datetime ends there (PostgreSQL's later).
MAX_MILLIS = 253_402_300_799_999
OUT_OF_RANGE = "time out of the range of a date (stored as NULL)"


def to_datetime(millis: int | None) -> datetime | None:
    """A record's epoch milliseconds as a time; None for none (Kafka writes -1) and for
    one out of the range of a date (see `time_repair`), which any client can send."""
    if millis is None or not 0 <= millis <= MAX_MILLIS:
        return None
    return datetime.fromtimestamp(millis / 1000, tz=UTC)


def time_repair(millis: int | None, field: str, partition: int, offset: int) -> Repair | None:
    """The repair that records `millis` if `to_datetime` dropped it (not for -1: no time)."""
    if millis is None or -1 <= millis <= MAX_MILLIS:
        return None
    return Repair(partition, offset, field, OUT_OF_RANGE, original_ms=millis)


def by_topic(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    """(topic, partition) pairs as the store's {topic: sorted partitions}."""
    out: dict[str, list[int]] = {}
    for topic, p in partitions:
        out.setdefault(topic, []).append(p)
    return {t: sorted(ps) for t, ps in sorted(out.items())}
