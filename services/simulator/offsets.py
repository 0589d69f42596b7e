"""A group's committed offsets: consumers commit positions that advance with the topic.

Each partition's position advances at the group's message rate (each partition has its
own rate, drawn once). A commit writes the position of every partition the consumer owns,
changed or not, as the Java consumer's auto-commit does (`commitOffsetsAsync` of
`allConsumed()`), with the partition leader's epoch (KIP-320) and the group's metadata
string. A share of commits can go through a transaction (`sendOffsetsToTransaction`),
and a share of those be aborted: aborted commits never take effect.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from typing import Any

from services.simulator.log import CoordinatorLog
from services.simulator.records import OffsetCommitEncoder
from services.simulator.truth import GroundTruth

TopicPartition = tuple[str, int]

# per partition: [committed offset, last commit time, messages per ms, leader epoch, commits]
_OFFSET, _TIME, _RATE, _EPOCH, _COUNT = range(5)


class GroupOffsets:
    def __init__(
        self,
        group: str,
        log_partition: int,
        log: CoordinatorLog,
        truth: GroundTruth,
        rng: random.Random,
        start: int,
        messages_per_second: float,
        metadata: str,
        transactional: float,
        aborted: float,
    ) -> None:
        self.group = group
        self.log_partition = log_partition
        self.log = log
        self.truth = truth
        self.rng = rng
        self.start = start
        self.rate = messages_per_second / 1000.0
        self.metadata = metadata
        self.transactional = transactional
        self.aborted = aborted
        self.encoder = OffsetCommitEncoder(group)
        self._pack = self.encoder.packer(metadata)
        self.state: dict[TopicPartition, list[Any]] = {}

    def add_topic(self, topic: str, partitions: int) -> None:
        """Track partitions `0..partitions-1` of `topic` (new ones start near offset 0)."""
        rng = self.rng
        for p in range(partitions):
            if (topic, p) not in self.state:
                rate = self.rate * rng.uniform(0.5, 1.5)
                self.state[(topic, p)] = [
                    rng.randrange(1000),
                    self.start,
                    rate,
                    rng.randrange(4),
                    0,
                ]
                self.encoder.key(topic, p)

    def commit(self, partitions: Iterable[TopicPartition], now: int) -> None:
        """One OffsetCommit (or TxnOffsetCommit) of `partitions` at `now`."""
        state = self.state
        key = self.encoder.keys
        pack = self._pack
        records = []
        updates = []
        for tp in partitions:
            st = state[tp]
            offset = st[_OFFSET] + int(st[_RATE] * (now - st[_TIME]))
            records.append((key[tp], pack(offset, st[_EPOCH], now)))
            updates.append((st, offset))
        if not records:
            return
        if self.transactional and self.rng.random() < self.transactional:
            commit = self.rng.random() >= self.aborted
            rows = self.log.append_transaction(self.log_partition, now, records, commit)
            if not commit:
                self._report_aborted(partitions, updates, rows, now)
                return
        else:
            self.log.append(self.log_partition, now, records)
        for st, offset in updates:
            st[_OFFSET] = offset
            st[_TIME] = now
            st[_COUNT] += 1

    def _report_aborted(
        self, partitions: Iterable[TopicPartition], updates: list, rows: list, now: int
    ) -> None:
        for (topic, p), (st, offset), row in zip(partitions, updates, rows, strict=True):
            self.truth.aborted(
                {
                    "group": self.group,
                    "topic": topic,
                    "partition": p,
                    "offset": offset,
                    "leader_epoch": st[_EPOCH],
                    "metadata": self.metadata,
                    "commit_timestamp": now,
                    "log_partition": row[0],
                    "log_offset": row[1],
                }
            )

    def tombstones(self) -> list[tuple[bytes, None]]:
        """Tombstones of every committed offset (`OffsetMetadataManager.deleteAllOffsets`);
        forgets them."""
        records = [self.encoder.tombstone(t, p) for (t, p), st in self.state.items() if st[_COUNT]]
        for st in self.state.values():
            st[_COUNT] = 0
        return records

    def committed(self) -> Iterator[dict[str, Any]]:
        """The committed offsets now, one row per (topic, partition), sorted."""
        for (topic, p), st in sorted(self.state.items()):
            if st[_COUNT]:
                yield {
                    "group": self.group,
                    "topic": topic,
                    "partition": p,
                    "offset": st[_OFFSET],
                    "leader_epoch": st[_EPOCH],
                    "metadata": self.metadata,
                    "commit_timestamp": st[_TIME],
                    "commits": st[_COUNT],
                }
