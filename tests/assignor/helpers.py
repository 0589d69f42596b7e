"""Shared checks: Kafka's assignment invariants, written independently of the assignors."""

from __future__ import annotations

from collections import Counter


def member(mid: str, topics, owned=(), generation=None, rack=None, instance=None) -> dict:
    return {
        "id": mid,
        "topics": list(topics),
        "owned": list(owned),
        "generation": generation,
        "rack": rack,
        "group_instance_id": instance,
    }


def tps(text: str) -> list[tuple[str, int]]:
    """Kafka tests' "t1-0, t1-1" notation as (topic, partition) pairs."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        topic, _, partition = item.rpartition("-")
        out.append((topic, int(partition)))
    return out


def subscribed_partitions(counts: dict, members: list[dict]) -> set[tuple[str, int]]:
    topics = {t for m in members for t in m["topics"] if counts.get(t, 0) > 0}
    return {(t, p) for t in topics for p in range(counts[t])}


def assert_valid(assignment: dict, counts: dict, members: list[dict]) -> None:
    """Every subscribed partition is assigned exactly once, and only to a subscriber."""
    assert set(assignment) == {m["id"] for m in members}
    seen = Counter(tp for parts in assignment.values() for tp in parts)
    assert all(n == 1 for n in seen.values()), [tp for tp, n in seen.items() if n > 1]
    assert set(seen) == subscribed_partitions(counts, members)
    topics = {m["id"]: set(m["topics"]) for m in members}
    for mid, parts in assignment.items():
        assert all(t in topics[mid] for t, _ in parts), (mid, parts)


def assert_balanced(assignment: dict, members: list[dict]) -> None:
    """Kafka's balance: no partition could move to a subscriber with two or more fewer."""
    sizes = {mid: len(parts) for mid, parts in assignment.items()}
    topics = {m["id"]: set(m["topics"]) for m in members}
    for owner, parts in assignment.items():
        for topic, _ in parts:
            for other, subscribed in topics.items():
                assert not (topic in subscribed and sizes[other] + 1 < sizes[owner]), (
                    f"{topic} could move from {owner} ({sizes[owner]}) to {other} ({sizes[other]})"
                )


def owned_from(assignment: dict, generation: int) -> dict:
    return {
        mid: {"owned": list(parts), "generation": generation} for mid, parts in assignment.items()
    }
