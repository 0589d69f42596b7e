"""What a scenario asks for: groups, their consumers (slots) and timed actions."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

ACTIONS = ("join", "leave", "crash", "restart", "stall", "subscribe", "add-partitions", "delete")


@dataclass(frozen=True)
class Action:
    """At `at_ms` after the start, do `kind` to consumer `slot` (an index) with `args`.

    - join: start consumer `slot` (a new slot index adds a consumer); args: topics.
    - leave: close it cleanly (commit, LeaveGroup).
    - crash: kill it (no LeaveGroup; the session timeout removes it); args:
      restart_after_ms (None: it stays down).
    - restart: a deploy: close (a static member sends no LeaveGroup) and start again after
      args downtime_ms.
    - stall: stop polling for args duration_ms (past `max.poll.interval.ms` it is kicked).
    - subscribe: args topics.
    - add-partitions: args topic, count (the new total).
    - delete: every consumer leaves, then DeleteGroups removes the group.
    """

    at_ms: int
    kind: str
    slot: int = 0
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class GroupSpec:
    """One consumer group. `protocol` is "classic" or "consumer" (KIP-848)."""

    name: str
    topics: dict[str, int]
    subscription: list[str] | None = None  # the consumers' topics; None: all of `topics`
    members: int = 3
    protocol: str = "classic"
    assignor: str = "range"
    static: bool = False
    session_timeout_ms: int = 45_000
    max_poll_interval_ms: int = 300_000  # the member's rebalance timeout
    heartbeat_interval_ms: int = 3_000
    commit_interval_ms: int = 5_000
    messages_per_second: float = 50.0  # per partition
    metadata: str = ""
    transactional: float = 0.0  # share of commits sent in transactions
    aborted: float = 0.0  # share of transactions aborted
    actions: list[Action] = field(default_factory=list)


def kafka_uuid(rng: random.Random) -> str:
    """A random `org.apache.kafka.common.Uuid` in its 22-character base64url form."""
    import base64

    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode()[:22]


def java_uuid(rng: random.Random) -> str:
    """A random `java.util.UUID.randomUUID()` (version 4) string."""
    n = rng.getrandbits(128)
    n = (n & ~(0xF << 76)) | (0x4 << 76)
    n = (n & ~(0x3 << 62)) | (0x2 << 62)
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
