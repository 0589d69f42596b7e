"""What a workload run did: counters per group, and their one-line rendering."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GroupSummary:
    group: str
    assignor: str  # a classic assignor, or "consumer (KIP-848)"
    topics: tuple[str, ...]
    members: int = 0  # running now (at the end of the run: before the final stop)
    members_started: int = 0
    members_stopped: int = 0  # clean stops (SIGTERM: the member left the group)
    crashes: int = 0  # SIGKILLs (the coordinator notices after session.timeout.ms)
    assign_callbacks: int = 0
    revoke_callbacks: int = 0
    lost_callbacks: int = 0
    consumed: int = 0
    commits: int = 0
    commit_failures: int = 0
    errors: int = 0
    joined: bool = False  # some member has had an assignment callback

    @property
    def rebalance_callbacks(self) -> int:
        return self.assign_callbacks + self.revoke_callbacks + self.lost_callbacks

    def line(self) -> str:
        return (
            f"{self.group} ({self.assignor}): {self.members} members, "
            f"{self.members_started} started, {self.members_stopped} stopped, "
            f"{self.crashes} crashed; {self.rebalance_callbacks} rebalance callbacks; "
            f"{self.consumed:,} consumed, {self.commits:,} commits"
            + (f", {self.commit_failures} failed commits" if self.commit_failures else "")
            + (f", {self.errors} consumer errors" if self.errors else "")
        )


@dataclass
class WorkloadSummary:
    produced: int = 0
    produce_failures: int = 0
    seconds: float = 0.0
    topics_created: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # "kind group" of each step carried out
    groups: dict[str, GroupSummary] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        head = (
            f"{self.seconds:.0f}s: {self.produced:,} messages produced"
            + (f" ({self.produce_failures:,} failed)" if self.produce_failures else "")
            + f", {len(self.steps)} steps"
        )
        return [head, *(g.line() for g in self.groups.values())]
