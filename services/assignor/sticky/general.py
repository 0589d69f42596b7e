"""``AbstractStickyAssignor.GeneralAssignmentBuilder``: subscriptions differ.

Keeps every still-valid owned partition, hands the rest one by one to the least loaded
subscriber (members ordered by assignment size, then member id, like Kafka's TreeSet),
then moves partitions from over-loaded to under-loaded subscribers until balanced,
preferring to hand a partition back to its previous owner from an older generation.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable
from itertools import compress

from services.assignor.javaorder import string_hash, topic_partition_hash
from services.assignor.sticky.input import DEFAULT_GENERATION, StickyInput
from services.assignor.sticky.moves import Reassignments
from services.assignor.sticky.structures import PartitionMovements, SortedMembers
from services.assignor.sticky.subscriptions import Subscriptions


class GeneralBuilder(Reassignments):
    """``GeneralAssignmentBuilder`` on global ids; its moves are ``sticky.moves``'."""

    def __init__(self, prep: StickyInput) -> None:
        self.prep = prep
        self.topic_of = prep.topic_of()
        subscriptions = Subscriptions(prep)
        self.topics_of = subscriptions.topics_of
        self.subscribed = subscriptions.subscribed
        self.potential = subscriptions.potential
        self.max_size = subscriptions.max_size
        self.current: list[list[int]] = [list(owned) for owned in prep.owned]
        self.fixed: set[int] = set()
        self.owner = [-1] * prep.total
        for i in prep.order:
            for g in self.current[i]:
                self.owner[g] = i
        potential = self.potential
        self.sorted_topics = sorted(range(len(prep.topics)), key=lambda t: (len(potential[t]), t))
        self.sorted_all: list[int] = []
        for t in self.sorted_topics:
            start = prep.base[t]
            self.sorted_all.extend(range(start, start + prep.counts[t]))
        self.sizes = [len(c) for c in self.current]
        self.sorted = SortedMembers(prep, self.sizes)
        self.revocation_required = False
        topic_hashes = [string_hash(t) for t in prep.topics]
        topic_of = self.topic_of
        self.movements = PartitionMovements(
            lambda g: topic_partition_hash(topic_hashes[topic_of[g]], g - prep.base[topic_of[g]])
        )

    def build(self) -> list[list[int]]:
        prev = self._previous_owners(self.prep.raw_owned)
        assigned = self._assign_owned()
        unassigned = list(compress(self.sorted_all, (not assigned[g] for g in self.sorted_all)))
        for i in self.prep.order:
            self.sorted.add(i)
        self._balance(prev, unassigned)
        return self.current

    def _previous_owners(self, raw_owned: Callable[[int], list[int]]) -> dict[int, tuple[int, int]]:
        """``prepopulateCurrentAssignments``: owners from older generations, newest wins.

        ``raw_owned(member)``: the member's reported partitions that still exist.
        """
        prep = self.prep
        prev: dict[int, tuple[int, int]] = {}
        for i in prep.order:
            generation = prep.members[i].generation
            if generation is not None and generation < prep.max_generation:
                gen = generation
            elif generation is None and prep.max_generation > DEFAULT_GENERATION:
                gen = DEFAULT_GENERATION
            else:
                continue
            for g in raw_owned(i):
                if g not in prev or gen > prev[g][1]:
                    prev[g] = (i, gen)
        return prev

    def _assign_owned(self) -> bytearray:
        rack_info = self.prep.rack_info
        assigned = bytearray(self.prep.total)
        for i in self.prep.order:
            kept = []
            for g in self.current[i]:
                if not self.subscribed[self.topic_of[g]][i] or rack_info.mismatch(i, g):
                    self.revocation_required = True
                else:
                    kept.append(g)
                    assigned[g] = 1
            self.current[i] = kept
            self.sizes[i] = len(kept)
        return assigned

    def _maybe_assign(self, partitions: list[int], use_racks: bool) -> list[int]:
        """Hand each partition to the least loaded subscriber; returns those left over.

        ``maybeAssignPartition`` inlined: this loop runs once per unassigned partition.
        """
        mismatch = self.prep.rack_info.mismatch
        topic_of, subscribed, potential = self.topic_of, self.subscribed, self.potential
        keys, n, by_rank = self.sorted.keys, self.sorted.n, self.sorted.by_rank
        sizes, current, owner = self.sizes, self.current, self.owner
        left = []
        for g in partitions:
            t = topic_of[g]
            if not potential[t]:
                left.append(g)
                continue
            subs = subscribed[t]
            for index, key in enumerate(keys):
                member = by_rank[key % n]
                if subs[member] and not (use_racks and mismatch(member, g)):
                    del keys[index]
                    insort(keys, key + n, index)
                    sizes[member] += 1
                    current[member].append(g)
                    owner[g] = member
                    break
            else:
                left.append(g)
        return left

    def _balance(self, prev: dict[int, tuple[int, int]], unassigned: list[int]) -> None:
        initializing = self.sizes[self.sorted.last()] == 0
        to_assign = unassigned
        if self.prep.rack_info.enabled:
            to_assign = self._maybe_assign(to_assign, use_racks=True)
        self._maybe_assign(to_assign, use_racks=False)
        self._rebalance(prev, unassigned, initializing)

    def _rebalance(
        self, prev: dict[int, tuple[int, int]], unassigned: list[int], initializing: bool
    ) -> None:
        """``balance`` once the unassigned partitions are dealt: moves, kept if they help."""
        fixed_topics = {t for t, subs in enumerate(self.potential) if len(subs) < 2}
        if fixed_topics:
            topic_of = self.topic_of
            self.sorted_all = [g for g in self.sorted_all if topic_of[g] not in fixed_topics]
            unassigned = [g for g in unassigned if topic_of[g] not in fixed_topics]
        # Kafka takes the fixed members out of currentAssignment for the moves; here they
        # keep their lists, which no move touches, and are left out of the balance scores.
        fixed = self.fixed = set()
        for i in self.prep.order:
            if not self._can_participate(i):
                self.sorted.remove(i)
                fixed.add(i)
        before = [c if i in fixed else list(c) for i, c in enumerate(self.current)]
        owners_before = list(self.owner)
        if not self.revocation_required:
            self._perform_reassignments(unassigned, prev)
        performed = self._perform_reassignments(self.sorted_all, prev)
        if (
            not initializing
            and performed
            and self._balance_score(self.current, fixed) >= self._balance_score(before, fixed)
        ):
            self.current = before
            self.owner = owners_before

    def _can_participate(self, member: int) -> bool:
        size = len(self.current[member])
        if size < self.max_size[member]:
            return True
        topic_of, potential = self.topic_of, self.potential
        return any(len(potential[topic_of[g]]) >= 2 for g in self.current[member])

    @staticmethod
    def _balance_score(assignment: list[list[int]], fixed: set[int]) -> int:
        """Sum of |a - b| over all pairs of sizes of the assignments not ``fixed``."""
        sizes = sorted(len(c) for i, c in enumerate(assignment) if i not in fixed)
        n = len(sizes)
        return sum(s * (2 * k - n + 1) for k, s in enumerate(sizes))
