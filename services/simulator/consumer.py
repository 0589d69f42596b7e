"""A KIP-848 consumer group on the group coordinator (the `consumer` protocol).

Mirrors `GroupMetadataManager.consumerGroupHeartbeat` and `CurrentAssignmentBuilder`:

- A member joining, leaving or changing its subscription, and a subscribed topic gaining
  partitions, bump the group epoch. The records of one heartbeat are appended together:
  the member's subscription (type 5, or its tombstone with the current and target
  assignment tombstones, types 8 and 7, when it leaves or is fenced), the subscribed
  topics with their ids when they changed (type 4), and the group epoch (type 3).
- The next heartbeat of any member, when the group epoch is ahead of the assignment
  epoch, computes the target assignment with the server-side assignor (`uniform`):
  a type 7 record for each member whose target changed, then the assignment epoch
  (type 6).
- Each member then reconciles at its own heartbeats (type 8, `MemberState`): first it
  revokes what it must give up (UNREVOKED_PARTITIONS, its epoch unchanged, the
  partitions pending revocation listed), then it moves to the new epoch with the
  partitions that are free (UNRELEASED_PARTITIONS while others still hold some of its
  target, STABLE once it has all).
- A member that stops heartbeating is fenced after the session timeout; one that does not
  revoke within its rebalance timeout is fenced too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from services.assignor import assign
from services.simulator.group import Context, MemberBase, SimGroup, Slot
from services.simulator.model import GroupSpec, kafka_uuid
from services.simulator.records import (
    consumer_group_current,
    consumer_group_epoch,
    consumer_group_member,
    consumer_group_target,
    consumer_group_target_epoch,
    consumer_group_topics,
    java_hash_set,
)

STABLE = 0  # MemberState
UNREVOKED_PARTITIONS = 1
UNRELEASED_PARTITIONS = 2
HEARTBEAT_INTERVAL_MS = 5_000  # group.consumer.heartbeat.interval.ms
SERVER_ASSIGNORS = ("uniform", "server-range")

Records = list[tuple[bytes, bytes | None]]


@dataclass(eq=False)
class ConsumerMember(MemberBase):
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = STABLE
    pending_revocation: list = field(default_factory=list)
    heartbeat_scheduled: bool = False


class ConsumerGroup(SimGroup):
    group_type = "consumer"

    def __init__(self, spec: GroupSpec, ctx: Context, rng: random.Random) -> None:
        super().__init__(spec, ctx, rng)
        self.assignor = spec.assignor if spec.assignor in SERVER_ASSIGNORS else "uniform"
        self.epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        self.target: dict[str, list] = {}
        self.topic_ids: dict[str, str] = {}
        self.subscribed: list[tuple[str, str, int]] | None = None
        # Partitions members got in the records being built (for the ground truth of
        # rebalance costs, after the target that moved them is recorded: `_flush`).
        self._gained: list[tuple[str, int]] = []

    # -- records ----------------------------------------------------------------------

    def _topic_id(self, topic: str) -> str:
        found = self.topic_ids.get(topic)
        if found is None:
            found = self.topic_ids[topic] = kafka_uuid(self.rng)
        return found

    def _member_record(self, member: ConsumerMember) -> tuple[bytes, bytes | None]:
        return consumer_group_member(
            self.name,
            member.member_id,
            {
                "instance_id": member.instance_id,
                "client_id": member.slot.client_id,
                "client_host": member.slot.client_host,
                "topics": member.topics,
                "rebalance_timeout_ms": self.spec.max_poll_interval_ms,
                "server_assignor": None,
            },
        )

    def _current_record(self, member: ConsumerMember) -> tuple[bytes, bytes | None]:
        return consumer_group_current(
            self.name,
            member.member_id,
            {
                "member_epoch": member.member_epoch,
                "previous_member_epoch": member.previous_member_epoch,
                "state": member.state,
                "assigned": member.assigned,
                "pending_revocation": member.pending_revocation,
            },
            self.topic_ids,
        )

    def _bump_epoch(self, records: Records) -> None:
        """The subscribed topics (type 4) if they changed, then the new group epoch."""
        # The coordinator's subscription metadata is a HashMap keyed by topic name.
        names = java_hash_set(sorted({t for m in self.members.values() for t in m.topics}))
        names = [t for t in names if t in self.topics]
        subscribed = [(self._topic_id(t), t, self.topics[t]) for t in names]
        if subscribed != self.subscribed:
            records.append(consumer_group_topics(self.name, subscribed))
            self.subscribed = subscribed
        self.epoch += 1
        records.append(consumer_group_epoch(self.name, self.epoch))

    def _compute_target(self, records: Records) -> None:
        members = list(self.members.values())
        counts = {name: n for _, name, n in self.subscribed or []}
        result = assign(
            self.assignor,
            counts,
            [
                {"id": m.member_id, "topics": m.topics, "owned": self.target.get(m.member_id, [])}
                for m in members
            ],
        )
        for m in members:
            new = sorted(result[m.member_id])
            if self.target.get(m.member_id) != new:
                self.target[m.member_id] = new
                records.append(consumer_group_target(self.name, m.member_id, new, self.topic_ids))
        self.assignment_epoch = self.epoch
        records.append(consumer_group_target_epoch(self.name, self.epoch))

    def _heartbeat_records(self, member: ConsumerMember, records: Records) -> int | None:
        """The target (if the epoch moved) and the member's reconciliation; returns the
        index of the type 6 record if a new target was computed."""
        index = None
        if self.epoch > self.assignment_epoch:
            self._compute_target(records)
            index = len(records) - 1
        self._reconcile(member, records)
        return index

    def _flush(
        self, records: Records, target_index: int | None, source: ConsumerMember | None
    ) -> None:
        if not records:
            return
        partition, last = self.append(records)
        if target_index is not None:
            members = list(self.members.values())
            self.history.stabilized(
                self.scheduler.now,
                self.assignment_epoch,
                self.assignor,
                None,
                [
                    {
                        "identity": m.identity,
                        "member_id": m.member_id,
                        "group_instance_id": m.instance_id,
                    }
                    for m in members
                ],
                {m.identity: self.target[m.member_id] for m in members},
                False,
                False,
                (partition, last - (len(records) - 1 - target_index)),
            )
            for m in members:
                if m is not source:
                    self._schedule_heartbeat(m)
        self.offsets.acquired(self._gained)
        self._gained = []

    # -- reconciliation ---------------------------------------------------------------

    def _schedule_heartbeat(self, member: ConsumerMember, delay: int | None = None) -> None:
        if member.heartbeat_scheduled:
            return
        member.heartbeat_scheduled = True
        if delay is None:
            delay = self.rng.randrange(50, HEARTBEAT_INTERVAL_MS)
        self.scheduler.after(delay, self._heartbeat, member)

    def _heartbeat(self, member: ConsumerMember) -> None:
        member.heartbeat_scheduled = False
        if not (member.in_group and member.alive) or self.deleted:
            return
        records: Records = []
        index = self._heartbeat_records(member, records)
        self._flush(records, index, member)

    def _settled(self, member: ConsumerMember) -> bool:
        return member.state == STABLE and member.member_epoch == self.assignment_epoch

    def _reconcile(self, member: ConsumerMember, records: Records) -> None:
        """`CurrentAssignmentBuilder.build`: one step toward the target."""
        if self._settled(member) or member.pending_revocation:
            return
        target = self.target.get(member.member_id, [])
        keep = set(target)
        revoke = [tp for tp in member.assigned if tp not in keep]
        if revoke:
            member.assigned = [tp for tp in member.assigned if tp in keep]
            member.pending_revocation = revoke
            member.state = UNREVOKED_PARTITIONS
            records.append(self._current_record(member))
            self.scheduler.after(self.rng.randrange(50, 500), self._revoked, member)
            self.scheduler.after(
                self.spec.max_poll_interval_ms,
                self._revocation_deadline,
                member,
                member.member_epoch,
            )
            return
        held = {
            tp
            for m in self.members.values()
            if m is not member
            for tp in (*m.assigned, *m.pending_revocation)
        }
        assigned = [tp for tp in target if tp not in held]
        state = UNRELEASED_PARTITIONS if len(assigned) < len(target) else STABLE
        epoch = self.assignment_epoch
        if (assigned, state, epoch) != (member.assigned, member.state, member.member_epoch):
            if epoch != member.member_epoch:
                member.previous_member_epoch = member.member_epoch
                member.member_epoch = epoch
            self._gained += [tp for tp in assigned if tp not in member.assigned]
            member.assigned = assigned
            member.state = state
            records.append(self._current_record(member))
        if state != STABLE:
            self._schedule_heartbeat(member, HEARTBEAT_INTERVAL_MS)

    def _revoked(self, member: ConsumerMember) -> None:
        """The consumer revoked (after committing) and says so in its next heartbeat."""
        if not (member.in_group and member.alive and member.pending_revocation):
            return
        if not member.polling:
            self.scheduler.after(HEARTBEAT_INTERVAL_MS, self._revoked, member)
            return
        self.commit_now(member)
        member.pending_revocation = []
        records: Records = []
        index = self._heartbeat_records(member, records)
        self._flush(records, index, member)
        self._wake_unreleased(member)

    def _wake_unreleased(self, source: ConsumerMember) -> None:
        for m in self.members.values():
            if m is not source and m.state == UNRELEASED_PARTITIONS:
                self._schedule_heartbeat(m)

    def _revocation_deadline(self, member: ConsumerMember, epoch: int) -> None:
        if member.in_group and member.pending_revocation and member.member_epoch == epoch:
            self.event("rebalance-timeout", member)
            member.kicked = member.alive
            self.remove(member)

    # -- membership -------------------------------------------------------------------

    def join(self, slot: Slot) -> None:
        member = ConsumerMember(kafka_uuid(self.rng), slot, list(slot.topics))
        slot.member = member
        self.members[member.member_id] = member
        self.event("join", member)
        self.start_commits(member)
        records: Records = [self._member_record(member)]
        self._bump_epoch(records)
        index = self._heartbeat_records(member, records)
        self._flush(records, index, member)

    def remove(self, member: MemberBase) -> None:
        """Fence a member: tombstones of its records, then a new group epoch."""
        del self.members[member.member_id]
        self.target.pop(member.member_id, None)
        member.in_group = False
        records: Records = [
            consumer_group_current(self.name, member.member_id, None, self.topic_ids),
            consumer_group_target(self.name, member.member_id, None, self.topic_ids),
            consumer_group_member(self.name, member.member_id, None),
        ]
        self._bump_epoch(records)
        self.append(records)
        for m in self.members.values():
            self._schedule_heartbeat(m)

    def subscribe(self, member: MemberBase, topics: list[str]) -> None:
        assert isinstance(member, ConsumerMember)
        member.topics = list(topics)
        records: Records = [self._member_record(member)]
        self._bump_epoch(records)
        index = self._heartbeat_records(member, records)
        self._flush(records, index, member)

    def partitions_changed(self) -> None:
        if not self.members:
            return
        records: Records = []
        self._bump_epoch(records)
        self.append(records)
        for m in self.members.values():
            self._schedule_heartbeat(m)

    def empty(self) -> bool:
        return not self.members

    def group_tombstones(self) -> Records:
        """`ConsumerGroup.createGroupTombstoneRecords` of an empty group: types 6, 4, 3."""
        return [
            consumer_group_target_epoch(self.name, None),
            consumer_group_topics(self.name, None),
            consumer_group_epoch(self.name, None),
        ]
