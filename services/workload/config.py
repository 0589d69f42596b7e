"""What the workload runs: topics, groups, the schedule's pace. Standard library only."""

from __future__ import annotations

from dataclasses import dataclass, field

CLASSIC_ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")
STEP_KINDS = ("scale-up", "restart", "crash-loop", "scale-down")
# One cycle of the schedule. Step i (over all cycles) goes to group i mod (number of
# groups); with seven steps and one to three groups, every group meets every kind of step
# within as many cycles as there are groups. The crash-loop comes first, so that the
# first storm shows within minutes; at the default pace (a step every 90 s) the next
# crash-loop hits another group about 10 minutes later, and in between each group sees
# two to four rebalances per 10 minutes: fewer than a storm (5 within 10 minutes).
DEFAULT_STEPS = (
    "crash-loop",
    "scale-up",
    "restart",
    "scale-up",
    "scale-down",
    "restart",
    "scale-down",
)


class ClientConfigError(ValueError):
    """A client property that librdkafka rejects."""


@dataclass(frozen=True)
class GroupSpec:
    """One consumer group: `assignor` is a classic assignor, or `None` for KIP-848
    (`group.protocol=consumer`, the broker assigns)."""

    name: str
    topics: tuple[str, ...]
    assignor: str | None
    members: int = 3
    min_members: int = 1
    max_members: int = 5

    @property
    def protocol(self) -> str:
        return "classic" if self.assignor else "consumer"

    @property
    def label(self) -> str:
        return self.assignor or "consumer (KIP-848)"


@dataclass
class WorkloadConfig:
    bootstrap_servers: str
    groups: list[GroupSpec]
    topics: tuple[str, ...]
    partitions: int = 6
    replication_factor: int = -1  # the broker's default.replication.factor
    rate: float = 20.0  # messages per second, over all topics
    step_interval_s: float = 90.0
    steps: tuple[str, ...] = DEFAULT_STEPS
    duration_s: float | None = None
    cycles: int | None = None  # stop after this many cycles of the schedule
    session_timeout_ms: int = 10_000
    crashes: int = 5
    crash_uptime_s: float = 3.0
    join_timeout_s: float = 60.0
    commit_interval_s: float = 2.0
    progress_interval_s: float = 15.0
    kafka_config: dict[str, str] = field(default_factory=dict)
    health_file: str | None = None


def default_groups(
    prefix: str = "workload", kip848: bool = False, members: int = 3
) -> tuple[tuple[str, ...], list[GroupSpec]]:
    """The default topics and groups under `prefix`.

    - `<prefix>-range`: eager `range` over both topics (every rebalance stops the group);
    - `<prefix>-cooperative`: `cooperative-sticky` over the orders topic (incremental);
    - `<prefix>-kip848`: with `kip848`, the KIP-848 protocol over both topics.
    """
    orders, payments = f"{prefix}-orders", f"{prefix}-payments"
    groups = [
        GroupSpec(f"{prefix}-range", (orders, payments), "range", members),
        GroupSpec(f"{prefix}-cooperative", (orders,), "cooperative-sticky", members),
    ]
    if kip848:
        groups.append(GroupSpec(f"{prefix}-kip848", (orders, payments), None, members))
    return (orders, payments), groups


def parse_steps(text: str) -> tuple[str, ...]:
    """A comma-separated list of step kinds; ValueError with a one-line reason."""
    steps = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = [s for s in steps if s not in STEP_KINDS]
    if unknown:
        raise ValueError(f"unknown step {unknown[0]!r}: choose from {', '.join(STEP_KINDS)}")
    if not steps:
        raise ValueError(f"no steps given: choose from {', '.join(STEP_KINDS)}")
    return steps
