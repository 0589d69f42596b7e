"""One consumer group member: the body of a child process.

Each member is a process so that it can crash for real: SIGKILL leaves its session in
the coordinator until `session.timeout.ms` runs out, as a crashed JVM would. SIGTERM is
a clean stop: the member commits and closes, and so leaves the group at once.

The member reports what happens on its end of a one-way pipe, as tuples
`(kind, member, *values)`:

- `started`, pid: the consumer is created;
- `assign`, `revoke` or `lost`, partitions in the callback, partitions owned after it:
  the rebalance callbacks;
- `consumed`, messages since the last report: about once a second, when any;
- `commit`, partitions committed: a successful commit;
- `commit_failed`, reason: a failed commit (e.g. during a rebalance);
- `error`, reason: a consumer error;
- `stopped`: after a clean close.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any

REPORT_INTERVAL_S = 1.0
POLL_S = 0.5


@dataclass(frozen=True)
class MemberSpec:
    name: str  # the member's client.id as well
    group: str
    topics: tuple[str, ...]
    assignor: str | None  # None: KIP-848 (group.protocol=consumer)
    session_timeout_ms: int = 10_000
    commit_interval_s: float = 2.0
    config: dict[str, str] = field(default_factory=dict)  # bootstrap.servers and extras


def consumer_config(spec: MemberSpec) -> dict[str, Any]:
    """librdkafka properties for the member. Offsets are committed by the member itself
    (every `commit_interval_s` and before partitions are revoked)."""
    config: dict[str, Any] = {
        "group.id": spec.group,
        "client.id": spec.name,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if spec.assignor is None:
        # KIP-848: the broker assigns and times sessions out; the classic timeouts and
        # partition.assignment.strategy are rejected in this mode.
        config["group.protocol"] = "consumer"
    else:
        config.update(
            {
                "partition.assignment.strategy": spec.assignor,
                "session.timeout.ms": spec.session_timeout_ms,
                "heartbeat.interval.ms": max(spec.session_timeout_ms // 3, 100),
                "max.poll.interval.ms": max(60_000, spec.session_timeout_ms),
            }
        )
    config.update(spec.config)
    return config


class _Member:
    def __init__(self, spec: MemberSpec, conn: Any) -> None:
        self.spec = spec
        self.conn = conn
        self.owned: set[tuple[str, int]] = set()
        self.stopping = False

    def report(self, kind: str, *values: Any) -> None:
        self.conn.send((kind, self.spec.name, *values))

    def _changed(self, kind: str, partitions: list[Any]) -> None:
        keys = {(p.topic, p.partition) for p in partitions}
        if kind == "assign":
            self.owned |= keys
        else:
            self.owned -= keys
        self.report(kind, len(keys), len(self.owned))

    def on_assign(self, _consumer: Any, partitions: list[Any]) -> None:
        self._changed("assign", partitions)

    def on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self.commit(consumer)
        self._changed("revoke", partitions)

    def on_lost(self, _consumer: Any, partitions: list[Any]) -> None:
        self._changed("lost", partitions)

    def commit(self, consumer: Any) -> None:
        from confluent_kafka import KafkaError, KafkaException

        if not self.owned:
            return
        try:
            committed = consumer.commit(asynchronous=False)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() != KafkaError._NO_OFFSET:  # nothing consumed since the last
                self.report("commit_failed", error.str())
            return
        self.report("commit", len(committed or []))

    def run(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer(consumer_config(self.spec))
        self.report("started", os.getpid())
        parent = os.getppid()
        consumer.subscribe(
            list(self.spec.topics),
            on_assign=self.on_assign,
            on_revoke=self.on_revoke,
            on_lost=self.on_lost,
        )
        consumed = 0
        last_commit = last_report = time.monotonic()
        while not self.stopping and os.getppid() == parent:
            for message in consumer.consume(100, POLL_S):
                if error := message.error():
                    self.report("error", error.str())
                else:
                    consumed += 1
            now = time.monotonic()
            if now - last_commit >= self.spec.commit_interval_s:
                self.commit(consumer)
                last_commit = now
            if consumed and now - last_report >= REPORT_INTERVAL_S:
                self.report("consumed", consumed)
                consumed, last_report = 0, now
        if consumed:
            self.report("consumed", consumed)
        self.commit(consumer)
        consumer.close()  # revokes (and commits) what is left, then leaves the group
        self.report("stopped")


def run_member(spec: MemberSpec, conn: Any) -> None:
    """The child process's entry point: run until SIGTERM or until the parent is gone."""
    member = _Member(spec, conn)

    def stop(_signum: int, _frame: Any) -> None:
        member.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    try:
        member.run()
    except (BrokenPipeError, EOFError):
        pass  # the parent is gone
    finally:
        conn.close()
