"""Real consumer groups on a real broker, and what their clients saw.

`ConsumerGroup` runs confluent-kafka consumers of one group in the test's thread: they
subscribe, rebalance until the group is stable, consume and commit synchronously. Every
rebalance callback is recorded with the member id and generation the client had at that
moment, read from librdkafka's serialized group metadata (`consumer_group_metadata()`,
written by `rd_kafka_consumer_group_metadata_write`: the magic "CGMDv2:", the generation
id as a native int32, then the group id and the member id, each NUL-terminated).
"""

from __future__ import annotations

import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from tests.fixtures.real_kafka import RealKafka

CGMD_MAGIC = b"CGMDv2:"
JOB_TIMEOUT_S = 300.0
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
    """A member's whole assignment after a rebalance callback, at its generation."""

    member_id: str
    generation: int
    partitions: frozenset[int]


@dataclass
class Member:
    consumer: Any
    owned: set[int] = field(default_factory=set)
    seen: list[Assigned] = field(default_factory=list)
    last_callback: float = 0.0

    def on_assign(self, consumer: Any, partitions: list) -> None:
        """Both eager (the whole assignment) and incremental (cooperative, KIP-848)
        callbacks add what they list; a revocation removes what it lists."""
        self.owned |= {tp.partition for tp in partitions}
        self.seen.append(Assigned(*member_identity(consumer), frozenset(self.owned)))
        self.last_callback = time.monotonic()

    def on_revoke(self, consumer: Any, partitions: list) -> None:
        self.owned -= {tp.partition for tp in partitions}
        self.last_callback = time.monotonic()

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}


class ConsumerGroup:
    """`size` members of `group` on `topic` (of `partitions` partitions); `join()` adds
    one."""

    def __init__(
        self,
        broker: RealKafka,
        group: str,
        topic: str,
        partitions: int,
        config: dict[str, Any],
        size: int = 2,
    ) -> None:
        self.broker, self.config = broker, config
        self.group, self.topic, self.partitions = group, topic, partitions
        self.commits = 0  # offset commit records written: one per partition committed
        self.members: list[Member] = []
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
        member = Member(consumer)
        consumer.subscribe(
            [self.topic],
            on_assign=member.on_assign,
            on_revoke=member.on_revoke,
            on_lost=member.on_revoke,
        )
        self.members.append(member)

    def poll(self, timeout: float = 0.1) -> None:
        """Serve every member's callbacks once, dropping what they fetch."""
        for member in self.members:
            member.consumer.poll(timeout)

    def _stable(self) -> bool:
        owned = [m.owned for m in self.members]
        union = set().union(*owned)
        return (
            all(owned)
            and sum(map(len, owned)) == len(union) == self.partitions
            and all(m.owned == m.assignment() for m in self.members)
            and len({member_identity(m.consumer)[1] for m in self.members}) == 1
            and time.monotonic() - max(m.last_callback for m in self.members) > QUIET_S
        )

    def await_stable(self, timeout: float = STABLE_TIMEOUT_S) -> None:
        """Poll until every partition is assigned to exactly one member, every member has
        some, all share one generation and no callback came for QUIET_S seconds. What the
        polls fetch is dropped: call this while the topic has nothing to read."""
        deadline = time.monotonic() + timeout
        while not self._stable():
            if time.monotonic() > deadline:
                raise AssertionError(f"group {self.group} not stable: {self.final()}")
            self.poll()

    def consume_and_commit(self, highs: dict[int, int], batch: int = 5) -> None:
        """Consume every partition up to its high watermark, committing the position of
        each partition after every `batch` messages read, synchronously."""
        from confluent_kafka import KafkaException, TopicPartition

        done: dict[int, int] = {}
        deadline = time.monotonic() + STABLE_TIMEOUT_S
        while any(done.get(p, 0) < high for p, high in highs.items()):
            if time.monotonic() > deadline:
                raise AssertionError(f"group {self.group} committed only {done} of {highs}")
            for member in self.members:
                messages = member.consumer.consume(batch, 0.2)
                ends = {m.partition(): m.offset() + 1 for m in messages if m.error() is None}
                if not ends:
                    continue
                offsets = [TopicPartition(self.topic, p, o) for p, o in sorted(ends.items())]
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

    def seen(self) -> list[Assigned]:
        return [a for m in self.members for a in m.seen]

    def close(self) -> None:
        for member in self.members:
            member.consumer.close()


def run_job_once(
    broker: RealKafka, url: str, checkpoint: Path, groups: Sequence[ConsumerGroup] = ()
) -> subprocess.CompletedProcess:
    """`groupscope stream --once` on the broker, the groups' members polled meanwhile
    (so that they stay in their generation)."""
    args = [
        *(sys.executable, "-m", "services.cli", "stream", "--once"),
        *("--bootstrap-servers", broker.bootstrap_servers, "--database-url", url),
        *("--checkpoint", str(checkpoint)),
    ]
    err = checkpoint.parent / "job.err"
    with open(err, "w") as out:
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=out, text=True)
        deadline = time.monotonic() + JOB_TIMEOUT_S
        try:
            while process.poll() is None:
                if time.monotonic() > deadline:
                    raise AssertionError(f"the job ran over {JOB_TIMEOUT_S}s")
                for group in groups:
                    group.poll(0.05)
                time.sleep(0.2)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
    return subprocess.CompletedProcess(args, process.returncode, "", err.read_text())


def rows(engine: Engine, sql: str, **params) -> list:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).all()


def stored_generations(
    engine: Engine, group: str, by_instance: bool = False
) -> dict[int, dict[str, frozenset[tuple[str, int]]]]:
    """generation -> member id -> (topic, partition)s; with `by_instance`, a static
    member is keyed by its group instance id instead (KIP-345: it keeps that across
    restarts, while the coordinator gives it a new member id each time)."""
    out: dict[int, dict[str, frozenset[tuple[str, int]]]] = {}
    key = "coalesce(m.group_instance_id, m.member_id)" if by_instance else "m.member_id"
    sql = (
        f"SELECT g.generation, {key}, m.assignment FROM generations g "
        "LEFT JOIN generation_members m ON m.generation_pk = g.id WHERE g.group_name = :group"
    )
    for generation, member_id, assignment in rows(engine, sql, group=group):
        members = out.setdefault(generation, {})
        if member_id is not None:
            members[member_id] = frozenset(
                (t, p) for t, ps in (assignment or {}).items() for p in ps
            )
    return out
