"""The handler of classic groups' GroupMetadata records (type 2).

Each record of a new generation id is one generation. A member's identity is its group
instance id when set (static membership), else its member id. A record that repeats the
generation id (a static member rejoined within its session timeout) only refreshes the
tracker's view. A tombstone deletes the group. Mirrors what Kafka's
`GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)` rebuilds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from services.store.batch import Generation, Member, StaticReplacement
from services.tracker.churn import rebalance_timeout_ms
from services.tracker.model import (
    Assignment,
    Position,
    Snapshot,
    by_topic,
    identity,
    member_details,
    member_racks,
    time_repair,
    to_datetime,
)

if TYPE_CHECKING:
    from services.codec.types import (
        GroupMetadataKey,
        GroupMetadataValue,
        Subscription,
        TopicPartitions,
    )
    from services.tracker.tracker import GenerationTracker


def _flatten(topic_partitions: Iterable[TopicPartitions]) -> list[tuple[str, int]]:
    return [(tp["topic"], p) for tp in topic_partitions for p in tp["partitions"]]


def group_metadata(
    tracker: GenerationTracker,
    key: GroupMetadataKey,
    value: GroupMetadataValue | None,
    position: Position,
) -> None:
    group = key["group"]
    if tracker.seen(group, position):
        return
    if value is None:
        tracker.delete(group, position, "classic")
        return
    members, assignment, topics = [], {}, {}
    for m in value["members"]:
        ident = identity(m["member_id"], m["group_instance_id"])
        # Not a dict: bytes of another protocol type, or that do not decode.
        sub: Subscription | None = (
            m["subscription"] if isinstance(m["subscription"], dict) else None
        )
        asg = m["assignment"] if isinstance(m["assignment"], dict) else None
        assigned = _flatten((asg.get("assigned_partitions") if asg else None) or [])
        assignment[ident] = assigned
        topics[ident] = tuple((sub.get("topics") if sub else None) or ())
        owned = sub.get("owned_partitions") if sub else None
        members.append(
            Member(
                member_id=m["member_id"],
                client_id=m["client_id"],
                client_host=m["client_host"],
                group_instance_id=m["group_instance_id"],
                session_timeout_ms=m["session_timeout"],
                rebalance_timeout_ms=m["rebalance_timeout"],
                subscribed_topics=topics[ident],
                rack=sub.get("rack_id") if sub else None,
                owned_partitions=by_topic(_flatten(owned)) if owned else None,
                reported_generation=sub.get("generation_id") if sub else None,
                assignment=by_topic(assigned),
            )
        )
    _emit(tracker, group, value, position, members, assignment, topics)


def _emit(
    tracker: GenerationTracker,
    group: str,
    value: Mapping[str, Any],
    position: Position,
    members: list[Member],
    assignment: Assignment,
    topics: dict[str, tuple[str, ...]],
) -> None:
    protocol = value["protocol"]
    snapshot = Snapshot(value["generation"], position, assignment, topics, protocol)
    snapshot.rebalance_timeout_ms = rebalance_timeout_ms(m.rebalance_timeout_ms for m in members)
    snapshot.details = member_details(members)
    snapshot.racks = member_racks(members)
    previous = tracker.last.get(group)
    if previous is not None and previous.generation == value["generation"]:
        # A static member rejoining within its session timeout: the coordinator
        # rewrites the group with a new member id but the same generation
        # (KIP-345, ClassicGroup.replaceStaticMember). Not a rebalance, but kept for
        # the timeline.
        snapshot.revoking_from = previous.revoking_from
        snapshot.forming_until = previous.forming_until
        snapshot.pending = previous.pending
        snapshot.since = previous.since
        tracker.last[group] = snapshot
        for ident, d in sorted(snapshot.details.items()):
            old = previous.details.get(ident)
            if old is not None and old[0] != d[0] and ident != d[0]:
                tracker.replacements.append(
                    StaticReplacement(
                        group,
                        value["generation"],
                        position.time,
                        position.partition,
                        position.offset,
                        ident,
                        old[0],
                        d[0],
                    )
                )
        return
    churn, causes = tracker.advance(group, snapshot, "classic")
    state_ms = value["current_state_timestamp"]
    repair = time_repair(state_ms, "current_state_timestamp", position.partition, position.offset)
    if repair is not None:
        tracker.repairs.append(repair)
    tracker.generations.append(
        Generation(
            group=group,
            generation=value["generation"],
            source_partition=position.partition,
            source_offset=position.offset,
            source_time=position.time,
            members=members,
            group_type="classic",
            protocol_type=value["protocol_type"],
            assignor=protocol,
            leader=value["leader"],
            state_time=to_datetime(state_ms),
            rebalance=churn,
            state="rebalancing" if snapshot.revoking_from is not None else None,
            causes=causes,
        )
    )
