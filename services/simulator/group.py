"""What classic and KIP-848 groups share: consumers (slots), actions, auto-commit.

A *slot* is one consumer deployment (a pod): its client id, host and, with static
membership, its `group.instance.id`. Each start of the slot's process is a new member
(a new member id); static members keep their instance id across restarts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from services.codec import partition_for
from services.simulator.engine import Scheduler
from services.simulator.log import CoordinatorLog
from services.simulator.model import Action, GroupSpec
from services.simulator.offsets import CommitPlan, GroupOffsets
from services.simulator.truth import GroundTruth, GroupHistory

TopicPartition = tuple[str, int]


@dataclass
class Context:
    """What every group shares: the clock, the log, the ground truth."""

    scheduler: Scheduler
    log: CoordinatorLog
    truth: GroundTruth


@dataclass
class Slot:
    index: int
    client_id: str
    client_host: str
    instance_id: str | None
    topics: list[str]
    member: Any = None  # the running member, if any


@dataclass(eq=False)
class MemberBase:
    """One running consumer process."""

    member_id: str
    slot: Slot
    topics: list[str]
    assigned: list[TopicPartition] = field(default_factory=list)
    alive: bool = True  # the process runs and heartbeats
    polling: bool = True  # not stuck in processing
    in_group: bool = True
    kicked: bool = False  # removed for not polling; it rejoins when it polls again
    commit_plan: CommitPlan | None = None  # of `assigned` (the same list object)

    @property
    def instance_id(self) -> str | None:
        return self.slot.instance_id

    @property
    def identity(self) -> str:
        return self.slot.instance_id or self.member_id


class SimGroup:
    """A group driven by its spec's actions; subclasses implement the protocol."""

    group_type = ""

    def __init__(self, spec: GroupSpec, ctx: Context, rng: random.Random) -> None:
        self.spec = spec
        self.name = spec.name
        self.ctx = ctx
        self.rng = rng
        self.scheduler = ctx.scheduler
        self.truth = ctx.truth
        self.log_partition = partition_for(spec.name, ctx.log.partitions)
        self.topics: dict[str, int] = dict(spec.topics)
        self.offsets = GroupOffsets(
            spec.name,
            self.log_partition,
            ctx.log,
            ctx.truth,
            rng,
            self.scheduler.now,
            spec.messages_per_second,
            spec.metadata,
            spec.transactional,
            spec.aborted,
        )
        for topic, count in self.topics.items():
            self.offsets.add_topic(topic, count)
        self.history = GroupHistory(ctx.truth, spec.name, self.group_type, self.offsets)
        self.slots: dict[int, Slot] = {}
        self.deleted = False

    # -- setup ------------------------------------------------------------------------

    def slot(self, index: int, topics: list[str] | None = None) -> Slot:
        found = self.slots.get(index)
        if found is None:
            instance = f"{self.name}-instance-{index}" if self.spec.static else None
            found = self.slots[index] = Slot(
                index,
                f"consumer-{self.name}-1",
                f"/10.{index // 250 % 250}.{index % 250}.{1 + self.log_partition}",
                instance,
                list(topics or self.spec.subscription or self.topics),
            )
        elif topics is not None:
            found.topics = list(topics)
        return found

    def start(self) -> None:
        """Start the initial consumers (a little apart) and schedule the actions."""
        for i in range(self.spec.members):
            self.scheduler.after(self.rng.randrange(0, 500), self._start_slot, i, None)
        for action in self.spec.actions:
            self.scheduler.at(self.scheduler.start + action.at_ms, self._act, action)

    def _start_slot(self, index: int, topics: list[str] | None) -> None:
        slot = self.slot(index, topics)
        if self.deleted or (slot.member is not None and slot.member.in_group and slot.member.alive):
            return
        self.join(slot)

    def event(self, kind: str, member: MemberBase | None = None, **details: Any) -> None:
        if member is None:
            self.truth.event(self.scheduler.now, self.name, kind, None, **details)
        else:
            details = {
                "member_id": member.member_id,
                "client_host": member.slot.client_host,
                **details,
            }
            self.truth.event(self.scheduler.now, self.name, kind, member.identity, **details)

    def append(self, records: list[tuple[bytes, bytes | None]]) -> tuple[int, int]:
        """Append non-transactional records; returns (partition, offset) of the last."""
        keys = [k for k, _ in records]
        values = [v for _, v in records]
        first = self.ctx.log.append(self.log_partition, self.scheduler.now, keys, values)
        return self.log_partition, first + len(records) - 1

    # -- actions ----------------------------------------------------------------------

    def _act(self, action: Action) -> None:
        if self.deleted:
            return
        kind, args = action.kind, action.args
        if kind == "join":
            self._start_slot(action.slot, args.get("topics"))
            return
        if kind == "add-partitions":
            self.event("add-partitions", topic=args["topic"], count=args["count"])
            self.topics[args["topic"]] = args["count"]
            self.offsets.add_topic(args["topic"], args["count"])
            self.partitions_changed()
            return
        if kind == "delete":
            self.delete()
            return
        slot = self.slots.get(action.slot)
        member = None if slot is None else slot.member
        if slot is None or member is None or not member.in_group or not member.alive:
            return
        if kind == "leave":
            self.event("leave", member)
            self.leave(member)
        elif kind == "crash":
            self.event("crash", member)
            self.crash(member)
            if args.get("restart_after_ms") is not None:
                self.scheduler.after(args["restart_after_ms"], self._start_slot, slot.index, None)
        elif kind == "restart":
            self.event("restart", member, downtime_ms=args["downtime_ms"])
            self.restart(member)
            self.scheduler.after(args["downtime_ms"], self._start_slot, slot.index, None)
        elif kind == "stall":
            self.event("stall", member, duration_ms=args["duration_ms"])
            self.stall(member, args["duration_ms"])
        elif kind == "subscribe":
            slot.topics = list(args["topics"])
            for topic in slot.topics:
                self.topics.setdefault(topic, 1)
                self.offsets.add_topic(topic, self.topics[topic])
            self.event("subscribe", member, topics=slot.topics)
            self.subscribe(member, slot.topics)
        else:
            raise ValueError(f"unknown action {kind!r}")

    def restart(self, member: MemberBase) -> None:
        """A deploy stops the process: a dynamic member leaves, a static one just stops
        (KIP-345: static members send no LeaveGroup on close)."""
        if member.instance_id is None:
            self.leave(member)
        else:
            self.crash(member)

    # -- auto-commit ------------------------------------------------------------------

    def start_commits(self, member: MemberBase) -> None:
        interval = self.spec.commit_interval_ms
        self.scheduler.after(self.rng.randrange(interval), self._auto_commit, member)

    def _auto_commit(self, member: MemberBase) -> None:
        if not (member.in_group and member.alive) or self.deleted:
            return
        if member.polling and member.assigned:
            self.offsets.commit(self._plan(member), self.scheduler.now)
        self.scheduler.after(self.spec.commit_interval_ms, self._auto_commit, member)

    def commit_now(self, member: MemberBase) -> None:
        if member.alive and member.polling and member.assigned:
            self.offsets.commit(self._plan(member), self.scheduler.now)

    def _plan(self, member: MemberBase) -> CommitPlan:
        plan = member.commit_plan
        if plan is None or plan.partitions is not member.assigned:
            plan = member.commit_plan = self.offsets.plan(member.assigned)
        return plan

    # -- membership shared by both protocols -------------------------------------------

    def leave(self, member: MemberBase) -> None:
        """The consumer closes: it commits, then leaves the group."""
        self.commit_now(member)
        self.remove(member)

    def crash(self, member: MemberBase) -> None:
        """The process dies: no LeaveGroup; the session timeout removes the member."""
        member.alive = False
        self.scheduler.after(self.spec.session_timeout_ms, self._session_expired, member)

    def _session_expired(self, member: MemberBase) -> None:
        if member.in_group and not member.alive:
            self.event("session-timeout", member)
            self.remove(member)

    def stall(self, member: MemberBase, duration_ms: int) -> None:
        member.polling = False
        self.scheduler.after(duration_ms, self._stall_end, member)
        if duration_ms > self.spec.max_poll_interval_ms:
            self.scheduler.after(self.spec.max_poll_interval_ms, self._poll_timeout, member)

    def _poll_timeout(self, member: MemberBase) -> None:
        """KIP-62: the heartbeat thread gives up on a consumer stuck in processing. A
        dynamic member leaves the group; a static one just stops heartbeating."""
        if not (member.in_group and member.alive and not member.polling):
            return
        self.event("poll-timeout", member)
        member.kicked = True
        if member.instance_id is None:
            self.remove(member)
        else:
            self.crash(member)

    def _stall_end(self, member: MemberBase) -> None:
        member.polling = True
        if self.deleted:
            return
        if member.in_group and member.alive and not member.kicked:
            self.resumed(member)
        elif member.kicked and member.slot.member is member:
            member.alive = False  # this consumer starts over with a new member
            self._start_slot(member.slot.index, None)

    def delete(self) -> None:
        """Every consumer leaves, then DeleteGroups, which needs an empty group."""
        for member in list(self.members.values()):
            if member.alive:
                self.event("leave", member)
                self.leave(member)
        self.scheduler.after(1_000, self._delete_when_empty)

    def _delete_when_empty(self) -> None:
        """Tombstones of the committed offsets (`OffsetMetadataManager.deleteAllOffsets`),
        then of the group's own records."""
        if self.deleted:
            return
        if not self.empty():
            self.scheduler.after(5_000, self._delete_when_empty)
            return
        self.append([*self.offsets.tombstones(), *self.group_tombstones()])
        self.deleted = True
        self.event("delete-group")

    # -- protocol (subclasses) --------------------------------------------------------

    members: dict

    def join(self, slot: Slot) -> None:
        raise NotImplementedError

    def remove(self, member: MemberBase) -> None:
        """Take a member out of the group (LeaveGroup, expiry, fencing)."""
        raise NotImplementedError

    def resumed(self, member: MemberBase) -> None:
        """A member that was stuck in processing polls again."""

    def subscribe(self, member: MemberBase, topics: list[str]) -> None:
        raise NotImplementedError

    def partitions_changed(self) -> None:
        raise NotImplementedError

    def empty(self) -> bool:
        raise NotImplementedError

    def group_tombstones(self) -> list[tuple[bytes, bytes | None]]:
        raise NotImplementedError
