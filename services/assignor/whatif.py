"""Replay a group through membership changes under several assignors (``groupscope whatif``).

Each assignor keeps its own assignment from step to step: members report what it gave
them as their owned partitions, with the generation bumped each rebalance. A
``cooperative-sticky`` step is one rebalance episode: the first round revokes what must
move, the next hands it out (and, rarely, revokes more), until a round revokes nothing.
``leave`` and ``crash`` both drop the member; they differ in how quickly Kafka notices,
not in the assignment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from services.assignor.api import ASSIGNORS, assign
from services.assignor.churn import Moves, minimum_moves, moves
from services.assignor.model import (
    Assignment,
    AssignmentError,
    RawMember,
    TopicPartition,
    check_partition_counts,
    to_member,
)

DEFAULT_ASSIGNORS: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky")
EVENTS = ("join", "leave", "crash", "subscribe", "partitions")


def _profile(raw: RawMember) -> dict[str, Any]:
    m = to_member(raw)
    return {
        "id": m.id,
        "topics": list(m.topics),
        "rack": m.rack,
        "group_instance_id": m.group_instance_id,
    }


class _Group:
    def __init__(self, scenario: Mapping[str, Any]) -> None:
        if not isinstance(scenario, Mapping):
            raise AssignmentError("the scenario must be a JSON object")
        self.counts = check_partition_counts(scenario.get("partitions_per_topic") or {})
        self.racks = scenario.get("partition_racks")
        self.members: dict[str, dict[str, Any]] = {}
        for raw in scenario.get("members") or []:
            self._join(raw)

    def _join(self, raw: Any) -> str:
        profile = _profile(raw)
        if profile["id"] in self.members:
            raise AssignmentError(f"member {profile['id']!r} is already in the group")
        self.members[profile["id"]] = profile
        return f"join {profile['id']}"

    def _remove(self, event: str, member_id: Any) -> str:
        if member_id not in self.members:
            raise AssignmentError(f"{event}: no member {member_id!r} in the group")
        del self.members[member_id]
        return f"{event} {member_id}"

    def _subscribe(self, raw: Any) -> str:
        if not isinstance(raw, Mapping) or raw.get("id") not in self.members:
            raise AssignmentError('subscribe needs {"id": <a member>, "topics": [...]}')
        profile = _profile({**self.members[raw["id"]], "topics": raw.get("topics", [])})
        self.members[profile["id"]] = profile
        return f"subscribe {profile['id']} to {','.join(profile['topics']) or 'nothing'}"

    def _partitions(self, raw: Any) -> str:
        added = check_partition_counts(raw if isinstance(raw, Mapping) else {})
        if not added:
            raise AssignmentError('partitions needs {"topic": count, ...}')
        for topic, count in added.items():
            if count < self.counts.get(topic, 0):
                raise AssignmentError(f"{topic}: Kafka never removes partitions")
        self.counts.update(added)
        return "partitions " + ", ".join(f"{t}={c}" for t, c in added.items())

    def apply(self, step: Any) -> str:
        if not isinstance(step, Mapping) or len(step) != 1 or next(iter(step)) not in EVENTS:
            raise AssignmentError(f"each step is one of {{{', '.join(EVENTS)}: ...}}, got {step!r}")
        ((event, value),) = step.items()
        if event == "join":
            return self._join(value)
        if event in ("leave", "crash"):
            return self._remove(event, value)
        if event == "subscribe":
            return self._subscribe(value)
        return self._partitions(value)

    def run(
        self, assignor: str, current: Mapping[str, list[TopicPartition]], generation: int
    ) -> Assignment:
        members = [
            {**p, "owned": current.get(mid, []), "generation": generation}
            for mid, p in self.members.items()
        ]
        return assign(assignor, self.counts, members, self.racks)


MAX_COOPERATIVE_ROUNDS = 10


def _revokes(
    before: Mapping[str, list[TopicPartition]], after: Mapping[str, list[TopicPartition]]
) -> bool:
    return any(not set(parts) <= set(after.get(m, ())) for m, parts in before.items() if m in after)


def _rebalance(group: _Group, assignor: str, current: Assignment, generation: int) -> Assignment:
    """One rebalance episode. Under cooperative-sticky a round that revokes partitions makes
    the members rejoin at once, as Kafka's consumers do, until a round revokes nothing."""
    result = group.run(assignor, current, generation)
    rounds = 1
    while assignor == "cooperative-sticky" and rounds < MAX_COOPERATIVE_ROUNDS:
        if not _revokes({m: current.get(m, []) for m in result}, result):
            break
        current, result = result, group.run(assignor, result, generation + rounds)
        rounds += 1
    return result


def replay(
    scenario: Mapping[str, Any], assignors: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """One row per step: the event, group size, each assignor's moves and the minimum."""
    chosen = list(assignors or scenario.get("assignors") or DEFAULT_ASSIGNORS)
    unknown = [a for a in chosen if a not in ASSIGNORS]
    if unknown:
        raise AssignmentError(
            f"unknown assignor {unknown[0]!r}; choose from {', '.join(ASSIGNORS)}"
        )
    group = _Group(scenario)
    steps = scenario.get("steps") or []
    if not isinstance(steps, list):
        raise AssignmentError("steps must be a list")
    state = {a: _rebalance(group, a, {}, 0) for a in chosen}
    rows = []
    for number, step in enumerate(steps, start=1):
        event = group.apply(step)
        row_moves: dict[str, Moves] = {}
        row_minimum: dict[str, Moves] = {}
        for a in chosen:
            row_minimum[a] = minimum_moves(state[a], list(group.members.values()), group.counts)
            after = _rebalance(group, a, state[a], MAX_COOPERATIVE_ROUNDS * number)
            row_moves[a] = moves(state[a], after)
            state[a] = after
        rows.append(
            {
                "step": number,
                "event": event,
                "members": len(group.members),
                "moves": {a: m.as_dict() for a, m in row_moves.items()},
                "minimum": row_minimum[baseline_assignor(chosen)].as_dict(),
                "minimum_by_assignor": {a: m.as_dict() for a, m in row_minimum.items()},
            }
        )
    return rows


def baseline_assignor(chosen: Sequence[str]) -> str:
    """Whose previous assignment the headline minimum starts from: the sticky family first."""
    for a in ("cooperative-sticky", "sticky", "uniform"):
        if a in chosen:
            return a
    return chosen[0]
