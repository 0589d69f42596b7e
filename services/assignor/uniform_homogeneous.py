"""``UniformHomogeneousAssignmentBuilder``: every member subscribes to the same topics.

Members, in the coordinator's HashMap order, keep owned partitions up to their quota
(``P // N``, plus one for ``P % N`` of them: first those already holding that many, then
the last unfilled members), and the unfilled ones take the unassigned partitions in turn.
With member and replica racks, only partitions on a member's rack are kept, and unassigned
ones go to a member on their rack first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.assignor.common import consumer_rack, replica_racks, use_rack_aware_assignment
from services.assignor.model import Member, PartitionAssignorError
from services.assignor.server_common import current_assignment, missing_topic, sorted_topics


def assign_homogeneous(
    counts: Mapping[str, int],
    members: list[Member],
    racks: Mapping[str, Sequence[frozenset[str]]],
) -> dict:
    """``UniformHomogeneousAssignmentBuilder``, rack-aware version.

    Each member, in HashMap order, keeps owned partitions up to its quota (with racks in
    play, only those on its rack). The ``P % N`` extra slots go first to members already
    holding an extra partition, then to the last unfilled members.
    """
    topics = sorted_topics(set(members[0].topics))
    if not topics:
        return {}
    for topic in topics:
        if topic not in counts:
            raise missing_topic(topic)
    rack = {m.id: consumer_rack(m) for m in members}
    member_racks = {r for r in rack.values() if r}
    per_partition = (
        [replica_racks(racks, t, p) for t in topics for p in range(counts[t])]
        if member_racks and racks
        else []
    )
    use_racks = use_rack_aware_assignment(
        member_racks, set().union(*per_partition) if per_partition else set(), per_partition
    )

    def rack_match(member_id: str, topic: str, partition: int) -> bool:
        return rack[member_id] is not None and rack[member_id] in replica_racks(
            racks, topic, partition
        )

    old = current_assignment(members, counts)
    taken = {(t, p) for per_topic in old.values() for t, ps in per_topic.items() for p in ps}
    unassigned = [(t, p) for t in topics for p in range(counts[t]) if (t, p) not in taken]
    total = sum(counts[t] for t in topics)
    min_quota, extra = divmod(total, len(members))
    subscribed = set(topics)
    target: dict[str, dict[str, list[int]]] = {}
    unfilled: list[list] = []
    for m in members:
        quota, has_extra = min_quota, False
        if extra > 0:
            quota, has_extra = quota + 1, True
        mine: dict[str, list[int]] = {}
        for topic, partitions in old[m.id].items():
            if topic not in subscribed:
                continue
            if len(partitions) <= quota and not use_racks:
                quota -= len(partitions)
                mine[topic] = list(partitions)
                continue
            kept = []
            for p in partitions:
                if quota > 0 and (not use_racks or rack_match(m.id, topic, p)):
                    quota -= 1
                    kept.append(p)
                else:
                    unassigned.append((topic, p))
            if kept:
                mine[topic] = kept
        if quota > 0 and has_extra:
            quota, has_extra = quota - 1, False
        if quota == 0 and has_extra:
            extra -= 1
        if quota > 0 or (extra > 0 and not has_extra):
            unfilled.append([m.id, quota])
        target[m.id] = mine

    if use_racks:
        left = []
        for topic, p in unassigned:
            i = 0
            while i < len(unfilled):
                member_id, quota = unfilled[i]
                if quota == 0 and extra == 0:
                    del unfilled[i]
                    continue
                if not rack_match(member_id, topic, p):
                    i += 1
                    continue
                target[member_id].setdefault(topic, []).append(p)
                if quota > 0:
                    unfilled[i][1] -= 1
                else:
                    del unfilled[i]
                    extra -= 1
                break
            else:
                left.append((topic, p))
        unassigned = left

    for entry in reversed(unfilled):
        if extra > 0:
            extra -= 1
            entry[1] += 1
    index = 0
    for member_id, quota in unfilled:
        for topic, partition in unassigned[index : index + quota]:
            target[member_id].setdefault(topic, []).append(partition)
        index += quota
    if index < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return target
