"""Which `__consumer_offsets` partition holds a group: Kafka's `partitionFor(groupId)`."""

from __future__ import annotations

from array import array
from functools import lru_cache

_INT_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units,
    with int32 wrap-around. A character outside the BMP counts as its two surrogates."""
    units = array("H", text.encode("utf-16-le", "surrogatepass"))
    h = 0
    for unit in units:
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_abs(n: int) -> int:
    """`org.apache.kafka.common.utils.Utils.abs`: like Math.abs, but MIN_VALUE gives 0."""
    return 0 if n == _INT_MIN else abs(n)


@lru_cache(maxsize=65536)
def partition_for(group_id: str, partitions: int = 50) -> int:
    """`Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`
    (GroupCoordinatorService.partitionFor, GroupMetadataManager.partitionFor)."""
    if partitions <= 0:
        raise ValueError(f"partition count must be positive, got {partitions}")
    return kafka_abs(java_string_hash(group_id)) % partitions
