"""The sticky assignors' fast path for differing subscriptions, owned partitions as sent.

Kafka's ``GeneralAssignmentBuilder`` keeps every owned partition that is claimed by no one
else and that its owner still subscribes to, in the order the owner sent them; deals the
others one by one to the least loaded subscriber; and only then moves partitions around
if the group is out of balance. After a member leaves (or in any round where everybody
re-sends what they own) the group is nearly always balanced once its partitions are
dealt: the smallest and largest assignments among the members that can take part in
moves differ by at most one, and ``isBalanced`` is true before any move is tried. This
path reads the owned pairs in bulk (``sticky_owned``), keeps them as they are, deals the
free partitions exactly as ``GeneralBuilder`` does and checks that balance; the kept pairs
are handed back as sent, so the million owned partitions cost C-level passes only.

It declines (returns None) whenever the general path might decide differently or raise:
identical subscriptions (``sticky_fast``'s case), rack-aware assignment, an owned entry
that is not a plain ``(str, int)`` pair of a subscribed topic within its partition count,
a partition claimed twice (so that generations arbitrate), or a group still out of
balance once dealt (so that moves follow). The caller then takes the general path, which
gives the same assignment; ``tests/assignor/test_sticky_general_fast.py`` compares them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import itemgetter

from services.assignor.model import TopicPartition
from services.assignor.sticky_general import GeneralBuilder
from services.assignor.sticky_input import StickyInput
from services.assignor.sticky_owned import (
    NotPlain,
    claims,
    free_partitions,
    read_owned,
    sent_lists,
)

_TOPIC = itemgetter(0)


class KeptPairsGeneralBuilder(GeneralBuilder):
    """``GeneralBuilder`` up to its balance check, on owned pairs read by ``read_owned``.

    ``prep`` holds members without owned partitions, so the parent starts from empty
    assignments; ``kept[i]`` are the pairs member i keeps and ``current[i]`` the global ids
    dealt to it; ``sizes`` counts both.
    """

    def __init__(self, prep: StickyInput, kept: list[list[TopicPartition]]) -> None:
        super().__init__(prep)
        self.kept = kept
        self.sizes[:] = map(len, kept)

    def deal(self, claimed: list[bytearray]) -> bool:
        """Deals the unclaimed partitions; False if the group then needs moves.

        ``GeneralAssignmentBuilder.assign`` deals ``sortedAllPartitions`` less the kept
        ones: topics by number of subscribers, then name, partitions ascending.
        """
        base = self.prep.base
        unassigned: list[int] = []
        for t in self.sorted_topics:
            unassigned.extend(map(base[t].__add__, free_partitions(claimed[t])))
        for i in self.prep.order:
            self.sorted.add(i)
        if self._maybe_assign(unassigned, use_racks=False):
            return False
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
        topics, base, topic_of = self.prep.topics, self.prep.base, self.topic_of
        result = []
        for pairs, dealt in zip(self.kept, self.current, strict=True):
            if dealt:
                pairs = pairs + [
                    (topics[topic_of[g]], g - base[topic_of[g]]) for g in dealt if g not in revoked
                ]
            result.append(pairs)
        return result


def _kept(
    prep: StickyInput,
    lists: list[list | tuple],
    claimed: list[bytearray],
    dropped: list[tuple[int, int]],
) -> list[list[TopicPartition]]:
    """Each member's owned pairs of topics it still subscribes to, in the order sent.

    The others go to ``dropped`` as (topic index, partition). Raises ``NotPlain`` as
    ``read_owned`` does.
    """
    index = prep.topic_index
    subscribed: dict[tuple[str, ...], bytearray | None] = {}
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
            continue
        keep = list(map(marks.__getitem__, tix))
        kept.append(list(compress(pairs, keep)))
        dropped.extend((t, p) for t, p, k in zip(tix, partitions, keep, strict=True) if not k)
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
    dropped: list[tuple[int, int]] = []
    try:
        kept = _kept(prep, sent_lists(sent), claimed, dropped)
    except NotPlain:
        return None
    if sum(map(len, kept)) + len(dropped) != claims(claimed):
        return None  # a partition claimed twice: the general path arbitrates
    for t, p in dropped:
        claimed[t][p] = 0
    builder = KeptPairsGeneralBuilder(prep, kept)
    if not builder.deal(claimed):
        return None
    # CooperativeStickyAssignor holds back a partition dealt to a new owner while its old
    # owner (here: one that no longer subscribes to its topic) still has to revoke it.
    revoked = {prep.base[t] + p for t, p in dropped} if cooperative else set()
    return builder.assignment(revoked)
