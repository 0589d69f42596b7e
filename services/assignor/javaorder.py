"""Java's orderings, reproduced so that our tie-breaks are Kafka's.

Kafka sorts member ids with ``String.compareTo`` (UTF-16 code units, not code points) and
iterates ``HashMap``/``HashSet`` in bucket order. Where an assignor's result depends on that
iteration order we replay it: a ``java.util.HashMap`` built with the default constructor
iterates its keys by bucket index ``(h ^ (h >>> 16)) & (capacity - 1)`` and, within a bucket,
in insertion order (resizes keep that relative order). Tree bins (more than eight keys in
one bucket) are not modelled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

_INT_MASK = 0xFFFFFFFF


def java_str_key(value: str) -> bytes:
    """A sort key that orders strings like Java's ``String.compareTo``."""
    return value.encode("utf-16-be", "surrogatepass")


def string_hash(value: str) -> int:
    """Java's ``String.hashCode`` as an unsigned 32-bit value."""
    h = 0
    data = value.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _INT_MASK
    return h


def topic_partition_hash(topic_hash: int, partition: int) -> int:
    """``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``."""
    return (31 * (31 + partition) + topic_hash) & _INT_MASK


def spread(h: int) -> int:
    """``HashMap.hash``: the high half folded into the low half."""
    return (h ^ (h >> 16)) & _INT_MASK


def default_capacity(max_size: int) -> int:
    """Table size of a default-constructed HashMap that has held ``max_size`` keys."""
    capacity = 16
    while max_size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def copy_capacity(size: int) -> int:
    """Table size of a HashMap or HashSet copied from a collection of ``size`` elements
    (``new HashSet<>(c)``: ``tableSizeFor(max((int) (size / .75f) + 1, 16))``)."""
    wanted = max(size * 4 // 3 + 1, 16)
    return 1 << (wanted - 1).bit_length()


def bucket_order(hashes: Sequence[int], capacity: int) -> list[int]:
    """Indices of elements, inserted in this order with these 32-bit ``hashCode``s, in the
    order a HashMap or HashSet of table size ``capacity`` iterates them: by bucket, and
    within a bucket by insertion (a resize keeps that relative order)."""
    mask = capacity - 1
    return sorted(range(len(hashes)), key=lambda i: (spread(hashes[i]) & mask, i))


def hashmap_order(keys: Sequence[str]) -> list[int]:
    """Indices of ``keys`` in the order a default HashMap filled in this order iterates them."""
    return bucket_order([string_hash(k) for k in keys], default_capacity(len(keys)))


def int_set_order(values: Sequence[int]) -> list[int]:
    """``values`` (distinct, non-negative, below 2**31) as a default ``HashSet<Integer>``
    filled in this order iterates them (``Integer.hashCode`` is the value)."""
    return [values[i] for i in bucket_order(values, default_capacity(len(values)))]


class JavaHashSetPicker:
    """The first element a ``java.util.HashSet`` iterator returns, for small sets of ints.

    ``hash_of`` gives each element's 32-bit ``hashCode``. The table never shrinks, so its
    capacity follows the largest size the set has reached.
    """

    __slots__ = ("_hash_of", "_max_size", "_members", "_seq")

    def __init__(self, hash_of: Callable[[int], int]) -> None:
        self._hash_of = hash_of
        self._members: dict[int, int] = {}
        self._seq = 0
        self._max_size = 0

    def add(self, element: int) -> None:
        if element not in self._members:
            self._seq += 1
            self._members[element] = self._seq
            self._max_size = max(self._max_size, len(self._members))

    def discard(self, element: int) -> None:
        self._members.pop(element, None)

    def __len__(self) -> int:
        return len(self._members)

    def first(self) -> int:
        mask = default_capacity(self._max_size) - 1
        hash_of = self._hash_of
        members = self._members
        return min(members, key=lambda e: (spread(hash_of(e)) & mask, members[e]))
