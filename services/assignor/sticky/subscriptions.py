"""Who subscribes to what, as Kafka's ``GeneralAssignmentBuilder`` looks it up.

``GeneralAssignmentBuilder`` keeps, for each topic, the consumers subscribed to it
(``topic2AllPotentialConsumers``, filled in the order of the subscriptions ``HashMap``) and,
for each consumer, the most partitions it could hold. Built member by member, topic by
topic, that costs members x topics steps; groups nearly always share a few subscriptions,
so these are worked out once for each distinct subscription and once for each distinct
set of subscribers, and the lists and bytearrays are shared (never to be modified).
"""

from __future__ import annotations

from itertools import chain

from services.assignor.sticky.input import StickyInput


class Subscriptions:
    """``topics_of[member]``: its subscribed topics' indices, in its order;
    ``subscribed[topic][member]``: 1 for a subscriber; ``potential[topic]``: its
    subscribers in Kafka's HashMap order; ``max_size[member]``: partitions it could hold.
    """

    def __init__(self, prep: StickyInput) -> None:
        n = len(prep.members)
        t_count = len(prep.topics)
        index = prep.topic_index
        groups: dict[tuple[str, ...], list[int]] = {}
        for i in prep.order:
            groups.setdefault(tuple(prep.members[i].topics), []).append(i)
        self.topics_of: list[list[int]] = [[] for _ in range(n)]
        self.max_size = [0] * n
        by_topic: list[list[int]] = [[] for _ in range(t_count)]
        for k, (names, ids) in enumerate(groups.items()):
            topics = [index[t] for t in names if t in index]
            size = prep.total if len(topics) == t_count else sum(prep.counts[t] for t in topics)
            for i in ids:
                self.topics_of[i] = topics
                self.max_size[i] = size
            for t in topics:
                by_topic[t].append(k)
        members = list(groups.values())
        position = {i: p for p, i in enumerate(prep.order)}
        shared: dict[tuple[int, ...], tuple[bytearray, list[int]]] = {}
        self.subscribed: list[bytearray] = []
        self.potential: list[list[int]] = []
        for ks in map(tuple, by_topic):
            if ks not in shared:
                if len(ks) == 1:
                    subscribers = members[ks[0]]
                else:
                    merged = chain.from_iterable(members[k] for k in ks)
                    subscribers = sorted(merged, key=position.__getitem__)
                marks = bytearray(n)
                for i in subscribers:
                    marks[i] = 1
                shared[ks] = (marks, subscribers)
            marks, subscribers = shared[ks]
            self.subscribed.append(marks)
            self.potential.append(subscribers)
