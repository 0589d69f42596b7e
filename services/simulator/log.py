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
    """Where records go: a replay directory or a broker topic."""

    def write(self, rows: Sequence[Row]) -> None:
        """Ordinary (non-transactional) records, in log order."""

    def write_transaction(self, rows: Sequence[Row], commit: bool) -> None:
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
        self, partition: int, timestamp: int, records: Sequence[tuple[bytes, bytes | None]]
    ) -> None:
        """Append non-transactional records to `partition`, all with `timestamp`."""
        start = self.next_offsets[partition]
        self.next_offsets[partition] = start + len(records)
        self.records += len(records)
        self.sink.write(
            [(partition, start + i, timestamp, k, v) for i, (k, v) in enumerate(records)]
        )

    def append_transaction(
        self,
        partition: int,
        timestamp: int,
        records: Sequence[tuple[bytes, bytes | None]],
        commit: bool,
    ) -> list[Row]:
        """A transactional batch and its end marker; returns the batch's rows."""
        start = self.next_offsets[partition]
        rows = [(partition, start + i, timestamp, k, v) for i, (k, v) in enumerate(records)]
        self.next_offsets[partition] = start + len(records) + 1  # + the control record
        self.records += len(records)
        self.sink.write_transaction(rows, commit)
        return rows
