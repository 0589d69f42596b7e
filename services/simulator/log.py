"""The simulated `__consumer_offsets` log: a group's records go to its coordinator partition.

Every record lands in `partition_for(group, partitions)` at that partition's next offset,
as on a real broker. A transaction's end marker (`ControlRecordType` COMMIT or ABORT)
takes an offset too, so consumers see a gap there, exactly as they do on a real log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

Row = tuple[int, int, int, bytes, bytes | None]  # partition, offset, timestamp ms, key, value


class Sink(Protocol):
    """Where records go: a replay directory or a broker topic.

    A batch is records of one partition at consecutive offsets from `offset`, all with
    `timestamp` (ms), as the coordinator appends them.
    """

    def write(
        self,
        partition: int,
        offset: int,
        timestamp: int,
        keys: Sequence[bytes],
        values: Sequence[bytes | None],
    ) -> None:
        """Ordinary (non-transactional) records."""

    def write_transaction(
        self,
        partition: int,
        offset: int,
        timestamp: int,
        keys: Sequence[bytes],
        values: Sequence[bytes | None],
        commit: bool,
    ) -> None:
        """One transactional batch, then its COMMIT (commit=True) or ABORT marker."""

    def close(self) -> None: ...


class CoordinatorLog:
    """Offsets per partition of the offsets topic, handed to a sink in log order."""

    def __init__(self, sink: Sink, partitions: int = 50) -> None:
        self.sink = sink
        self.partitions = partitions
        self.next_offsets = [0] * partitions
        self.records = 0

    def append(
        self,
        partition: int,
        timestamp: int,
        keys: Sequence[bytes],
        values: Sequence[bytes | None],
    ) -> int:
        """Append non-transactional records to `partition`; returns the first offset."""
        start = self.next_offsets[partition]
        self.next_offsets[partition] = start + len(keys)
        self.records += len(keys)
        self.sink.write(partition, start, timestamp, keys, values)
        return start

    def append_transaction(
        self,
        partition: int,
        timestamp: int,
        keys: Sequence[bytes],
        values: Sequence[bytes | None],
        commit: bool,
    ) -> int:
        """A transactional batch and its end marker; returns the batch's first offset."""
        start = self.next_offsets[partition]
        self.next_offsets[partition] = start + len(keys) + 1  # + the control record
        self.records += len(keys)
        self.sink.write_transaction(partition, start, timestamp, keys, values, commit)
        return start
