"""Record type -> handler, as Kafka's `GroupCoordinatorShard.replay` dispatches each
record to `GroupMetadataManager.replay` or `OffsetMetadataManager.replay`.

Where Kafka throws on a type it does not know, the tracker counts it
(`GenerationTracker.unknown_types`) and goes on: share and streams group records
(types 9-15, 17-23) carry no consumer group generation, and a newer broker may write
types this version has never seen; the job logs the count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from services.tracker import classic, consumer
from services.tracker.model import Position

if TYPE_CHECKING:
    from services.codec.types import OffsetCommitKey
    from services.tracker.tracker import GenerationTracker

# (tracker, record key, record value or None for a tombstone, position). Each handler
# types its key and value with the record's TypedDicts (services.codec.types); the codec
# hands them over as its generic dicts.
Handler = Callable[["GenerationTracker", Any, Any, Position], None]


def offset_commit(
    tracker: GenerationTracker, key: OffsetCommitKey, value: object, position: Position
) -> None:
    """Types 0 and 1: the commit's time is evidence of a rebalance's causes and cost."""
    if value is not None:
        tracker.commit(key["group"], key["topic"], key["partition"], position.time, position.offset)


HANDLERS: Mapping[str, Handler] = {
    "offset_commit": offset_commit,  # 0, 1
    "group_metadata": classic.group_metadata,  # 2
    "consumer_group_metadata": consumer.group_metadata,  # 3
    "consumer_group_partition_metadata": consumer.partition_metadata,  # 4
    "consumer_group_member_metadata": consumer.member_metadata,  # 5
    "consumer_group_target_assignment_metadata": consumer.target_assignment_metadata,  # 6
    "consumer_group_target_assignment_member": consumer.target_assignment_member,  # 7
    "consumer_group_current_member_assignment": consumer.current_member_assignment,  # 8
    "consumer_group_regular_expression": consumer.regular_expression,  # 16
}


def replay(tracker: GenerationTracker, record: Mapping[str, Any], position: Position) -> None:
    """Hand `record` (codec output) to its type's handler, or count its type as unknown."""
    kind = record["record_type"]
    handler = HANDLERS.get(kind)
    if handler is None:
        tracker.unknown_types[kind] += 1
        return
    handler(tracker, record["key"], record["value"], position)
