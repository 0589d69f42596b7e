"""The simulated `__consumer_offsets` log: a group's records go to its coordinator partition.

Every record lands in `partition_for(group, partitions)` at that partition's next offset,
as on a real broker. A transaction's end marker (`ControlRecordType` COMMIT or ABORT)
takes an offset too, so consumers see a gap there, exactly as they do on a real log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol


class Batch(NamedTuple):
    """Records appended together: one partition, consecutive offsets from `offset`, one
    timestamp (ms)."""

    partition: int
    offset: int
    timestamp: int
    keys: Sequence[bytes]
    values: Sequence[bytes | None]


class Sink(Protocol):
    """Where records go: a replay directory or a broker topic."""

    def write(self, batch: Batch) -> None:
        """Ordinary (non-transactional) records."""

    def write_transaction(self, batch: Batch, commit: bool) -> None:
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
        self, partition: int, timestamp: int, keys: Sequence[bytes], values: Sequence[bytes | None]
    ) -> int:
        """Append non-transactional records to `partition`; returns the first offset."""
        start = self.next_offsets[partition]
        self.next_offsets[partition] = start + len(keys)
        self.records += len(keys)
        self.sink.write(Batch(partition, start, timestamp, keys, values))
        return start

    def append_transaction(self, batch: Batch, commit: bool) -> int:
        """A transactional batch (its `offset` is ignored) and its end marker; returns the
        batch's first offset."""
        start = self.next_offsets[batch.partition]
        self.next_offsets[batch.partition] = start + len(batch.keys) + 1  # + the marker
        self.records += len(batch.keys)
        self.sink.write_transaction(batch._replace(offset=start), commit)
        return start
