"""The sticky assignors' fast path for differing subscriptions, owned partitions as sent.

Kafka's ``GeneralAssignmentBuilder`` keeps every owned partition that is claimed by no one
else and that its owner still subscribes to, in the order the owner sent them; deals the
others one by one to the least loaded subscriber; and only then moves partitions around
if the group is out of balance. After a member leaves (or in any round where everybody
re-sends what they own) the group is nearly always balanced once its partitions are
dealt: ``isBalanced`` is true before any move is tried. This path reads the owned pairs
in bulk (``sticky.owned``), keeps them as they are, deals the free partitions exactly as
``GeneralBuilder`` does and checks that balance; the kept pairs are handed back as sent,
so the million owned partitions cost C-level passes only. A group still out of balance
goes on from there with ``GeneralBuilder``'s moves, on global ids.

It declines (returns None) whenever the general path might decide differently or raise:
identical subscriptions (``sticky.fast``'s case), rack-aware assignment, an owned entry
that is not a plain ``(str, int)`` pair of a subscribed topic within its partition count,
or a partition claimed twice (so that generations arbitrate). The caller then takes the
general path, which gives the same assignment; ``tests/assignor/test_sticky_general_fast.py``
compares them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, compress
from operator import add, itemgetter

from services.assignor.model import TopicPartition
from services.assignor.sticky.cooperative import hold_back, transferring
from services.assignor.sticky.general import GeneralBuilder
from services.assignor.sticky.input import StickyInput
from services.assignor.sticky.owned import (
    NotPlain,
    SentOwned,
    claims,
    free_partitions,
    read_owned,
    sent_lists,
)

_TOPIC = itemgetter(0)
_PARTITION = itemgetter(1)


class KeptPairsGeneralBuilder(GeneralBuilder):
    """``GeneralBuilder`` on owned pairs read by ``read_owned``.

    ``prep`` holds members without owned partitions, so the parent starts from empty
    assignments; ``kept[i]`` are the pairs member i keeps, ``dropped[i]`` the (topic index,
    partition) it owns of topics it no longer subscribes to, and ``current[i]`` the global
    ids dealt to it; ``sizes`` counts both kept and dealt.
    """

    def __init__(
        self,
        prep: StickyInput,
        kept: list[list[TopicPartition]],
        dropped: list[list[tuple[int, int]]],
    ) -> None:
        super().__init__(prep)
        self.kept = kept
        self.dropped = dropped
        self.kept_ids: list[list[int]] = []
        self.sizes[:] = map(len, kept)
        self.unassigned: list[int] = []
        self.initializing = False

    def deal(self, claimed: list[bytearray]) -> bool:
        """Deals the unclaimed partitions; False if the group then needs moves.

        ``GeneralAssignmentBuilder.assign`` deals ``sortedAllPartitions`` less the kept
        ones: topics by number of subscribers, then name, partitions ascending.
        """
        base = self.prep.base
        for t in self.sorted_topics:
            self.unassigned.extend(map(base[t].__add__, free_partitions(claimed[t])))
        for i in self.prep.order:
            self.sorted.add(i)
        self.initializing = self.sizes[self.sorted.last()] == 0
        self._maybe_assign(self.unassigned, use_racks=False)
        return self._balanced_once_dealt()

    def _balanced_once_dealt(self) -> bool:
        """``isBalanced`` on the members ``_balance`` lets take part in moves.

        Its second test asks of each member below its maximum whether a partition of one
        of its topics has an owner with two or more partitions more. Instead of asking
        partition by partition, this finds the largest owner of each topic once.
        """
        sizes, max_size = self.sizes, self.max_size
        potential, topics_of = self.potential, self.topics_of
        taking_part = [
            i
            for i, size in enumerate(sizes)
            if size < max_size[i] or any(len(potential[t]) >= 2 for t in topics_of[i])
        ]
        if not taking_part:
            return True
        counts = [sizes[i] for i in taking_part]
        if min(counts) >= max(counts) - 1:
            return True
        largest = self._largest_owner()
        most_of: dict[int, int] = {}  # by id of a shared topics_of list
        for i in taking_part:
            count, topics = sizes[i], topics_of[i]
            if count == max_size[i]:
                continue
            most = most_of.get(id(topics))
            if most is None:
                most = most_of[id(topics)] = max(map(largest.__getitem__, topics), default=0)
            if most > count + 1:
                return False
        return True

    def _largest_owner(self) -> list[int]:
        """The size of the largest assignment holding a partition of each topic."""
        names, topic_of = self.prep.topics, self.topic_of
        held: dict[int, set[str]] = {}
        for size, pairs, dealt in zip(self.sizes, self.kept, self.current, strict=True):
            topics = held.setdefault(size, set())
            topics.update(map(_TOPIC, pairs))
            topics.update(names[topic_of[g]] for g in dealt)
        largest = [0] * len(names)
        index = self.prep.topic_index
        for size in sorted(held):
            for name in held[size]:
                largest[index[name]] = size
        return largest

    def assignment(self, revoked: set[int]) -> list[list[TopicPartition]]:
        """Each member's kept pairs, then the pairs dealt to it, less ``revoked`` ones."""
        return [
            pairs + self._pairs([g for g in dealt if g not in revoked]) if dealt else pairs
            for pairs, dealt in zip(self.kept, self.current, strict=True)
        ]

    def moved_assignment(self, assignment: list[list[int]]) -> list[list[TopicPartition]]:
        """``assignment`` (after ``move``) as pairs, each member's kept pairs reused as
        long as they still lead its list."""
        result = []
        for pairs, ids, now in zip(self.kept, self.kept_ids, assignment, strict=True):
            if now[: len(ids)] == ids:
                result.append(pairs + self._pairs(now[len(ids) :]))
            else:
                result.append(self._pairs(now))
        return result

    def _pairs(self, ids: list[int]) -> list[TopicPartition]:
        topics, base, topic_of = self.prep.topics, self.prep.base, self.topic_of
        return [(topics[topic_of[g]], g - base[topic_of[g]]) for g in ids]

    def raw_owned(self, member: int) -> list[int]:
        """The global ids the member sent (once ``move`` has run)."""
        base = self.prep.base
        return self.kept_ids[member] + [base[t] + p for t, p in self.dropped[member]]

    def move(self) -> list[list[int]]:
        """``GeneralBuilder``'s moves from here on: every member's global ids."""
        base_of = dict(zip(self.prep.topics, self.prep.base, strict=True)).__getitem__
        owner = self.owner
        for i, (pairs, dealt) in enumerate(zip(self.kept, self.current, strict=True)):
            ids = list(map(add, map(base_of, map(_TOPIC, pairs)), map(_PARTITION, pairs)))
            for g in ids:
                owner[g] = i
            self.kept_ids.append(ids)
            self.current[i] = ids + dealt
        self.revocation_required = any(self.dropped)
        prev = self._previous_owners(self.raw_owned)
        self._rebalance(prev, self.unassigned, self.initializing)
        return self.current


def _kept(
    prep: StickyInput,
    lists: list[SentOwned],
    claimed: list[bytearray],
    dropped: list[list[tuple[int, int]]],
) -> list[list[TopicPartition]]:
    """Each member's owned pairs of topics it still subscribes to, in the order sent.

    Each member's others go to ``dropped`` as (topic index, partition). Raises
    ``NotPlain`` as ``read_owned`` does.
    """
    index = prep.topic_index
    subscribed: dict[tuple[str, ...], bytearray | None] = {}
    marks: bytearray | None
    kept: list[list[TopicPartition]] = []
    for member, (pairs, tix, partitions) in zip(
        prep.members, read_owned(prep, lists, claimed), strict=True
    ):
        topics = tuple(member.topics)
        if topics not in subscribed:
            marks = bytearray(len(prep.topics))
            for topic in topics:
                if topic in index:
                    marks[index[topic]] = 1
            subscribed[topics] = marks if 0 in marks else None  # None: every topic
        marks = subscribed[topics]
        if marks is None or all(map(marks.__getitem__, set(tix))):
            kept.append(pairs)
            dropped.append([])
            continue
        keep = list(map(marks.__getitem__, tix))
        kept.append(list(compress(pairs, keep)))
        dropped.append([(t, p) for t, p, k in zip(tix, partitions, keep, strict=True) if not k])
    return kept


def assign_kept_general(
    prep: StickyInput, sent: Sequence[object], cooperative: bool
) -> list[list[TopicPartition]] | None:
    """Each member's partitions (members in input order), or None to take the general path.

    ``prep`` was built from members without their owned partitions; ``sent`` holds those,
    unchecked (``model.owned_as_sent``). The result is what ``StickyAssignor`` (or, with
    ``cooperative``, ``CooperativeStickyAssignor``) returns for the same input.
    """
    if prep.all_equal or prep.rack_info.enabled or not any(sent):
        return None
    claimed = [bytearray(count) for count in prep.counts]
    dropped: list[list[tuple[int, int]]] = []
    try:
        kept = _kept(prep, sent_lists(sent), claimed, dropped)
    except NotPlain:
        return None
    gone = list(chain.from_iterable(dropped))
    if sum(map(len, kept)) + len(gone) != claims(claimed):
        return None  # a partition claimed twice: the general path arbitrates
    for t, p in gone:
        claimed[t][p] = 0
    builder = KeptPairsGeneralBuilder(prep, kept, dropped)
    if builder.deal(claimed):
        # Only partitions whose owner no longer subscribes to their topic change owner:
        # CooperativeStickyAssignor holds them back until that owner has revoked them.
        revoked = {prep.base[t] + p for t, p in gone} if cooperative else set()
        return builder.assignment(revoked)
    assignment = builder.move()
    if cooperative:
        hold_back(assignment, transferring(builder.raw_owned, assignment))
    return builder.moved_assignment(assignment)
