"""``GeneralAssignmentBuilder``'s moves: ``isBalanced`` and ``performReassignments``.

Once the free partitions are dealt, Kafka walks all partitions over and over, moving one
to a lighter subscriber (or back to its previous owner from an older generation) while
the group is not balanced, asking ``isBalanced`` before each partition. Nothing changes
between two moves, so here ``isBalanced`` is asked again only after a move, the
partitions that would not move are skipped with one C-level scan, and ``isBalanced``
looks at the largest owner of each topic instead of at each partition for each member.
The moves and their order are Kafka's.
"""

from __future__ import annotations

from itertools import compress, count, islice
from operator import gt

from services.assignor.model import AssignmentError
from services.assignor.sticky.input import StickyInput
from services.assignor.sticky.structures import PartitionMovements, SortedMembers


class Reassignments:
    """The moves of ``GeneralBuilder``, on its state (global ids)."""

    prep: StickyInput
    topic_of: list[int]
    topics_of: list[list[int]]
    subscribed: list[bytearray]
    potential: list[list[int]]
    max_size: list[int]
    current: list[list[int]]
    fixed: set[int]  # members that cannot take part in moves (Kafka's fixedAssignments)
    owner: list[int]
    sizes: list[int]
    sorted: SortedMembers
    movements: PartitionMovements

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
            held = sizes[member]
            if held == self.max_size[member]:
                continue
            for t in self.topics_of[member]:
                most = largest.get(t)
                if most is None:
                    start = prep.base[t]
                    owners = owner[start : start + prep.counts[t]]
                    most = largest[t] = max(map(sizes.__getitem__, owners))
                if most > held + 1:
                    return False
        return True

    def _perform_reassignments(
        self, partitions: list[int], prev: dict[int, tuple[int, int]]
    ) -> bool:
        """``performReassignments``: passes over ``partitions`` until one moves nothing.

        Between two moves nothing changes, so ``isBalanced`` is asked again only after a
        move, and the partitions in between, which would not move, are skipped at once.
        """
        sizes, fixed, owner = self.sizes, self.fixed, self.owner
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
                if previous is not None and previous[0] in fixed:
                    raise self._fixed_previous_owner(g, previous[0])
                if previous is not None and sizes[owner[g]] > sizes[previous[0]] + 1:
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
        sizes, owner, topic_of, fixed = self.sizes, self.owner, self.topic_of, self.fixed
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
                previous is not None and (previous[0] in fixed or size > sizes[previous[0]] + 1)
            ):
                return position
        return len(partitions)

    def _fixed_previous_owner(self, gid: int, member: int) -> AssignmentError:
        """Kafka's ``performReassignments`` asks for the assignment of a partition's previous
        owner; one whose assignment is fixed (it cannot take part in balancing) has none
        there, and ``AbstractStickyAssignor`` fails with a NullPointerException."""
        topic, partition = self.prep.partition_tuples()[gid]
        return AssignmentError(
            f"Kafka's sticky assignor fails on this group (NullPointerException): "
            f"{topic}-{partition} was owned in an older generation by "
            f"{self.prep.members[member].id!r}, whose assignment cannot change"
        )

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
