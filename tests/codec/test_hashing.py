"""`partition_for` against Java-verified vectors and an independent formula."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.codec import java_string_hash, partition_for

# Java's own hashCode and Kafka's partition (docs/codec.md, "Coordinator partition").
JAVA_VECTORS = [
    ("KafkaConsumerDemo", -2039247585, 35),
    ("test", 3556498, 48),
    ("g1", 3242, 42),
    ("", 0, 0),
    ("console-consumer-12345", 158455506, 6),
    ("消费组", 28099635, 35),
    ("group-😀", 508083057, 7),
    ("🚀rocket-group", -1992739927, 27),
    ("Gycxf_", -(2**31), 0),
    ("polygenelubricants", -(2**31), 0),
]


@pytest.mark.parametrize(("group", "java_hash", "partition"), JAVA_VECTORS)
def test_java_vectors(group: str, java_hash: int, partition: int) -> None:
    assert java_string_hash(group) == java_hash
    assert partition_for(group, 50) == partition


def test_min_value_is_zero_not_a_naive_abs() -> None:
    assert abs(-(2**31)) % 50 == 48  # what a naive port answers
    assert partition_for("polygenelubricants") == 0


def reference_hash(text: str) -> int:
    """s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, reduced to a signed int32."""
    units = []
    for ch in text:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    n = len(units)
    total = sum(u * pow(31, n - 1 - i, 2**32) for i, u in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


@given(st.text(max_size=40), st.integers(1, 200))
def test_matches_the_formula(group: str, partitions: int) -> None:
    h = reference_hash(group)
    assert java_string_hash(group) == h
    expected = 0 if h == -(2**31) else abs(h) % partitions
    assert partition_for(group, partitions) == expected


def test_rejects_a_non_positive_partition_count() -> None:
    with pytest.raises(ValueError, match="positive"):
        partition_for("g", 0)
