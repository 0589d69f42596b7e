"""What a rebalance cost: how long its moved partitions went without an offset commit.

A partition that moves is not consumed from the moment its old owner stops until its
new owner starts. `__consumer_offsets` shows that as a gap in the partition's offset
commits (each carries its commit timestamp). For every rebalance the tracker measures,
for each *moved* partition (assigned before and after, to another member, by identity:
`services.assignor.churn.moves`), the gap from its last commit before the *handover* to
its first commit after it:

- classic groups: the handover is the generation record that completed the rebalance.
  The coordinator answers the members' SyncGroup only once that record is written
  (`GroupMetadataManager.storeGroup`), so the new owner cannot commit before it; the old
  owner revoked before rejoining (eager), in the revocation round before it
  (cooperative), or is gone, and a commit with its old generation is refused
  (`ILLEGAL_GENERATION`).
- KIP-848 groups: the first current assignment (record type 8) at the rebalance's epoch
  or a later one that lists the partition as assigned. The coordinator gives a
  partition to its new owner only once its old owner has revoked it
  (`CurrentAssignmentBuilder`, UNRELEASED_PARTITIONS), and until then the old owner may
  still commit it.

A gap includes the commit interval: a group that auto-commits every 5 s shows gaps up
to 5 s without any rebalance. A partition that moved again before it resumed counts its
whole gap for both rebalances. Moved partitions with no commit before the handover have
no gap to measure.

A rebalance waits (`Pending`) until each of its moved partitions that had a commit
before has committed again. Each change is emitted as the rebalance's whole current
state (`RebalanceCost`), which the store keeps (a replay emits the same). A group keeps
at most `PENDING_KEPT` waiting rebalances: an idle partition that never commits again
keeps its rebalance waiting, and the oldest is dropped, its last state kept as it is.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from services.store.batch import RebalanceCost
from services.tracker.model import Position

TP = tuple[str, int]
PENDING_KEPT = 16  # waiting rebalances per group


@dataclass
class Pending:
    """A rebalance whose moved partitions have not all committed again."""

    position: Position  # of the generation record that carries the rebalance
    epoch: int | None  # KIP-848: handed over at a member epoch >= this; classic: None
    awaiting: set[TP] = field(default_factory=set)  # not handed over yet (KIP-848)
    # handed over: (the last commit time before the handover, the handover's offset)
    open: dict[TP, tuple[datetime, int]] = field(default_factory=dict)
    gaps: list[float] = field(default_factory=list)  # seconds, of partitions that resumed

    def cost(self, group: str) -> RebalanceCost:
        gaps = self.gaps
        return RebalanceCost(
            group,
            self.position.partition,
            self.position.offset,
            measured=len(gaps),
            waiting=len(self.open) + len(self.awaiting),
            gap_max=timedelta(seconds=max(gaps)) if gaps else None,
            gap_median=timedelta(seconds=statistics.median(gaps)) if gaps else None,
        )

    def hand_over(self, tp: TP, last: Mapping[TP, datetime], offset: int) -> None:
        """`tp` has its new owner from `offset` on; its last commit so far starts its gap."""
        stopped = last.get(tp)
        if stopped is not None:
            self.open[tp] = (stopped, offset)

    def as_data(self) -> dict[str, Any]:
        p = self.position
        return {
            "position": [p.partition, p.offset, p.time.isoformat()],
            "epoch": self.epoch,
            "awaiting": sorted(self.awaiting),
            "open": [[t, n, at.isoformat(), o] for (t, n), (at, o) in self.open.items()],
            "gaps": self.gaps,
        }

    @classmethod
    def from_data(cls, raw: Mapping[str, Any]) -> Pending:
        partition, offset, time = raw["position"]
        return cls(
            Position(partition, offset, datetime.fromisoformat(time)),
            raw["epoch"],
            {(t, n) for t, n in raw["awaiting"]},
            {(t, n): (datetime.fromisoformat(at), o) for t, n, at, o in raw["open"]},
            list(raw["gaps"]),
        )


class CostWatch:
    """Each group's waiting rebalances, and the cost updates since the last drain."""

    def __init__(self) -> None:
        self.pending: dict[str, list[Pending]] = {}
        self.updates: dict[tuple[int, int], RebalanceCost] = {}

    def rebalanced(
        self,
        group: str,
        position: Position,
        moved: Iterable[TP],
        last: Mapping[TP, datetime],
        epoch: int | None = None,
    ) -> None:
        """A rebalance at `position` moved `moved`; `last`: the group's last commit time
        per partition so far; `epoch`: a KIP-848 rebalance's group epoch."""
        pending = Pending(position, epoch)
        if epoch is None:
            for tp in moved:
                pending.hand_over(tp, last, position.offset)
        else:
            pending.awaiting = set(moved)
        self._changed(group, pending)
        if pending.open or pending.awaiting:
            waiting = self.pending.setdefault(group, [])
            waiting.append(pending)
            del waiting[:-PENDING_KEPT]

    def handover(
        self,
        group: str,
        epoch: int,
        partitions: Collection[TP],
        last: Mapping[TP, datetime],
        offset: int,
    ) -> None:
        """A KIP-848 member at member epoch `epoch` holds `partitions` from `offset` on."""
        for pending in self.pending.get(group, ()):
            if pending.epoch is None or pending.epoch > epoch or not pending.awaiting:
                continue
            taken = pending.awaiting.intersection(partitions)
            for tp in taken:
                pending.awaiting.discard(tp)
                pending.hand_over(tp, last, offset)
            if taken:
                self._changed(group, pending)
        self._prune(group)

    def commit(self, group: str, tp: TP, time: datetime, offset: int) -> None:
        """An offset commit of `tp` at `offset`, in log order."""
        waiting = self.pending.get(group)
        if not waiting:
            return
        done = False
        for pending in waiting:
            found = pending.open.get(tp)
            if found is None or offset <= found[1]:
                continue
            del pending.open[tp]
            pending.gaps.append(max(0.0, (time - found[0]).total_seconds()))
            self._changed(group, pending)
            done = True
        if done:
            self._prune(group)

    def waiting(self) -> dict[str, set[TP]]:
        """group -> its moved partitions that wait for their first commit after the
        handover (the batch's first commit of each is the one that counts)."""
        return {g: {tp for p in ps for tp in p.open} for g, ps in self.pending.items()}

    def forget(self, group: str) -> None:
        """The group was deleted: its rebalances wait no more."""
        self.pending.pop(group, None)

    def drain(self) -> list[RebalanceCost]:
        out = list(self.updates.values())
        self.updates = {}
        return out

    def _changed(self, group: str, pending: Pending) -> None:
        self.updates[(pending.position.partition, pending.position.offset)] = pending.cost(group)

    def _prune(self, group: str) -> None:
        waiting = self.pending.get(group)
        if waiting is None:
            return
        waiting[:] = [p for p in waiting if p.open or p.awaiting]
        if not waiting:
            del self.pending[group]

    def as_data(self) -> dict[str, Any]:
        return {g: [p.as_data() for p in ps] for g, ps in self.pending.items()}

    @classmethod
    def from_data(cls, raw: Mapping[str, Any]) -> CostWatch:
        watch = cls()
        watch.pending = {g: [Pending.from_data(p) for p in ps] for g, ps in raw.items()}
        return watch


def moved(before: Mapping[str, Iterable[TP]], after: Mapping[str, Iterable[TP]]) -> list[TP]:
    """The partitions assigned in both whose owner (identity) changed."""
    old = {tp: m for m, tps in before.items() for tp in tps}
    return sorted(tp for m, tps in after.items() for tp in tps if tp in old and old[tp] != m)
