"""The batch logs the tracker's counts: unknown record types and baselines that could
not be computed, one line per type or reason per batch (no Spark session needed)."""

from __future__ import annotations

import logging

import pytest

from services.codec import decode_record, encode_key, encode_value
from spark_jobs.batch import BatchProcessor, BatchStats
from tests.tracker.test_generations import (
    TOPIC_ID,
    epoch,
    feed,
    member_meta,
    target,
    target_epoch,
)


def test_the_batch_logs_each_unknown_type_and_baseline_failure_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    share = decode_record(
        encode_key("share_group_metadata", {"group_id": "s"}),
        encode_value("share_group_metadata", 0, {"epoch": 1, "metadata_hash": 0}),
    )
    rejected = [  # partition 0 in two members' targets: the uniform baseline is rejected
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
    processor = BatchProcessor(store=None, source="test", offsets_partitions=50)  # no write
    processor.tracker.topic_names[TOPIC_ID] = "stock"
    feed(processor.tracker, [share, share, *rejected])
    stats = BatchStats(batch_id=7)
    with caplog.at_level(logging.INFO, logger="groupscope.stream"):
        processor._log_tracker_counts(7, stats)
        processor._log_tracker_counts(8, BatchStats(batch_id=8))  # nothing new: silent
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "batch 7: 2 group records of type share_group_metadata, which the tracker does not track",
        "batch 7: 1 rebalances stored without a baseline (uniform: AssignmentError), "
        "e.g. group 'k': stock-0 is owned by both 'm1' and 'm3'; a server-side target "
        "assignment gives each partition to one member",
    ]
    assert [r.levelname for r in caplog.records] == ["INFO", "WARNING"]
    assert stats.unknown_types == {"share_group_metadata": 2}
    assert stats.baseline_failures == {"uniform: AssignmentError": 1}
