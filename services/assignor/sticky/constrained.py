"""``AbstractStickyAssignor.ConstrainedAssignmentBuilder``: all subscriptions equal.

1. Each member keeps its owned partitions (sorted by partition, then topic) up to its
   quota: at most ``maxQuota`` for the first ``P % N`` members (in Kafka's HashMap order)
   that own that many, otherwise ``minQuota``.
2. With racks, unassigned partitions are dealt round-robin within racks.
3. The rest are dealt round-robin to members sorted by member id, under-``minQuota``
   members first, then members at ``minQuota`` that may take one more.
"""

from __future__ import annotations

from itertools import filterfalse
from typing import Generic, TypeVar

from services.assignor.model import AssignmentError, TopicPartition
from services.assignor.sticky.input import StickyInput

# What a member's list holds: global ids, dealt after the (topic, partition) pairs it
# keeps where ``sticky.fast`` keeps them as sent.
Entry = TypeVar("Entry", int, int | TopicPartition)


class IllegalStateError(AssignmentError):
    """Kafka's ``IllegalStateException``: the assignment algorithm contradicted itself."""


class ConstrainedBuilder(Generic[Entry]):
    def __init__(self, prep: StickyInput) -> None:
        self.prep = prep
        n = len(prep.members)
        total = prep.total
        self.min_quota = total // n
        self.max_quota = -(-total // n)
        self.expected_over = total % n
        self.current_over = 0
        self.assignment: list[list[Entry]] = [[] for _ in range(n)]
        self.revoked: dict[int, int] = {}  # maybeRevokedPartitions: partition -> owner
        self.under: list[int] = []
        self.exactly: list[int] = []
        self.transferring: dict[int, int] = {}

    def build(self) -> list[list[Entry]]:
        unassigned = self._assign_owned()
        rank = self.prep.rank.__getitem__
        self.under.sort(key=rank)
        self.exactly.sort(key=rank)
        rack_info = self.prep.rack_info
        unassigned = rack_info.sort_by_rack_consumers(unassigned)
        if rack_info.enabled:
            unassigned = self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled()
        return self.assignment

    def _assign_owned(self) -> list[int]:
        """``assignOwnedPartitions``: members keep owned partitions up to their quota.

        Returns the partitions left to deal, in global-id order.
        """
        prep = self.prep
        rack_info = prep.rack_info
        by_partition_then_topic = (
            prep.partition_major_keys().__getitem__ if any(prep.owned) else None
        )
        assigned: set[int] = set()
        for i in prep.order:
            owned = prep.owned[i]
            if rack_info.enabled:
                mismatched = [g for g in owned if rack_info.mismatch(i, g)]
                if mismatched:
                    self.revoked.update(dict.fromkeys(mismatched, i))
                    owned = [g for g in owned if not rack_info.mismatch(i, g)]
            owned = sorted(owned, key=by_partition_then_topic)
            if prep.multiple_owners:
                owned = [g for g in owned if g not in prep.multiple_owners]
            keep = self._quota(i, len(owned))
            kept = owned[:keep]
            self.revoked.update(dict.fromkeys(owned[keep:], i))
            self.assignment[i].extend(kept)
            assigned.update(kept)
        everything = range(prep.total)
        return list(filterfalse(assigned.__contains__, everything) if assigned else everything)

    def _quota(self, member: int, owned: int) -> int:
        """How many of its ``owned`` (sorted) partitions a member keeps (``assignOwnedPartitions``).

        Under ``minQuota`` it keeps all and waits for more; the first ``P % N`` members
        owning at least ``maxQuota`` keep that many; every other member keeps ``minQuota``
        and, while extra slots remain, may take one more later.
        """
        if owned < self.min_quota:
            self.under.append(member)
            return owned
        if owned >= self.max_quota and self.current_over < self.expected_over:
            self.current_over += 1
            if self.current_over == self.expected_over:
                self.exactly.clear()
            return self.max_quota
        if self.current_over < self.expected_over:
            self.exactly.append(member)
        return self.min_quota

    def _assign_new(self, gid: int, member: int) -> int:
        partitions = self.assignment[member]
        partitions.append(gid)
        if self.revoked.get(gid, member) != member or gid in self.prep.multiple_owners:
            self.transferring[gid] = member
        return len(partitions)

    def _assign_rack_aware_round_robin(self, unassigned: list[int]) -> list[int]:
        rack_info = self.prep.rack_info
        under, exactly = self.under, self.exactly
        left: list[int] = []
        next_index = 0
        for g in unassigned:
            member = None
            index = rack_info.next_rack_consumer(g, under, next_index)
            if index >= 0:
                member = under[index]
                count = len(self.assignment[member]) + 1
                if count >= self.min_quota:
                    del under[index]
                    if count < self.max_quota and self.current_over < self.expected_over:
                        exactly.append(member)
                else:
                    index += 1
                next_index = index % len(under) if under else 0
            elif exactly:
                first = rack_info.next_rack_consumer(g, exactly, 0)
                if first >= 0:
                    member = exactly[first]
                    if len(self.assignment[member]) + 1 == self.max_quota:
                        del exactly[first]
                        self.current_over += 1
                        if self.current_over == self.expected_over:
                            exactly.clear()
            if member is None:
                left.append(g)
            else:
                self._assign_new(g, member)
        return left

    def _assign_round_robin(self, unassigned: list[int]) -> None:
        under, exactly = self.under, self.exactly
        assignment = self.assignment
        min_q, max_q = self.min_quota, self.max_quota
        track = bool(self.revoked or self.prep.multiple_owners)
        position = 0
        for g in unassigned:
            if position < len(under):
                member = under[position]
                position += 1
            elif not under:
                if not exactly:
                    raise IllegalStateError("No more unfilled consumers to be assigned.")
                member = exactly.pop(0)
            else:
                member = under[0]
                position = 1
            if track:
                count = self._assign_new(g, member)
            else:
                partitions = assignment[member]
                partitions.append(g)
                count = len(partitions)
            if count == min_q:
                position -= 1
                del under[position]
                exactly.append(member)
            elif count == max_q:
                self.current_over += 1

    def _verify_unfilled(self) -> None:
        if not self.under:
            return
        if self.current_over != self.expected_over:
            raise IllegalStateError(
                "We haven't reached the expected number of members with more than the "
                "minQuota partitions, but no more partitions to be assigned"
            )
        for member in self.under:
            if len(self.assignment[member]) != self.min_quota:
                raise IllegalStateError(
                    f"Consumer: [{self.prep.members[member].id}] doesn't reach minQuota "
                    "partitions, and no more partitions to be assigned"
                )
