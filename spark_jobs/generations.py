"""Generations and rebalances from decoded group records, in log order.

Pure Python (codec dicts in, store dataclasses out), so it runs on the driver and is
tested without Spark. Semantics follow docs/architecture.md, "Generations" and "Churn":

* **Classic groups.** Each GroupMetadata record of a new generation id is one generation.
  A member's identity is its group instance id when set (static membership), else its
  member id. A record that repeats the generation id (a static member rejoined within its
  session timeout) only refreshes the tracker's view.
* **Cooperative episodes.** Under a cooperative protocol, the generation in which a
  surviving member's partition is left unassigned is the revocation round. The first
  later generation in which every partition the survivors owned before the revocation
  (of a topic still assigned) has an owner again completes the episode; usually the next
  one, but a member whose SyncGroup the next rebalance overtook never saw the revocation
  round, so it revokes in the following one, which is then a revocation round too. The
  episode's churn is measured from the generation before the revocation, is attached to
  the completing generation with `cooperative_episode=True`, and the revocation rounds
  carry none.
* **KIP-848 groups.** A generation is a group epoch. Its assignment is the target
  assignment (types 7 and 6), with topic ids named by the partition metadata (type 4),
  else by the tracker's cluster-wide `topic_names` (Kafka 4.x no longer writes type 4;
  the job fills that map from the cluster, `spark_jobs.topic_names`), else left as ids.
  A member subscribed by regex (`SubscribedTopicRegex`) is subscribed to the topics the
  coordinator resolved it to: its ConsumerGroupRegularExpression record (type 16).
  The generation is emitted when the target assignment metadata for the epoch arrives,
  at the position of the epoch's ConsumerGroupMetadata record.
* **Baseline.** The assignor core runs with each survivor's previous partitions as owned:
  `sticky` for eager groups, two rounds of `cooperative-sticky` for cooperative ones,
  `uniform` for KIP-848 groups, `server-range` for those whose members ask for the
  broker's `range` assignor (`group.remote.assignor`). Partition counts are not in
  classic records; they are inferred as the highest partition seen for a topic in either
  generation, plus one.
* **Replays.** A record at or before the last position seen for its group is skipped, so
  replaying a batch after a crash adds nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from services.assignor import assign
from services.assignor.churn import minimum_moves, moves
from services.assignor.model import Member as AssignorMember
from services.store.batch import Churn, Generation, GroupEvent, Member, Repair

Assignment = dict[str, list[tuple[str, int]]]  # identity -> [(topic, partition)]
# A KIP-848 group's server assignor -> its baseline; any other (or none): `uniform`.
KIP848_BASELINES = {"range": "server-range"}


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
    targets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
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


def _flatten(
    topic_partitions: Iterable[Mapping[str, Any]], topic_key: str = "topic"
) -> list[tuple[str, int]]:
    return [(tp[topic_key], p) for tp in topic_partitions for p in tp["partitions"]]


def _by_topic(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, p in partitions:
        out.setdefault(topic, []).append(p)
    return {t: sorted(ps) for t, ps in sorted(out.items())}


def _is_cooperative(protocol: str | None) -> bool:
    return protocol is not None and "cooperative" in protocol


def _owners(assignment: Assignment) -> dict[tuple[str, int], str]:
    return {tp: member for member, tps in assignment.items() for tp in tps}


def _revokes(before: Assignment, after: Assignment) -> bool:
    """True when a member still in the group lost a partition that nobody now owns."""
    now = _owners(after)
    return any(member in after and tp not in now for member, tps in before.items() for tp in tps)


def _still_revoking(start: Assignment, after: Assignment) -> bool:
    """True while a partition that a member still in the group owned when a cooperative
    episode began is owned by nobody, in a topic that is still assigned (a deleted or
    unsubscribed topic's partitions stay unowned for good)."""
    now = _owners(after)
    topics = {topic for topic, _ in now}
    return any(
        member in after and tp not in now and tp[0] in topics
        for member, tps in start.items()
        for tp in tps
    )


class GenerationTracker:
    """Turns group records into store `Generation`s with their churn."""

    def __init__(self, known: Mapping[str, Snapshot] | None = None) -> None:
        self.last: dict[str, Snapshot] = dict(known or {})
        self.kip848: dict[str, Kip848State] = {}
        self.generations: list[Generation] = []
        self.events: list[GroupEvent] = []
        self.repairs: list[Repair] = []  # of the drained generations' times
        # Topic id -> name for the whole cluster, given by the caller (the tracker does no
        # I/O): used where a KIP-848 group's own partition metadata does not name an id.
        self.topic_names: dict[str, str] = {}

    def unnamed_topic_ids(self, records: Iterable[Mapping[str, Any]] = ()) -> set[str]:
        """The topic ids that KIP-848 targets refer to, in `records` or in the state kept
        so far, that neither their group's partition metadata nor `topic_names` names."""
        targets = [
            (r["key"]["group_id"], r["value"]["topic_partitions"])
            for r in records
            if r["record_type"] == "consumer_group_target_assignment_member" and r["value"]
        ]
        targets += [(g, t) for g, state in self.kip848.items() for t in state.targets.values()]
        unnamed = set()
        for group, target in targets:
            own = self.kip848[group].topic_names if group in self.kip848 else {}
            unnamed |= {tp["topic_id"] for tp in target} - own.keys() - self.topic_names.keys()
        return unnamed

    def _topic_name(self, state: Kip848State, topic_id: str) -> str:
        return state.topic_names.get(topic_id) or self.topic_names.get(topic_id, topic_id)

    def drain(self) -> tuple[list[Generation], list[GroupEvent]]:
        out = self.generations, self.events
        self.generations, self.events = [], []
        return out

    def drain_repairs(self) -> list[Repair]:
        out, self.repairs = self.repairs, []
        return out

    def _seen(self, group: str, position: Position) -> bool:
        last = self.last.get(group)
        return last is not None and (
            last.position.partition == position.partition
            and position.offset <= last.position.offset
        )

    # -- dispatch --------------------------------------------------------------------------
    def add(self, record: Mapping[str, Any], position: Position) -> None:
        """Feed one decoded record (codec output), in log order."""
        kind = record["record_type"]
        if kind == "group_metadata":
            self._classic(record["key"]["group"], record["value"], position)
        elif kind.startswith("consumer_group_"):
            self._kip848(kind, record["key"], record["value"], position)

    def _deleted(self, group: str, position: Position, group_type: str) -> None:
        """A group tombstone: the group was deleted (or expired while empty)."""
        self.events.append(
            GroupEvent(
                group,
                position.time,
                position.partition,
                position.offset,
                type=group_type,
                deleted=True,
            )
        )
        self.last.pop(group, None)
        self.kip848.pop(group, None)

    # -- classic ----------------------------------------------------------------------------
    def _classic(self, group: str, value: Mapping[str, Any] | None, position: Position) -> None:
        if self._seen(group, position):
            return
        if value is None:
            self._deleted(group, position, "classic")
            return
        members, assignment, topics = [], {}, {}
        for m in value["members"]:
            ident = identity(m["member_id"], m["group_instance_id"])
            sub = m["subscription"] if isinstance(m["subscription"], dict) else {}
            asg = m["assignment"] if isinstance(m["assignment"], dict) else {}
            assigned = _flatten(asg.get("assigned_partitions") or [])
            assignment[ident] = assigned
            topics[ident] = tuple(sub.get("topics") or ())
            owned = sub.get("owned_partitions")
            members.append(
                Member(
                    member_id=m["member_id"],
                    client_id=m["client_id"],
                    client_host=m["client_host"],
                    group_instance_id=m["group_instance_id"],
                    session_timeout_ms=m["session_timeout"],
                    rebalance_timeout_ms=m["rebalance_timeout"],
                    subscribed_topics=topics[ident],
                    rack=sub.get("rack_id"),
                    owned_partitions=_by_topic(_flatten(owned)) if owned else None,
                    reported_generation=sub.get("generation_id"),
                    assignment=_by_topic(assigned),
                )
            )
        protocol = value["protocol"]
        snapshot = Snapshot(value["generation"], position, assignment, topics, protocol)
        previous = self.last.get(group)
        if previous is not None and previous.generation == value["generation"]:
            # A static member rejoining within its session timeout: the coordinator
            # rewrites the group with a new member id but the same generation
            # (KIP-345, ClassicGroup.replaceStaticMember). Not a rebalance.
            snapshot.revoking_from = previous.revoking_from
            self.last[group] = snapshot
            return
        churn = self._churn(group, snapshot, "classic")
        state_ms = value["current_state_timestamp"]
        repair = time_repair(
            state_ms, "current_state_timestamp", position.partition, position.offset
        )
        if repair is not None:
            self.repairs.append(repair)
        self.generations.append(
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
            )
        )

    def _churn(self, group: str, snapshot: Snapshot, group_type: str) -> Churn | None:
        previous = self.last.get(group)
        self.last[group] = snapshot
        if previous is None:
            return None
        if group_type == "classic" and _is_cooperative(snapshot.protocol):
            if previous.revoking_from is not None:
                if _still_revoking(previous.revoking_from.assignment, snapshot.assignment):
                    # A member missed the revocation round's assignment (the next
                    # rebalance overtook its SyncGroup), so it revokes in this one.
                    snapshot.revoking_from = previous.revoking_from
                    return None
                return measure(previous.revoking_from, snapshot, "cooperative-sticky", True)
            if _revokes(previous.assignment, snapshot.assignment):
                snapshot.revoking_from = previous
                return None
            return measure(previous, snapshot, "cooperative-sticky", False)
        if group_type == "consumer":
            baseline = KIP848_BASELINES.get(snapshot.protocol or "", "uniform")
        else:
            baseline = "sticky"
        return measure(previous, snapshot, baseline, False)

    # -- KIP-848 ----------------------------------------------------------------------------
    def _kip848(self, kind: str, key: Mapping[str, Any], value: Any, position: Position) -> None:
        group = key["group_id"]
        state = self.kip848.setdefault(group, Kip848State())
        if kind == "consumer_group_metadata":
            if value is None:
                self._deleted(group, position, "consumer")
                return
            state.epoch, state.epoch_position = value["epoch"], position
        elif kind == "consumer_group_partition_metadata" and value is not None:
            for topic in value["topics"]:
                state.topic_names[topic["topic_id"]] = topic["topic_name"]
                state.partition_counts[topic["topic_name"]] = topic["num_partitions"]
        elif kind == "consumer_group_member_metadata":
            if value is None:
                state.members.pop(key["member_id"], None)
            else:
                state.members[key["member_id"]] = {f: value[f] for f in MEMBER_FIELDS}
        elif kind == "consumer_group_target_assignment_member":
            if value is None:
                state.targets.pop(key["member_id"], None)
            else:
                state.targets[key["member_id"]] = value["topic_partitions"]
        elif kind == "consumer_group_regular_expression":
            if value is None:
                state.regexes.pop(key["regular_expression"], None)
            else:
                state.regexes[key["regular_expression"]] = list(value["topics"])
        elif kind == "consumer_group_target_assignment_metadata" and value is not None:
            self._kip848_generation(group, state, value["assignment_epoch"], position)

    def _kip848_generation(self, group: str, state: Kip848State, epoch: int, at: Position) -> None:
        position = state.epoch_position if state.epoch == epoch and state.epoch_position else at
        if self._seen(group, position):
            return
        members, assignment, topics = [], {}, {}
        for member_id, meta in sorted(state.members.items()):
            ident = identity(member_id, meta["instance_id"])
            target = state.targets.get(member_id, [])
            assigned = [
                (self._topic_name(state, tp["topic_id"]), p)
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
                    assignment=_by_topic(assigned),
                )
            )
        assignors = {
            a for m in state.members.values() if (a := m.get("server_assignor")) is not None
        }
        assignor = ",".join(sorted(assignors)) or "uniform"
        snapshot = Snapshot(epoch, position, assignment, topics, assignor)
        churn = self._churn(group, snapshot, "consumer")
        self.generations.append(
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
            )
        )


def partition_counts(*assignments: Assignment, topics: Iterable[str] = ()) -> dict[str, int]:
    """Highest partition seen per topic, plus one (classic records carry no counts)."""
    counts = dict.fromkeys(topics, 0)
    for assignment in assignments:
        for tps in assignment.values():
            for topic, p in tps:
                counts[topic] = max(counts.get(topic, 0), p + 1)
    return counts


def subscribed_counts(before: Snapshot, after: Snapshot) -> dict[str, int]:
    """Partition counts of the topics `after`'s members subscribe to."""
    topics = {t for ts in after.topics.values() for t in ts}
    counts = partition_counts(before.assignment, after.assignment, topics=topics)
    return {t: c for t, c in counts.items() if t in topics}


def baseline(
    before: Snapshot, after: Snapshot, assignor: str, counts: dict[str, int]
) -> Assignment:
    """What Kafka's assignor would have produced from `before` for `after`'s members."""
    topics = set(counts)
    # The assignor's own Member type: this input is already well-formed, so the
    # validation `assign` applies to mappings is skipped.
    members = [
        AssignorMember(
            id=ident,
            topics=tuple(after.topics[ident]),
            owned=tuple(tp for tp in before.assignment.get(ident, []) if tp[0] in topics),
            generation=before.generation if ident in before.assignment else None,
        )
        for ident in sorted(after.topics)
    ]
    result = assign(assignor, counts, members)
    if assignor == "cooperative-sticky":  # the follow-up round assigns what was revoked
        members = [
            replace(m, owned=tuple(result[m.id]), generation=after.generation) for m in members
        ]
        result = assign(assignor, counts, members)
    return result


def measure(before: Snapshot, after: Snapshot, assignor: str, episode: bool) -> Churn:
    """The churn of a rebalance: actual moves, the assignor's baseline and the minimum."""
    old, new = _owners(before.assignment), _owners(after.assignment)
    actual = moves(before.assignment, after.assignment)
    counts = subscribed_counts(before, after)
    try:
        base = moves(before.assignment, baseline(before, after, assignor, counts)).total
    except ValueError:
        base = None  # an input the assignor rejects (e.g. an empty group)
    member_list = [AssignorMember(id=i, topics=tuple(ts)) for i, ts in sorted(after.topics.items())]
    minimum = minimum_moves(before.assignment, member_list, counts).total if counts else 0
    return Churn(
        from_generation=before.generation,
        from_source_offset=before.position.offset,
        members_joined=len(after.assignment.keys() - before.assignment.keys()),
        members_left=len(before.assignment.keys() - after.assignment.keys()),
        moved=actual.total,
        revoked=sum(1 for tp in old if tp not in new),
        newly_assigned=sum(1 for tp in new if tp not in old),
        moves_from_survivors=actual.from_surviving,
        baseline_moves=base,
        baseline_assignor=assignor,
        minimum_moves=minimum,
        cooperative_episode=episode,
    )
