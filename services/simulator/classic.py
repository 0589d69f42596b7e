"""A classic group on the group coordinator: JoinGroup/SyncGroup rebalances.

Mirrors `ClassicGroup` and the classic half of `GroupMetadataManager` (Kafka 4.x; the
Scala `GroupCoordinator` before it behaves the same):

- States and their valid previous states are `ClassicGroupState`'s: PreparingRebalance
  from Stable, CompletingRebalance or Empty; CompletingRebalance from PreparingRebalance;
  Stable from CompletingRebalance; Empty from PreparingRebalance; Dead from any.
- A rebalance waits until every member has rejoined, at most the largest rebalance
  timeout (`max.poll.interval.ms`); members that did not rejoin are removed. An Empty
  group waits `group.initial.rebalance.delay.ms` (3 s) first (`InitialDelayedJoin`),
  extended while new members keep arriving in the first generation.
- Completing the join bumps the generation. With no members left the group becomes
  Empty and the coordinator stores it (a GroupMetadata record with no members).
  Otherwise the leader's SyncGroup stores the group with every member's assignment and
  the group turns Stable.
- A static member (`group.instance.id`, KIP-345) that rejoins while the group is Stable,
  with the same subscription, takes over its old assignment under a new member id; the
  coordinator stores the group again at the same generation, without a rebalance.
- A session timeout removes a member that stopped heartbeating; a LeaveGroup removes a
  member at once. Either triggers a rebalance.

The consumer's side follows `ConsumerCoordinator`: on rejoin it commits (auto-commit),
and under the eager protocol revokes everything; under cooperative-sticky (KIP-429) it
keeps its partitions, reports them as owned, and rejoins right after a rebalance that
revoked any of them, so each such rebalance takes two generations.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

from services.assignor import assign
from services.assignor.javaorder import hashmap_order
from services.simulator.group import Context, MemberBase, SimGroup, Slot
from services.simulator.model import GroupSpec, java_uuid
from services.simulator.records import (
    assignment_bytes,
    group_metadata,
    group_tombstone,
    sticky_user_data,
    subscription_bytes,
)

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"

VALID_PREVIOUS_STATES: dict[str, frozenset[str]] = {
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    EMPTY: frozenset({PREPARING_REBALANCE}),
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
}

INITIAL_REBALANCE_DELAY_MS = 3_000  # group.initial.rebalance.delay.ms
COOPERATIVE = "cooperative-sticky"


class IllegalStateTransition(RuntimeError):
    """A transition `ClassicGroupState` does not allow (a simulator bug)."""


@dataclass(eq=False)
class ClassicMember(MemberBase):
    generation: int = -1  # the generation of the consumer's last assignment
    joined: bool = False  # sent JoinGroup in the current rebalance
    subscription: bytes = b""
    remembered: list | None = None  # StickyAssignor.memberAssignment (eager sticky)


class ClassicGroup(SimGroup):
    group_type = "classic"

    def __init__(self, spec: GroupSpec, ctx: Context, rng: random.Random) -> None:
        super().__init__(spec, ctx, rng)
        self.state = EMPTY
        self.state_timestamp = self.scheduler.now
        self.generation = 0
        self.protocol = spec.assignor
        self.cooperative = spec.assignor == COOPERATIVE
        self.members: dict[str, ClassicMember] = {}
        self.leader: str | None = None
        self.round = 0  # invalidates the timers of an earlier phase
        self.initial_delay = False
        self.new_member_added = False
        self._order: tuple[tuple[str, ...], list[str]] = ((), [])

    # -- bookkeeping ------------------------------------------------------------------

    def ordered(self) -> list[ClassicMember]:
        """Members in the iteration order of the coordinator's member HashMap."""
        ids = tuple(self.members)
        if self._order[0] != ids:
            self._order = (ids, [ids[i] for i in hashmap_order(ids)])
        return [self.members[i] for i in self._order[1]]

    def transition(self, state: str) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalStateTransition(f"{self.name}: {self.state} -> {state}")
        self.event(
            "state", None, **{"from": self.state, "to": state, "generation": self.generation}
        )
        self.state = state
        self.state_timestamp = self.scheduler.now

    def _remove(self, member: ClassicMember) -> None:
        del self.members[member.member_id]
        member.in_group = False
        if self.leader == member.member_id:
            ordered = self.ordered()
            self.leader = ordered[0].member_id if ordered else None

    def _send_join(self, member: ClassicMember) -> None:
        """`ConsumerCoordinator.metadata()`: the subscription in the JoinGroup request."""
        owned = member.assigned if self.cooperative else []
        user_data = None
        if self.cooperative:
            user_data = struct.pack(">i", member.generation)
        elif self.protocol == "sticky" and member.remembered is not None:
            user_data = sticky_user_data(member.remembered, member.generation)
        member.subscription = subscription_bytes(member.topics, owned, member.generation, user_data)
        member.joined = True

    def _rejoin(self, member: ClassicMember) -> None:
        """`onJoinPrepare`: commit, revoke everything if eager, then JoinGroup."""
        self.commit_now(member)
        if not self.cooperative:
            member.assigned = []
        self._send_join(member)

    # -- the rebalance ----------------------------------------------------------------

    def _prepare_rebalance(self) -> None:
        was_empty = self.state == EMPTY
        self.transition(PREPARING_REBALANCE)
        self.round += 1
        for member in self.members.values():
            member.joined = False
        if was_empty:
            self.initial_delay = True
            remaining = max(self._rebalance_timeout() - INITIAL_REBALANCE_DELAY_MS, 0)
            self.scheduler.after(
                INITIAL_REBALANCE_DELAY_MS,
                self._initial_delay_expired,
                self.round,
                INITIAL_REBALANCE_DELAY_MS,
                remaining,
            )
            return
        self.initial_delay = False
        self.scheduler.after(self._rebalance_timeout(), self._join_deadline, self.round)
        heartbeat = self.spec.heartbeat_interval_ms
        for member in self.members.values():
            self.scheduler.after(
                self.rng.randrange(50, heartbeat), self._heard_rebalance, member, self.round
            )

    def _rebalance_timeout(self) -> int:
        return self.spec.max_poll_interval_ms

    def _heard_rebalance(self, member: ClassicMember, round_: int) -> None:
        """The member's heartbeat got REBALANCE_IN_PROGRESS: it rejoins if it can."""
        if round_ != self.round or self.state != PREPARING_REBALANCE:
            return
        if member.in_group and member.alive and member.polling and not member.joined:
            self._rejoin(member)
            self._maybe_complete()

    def _initial_delay_expired(self, round_: int, delay: int, remaining: int) -> None:
        if round_ != self.round or self.state != PREPARING_REBALANCE:
            return
        if self.new_member_added and remaining:
            self.new_member_added = False
            next_delay = min(INITIAL_REBALANCE_DELAY_MS, remaining)
            self.scheduler.after(
                next_delay,
                self._initial_delay_expired,
                round_,
                next_delay,
                max(remaining - delay, 0),
            )
            return
        self.initial_delay = False
        self._complete_join()

    def _join_deadline(self, round_: int) -> None:
        if round_ == self.round and self.state == PREPARING_REBALANCE:
            self._complete_join()

    def _maybe_complete(self) -> None:
        if self.state != PREPARING_REBALANCE or self.initial_delay:
            return
        if all(m.joined for m in self.members.values()):
            self._complete_join()

    def _complete_join(self) -> None:
        for member in list(self.members.values()):
            if not member.joined:
                self.event("rebalance-timeout", member)
                member.kicked = member.alive
                self._remove(member)
        self.generation += 1
        self.round += 1
        if not self.members:
            self.leader = None
            self.transition(EMPTY)
            position = self.append(
                [group_metadata(self.name, self.generation, None, None, self.state_timestamp, [])]
            )
            self.history.stabilized(
                self.scheduler.now, self.generation, None, None, [], {}, False, False, position
            )
            return
        if self.leader not in self.members:
            self.leader = self.ordered()[0].member_id
        self.transition(COMPLETING_REBALANCE)
        self.scheduler.after(self.rng.randrange(5, 50), self._leader_sync, self.round)

    def _assignor_input(self, member: ClassicMember) -> dict:
        if self.cooperative:
            owned, generation = member.assigned, member.generation
        elif self.protocol == "sticky":
            owned, generation = member.remembered or [], member.generation
        else:
            owned, generation = [], None
        return {
            "id": member.member_id,
            "topics": member.topics,
            "owned": owned,
            "generation": generation if generation is None or generation >= 0 else None,
            "group_instance_id": member.instance_id,
        }

    def _leader_sync(self, round_: int) -> None:
        """The leader's SyncGroup: store the group with the assignment; Stable."""
        if round_ != self.round or self.state != COMPLETING_REBALANCE:
            return
        ordered = self.ordered()
        result = assign(self.protocol, self.topics, [self._assignor_input(m) for m in ordered])
        position = self._store({m.member_id: result[m.member_id] for m in ordered})
        revoking = []
        for m in ordered:
            new = result[m.member_id]
            if self.cooperative and not set(m.assigned) <= set(new):
                revoking.append(m)
            m.assigned = list(new)
            m.remembered = list(new)
            m.generation = self.generation
        self.transition(STABLE)
        self.history.stabilized(
            self.scheduler.now,
            self.generation,
            self.protocol,
            self.leader,
            [
                {
                    "identity": m.identity,
                    "member_id": m.member_id,
                    "group_instance_id": m.instance_id,
                }
                for m in ordered
            ],
            {m.identity: result[m.member_id] for m in ordered},
            bool(revoking),
            self.cooperative,
            position,
        )
        for m in revoking:  # KIP-429: revoke, then rejoin at once
            self.scheduler.after(self.rng.randrange(5, 100), self._request_rejoin, m)

    def _request_rejoin(self, member: ClassicMember) -> None:
        """A known member sends JoinGroup on its own (revoked partitions, new
        subscription, metadata change)."""
        if not (member.in_group and member.alive and member.polling):
            return
        if self.state in (STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance()
        if not member.joined:
            self._rejoin(member)
        self._maybe_complete()

    # -- membership -------------------------------------------------------------------

    def join(self, slot: Slot) -> None:
        previous = slot.member
        if slot.instance_id is not None and previous is not None and previous.in_group:
            self._static_rejoin(slot, previous)
            return
        member = ClassicMember(self._new_member_id(slot), slot, list(slot.topics))
        slot.member = member
        self.event("join", member)
        self.members[member.member_id] = member
        if self.leader is None:
            self.leader = member.member_id
        self.start_commits(member)
        if self.state == PREPARING_REBALANCE and self.generation == 0:
            self.new_member_added = True
        if self.state != PREPARING_REBALANCE:
            self._prepare_rebalance()
        self._send_join(member)
        self._maybe_complete()

    def _new_member_id(self, slot: Slot) -> str:
        return f"{slot.instance_id or slot.client_id}-{java_uuid(self.rng)}"

    def _static_rejoin(self, slot: Slot, old: ClassicMember) -> None:
        """KIP-345: the same instance id under a new member id replaces the old member."""
        member = ClassicMember(self._new_member_id(slot), slot, list(slot.topics))
        slot.member = member
        was_leader = self.leader == old.member_id
        del self.members[old.member_id]
        old.in_group = False
        self.members[member.member_id] = member
        if was_leader:
            self.leader = member.member_id
        self.event("static-rejoin", member, old_member_id=old.member_id)
        self.start_commits(member)
        self._send_join(member)
        if self.state == STABLE and member.topics == old.topics:
            member.assigned = list(old.assigned)
            member.remembered = list(old.assigned)
            member.generation = self.generation
            self._store({m.member_id: m.assigned for m in self.members.values()})
            return
        if self.state != PREPARING_REBALANCE:
            self._prepare_rebalance()
            self._send_join(member)
        self._maybe_complete()

    def _store(self, assignments: dict[str, list]) -> tuple[int, int]:
        """`GroupCoordinatorRecordHelpers.newGroupMetadataRecord` for the current members."""
        spec = self.spec
        members = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.instance_id,
                "client_id": m.slot.client_id,
                "client_host": m.slot.client_host,
                "rebalance_timeout": spec.max_poll_interval_ms,
                "session_timeout": spec.session_timeout_ms,
                "subscription": m.subscription,
                "assignment": assignment_bytes(assignments[m.member_id]),
            }
            for m in self.ordered()
        ]
        record = group_metadata(
            self.name, self.generation, self.protocol, self.leader, self.state_timestamp, members
        )
        return self.append([record])

    def remove(self, member: MemberBase) -> None:
        assert isinstance(member, ClassicMember)
        self._remove(member)
        if self.state in (STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance()
        self._maybe_complete()

    def resumed(self, member: MemberBase) -> None:
        assert isinstance(member, ClassicMember)
        if self.state == PREPARING_REBALANCE and not member.joined:
            self._rejoin(member)
            self._maybe_complete()

    def subscribe(self, member: MemberBase, topics: list[str]) -> None:
        assert isinstance(member, ClassicMember)
        member.topics = list(topics)
        self._request_rejoin(member)

    def partitions_changed(self) -> None:
        """The leader sees the new partition count in its metadata and rejoins."""
        leader = self.members.get(self.leader) if self.leader else None
        if leader is not None:
            self.scheduler.after(self.rng.randrange(100, 1000), self._request_rejoin, leader)

    def empty(self) -> bool:
        return self.state == EMPTY

    def group_tombstones(self) -> list[tuple[bytes, bytes | None]]:
        self.transition(DEAD)
        return [group_tombstone(self.name)]
