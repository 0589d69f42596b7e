"""Ground truth: what really happened, written next to the records as JSON Lines.

`DIR/truth/` holds (times are epoch milliseconds, UTC; a member's *identity* is its
group instance id when it has one, else its member id; partitions are `[topic, p]`
pairs sorted by topic then partition):

- `events.jsonl`: every event, in order:
  `{"time", "group", "kind", "member", "details"}`. `member` is an identity or null;
  a member's event's details carry its `member_id` and `client_host` (its slot's host).
  Kinds: `join`, `leave`, `crash`, `restart`, `stall`, `session-timeout`,
  `poll-timeout`, `rebalance-timeout`, `static-rejoin`, `subscribe`,
  `add-partitions`, `state` (details `from`, `to`, `generation`), `delete-group`.
- `generations.jsonl`: every stabilized generation (classic: each GroupMetadata record
  of a new generation, including an emptied group's; KIP-848: each target assignment,
  type 6): `{"group", "group_type" ("classic" | "consumer"), "generation", "protocol"
  (the assignor; null for an empty classic group), "time", "leader" (member id or null),
  "members": [{"identity", "member_id", "group_instance_id"}] sorted by identity,
  "assignment": {identity: [[topic, p], ...]}, "log_partition", "log_offset"}` (the
  record that carries it). A static member rejoining within its session timeout makes
  the classic coordinator write GroupMetadata again with the *same* generation; that is
  a `static-rejoin` event, not a generation.
- `rebalances.jsonl`: every rebalance *episode*: `{"group", "group_type", "episode"
  (1, 2, ... per group), "from_generation" (null for the group's first), "to_generation",
  "generations" (each generation of the episode, in order), "cooperative" (true when
  the episode is cooperative-sticky's revoke-then-assign rounds; such an episode spans
  two generations), "time" (when it stabilized), "joined", "left" (identities, sorted),
  "moves": {"total", "from_surviving", "from_departed"}}`, moves measured from the
  assignment of `from_generation` to that of `to_generation` (`services.assignor.moves`,
  keyed by identity).
- `gaps.jsonl`: the commit gap of every partition a rebalance episode moved (owner
  changed by identity, `moves` below), one row each: `{"group", "to_generation",
  "topic", "partition", "stopped", "resumed"}`. `resumed` is the time of the
  partition's first commit (that took effect) after a member got it in or after the
  episode (classic: the episode's last generation; KIP-848: a member's reconciliation,
  once the old owner released it), `stopped` the time of the commit before that one
  (null: it had none). Unresolved at the end: `resumed` null, `stopped` its last
  commit. Rows are in the order they resolved, the unresolved last.
- `commits.jsonl`: the committed offsets at the end, one row per (group, topic,
  partition) still committed (a deleted group's offsets are gone), sorted:
  `{"group", "topic", "partition", "offset", "leader_epoch", "metadata",
  "commit_timestamp", "commits"}` where `commits` counts the commit records that took
  effect for that key (aborted ones excluded).
- `aborted.jsonl`: every aborted transactional offset commit (absent from the replay
  directory): `{"group", "topic", "partition", "offset", "leader_epoch", "metadata",
  "commit_timestamp", "log_partition", "log_offset"}`.
- `summary.json`: scenario, seed, start and end time, record count, the next offset of
  every partition of the simulated log, and the groups.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.assignor import moves

if TYPE_CHECKING:
    from services.simulator.offsets import GroupOffsets

TopicPartition = tuple[str, int]
Assignment = Mapping[str, Sequence[TopicPartition]]


def sorted_assignment(assignment: Assignment) -> dict[str, list[list[Any]]]:
    return {m: sorted([t, p] for t, p in tps) for m, tps in sorted(assignment.items())}


class GroundTruth:
    """Appends ground-truth rows to `DIR/truth/*.jsonl`; `None` as root discards them."""

    FILES = ("events", "generations", "rebalances", "aborted", "gaps")

    def __init__(self, root: str | os.PathLike | None) -> None:
        self.dir = None if root is None else Path(root) / "truth"
        self._files: dict[str, Any] = {}
        self._stack = ExitStack()
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)
            for name in self.FILES:
                path = self.dir / f"{name}.jsonl"
                self._files[name] = self._stack.enter_context(path.open("w", encoding="utf-8"))
        self._dumps = json.JSONEncoder(separators=(",", ":")).encode

    def _write(self, name: str, row: Mapping[str, Any]) -> None:
        out = self._files.get(name)
        if out is not None:
            out.write(self._dumps(row) + "\n")

    def event(
        self, time: int, group: str, kind: str, member: str | None = None, **details: Any
    ) -> None:
        self._write(
            "events",
            {"time": time, "group": group, "kind": kind, "member": member, "details": details},
        )

    def generation(self, row: Mapping[str, Any]) -> None:
        self._write("generations", row)

    def rebalance(self, row: Mapping[str, Any]) -> None:
        self._write("rebalances", row)

    def aborted(self, row: Mapping[str, Any]) -> None:
        self._write("aborted", row)

    def gap(self, row: Mapping[str, Any]) -> None:
        self._write("gaps", row)

    def close(self, commits: Iterable[Mapping[str, Any]], summary: Mapping[str, Any]) -> None:
        self._stack.close()
        if self.dir is None:
            return
        text = cache(json.dumps)
        line = (
            '{{"group":{},"topic":{},"partition":{},"offset":{},"leader_epoch":{},'
            '"metadata":{},"commit_timestamp":{},"commits":{}}}\n'
        ).format
        with open(self.dir / "commits.jsonl", "w", encoding="utf-8") as out:
            out.writelines(
                line(
                    text(r["group"]),
                    text(r["topic"]),
                    r["partition"],
                    r["offset"],
                    r["leader_epoch"],
                    text(r["metadata"]),
                    r["commit_timestamp"],
                    r["commits"],
                )
                for r in commits
            )
        with open(self.dir / "summary.json", "w", encoding="utf-8") as out:
            json.dump(summary, out, indent=1, sort_keys=True)
            out.write("\n")


class GroupHistory:
    """One group's generations and rebalance episodes, written to the ground truth.

    An episode opens at the first generation after a stable one and closes at the first
    generation that revoked nothing. Eager and KIP-848 generations never leave revocations
    pending, so each is its own episode; cooperative-sticky's first round revokes, so its
    episode closes one generation later (`ConsumerCoordinator.onJoinComplete` rejoins
    after revoking).
    """

    def __init__(
        self, truth: GroundTruth, group: str, group_type: str, offsets: GroupOffsets | None = None
    ) -> None:
        self.truth = truth
        self.offsets = offsets
        self.group = group
        self.group_type = group_type
        self.episodes = 0
        self.last_generation: int | None = None
        self.last_assignment: dict[str, list[TopicPartition]] = {}
        self._open: list[int] = []

    def stabilized(
        self,
        time: int,
        generation: int,
        protocol: str | None,
        leader: str | None,
        members: Sequence[Mapping[str, Any]],
        assignment: Mapping[str, Sequence[TopicPartition]],
        revoked: bool,
        cooperative: bool,
        log_position: tuple[int, int],
    ) -> None:
        """`members`: {identity, member_id, group_instance_id}; `assignment` by identity."""
        self.truth.generation(
            {
                "group": self.group,
                "group_type": self.group_type,
                "generation": generation,
                "protocol": protocol,
                "time": time,
                "leader": leader,
                "members": sorted(members, key=lambda m: m["identity"]),
                "assignment": sorted_assignment(assignment),
                "log_partition": log_position[0],
                "log_offset": log_position[1],
            }
        )
        self._open.append(generation)
        if revoked:
            return
        before, after = self.last_assignment, {m: list(tps) for m, tps in assignment.items()}
        self.episodes += 1
        self.truth.rebalance(
            {
                "group": self.group,
                "group_type": self.group_type,
                "episode": self.episodes,
                "from_generation": self.last_generation,
                "to_generation": generation,
                "generations": self._open,
                "cooperative": cooperative and len(self._open) > 1,
                "time": time,
                "joined": sorted(set(after) - set(before)),
                "left": sorted(set(before) - set(after)),
                "moves": moves(before, after).as_dict(),
            }
        )
        if self.offsets is not None and self.last_generation is not None:
            self._watch_moves(self.offsets, generation, before, after)
        self._open = []
        self.last_generation = generation
        self.last_assignment = after

    def _watch_moves(
        self,
        offsets: GroupOffsets,
        generation: int,
        before: Mapping[str, Sequence[TopicPartition]],
        after: Mapping[str, Sequence[TopicPartition]],
    ) -> None:
        """A `gaps.jsonl` row for each partition the episode moved, filled at its first
        commit once its new owner holds it: at once in a classic group (its members get
        their assignment with this generation), at its reconciliation in a KIP-848 one."""
        old = {tp: m for m, tps in before.items() for tp in tps}
        for member, tps in sorted(after.items()):
            for tp in sorted(tps):
                if old.get(tp, member) != member:
                    row = {
                        "group": self.group,
                        "to_generation": generation,
                        "topic": tp[0],
                        "partition": tp[1],
                        "stopped": None,
                        "resumed": None,
                    }
                    offsets.watch(tp, row, held=self.group_type == "classic")
