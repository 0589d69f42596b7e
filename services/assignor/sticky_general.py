"""``AbstractStickyAssignor.GeneralAssignmentBuilder``: subscriptions differ.

Keeps every still-valid owned partition, hands the rest one by one to the least loaded
subscriber (members ordered by assignment size, then member id, like Kafka's TreeSet),
then moves partitions from over-loaded to under-loaded subscribers until balanced,
preferring to hand a partition back to its previous owner from an older generation.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable
from itertools import compress, count, islice
from operator import gt

from services.assignor.javaorder import string_hash, topic_partition_hash
from services.assignor.sticky_input import DEFAULT_GENERATION, StickyInput
from services.assignor.sticky_structures import PartitionMovements, SortedMembers
from services.assignor.sticky_subscriptions import Subscriptions


class GeneralBuilder:
    def __init__(self, prep: StickyInput) -> None:
        self.prep = prep
        self.topic_of = prep.topic_of()
        subscriptions = Subscriptions(prep)
        self.topics_of = subscriptions.topics_of
        self.subscribed = subscriptions.subscribed
        self.potential = subscriptions.potential
        self.max_size = subscriptions.max_size
        self.current: list[list[int] | None] = [list(owned) for owned in prep.owned]
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
        fixed: dict[int, list[int]] = {}
        for i in self.prep.order:
            if not self._can_participate(i):
                self.sorted.remove(i)
                fixed[i] = self.current[i]
                self.current[i] = None
        before = [None if c is None else list(c) for c in self.current]
        owners_before = list(self.owner)
        if not self.revocation_required:
            self._perform_reassignments(unassigned, prev)
        performed = self._perform_reassignments(self.sorted_all, prev)
        if (
            not initializing
            and performed
            and self._balance_score(self.current) >= self._balance_score(before)
        ):
            self.current = before
            self.owner = owners_before
        for i, partitions in fixed.items():
            self.current[i] = partitions

    def _can_participate(self, member: int) -> bool:
        size = len(self.current[member])
        if size < self.max_size[member]:
            return True
        topic_of, potential = self.topic_of, self.potential
        return any(len(potential[topic_of[g]]) >= 2 for g in self.current[member])

    @staticmethod
    def _balance_score(assignment: list[list[int] | None]) -> int:
        """Sum of |a - b| over all pairs of members' assignment sizes."""
        sizes = sorted(len(c) for c in assignment if c is not None)
        n = len(sizes)
        return sum(s * (2 * k - n + 1) for k, s in enumerate(sizes))

    def _is_balanced(self) -> bool:
        """``isBalanced``: no member below its maximum could take a partition from an owner
        with two or more partitions more.

        Kafka asks partition by partition, member after member; the largest owner of
        each topic, found once per topic, gives the same answer.
        """
        sizes = self.sizes
        if sizes[self.sorted.first()] >= sizes[self.sorted.last()] - 1:
            return True
        prep, owner = self.prep, self.owner
        largest: dict[int, int] = {}
        for member in self.sorted:
            count = sizes[member]
            if count == self.max_size[member]:
                continue
            for t in self.topics_of[member]:
                most = largest.get(t)
                if most is None:
                    start = prep.base[t]
                    owners = owner[start : start + prep.counts[t]]
                    most = largest[t] = max(map(sizes.__getitem__, owners))
                if most > count + 1:
                    return False
        return True

    def _perform_reassignments(
        self, partitions: list[int], prev: dict[int, tuple[int, int]]
    ) -> bool:
        """``performReassignments``: passes over ``partitions`` until one moves nothing.

        Between two moves nothing changes, so ``isBalanced`` is asked again only after a
        move, and the partitions in between, which would not move, are skipped at once.
        """
        sizes, current, owner = self.sizes, self.current, self.owner
        performed = False
        modified = True
        while modified:
            modified = False
            position = 0
            while position < len(partitions) and not self._is_balanced():
                position = self._next_to_move(partitions, position, prev)
                if position == len(partitions):
                    break
                g = partitions[position]
                position += 1
                previous = prev.get(g)
                # Kafka would throw a NullPointerException for a previous owner whose
                # assignment is fixed; we skip that hint instead.
                if (
                    previous is not None
                    and current[previous[0]] is not None
                    and sizes[owner[g]] > sizes[previous[0]] + 1
                ):
                    self._reassign(g, previous[0])
                else:
                    self._reassign(g, self._least_loaded_subscriber(self.topic_of[g]))
                performed = modified = True
        return performed

    def _next_to_move(
        self, partitions: list[int], start: int, prev: dict[int, tuple[int, int]]
    ) -> int:
        """Where in ``partitions``, from ``start`` on, the next move happens (or the end).

        A partition moves back to its previous owner (older generation, not fixed) if
        that one holds two or more fewer partitions than its owner; otherwise to the least
        loaded subscriber, if any subscriber holds two or more fewer. (Kafka first looks
        for a lighter subscriber on the partition's racks, but either way it hands the
        partition to the least loaded subscriber.)
        """
        sizes, owner, topic_of, current = self.sizes, self.owner, self.topic_of, self.current
        limit = self._move_limits()
        if not prev:
            rest = islice(partitions, start, None)
            owner_sizes = map(sizes.__getitem__, map(owner.__getitem__, rest))
            limits = map(
                limit.__getitem__, map(topic_of.__getitem__, islice(partitions, start, None))
            )
            return next(compress(count(start), map(gt, owner_sizes, limits)), len(partitions))
        for position in range(start, len(partitions)):
            g = partitions[position]
            size = sizes[owner[g]]
            previous = prev.get(g)
            if size > limit[topic_of[g]] or (
                previous is not None
                and current[previous[0]] is not None
                and size > sizes[previous[0]] + 1
            ):
                return position
        return len(partitions)

    def _move_limits(self) -> list[int]:
        """Per topic: an owner holding more than this has a subscriber two or more lighter."""
        sizes = self.sizes
        lightest: dict[int, int] = {}  # by id of a shared potential list
        limits = []
        for subscribers in self.potential:
            least = lightest.get(id(subscribers))
            if least is None:
                least = lightest[id(subscribers)] = min(map(sizes.__getitem__, subscribers))
            limits.append(least + 1)
        return limits

    def _least_loaded_subscriber(self, topic: int) -> int:
        subs = self.subscribed[topic]
        return next(m for m in self.sorted if subs[m])

    def _reassign(self, gid: int, new: int) -> None:
        t = self.topic_of[gid]
        gid = self.movements.actual_partition_to_move(gid, t, self.owner[gid], new)
        old = self.owner[gid]
        self.sorted.remove(old)
        self.sorted.remove(new)
        self.movements.move(gid, t, old, new)
        self.current[old].remove(gid)
        self.sizes[old] -= 1
        self.current[new].append(gid)
        self.sizes[new] += 1
        self.owner[gid] = new
        self.sorted.add(new)
        self.sorted.add(old)
