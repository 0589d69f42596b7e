"""The tracker's dispatcher and its counts: record types without a handler, and
rebalances whose baseline the assignor could not compute (no Spark)."""

from __future__ import annotations

from collections import Counter

from services.codec import decode_record, encode_key, encode_value
from services.tracker import GenerationTracker
from services.tracker.dispatch import HANDLERS
from tests.tracker.test_generations import (
    TOPIC_ID,
    classic,
    epoch,
    feed,
    kip848_records,
    member,
    member_meta,
    target,
    target_epoch,
    tp,
)


def group_record(kind: str, group: str) -> dict:
    """A share or streams group's metadata record, as the codec decodes it."""
    value = {"epoch": 1, "metadata_hash": 0}
    return decode_record(encode_key(kind, {"group_id": group}), encode_value(kind, 0, value))


def test_record_types_without_a_handler_are_counted_by_type() -> None:
    """Share and streams group records carry no consumer group generation: no handler
    takes them, and the tracker counts them by type instead of dropping them unseen."""
    records = [
        group_record("share_group_metadata", "s"),
        classic("g", 1, "range", [member("a", tp("t", 0, 1))]),
        group_record("streams_group_metadata", "w"),
        group_record("share_group_metadata", "s"),
        *kip848_records(named=True),
    ]
    tracker = GenerationTracker()
    feed(tracker, records)
    generations, _ = tracker.drain()
    assert [(g.group, g.generation) for g in generations] == [("g", 1), ("k", 1), ("k", 2)]
    assert tracker.unknown_types == Counter(
        {"share_group_metadata": 2, "streams_group_metadata": 1}
    )
    unknown, failures, _ = tracker.drain_counts()
    assert unknown == Counter({"share_group_metadata": 2, "streams_group_metadata": 1})
    assert not failures and not tracker.unknown_types


def test_every_consumer_group_record_type_has_its_own_handler() -> None:
    """Types 0-8 and 16, one handler each (offset commits time rebalance causes); none is
    counted as unknown."""
    assert sorted(HANDLERS) == sorted(
        [
            "offset_commit",
            "group_metadata",
            "consumer_group_metadata",
            "consumer_group_partition_metadata",
            "consumer_group_member_metadata",
            "consumer_group_target_assignment_metadata",
            "consumer_group_target_assignment_member",
            "consumer_group_current_member_assignment",
            "consumer_group_regular_expression",
        ]
    )
    assert len(set(HANDLERS.values())) == len(HANDLERS)


def test_a_baseline_the_assignor_rejects_is_counted_with_its_reason() -> None:
    """Targets that give partition 0 of "stock" to two members, which the coordinator
    never writes: the uniform assignor rejects such owned partitions. The rebalance is
    stored without a baseline and the failure is counted with its reason and an example;
    the actual moves still count."""
    records = [
        member_meta("m1"),
        member_meta("m3"),
        *epoch(1),
        target("m1", [0, 1, 2, 3]),
        target("m3", [0]),
        target_epoch(1),
        member_meta("m2"),
        *epoch(2),
        target("m1", [0, 1]),
        target("m2", [2, 3]),
        target("m3", []),
        target_epoch(2),
    ]
    tracker = GenerationTracker()
    tracker.topic_names[TOPIC_ID] = "stock"
    feed(tracker, records)
    (_, second), _ = tracker.drain()
    churn = second.rebalance
    assert churn is not None
    assert (churn.moved, churn.baseline_moves, churn.baseline_assignor) == (3, None, "uniform")
    assert tracker.baseline_failures == Counter({"uniform: AssignmentError": 1})
    _, failures, examples = tracker.drain_counts()
    assert failures == Counter({"uniform: AssignmentError": 1})
    assert examples["uniform: AssignmentError"].startswith("group 'k': ")
    assert not tracker.baseline_failures and not tracker.baseline_examples


def test_a_computed_baseline_counts_no_failure() -> None:
    tracker = GenerationTracker()
    tracker.topic_names[TOPIC_ID] = "stock"
    feed(tracker, kip848_records(named=False))
    (_, second), _ = tracker.drain()
    assert second.rebalance is not None and second.rebalance.baseline_moves == 2
    assert not tracker.baseline_failures and not tracker.unknown_types
