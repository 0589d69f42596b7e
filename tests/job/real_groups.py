"""Real consumer groups on a real broker, and what their clients saw.

`ConsumerGroup` runs confluent-kafka consumers of one group in the test's thread: they
subscribe, rebalance until the group is stable, consume and commit synchronously. Every
rebalance callback (`on_assign`, `on_revoke`, `on_lost`) is written at once to the
member's JSON Lines log, in the format of Kafka's Java `GroupMember`
(tests/kafka/consumer/GroupMember.java, read by `tests.job.java_members.Event`):
`{"event": "assigned" | "revoked" | "lost", "time_ms", "generation", "member_id",
"partitions": the callback's [topic, partition]s, "assignment": the member's whole
assignment after it}`. The member id and generation are those the client had at that
moment, read from librdkafka's serialized group metadata (`consumer_group_metadata()`,
written by `rd_kafka_consumer_group_metadata_write`: the magic "CGMDv2:", the generation
id as a native int32, then the group id and the member id, each NUL-terminated); for a
KIP-848 member the generation is its member epoch. `seen()` reads the logs back, those
of members that left included: they, not the consumers' memory, are what the clients saw.
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fixtures.real_kafka import RealKafka
from tests.job.java_members import Event

CGMD_MAGIC = b"CGMDv2:"
STABLE_TIMEOUT_S = 60.0
QUIET_S = 2.0  # no rebalance callback for this long, with a complete assignment: stable


def member_identity(consumer: Any) -> tuple[str, int]:
    """`(member id, generation)` of a consumer, as librdkafka holds them now."""
    blob: bytes = consumer.consumer_group_metadata()
    if not blob.startswith(CGMD_MAGIC):
        raise AssertionError(f"unknown consumer group metadata format: {blob[:16]!r}")
    (generation,) = struct.unpack_from("=i", blob, len(CGMD_MAGIC))
    _group, member_id = blob[len(CGMD_MAGIC) + 4 :].split(b"\0")[:2]
    return member_id.decode(), generation


@dataclass(frozen=True)
class Assigned:
    """A member's whole assignment after a rebalance callback, at its generation:
    `partitions` of the group's one topic, `held` as (topic, partition)s."""

    member_id: str
    generation: int
    partitions: frozenset[int]
    held: frozenset[tuple[str, int]] = frozenset()


def read_log(log: Path) -> list[Event]:
    """Every complete line of a member's log."""
    if not log.exists():
        return []
    return [Event.parse(line) for line in log.read_text().split("\n")[:-1]]


@dataclass
class Member:
    consumer: Any
    log: Path  # its callbacks, one JSON line each
    held: set[tuple[str, int]] = field(default_factory=set)  # (topic, partition)s
    last_callback: float = 0.0

    def _write(self, event: str, consumer: Any, partitions: list) -> None:
        """One line, flushed and closed before the callback returns."""
        member_id, generation = member_identity(consumer)
        line = {
            "event": event,
            "time_ms": int(time.time() * 1000),
            "generation": generation,
            "member_id": member_id,
            "partitions": sorted([tp.topic, tp.partition] for tp in partitions),
            "assignment": sorted(map(list, self.held)),
        }
        with self.log.open("a") as out:
            out.write(json.dumps(line) + "\n")
        self.last_callback = time.monotonic()

    def on_assign(self, consumer: Any, partitions: list) -> None:
        """Both eager (the whole assignment) and incremental (cooperative, KIP-848)
        callbacks add what they list; a revocation or a loss removes what it lists."""
        self.held |= {(tp.topic, tp.partition) for tp in partitions}
        self._write("assigned", consumer, partitions)

    def on_revoke(self, consumer: Any, partitions: list) -> None:
        self.held -= {(tp.topic, tp.partition) for tp in partitions}
        self._write("revoked", consumer, partitions)

    def on_lost(self, consumer: Any, partitions: list) -> None:
        self.held -= {(tp.topic, tp.partition) for tp in partitions}
        self._write("lost", consumer, partitions)

    def events(self) -> list[Event]:
        return read_log(self.log)

    def assignment(self) -> set[int]:
        return {p for _, p in self.held_now()}

    def held_now(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}


class ConsumerGroup:
    """`size` members of `group` on `topic` (of `partitions` partitions); `join()` adds
    one. With `subscription` (topic names, or librdkafka regexes starting with `^`) the
    members subscribe to that instead, and `partitions` counts those of every topic it
    matches: set it anew when a topic or partitions are added. Each member's log is
    `<logs>/<group>-<n>.jsonl`, n counting every member that ever joined."""

    def __init__(
        self,
        broker: RealKafka,
        group: str,
        topic: str,
        partitions: int,
        config: dict[str, Any],
        *,
        logs: Path,
        size: int = 2,
        subscription: Sequence[str] | None = None,
    ) -> None:
        self.broker, self.config = broker, config
        self.group, self.topic, self.partitions = group, topic, partitions
        self.subscription = list(subscription or [topic])
        self.commits = 0  # offset commit records written: one per partition committed
        self.members: list[Member] = []  # those in the group now
        self.logs: list[Path] = []  # of every member that joined
        logs.mkdir(parents=True, exist_ok=True)
        self.directory = logs
        for _ in range(size):
            self.join()

    def join(self) -> None:
        """One more member: it subscribes, and joins at its first poll."""
        from confluent_kafka import Consumer

        consumer = Consumer(
            self.broker.client_config(
                **{
                    "group.id": self.group,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    "log_level": 3,
                    **self.config,
                }
            )
        )
        log = self.directory / f"{self.group}-{len(self.logs)}.jsonl"
        member = Member(consumer, log)
        consumer.subscribe(
            self.subscription,
            on_assign=member.on_assign,
            on_revoke=member.on_revoke,
            on_lost=member.on_lost,
        )
        self.members.append(member)
        self.logs.append(log)

    def poll(self, timeout: float = 0.1) -> None:
        """Serve every member's callbacks once, dropping what they fetch."""
        for member in self.members:
            member.consumer.poll(timeout)

    def leave(self) -> None:
        """The last member to join leaves the group (LeaveGroup, or a KIP-848 heartbeat
        with epoch -1) as it closes."""
        self.members.pop().consumer.close()

    def stable(self) -> bool:
        """Every partition held by exactly one member, every member holding some, one
        generation, and no callback for QUIET_S seconds."""
        held = [m.held for m in self.members]
        union = set().union(*held)
        return (
            all(held)
            and sum(map(len, held)) == len(union) == self.partitions
            and all(m.held == m.held_now() for m in self.members)
            and len({member_identity(m.consumer)[1] for m in self.members}) == 1
            and time.monotonic() - max(m.last_callback for m in self.members) > QUIET_S
        )

    def await_stable(self, timeout: float = STABLE_TIMEOUT_S) -> None:
        """Poll until every partition is assigned to exactly one member, every member has
        some, all share one generation and no callback came for QUIET_S seconds. What the
        polls fetch is dropped: call this while the topic has nothing to read."""
        await_all_stable([self], timeout)

    def consume_and_commit(
        self, highs: Mapping[int, int] | Mapping[tuple[str, int], int], batch: int = 5
    ) -> None:
        """Consume every partition up to its high watermark, committing the position of
        each partition after every `batch` messages read, synchronously. `highs` is by
        partition of the group's topic, or by (topic, partition)."""
        from confluent_kafka import KafkaException, TopicPartition

        wanted = {(k if isinstance(k, tuple) else (self.topic, k)): h for k, h in highs.items()}
        done: dict[tuple[str, int], int] = {}
        deadline = time.monotonic() + STABLE_TIMEOUT_S
        while any(done.get(tp, 0) < high for tp, high in wanted.items()):
            if time.monotonic() > deadline:
                raise AssertionError(f"group {self.group} committed only {done} of {wanted}")
            for member in self.members:
                messages = member.consumer.consume(batch, 0.2)
                ends = {
                    (m.topic(), m.partition()): m.offset() + 1
                    for m in messages
                    if m.error() is None
                }
                if not ends:
                    continue
                offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(ends.items())]
                try:
                    member.consumer.commit(offsets=offsets, asynchronous=False)
                except KafkaException as exc:  # a rebalance in between: not written
                    if not exc.args[0].retriable() and exc.args[0].name() not in (
                        "ILLEGAL_GENERATION",
                        "REBALANCE_IN_PROGRESS",
                        "UNKNOWN_MEMBER_ID",
                        "STALE_MEMBER_EPOCH",
                    ):
                        raise
                    continue
                self.commits += len(offsets)
                done |= ends

    def final(self) -> dict[str, tuple[int, frozenset[int]]]:
        """Each member's id: (generation, partitions), as the clients see them now."""
        out = {}
        for m in self.members:
            member_id, generation = member_identity(m.consumer)
            out[member_id] = (generation, frozenset(m.assignment()))
        return out

    def holdings(self) -> dict[str, tuple[int, frozenset[tuple[str, int]]]]:
        """As `final`, the partitions as (topic, partition)s."""
        out = {}
        for m in self.members:
            member_id, generation = member_identity(m.consumer)
            out[member_id] = (generation, frozenset(m.held_now()))
        return out

    def events(self) -> list[Event]:
        """Every callback of every member that ever joined, as their logs have it."""
        return [event for log in self.logs for event in read_log(log)]

    def seen(self) -> list[Assigned]:
        """Every assignment callback, from the logs: the member's whole assignment after
        it, at the generation its client had then."""
        out = []
        for event in self.events():
            if event.kind == "assigned":
                assert event.member_id is not None and event.generation is not None, event
                on_topic = frozenset(p for t, p in event.assignment if t == self.topic)
                out.append(Assigned(event.member_id, event.generation, on_topic, event.assignment))
        return out

    def generations_seen(self) -> set[int]:
        """Each generation (KIP-848: member epoch) in which any callback came."""
        return {e.generation for e in self.events() if e.generation is not None}

    def close(self) -> None:
        for member in self.members:
            member.consumer.close()


def await_all_stable(groups: Iterable[ConsumerGroup], timeout: float = STABLE_TIMEOUT_S) -> None:
    """`ConsumerGroup.await_stable` for several groups at once, every member of each
    polled in turn: their rebalances overlap in time, and each group's QUIET_S runs
    while the others settle instead of after them."""
    groups = list(groups)
    deadline = time.monotonic() + timeout
    while unstable := [g for g in groups if not g.stable()]:
        if time.monotonic() > deadline:
            raise AssertionError(f"group {unstable[0].group} not stable: {unstable[0].final()}")
        for group in groups:
            group.poll()
