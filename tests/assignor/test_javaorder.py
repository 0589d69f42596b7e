"""Java orderings, checked against values observed on a JVM (OpenJDK 17)."""

from __future__ import annotations

from services.assignor.javaorder import hashmap_order, java_str_key, string_hash


def test_string_hash_matches_java():
    # "KafkaConsumerDemo".hashCode() is negative in Java; its partition is 35 of 50
    # (docs/codec.md, "Coordinator partition").
    h = string_hash("KafkaConsumerDemo")
    signed = h - (1 << 32) if h >= 1 << 31 else h
    assert abs(signed) % 50 == 35
    assert string_hash("") == 0
    assert string_hash("a") == 97


def test_compare_to_uses_utf16_code_units():
    # U+FF61 sorts after a surrogate pair (U+1F600) in Java, before it by code point.
    assert java_str_key("\U0001f600") < java_str_key("\uff61")
    assert "\uff61" < "\U0001f600"


def test_hashmap_iteration_order_matches_a_jvm():
    observed = {
        "consumer1 consumer2 consumer3": "consumer3 consumer2 consumer1",
        "consumer-a consumer-b C0 C1 C2 member-7f3a member-0b9c": (
            "member-0b9c member-7f3a consumer-b consumer-a C0 C1 C2"
        ),
        " ".join(
            f"c{i:02d}" for i in range(20)
        ): "c00 c11 c10 c02 c13 c01 c12 c04 c15 c03 c14 c06 c17 c05 c16 c08 c19 c07 c18 c09",
    }
    for inserted, iterated in observed.items():
        keys = inserted.split()
        assert " ".join(keys[i] for i in hashmap_order(keys)) == iterated
