"""`GenerationTracker`: each group's last generation, and the generations it emits.

The tracker keeps the state between records (each group's last `Snapshot`, each KIP-848
group's `Kip848State`) and collects what the records produce (generations, group
events, time repairs) until the job drains them into its batch. Each record goes through
`dispatch.replay` to the handler of its type. Replays: a record at or before the last
position seen for its group is skipped, so replaying a batch after a crash adds nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from services.store.batch import (
    Cause,
    Churn,
    Generation,
    GroupEvent,
    RebalanceCost,
    Repair,
    StaticReplacement,
)
from services.tracker import causes, churn, cost, dispatch
from services.tracker.model import Kip848State, Position, Snapshot


class GenerationTracker:
    """Turns group records into store `Generation`s with their churn."""

    def __init__(self, known: Mapping[str, Snapshot] | None = None) -> None:
        self.last: dict[str, Snapshot] = dict(known or {})
        self.kip848: dict[str, Kip848State] = {}
        self.generations: list[Generation] = []
        self.events: list[GroupEvent] = []
        self.repairs: list[Repair] = []  # of the drained generations' times
        self.replacements: list[StaticReplacement] = []  # rebalanced nothing
        # The evidence of rebalance causes (services/tracker/causes.py), kept between
        # batches: each known group's partitions' last commit time, in log order, and
        # the members that left without a replacement (identity, generation, client id,
        # host).
        self.commits: dict[str, dict[tuple[str, int], datetime]] = {}
        self.departed: dict[str, list[tuple[str, int, str | None, str | None]]] = {}
        # Rebalances whose moved partitions have not all committed again, and the cost
        # updates since the last `drain_costs` (services/tracker/cost.py).
        self.cost = cost.CostWatch()
        # Topic id -> name for the whole cluster, given by the caller (the tracker does no
        # I/O): used where a KIP-848 group's own partition metadata does not name an id.
        self.topic_names: dict[str, str] = {}
        # topic -> each partition's replica racks, given by the caller for the batch's
        # rack-aware generations (`rack_topics`): the baselines assign by rack as
        # Kafka's client-side assignors do (KIP-881). Cluster metadata, not saved.
        self.partition_racks: churn.PartitionRacks = {}
        # Since the last `drain_counts`: records of a type no handler takes (share and
        # streams groups, or a type newer than the tracker), by type ...
        self.unknown_types: Counter[str] = Counter()
        # ... and rebalances whose baseline the assignor could not compute, by reason,
        # with the first such group and the assignor's message for each reason.
        self.baseline_failures: Counter[str] = Counter()
        self.baseline_examples: dict[str, str] = {}

    def add(self, record: Mapping[str, Any], position: Position) -> None:
        """Feed one decoded record (codec output), in log order."""
        dispatch.replay(self, record, position)

    def unnamed_topic_ids(self, records: Iterable[Mapping[str, Any]] = ()) -> set[str]:
        """The topic ids that KIP-848 targets refer to, in `records` or in the state kept
        so far, that neither their group's partition metadata nor `topic_names` names."""
        targets = [
            (r["key"]["group_id"], r["value"]["topic_partitions"])
            for r in records
            if r["record_type"] == "consumer_group_target_assignment_member" and r["value"]
        ]
        targets += [(g, t) for g, state in self.kip848.items() for t in state.targets.values()]
        unnamed: set[str] = set()
        for group, target in targets:
            own = self.kip848[group].topic_names if group in self.kip848 else {}
            unnamed |= {tp["topic_id"] for tp in target} - own.keys() - self.topic_names.keys()
        return unnamed

    @staticmethod
    def rack_topics(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        """The topics whose replica racks the baselines of `records` can use, each with
        the partitions the records assign (highest + 1): the subscribed topics of classic
        generations in which a member states a rack. Only those assign by rack: Kafka's
        client-side assignors need consumer racks (`useRackAwareAssignment`), and Kafka
        4.3.1's server-side assignors (KIP-848 `uniform`, `range`) ignore racks."""
        wanted: dict[str, int] = {}
        for record in records:
            value = record["value"]
            if record["record_type"] != "group_metadata" or not value:
                continue
            subscriptions = [m["subscription"] for m in value["members"]]
            subscriptions = [s for s in subscriptions if isinstance(s, dict)]
            if not any(s.get("rack_id") for s in subscriptions):
                continue
            for s in subscriptions:
                wanted.update((t, wanted.get(t, 0)) for t in s.get("topics") or ())
            for m in value["members"]:
                assigned = m["assignment"] if isinstance(m["assignment"], dict) else {}
                for tp in assigned.get("assigned_partitions") or ():
                    if tp["topic"] in wanted and tp["partitions"]:
                        wanted[tp["topic"]] = max(wanted[tp["topic"]], max(tp["partitions"]) + 1)
        return wanted

    def topic_name(self, state: Kip848State, topic_id: str) -> str:
        """A KIP-848 target's topic id by name: the group's, the cluster's, else the id."""
        return state.topic_names.get(topic_id) or self.topic_names.get(topic_id, topic_id)

    def drain(self) -> tuple[list[Generation], list[GroupEvent]]:
        out = self.generations, self.events
        self.generations, self.events = [], []
        return out

    def commit(
        self, group: str, topic: str, partition: int, time: datetime | None, offset: int
    ) -> None:
        """An offset commit (at `offset` of its source partition) of a group that has
        generations, in log order with its group records. The causes need the last one
        before each group record, the costs also the first one after."""
        if time is not None and (group in self.last or group in self.kip848):
            self.commits.setdefault(group, {})[(topic, partition)] = time
            self.cost.commit(group, (topic, partition), time, offset)

    def drain_costs(self) -> list[RebalanceCost]:
        """The rebalances whose cost changed since the last drain, each as it stands."""
        return self.cost.drain()

    def drain_replacements(self) -> list[StaticReplacement]:
        out, self.replacements = self.replacements, []
        return out

    def drain_repairs(self) -> list[Repair]:
        out, self.repairs = self.repairs, []
        return out

    def drain_counts(self) -> tuple[Counter[str], Counter[str], dict[str, str]]:
        """The unknown record types, the baseline failures and their examples, reset."""
        out = self.unknown_types, self.baseline_failures, self.baseline_examples
        self.unknown_types, self.baseline_failures, self.baseline_examples = (
            Counter(),
            Counter(),
            {},
        )
        return out

    def seen(self, group: str, position: Position) -> bool:
        """True for a record at or before the last position seen for `group` (a replay)."""
        last = self.last.get(group)
        return last is not None and (
            last.position.partition == position.partition
            and position.offset <= last.position.offset
        )

    def groups(self) -> set[str]:
        """Every group the tracker keeps state of."""
        return self.last.keys() | self.kip848.keys() | self.commits.keys() | self.departed.keys()

    def forget(self, groups: Iterable[str]) -> None:
        """Drop what is kept of `groups`: a record of one of them later starts it afresh,
        as a group first seen (a deleted group, or one the job's filter no longer keeps)."""
        for group in groups:
            self.last.pop(group, None)
            self.kip848.pop(group, None)
            self.commits.pop(group, None)
            self.departed.pop(group, None)
            self.cost.forget(group)

    def delete(self, group: str, position: Position, group_type: str) -> None:
        """A group tombstone: the group was deleted (or expired while empty)."""
        self.events.append(
            GroupEvent(
                group,
                position.time,
                position.partition,
                position.offset,
                type=group_type,
                deleted=True,
            )
        )
        self.forget([group])

    def advance(
        self,
        group: str,
        snapshot: Snapshot,
        group_type: str,
        topic_ids: Mapping[str, str] | None = None,
    ) -> tuple[Churn | None, list[Cause]]:
        """Make `snapshot` the group's last generation; the churn from the one before
        (None for the group's first generation and for a revocation round) and the
        rebalance's causes (none where the churn is None; a revocation round's wait for
        the episode's end in `snapshot.pending`). `topic_ids` (name -> Kafka topic id)
        order a KIP-848 group's topics for its baseline."""
        previous = self.last.get(group)
        self.last[group] = snapshot
        snapshot.forming_until = churn.forming_until(previous, snapshot)
        old = churn.owners(previous.assignment) if previous is not None else {}
        snapshot.since = {
            tp: previous.since.get(tp, snapshot.position.time)
            if previous is not None and old.get(tp) == owner
            else snapshot.position.time
            for tp, owner in churn.owners(snapshot.assignment).items()
        }
        if previous is None:
            return None, []
        before = (previous.revoking_from or previous).assignment
        measured = churn.rebalance(previous, snapshot, group_type, topic_ids, self.partition_racks)
        if measured.failure is not None:
            reason = measured.failure.reason
            self.baseline_failures[reason] += 1
            self.baseline_examples.setdefault(reason, f"group {group!r}: {measured.failure.detail}")
        found = causes.rebalance_causes(self, group, previous, snapshot)
        if previous.revoking_from is not None:
            found = previous.pending + found
        if measured.churn is None:
            snapshot.pending = found
            return None, []
        self.cost.rebalanced(
            group,
            snapshot.position,
            cost.moved(before, snapshot.assignment),
            self.commits.get(group, {}),
            snapshot.generation if group_type == "consumer" else None,
        )
        # The group's formation disrupts nobody; after it, the protocol's rule decides.
        disruptive = snapshot.forming_until is None and churn.disrupts(
            before, snapshot.assignment, measured.churn, group_type, snapshot.protocol
        )
        return replace(measured.churn, disruptive=disruptive), causes.settle(found)
