"""Owned partitions as the members sent them, read in bulk for the sticky fast paths.

After a group's first assignment every member re-sends the (topic, partition) pairs it
owns. The fast paths (``sticky.fast``, ``sticky.general_fast``) read them a few thousand at
a time with C-level passes instead of checking and converting them one by one, and mark
every claim in one bytearray per topic. Whatever is not plain (an entry that is not a
``(str, int)`` pair of an existing partition of a subscribed topic) raises ``NotPlain``:
the caller then leaves the input to the general path, which checks it one by one and
raises the same errors as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain, compress
from operator import itemgetter
from typing import cast

from services.assignor.model import TopicPartition
from services.assignor.sticky.input import StickyInput

_TOPIC = itemgetter(0)
_PARTITION = itemgetter(1)
_FREE = bytes.maketrans(b"\x00\x01", b"\x01\x00")
_FEW_FREE = 8  # up to this many free partitions in a topic are found by search
_CHUNK = 4096  # owned pairs checked at a time

# One member's owned entries as sent: unchecked, (topic, partition) pairs if plain.
SentOwned = list[object] | tuple[object, ...]

# One member's owned pairs, with each pair's topic index and partition.
OwnedSlice = tuple[list[TopicPartition], list[int], list[int]]


class NotPlain(Exception):
    """The owned partitions need the general path's one-by-one checks."""


def sent_lists(sent: Sequence[object]) -> list[SentOwned]:
    """Each member's owned entries as sent (None for none); raises ``NotPlain`` for others."""
    lists: list[SentOwned] = []
    for values in sent:
        if values is None:
            values = []
        elif type(values) is not list and type(values) is not tuple:
            raise NotPlain
        lists.append(values)
    return lists


def _read_chunk(
    chunk: list[SentOwned], prep: StickyInput, claimed: list[bytearray]
) -> Iterator[OwnedSlice]:
    """Some members' owned pairs, checked and marked in ``claimed`` together.

    The members' pairs are checked a few thousand at a time, so that they are still in
    the CPU's cache from one pass to the next.
    """
    entries = list(chain.from_iterable(chunk))
    if not entries:
        for _ in chunk:
            yield [], [], []
        return
    kinds = set(map(type, entries))
    if kinds == {tuple}:
        values = cast("list[tuple[object, ...]]", entries)
    elif kinds <= {tuple, list}:
        values = list(map(tuple, cast("list[Sequence[object]]", entries)))
    else:
        raise NotPlain
    if set(map(len, values)) != {2}:
        raise NotPlain
    partitions = list(map(_PARTITION, values))
    topics = list(map(_TOPIC, values))
    if set(map(type, partitions)) != {int} or set(map(type, topics)) != {str}:
        raise NotPlain
    if min(partitions) < 0:
        raise NotPlain
    try:
        tix = list(map(prep.topic_index.__getitem__, topics))
        # A partition beyond its topic's count raises IndexError.
        for t, p in zip(tix, partitions, strict=True):
            claimed[t][p] = 1
    except (KeyError, IndexError):
        raise NotPlain from None
    pairs = cast("list[TopicPartition]", values)  # (str, int >= 0) pairs: checked above
    end = 0
    for member in chunk:
        start, end = end, end + len(member)
        yield pairs[start:end], tix[start:end], partitions[start:end]


def read_owned(
    prep: StickyInput, lists: list[SentOwned], claimed: list[bytearray]
) -> Iterator[OwnedSlice]:
    """Each member's owned pairs in input order, marked in ``claimed`` (one per topic).

    Raises ``NotPlain`` where an entry is not a plain pair of an existing partition of a
    subscribed topic. A partition claimed twice is marked once: compare ``claims`` with
    the number of pairs read to find out.
    """
    first = size = 0
    for last, values in enumerate(lists, start=1):
        size += len(values)
        if size >= _CHUNK or last == len(lists):
            yield from _read_chunk(lists[first:last], prep, claimed)
            first, size = last, 0


def claims(claimed: list[bytearray]) -> int:
    """How many partitions are marked."""
    return sum(marks.count(1) for marks in claimed)


def free_partitions(marks: bytearray) -> list[int]:
    """The unmarked partitions of one topic, in order."""
    if marks.count(0) > _FEW_FREE:
        return list(compress(range(len(marks)), marks.translate(_FREE)))
    free = []
    p = marks.find(0)
    while p >= 0:
        free.append(p)
        p = marks.find(0, p + 1)
    return free
