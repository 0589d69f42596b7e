"""The handlers of KIP-848 consumer groups' records: types 3-8 and 16.

A generation is a group epoch. Its assignment is the target assignment (types 7 and 6),
with topic ids named by the partition metadata (type 4), else by the tracker's
cluster-wide `topic_names` (Kafka 4.x no longer writes type 4; the job fills that map
from the cluster, `spark_jobs.topic_names`), else left as ids. A member subscribed by
regex (`SubscribedTopicRegex`) is subscribed to the topics the coordinator resolved it
to: its ConsumerGroupRegularExpression record (type 16). The generation is emitted when
the target assignment metadata for the epoch arrives, at the position of the epoch's
ConsumerGroupMetadata record. Mirrors Kafka's `GroupMetadataManager.replay` overloads for
these records. Each handler first makes sure the group has a `Kip848State`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.store.batch import Generation, Member
from services.tracker.churn import rebalance_timeout_ms
from services.tracker.model import (
    MEMBER_FIELDS,
    Assignment,
    Kip848State,
    Position,
    Snapshot,
    by_topic,
    identity,
    member_details,
    member_racks,
)

if TYPE_CHECKING:
    from services.codec.types import (
        ConsumerGroupCurrentMemberAssignmentValue,
        ConsumerGroupKey,
        ConsumerGroupMemberKey,
        ConsumerGroupMemberMetadataValue,
        ConsumerGroupMetadataValue,
        ConsumerGroupPartitionMetadataValue,
        ConsumerGroupRegularExpressionKey,
        ConsumerGroupRegularExpressionValue,
        ConsumerGroupTargetAssignmentMemberValue,
        ConsumerGroupTargetAssignmentMetadataValue,
    )
    from services.tracker.tracker import GenerationTracker


def _state(tracker: GenerationTracker, key: ConsumerGroupKey) -> Kip848State:
    return tracker.kip848.setdefault(key["group_id"], Kip848State())


def group_metadata(
    tracker: GenerationTracker,
    key: ConsumerGroupKey,
    value: ConsumerGroupMetadataValue | None,
    at: Position,
) -> None:
    """Type 3: the group epoch; a tombstone deletes the group."""
    state = _state(tracker, key)
    if value is None:
        tracker.delete(key["group_id"], at, "consumer")
        return
    state.epoch, state.epoch_position = value["epoch"], at


def partition_metadata(
    tracker: GenerationTracker,
    key: ConsumerGroupKey,
    value: ConsumerGroupPartitionMetadataValue | None,
    at: Position,
) -> None:
    """Type 4: the names and partition counts of the subscribed topics' ids."""
    state = _state(tracker, key)
    if value is None:
        return
    for topic in value["topics"]:
        state.topic_names[topic["topic_id"]] = topic["topic_name"]
        state.partition_counts[topic["topic_name"]] = topic["num_partitions"]


def member_metadata(
    tracker: GenerationTracker,
    key: ConsumerGroupMemberKey,
    value: ConsumerGroupMemberMetadataValue | None,
    at: Position,
) -> None:
    """Type 5: a member joins or changes (its subscription, rack, ...); a tombstone: leaves."""
    state = _state(tracker, key)
    if value is None:
        state.members.pop(key["member_id"], None)
    else:
        state.members[key["member_id"]] = {f: v for f, v in value.items() if f in MEMBER_FIELDS}


def target_assignment_metadata(
    tracker: GenerationTracker,
    key: ConsumerGroupKey,
    value: ConsumerGroupTargetAssignmentMetadataValue | None,
    at: Position,
) -> None:
    """Type 6: the target assignment of an epoch is complete: one generation."""
    state = _state(tracker, key)
    if value is None:
        return
    _generation(tracker, key["group_id"], state, value["assignment_epoch"], at)


def target_assignment_member(
    tracker: GenerationTracker,
    key: ConsumerGroupMemberKey,
    value: ConsumerGroupTargetAssignmentMemberValue | None,
    at: Position,
) -> None:
    """Type 7: a member's target partitions (by topic id)."""
    state = _state(tracker, key)
    if value is None:
        state.targets.pop(key["member_id"], None)
    else:
        state.targets[key["member_id"]] = value["topic_partitions"]


def current_member_assignment(
    tracker: GenerationTracker,
    key: ConsumerGroupMemberKey,
    value: ConsumerGroupCurrentMemberAssignmentValue | None,
    at: Position,
) -> None:
    """Type 8: what a member owns while it converges on its target. Generations are
    measured on target assignments; a partition listed here at the member's epoch has
    been handed over to it (the cost of the rebalance that moved it:
    services/tracker/cost.py)."""
    state = _state(tracker, key)
    if value is None:
        return
    held = {
        (tracker.topic_name(state, tp["topic_id"]), p)
        for tp in value["assigned_partitions"]
        for p in tp["partitions"]
    }
    group = key["group_id"]
    tracker.cost.handover(
        group, value["member_epoch"], held, tracker.commits.get(group, {}), at.offset
    )


def regular_expression(
    tracker: GenerationTracker,
    key: ConsumerGroupRegularExpressionKey,
    value: ConsumerGroupRegularExpressionValue | None,
    at: Position,
) -> None:
    """Type 16: the topics the coordinator resolved a subscription regex to (Kafka 4.x)."""
    state = _state(tracker, key)
    if value is None:
        state.regexes.pop(key["regular_expression"], None)
    else:
        state.regexes[key["regular_expression"]] = list(value["topics"])


def _generation(
    tracker: GenerationTracker, group: str, state: Kip848State, epoch: int, at: Position
) -> None:
    position = state.epoch_position if state.epoch == epoch and state.epoch_position else at
    if tracker.seen(group, position):
        return
    members: list[Member] = []
    assignment: Assignment = {}
    topics: dict[str, tuple[str, ...]] = {}
    # name -> id of the group's topics: the uniform baseline orders topics by id, as the
    # coordinator does; the group's partition metadata names some, its targets the rest.
    topic_ids = {name: tid for tid, name in state.topic_names.items()}
    for member_id, meta in sorted(state.members.items()):
        ident = identity(member_id, meta["instance_id"])
        target = state.targets.get(member_id, [])
        for tp in target:
            topic_ids[tracker.topic_name(state, tp["topic_id"])] = tp["topic_id"]
        assigned = [
            (tracker.topic_name(state, tp["topic_id"]), p)
            for tp in target
            for p in tp["partitions"]
        ]
        assignment[ident] = assigned
        topics[ident] = state.subscribed(meta)
        members.append(
            Member(
                member_id=member_id,
                client_id=meta["client_id"],
                client_host=meta["client_host"],
                group_instance_id=meta["instance_id"],
                rebalance_timeout_ms=meta["rebalance_timeout_ms"],
                subscribed_topics=topics[ident],
                rack=meta["rack_id"],
                assignment=by_topic(assigned),
            )
        )
    assignors = {a for m in state.members.values() if (a := m.get("server_assignor")) is not None}
    assignor = ",".join(sorted(assignors)) or "uniform"
    snapshot = Snapshot(epoch, position, assignment, topics, assignor)
    snapshot.rebalance_timeout_ms = rebalance_timeout_ms(m.rebalance_timeout_ms for m in members)
    snapshot.details = member_details(members)
    snapshot.racks = member_racks(members)
    churn, causes = tracker.advance(group, snapshot, "consumer", topic_ids)
    tracker.generations.append(
        Generation(
            group=group,
            generation=epoch,
            source_partition=position.partition,
            source_offset=position.offset,
            source_time=position.time,
            members=members,
            group_type="consumer",
            protocol_type="consumer",
            assignor=assignor,
            rebalance=churn,
            causes=causes,
        )
    )
