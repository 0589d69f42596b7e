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
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from services.simulator.log import Batch, CoordinatorLog
from services.simulator.records import OFFSET_COMMIT_VERSION, OffsetCommitEncoder
from services.simulator.truth import GroundTruth

TopicPartition = tuple[str, int]

# Per partition, a list: [0] committed offset, [1] time of that commit, [2] messages per
# ms, [3] leader epoch, [4] commits that took effect.


class CommitPlan(NamedTuple):
    """A member's partitions with their keys and state lists, in the same order."""

    partitions: Sequence[TopicPartition]
    keys: list[bytes]
    states: list[list[Any]]


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
        self._pack, self._raw_metadata = self.encoder.value_packer(metadata)
        self.state: dict[TopicPartition, list[Any]] = {}
        # Ground truth of rebalance costs (`watch`): a moved partition -> its
        # `gaps.jsonl` rows waiting for the partition's new owner to get it, and those
        # waiting for its next commit.
        self.unheld: dict[TopicPartition, list[dict[str, Any]]] = {}
        self.watching: dict[TopicPartition, list[dict[str, Any]]] = {}

    def add_topic(self, topic: str, partitions: int) -> None:
        """Track partitions `0..partitions-1` of `topic`: each starts below offset 1024,
        with a leader epoch 0-3 and a rate of 0.5-1.5 times the group's."""
        getrandbits = self.rng.getrandbits
        for p in range(partitions):
            if (topic, p) not in self.state:
                bits = getrandbits(32)
                rate = self.rate * (0.5 + (bits >> 12) / (1 << 20))
                self.state[(topic, p)] = [bits & 1023, self.start, rate, (bits >> 10) & 3, 0]
        self.encoder.add_keys(topic, range(partitions))

    def plan(self, partitions: Sequence[TopicPartition]) -> CommitPlan:
        """What a commit of `partitions` needs, looked up once per assignment."""
        keys = self.encoder.keys
        return CommitPlan(
            partitions, [keys[tp] for tp in partitions], [self.state[tp] for tp in partitions]
        )

    def watch(self, tp: TopicPartition, row: dict[str, Any], held: bool) -> None:
        """Fill `row` of `gaps.jsonl` at the first commit of `tp` once a member holds it
        (`held`, or after `acquired`): `resumed` is that commit's time, `stopped` the
        time of the commit before it."""
        (self.watching if held else self.unheld).setdefault(tp, []).append(row)

    def acquired(self, partitions: Iterable[TopicPartition]) -> None:
        """A member got `partitions` (KIP-848: once their old owners released them)."""
        for tp in partitions:
            rows = self.unheld.pop(tp, None)
            if rows:
                self.watching.setdefault(tp, []).extend(rows)

    def unresolved(self) -> list[dict[str, Any]]:
        """The watched rows no commit resolved: `resumed` stays null, `stopped` is the
        partition's last commit (null: none)."""
        out = []
        for waiting in (self.unheld, self.watching):
            for tp, rows in waiting.items():
                st = self.state[tp]
                for row in rows:
                    row["stopped"] = st[1] if st[4] else None
                    out.append(row)
        return out

    def _resolve(self, plan: CommitPlan, now: int) -> None:
        for tp, st in zip(plan.partitions, plan.states, strict=True):
            rows = self.watching.pop(tp, None)
            for row in rows or ():
                row["stopped"] = st[1] if st[4] else None
                row["resumed"] = now
                self.truth.gap(row)

    def commit(self, plan: CommitPlan, now: int) -> None:
        """One OffsetCommit (or TxnOffsetCommit) of the plan's partitions at `now`."""
        if not plan.keys:
            return
        rng = self.rng
        transactional = bool(self.transactional) and rng.random() < self.transactional
        takes_effect = not transactional or rng.random() >= self.aborted
        if takes_effect and self.watching:
            self._resolve(plan, now)
        pack = self._pack
        raw = self._raw_metadata
        length = len(raw)
        values = []
        offsets = []
        for st in plan.states:
            offset = st[0] + int(st[2] * (now - st[1]))
            values.append(pack(OFFSET_COMMIT_VERSION, offset, st[3], length, raw, now))
            if takes_effect:
                st[0] = offset
                st[1] = now
                st[4] += 1
            else:
                offsets.append(offset)
        if not transactional:
            self.log.append(self.log_partition, now, plan.keys, values)
            return
        batch = Batch(self.log_partition, -1, now, plan.keys, values)
        first = self.log.append_transaction(batch, takes_effect)
        if not takes_effect:
            self._report_aborted(plan.partitions, offsets, first, now)

    def _report_aborted(
        self, partitions: Sequence[TopicPartition], offsets: list[int], first: int, now: int
    ) -> None:
        for i, ((topic, p), offset) in enumerate(zip(partitions, offsets, strict=True)):
            self.truth.aborted(
                {
                    "group": self.group,
                    "topic": topic,
                    "partition": p,
                    "offset": offset,
                    "leader_epoch": self.state[(topic, p)][3],
                    "metadata": self.metadata,
                    "commit_timestamp": now,
                    "log_partition": self.log_partition,
                    "log_offset": first + i,
                }
            )

    def tombstones(self) -> list[tuple[bytes, None]]:
        """Tombstones of every committed offset (`OffsetMetadataManager.deleteAllOffsets`);
        forgets them."""
        records = [self.encoder.tombstone(t, p) for (t, p), st in self.state.items() if st[4]]
        for st in self.state.values():
            st[4] = 0
        return records

    def committed(self) -> Iterator[dict[str, Any]]:
        """The committed offsets now, one row per (topic, partition), sorted."""
        for (topic, p), st in sorted(self.state.items()):
            if st[4]:
                yield {
                    "group": self.group,
                    "topic": topic,
                    "partition": p,
                    "offset": st[0],
                    "leader_epoch": st[3],
                    "metadata": self.metadata,
                    "commit_timestamp": st[1],
                    "commits": st[4],
                }
