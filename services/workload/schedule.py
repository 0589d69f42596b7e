"""The schedule: which step happens to which group, and what each step does.

One cycle is the configured list of step kinds; step i goes to group i mod (number of
groups), and the cycle repeats. Each kind makes the group rebalance:

- `scale-up`: one more member joins (up to the group's maximum);
- `scale-down`: the newest member stops cleanly and leaves (down to the minimum);
- `restart`: the oldest member stops cleanly and a new one joins, as in one step of a
  rolling deploy without static membership (two rebalances);
- `crash-loop`: the oldest member is killed, and its replacements are killed again
  shortly after each joins, `crashes` times in all; the last replacement stays. Each
  crash holds the group until the dead member's session times out: a small storm.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from services.workload.fleet import GroupFleet


@dataclass(frozen=True)
class Step:
    kind: str
    group: str

    def __str__(self) -> str:
        return f"{self.kind} {self.group}"


def build_cycle(groups: Sequence[str], kinds: Sequence[str]) -> list[Step]:
    """Step i of the cycle is `kinds[i]` on group i mod len(groups)."""
    return [Step(kind, groups[i % len(groups)]) for i, kind in enumerate(kinds)]


def run_step(
    step: Step,
    fleet: GroupFleet,
    crashes: int,
    crash_uptime_s: float,
    join_timeout_s: float,
    halt: threading.Event,
    say: Callable[[str], None],
) -> bool:
    """Carry out `step` on `fleet`; False when the group's bounds made it a no-op."""
    spec = fleet.spec
    with fleet.lock:
        count = len(fleet.members)
    if count == 0 and step.kind != "scale-up":
        say(f"{step}: skipped, the group has no running member")
        return False
    if step.kind == "scale-up":
        if count >= spec.max_members:
            say(f"{step}: skipped, already {count} members (the maximum)")
            return False
        handle = fleet.start_member()
        say(f"{step}: {count} -> {count + 1} members ({handle.name} joins)")
    elif step.kind == "scale-down":
        if count <= spec.min_members:
            say(f"{step}: skipped, {count} members is the minimum")
            return False
        newest = fleet.members[-1]
        say(f"{step}: {count} -> {count - 1} members ({newest.name} leaves)")
        fleet.stop_member(newest)
    elif step.kind == "restart":
        oldest = fleet.members[0]
        fleet.stop_member(oldest)
        handle = fleet.start_member()
        say(f"{step}: {oldest.name} stopped, {handle.name} started in its place")
    elif step.kind == "crash-loop":
        _crash_loop(fleet, crashes, crash_uptime_s, join_timeout_s, halt, say)
    else:
        raise ValueError(f"unknown step kind {step.kind!r}")
    return True


def _crash_loop(
    fleet: GroupFleet,
    crashes: int,
    crash_uptime_s: float,
    join_timeout_s: float,
    halt: threading.Event,
    say: Callable[[str], None],
) -> None:
    victim = fleet.members[0]
    name = fleet.spec.name
    say(f"crash-loop {name}: {victim.name} is killed, then each replacement {crashes - 1} times")
    fleet.crash_member(victim)
    for attempt in range(2, crashes + 1):
        if halt.is_set():
            return
        replacement = fleet.start_member()
        joined = fleet.wait_joined(replacement, join_timeout_s, halt)
        if halt.wait(crash_uptime_s if joined else 0):
            return
        fleet.crash_member(replacement)
        how = "after it joined" if joined else f"not joined within {join_timeout_s:.0f}s"
        say(f"crash-loop {name}: crash {attempt}/{crashes}, {replacement.name} killed {how}")
    if not halt.is_set():
        final = fleet.start_member()
        say(f"crash-loop {name}: {final.name} starts and stays")
