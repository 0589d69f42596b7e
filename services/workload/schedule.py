"""The schedule: which step happens to which group, and what each step does.

One cycle is the configured list of step kinds, repeated; step i (counted over all
cycles) goes to group i mod (number of groups), so the groups take turns. Each kind
makes the group rebalance:

- `scale-up`: one more member joins (up to the group's maximum);
- `scale-down`: the newest member stops cleanly and leaves (down to the minimum);
- `restart`: the oldest member stops cleanly and a new one joins, as in one step of a
  rolling deploy without static membership (two rebalances);
- `crash-loop`: the oldest member is killed, and its replacements are killed again
  shortly after each joins, `crashes` times in all; the last replacement stays. Each
  crash holds the group until the dead member's session times out: a small storm.

Steps that start a member wait (up to the join timeout) for its first assignment, so
that the next step starts from a settled group.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from services.workload.fleet import GroupFleet, MemberHandle


@dataclass(frozen=True)
class Step:
    kind: str
    group: str

    def __str__(self) -> str:
        return f"{self.kind} {self.group}"


def steps(groups: Sequence[str], kinds: Sequence[str]) -> Iterator[Step]:
    """The endless schedule: step i is kind i mod len(kinds) on group i mod len(groups)."""
    for i in itertools.count():
        yield Step(kinds[i % len(kinds)], groups[i % len(groups)])


def run_step(
    step: Step, fleet: GroupFleet, halt: threading.Event, say: Callable[[str], None]
) -> bool:
    """Carry out `step` on `fleet` (paced by `fleet.config`); False when the group's
    bounds made it a no-op."""
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
        _settle(fleet, handle, halt, say)
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
        _settle(fleet, handle, halt, say)
    elif step.kind == "crash-loop":
        _crash_loop(fleet, halt, say)
    else:
        raise ValueError(f"unknown step kind {step.kind!r}")
    return True


def _crash_loop(fleet: GroupFleet, halt: threading.Event, say: Callable[[str], None]) -> None:
    crashes, join_timeout_s = fleet.config.crashes, fleet.config.join_timeout_s
    victim = fleet.members[0]
    name = fleet.spec.name
    say(f"crash-loop {name}: {victim.name} is killed, then each replacement {crashes - 1} times")
    fleet.crash_member(victim)
    for attempt in range(2, crashes + 1):
        if halt.is_set():
            return
        replacement = fleet.start_member()
        joined = fleet.wait_joined(replacement, join_timeout_s, halt)
        if halt.wait(fleet.config.crash_uptime_s if joined else 0):
            return
        fleet.crash_member(replacement)
        how = "after it joined" if joined else f"not joined within {join_timeout_s:.0f}s"
        say(f"crash-loop {name}: crash {attempt}/{crashes}, {replacement.name} killed {how}")
    if not halt.is_set():
        final = fleet.start_member()
        say(f"crash-loop {name}: {final.name} starts and stays")
        _settle(fleet, final, halt, say)


def _settle(
    fleet: GroupFleet, handle: MemberHandle, halt: threading.Event, say: Callable[[str], None]
) -> None:
    """Wait for the new member's first assignment, so that the next step starts from a
    settled group (an eager group assigns every member at once)."""
    timeout = fleet.config.join_timeout_s
    if not fleet.wait_joined(handle, timeout, halt) and not halt.is_set():
        say(f"{handle.name}: no assignment within {timeout:.0f}s, going on")
