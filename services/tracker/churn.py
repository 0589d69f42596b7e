"""The churn of a rebalance: actual moves, the assignor's baseline and the minimum.

The baseline runs the assignor core with each survivor's previous partitions as owned:
`sticky` for eager groups, two rounds of `cooperative-sticky` for cooperative ones,
`uniform` for KIP-848 groups, `server-range` for those whose members ask for the broker's
`range` assignor (`group.remote.assignor`). Partition counts are not in classic records;
they are inferred as the highest partition seen for a topic in either generation, plus
one. The members' racks come from the records; the partitions' replica racks are cluster
metadata the caller hands in (`PartitionRacks`). With both, a client-side baseline assigns
by rack where Kafka's does (KIP-881: `AbstractPartitionAssignor.useRackAwareAssignment`
decides). A baseline the assignor cannot compute (it raises `AssignmentError`, as Kafka's
assignor would throw) is left out of the churn and its reason returned, to be counted;
any other exception is a defect and propagates.

Whether a rebalance is *disruptive* (it counts in storms, docs/architecture.md "Storms")
is decided here too: `forming_until` follows a group's formation, `disrupts` applies the
protocol's rule to what the churn measured.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from services.assignor import assign
from services.assignor.churn import minimum_moves, moves
from services.assignor.model import AssignmentError
from services.assignor.model import Member as AssignorMember
from services.store.batch import Churn
from services.tracker.model import Assignment, Snapshot

# When no member states its rebalance timeout: the default of max.poll.interval.ms,
# which the Java consumer sends as its rebalance timeout (classic and KIP-848 alike).
DEFAULT_REBALANCE_TIMEOUT_MS = 300_000

# topic -> each partition's replica racks (the racks of its replicas' brokers), in
# partition order: cluster metadata, handed in by the tracker's caller.
PartitionRacks = Mapping[str, Sequence[tuple[str, ...]]]

# A KIP-848 group's server assignor -> its baseline; any other (or none): `uniform`.
KIP848_BASELINES = {"range": "server-range"}


@dataclass(frozen=True)
class BaselineFailure:
    """Why a rebalance's baseline could not be computed: `reason` is bounded (assignor
    and error class, fit to count), `detail` is the assignor's message."""

    reason: str
    detail: str


@dataclass(frozen=True)
class Measured:
    """A rebalance's churn (None for a cooperative revocation round) and, when the
    baseline could not be computed, why."""

    churn: Churn | None
    failure: BaselineFailure | None = None


def owners(assignment: Assignment) -> dict[tuple[str, int], str]:
    return {tp: member for member, tps in assignment.items() for tp in tps}


def is_cooperative(protocol: str | None) -> bool:
    return protocol is not None and "cooperative" in protocol


def revokes(before: Assignment, after: Assignment) -> bool:
    """True when a member still in the group lost a partition that nobody now owns."""
    now = owners(after)
    return any(member in after and tp not in now for member, tps in before.items() for tp in tps)


def still_revoking(start: Assignment, after: Assignment) -> bool:
    """True while a partition that a member still in the group owned when a cooperative
    episode began is owned by nobody, in a topic that is still assigned (a deleted or
    unsubscribed topic's partitions stay unowned for good)."""
    now = owners(after)
    topics = {topic for topic, _ in now}
    return any(
        member in after and tp not in now and tp[0] in topics
        for member, tps in start.items()
        for tp in tps
    )


def rebalance(
    previous: Snapshot,
    snapshot: Snapshot,
    group_type: str,
    topic_ids: Mapping[str, str] | None = None,
    partition_racks: PartitionRacks | None = None,
) -> Measured:
    """The churn from `previous` to `snapshot`, the group's next generation.

    Under a cooperative protocol, a generation that leaves a survivor's partition
    unowned is a revocation round (`snapshot.revoking_from` is set, no churn); the
    episode's churn is measured from the generation before it, when every partition is
    owned again (docs/architecture.md, "Cooperative episodes"). `topic_ids` (name ->
    Kafka topic id) go to the `uniform` baseline, which orders topics by id;
    `partition_racks` to every baseline, with the members' racks."""
    if group_type == "classic" and is_cooperative(snapshot.protocol):
        if previous.revoking_from is not None:
            if still_revoking(previous.revoking_from.assignment, snapshot.assignment):
                # A member missed the revocation round's assignment (the next
                # rebalance overtook its SyncGroup), so it revokes in this one.
                snapshot.revoking_from = previous.revoking_from
                return Measured(None)
            return measure(
                previous.revoking_from, snapshot, "cooperative-sticky", True, None, partition_racks
            )
        if revokes(previous.assignment, snapshot.assignment):
            snapshot.revoking_from = previous
            return Measured(None)
        return measure(previous, snapshot, "cooperative-sticky", False, None, partition_racks)
    if group_type == "consumer":
        assignor = KIP848_BASELINES.get(snapshot.protocol or "", "uniform")
    else:
        assignor = "sticky"
    return measure(previous, snapshot, assignor, False, topic_ids, partition_racks)


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


def known_racks(partition_racks: PartitionRacks, counts: Mapping[str, int]) -> PartitionRacks:
    """The replica racks of the counted partitions, for the topics whose racks cover them.

    The cluster may have more partitions than the records show (added since): those are
    left out, as the consumer that assigned did not have them. A topic with fewer (a
    stale answer, or the topic deleted and created again smaller) gets no racks: its
    partitions count as partitions without racks, as Kafka counts a partition whose
    replicas' brokers state none."""
    return {
        t: partition_racks[t][:n]
        for t, n in counts.items()
        if t in partition_racks and len(partition_racks[t]) >= n
    }


def baseline(
    before: Snapshot,
    after: Snapshot,
    assignor: str,
    counts: dict[str, int],
    topic_ids: Mapping[str, str] | None = None,
    partition_racks: PartitionRacks | None = None,
) -> Assignment:
    """What Kafka's assignor would have produced from `before` for `after`'s members
    (with their racks, and the partitions' replica racks where known)."""
    topics = set(counts)
    racks = known_racks(partition_racks, counts) if partition_racks else None
    # The assignor's own Member type: this input is already well-formed, so the
    # validation `assign` applies to mappings is skipped.
    members = [
        AssignorMember(
            id=ident,
            topics=tuple(after.topics[ident]),
            owned=tuple(tp for tp in before.assignment.get(ident, []) if tp[0] in topics),
            generation=before.generation if ident in before.assignment else None,
            rack=after.racks.get(ident),
        )
        for ident in sorted(after.topics)
    ]
    result = assign(assignor, counts, members, racks, topic_ids)
    if assignor == "cooperative-sticky":  # the follow-up round assigns what was revoked
        members = [
            replace(m, owned=tuple(result[m.id]), generation=after.generation) for m in members
        ]
        result = assign(assignor, counts, members, racks)
    return result


def measure(
    before: Snapshot,
    after: Snapshot,
    assignor: str,
    episode: bool,
    topic_ids: Mapping[str, str] | None = None,
    partition_racks: PartitionRacks | None = None,
) -> Measured:
    """The churn of a rebalance: actual moves, the assignor's baseline and the minimum."""
    old, new = owners(before.assignment), owners(after.assignment)
    actual = moves(before.assignment, after.assignment)
    counts = subscribed_counts(before, after)
    failure = None
    try:
        expected = baseline(before, after, assignor, counts, topic_ids, partition_racks)
        base: int | None = moves(before.assignment, expected).total
    except AssignmentError as exc:  # an input the assignor rejects, as Kafka's would
        base = None
        failure = BaselineFailure(f"{assignor}: {type(exc).__name__}", str(exc))
    member_list = [AssignorMember(id=i, topics=tuple(ts)) for i, ts in sorted(after.topics.items())]
    minimum = minimum_moves(before.assignment, member_list, counts).total if counts else 0
    churn = Churn(
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
    return Measured(churn, failure)


def rebalance_timeout_ms(timeouts: Iterable[int | None]) -> int | None:
    """A generation's rebalance timeout: its members' longest (None when none states one)."""
    known = [t for t in timeouts if t is not None and t > 0]
    return max(known) if known else None


def forming_until(previous: Snapshot | None, snapshot: Snapshot) -> datetime | None:
    """`snapshot.forming_until`: while members join an empty group, the end of the
    rebalance timeout of the first generation that had members; None once the group
    has formed (a member left, or the timeout passed), for an empty generation, and
    for a group whose formation the tracker did not see (its first generation seen is
    not generation 1)."""
    if not snapshot.assignment:
        return None
    timeout = timedelta(milliseconds=snapshot.rebalance_timeout_ms or DEFAULT_REBALANCE_TIMEOUT_MS)
    if previous is None:
        return snapshot.position.time + timeout if snapshot.generation <= 1 else None
    if not previous.assignment:  # the first members of an empty group
        return snapshot.position.time + timeout
    until = previous.forming_until
    if until is None or snapshot.position.time > until:
        return None
    if previous.assignment.keys() - snapshot.assignment.keys():  # a member left
        return None
    return until


def is_eager(group_type: str, protocol: str | None) -> bool:
    """A classic group without a cooperative assignor: every rebalance revokes all."""
    return group_type == "classic" and not is_cooperative(protocol)


def disrupts(
    before: Assignment, after: Assignment, measured: Churn, group_type: str, protocol: str | None
) -> bool:
    """Whether a rebalance (after formation) took partitions from running members.

    Eager: every member that stays revokes all its partitions at JoinGroup, so any
    member that stayed and owned partitions lost them. Cooperative and KIP-848: only
    partitions moved away from a member that stayed were revoked from a running
    consumer; a leave or an epoch that moves nothing takes nothing from anyone."""
    if is_eager(group_type, protocol):
        return any(before[m] for m in before.keys() & after.keys())
    return measured.moves_from_survivors > 0
