"""Members of classic consumer groups run by Kafka's own Java consumer, one JVM each.

`tests/kafka/consumer/GroupMember.java` (compiled once per version of its source, see
`tests.kafka.javac`) subscribes, polls, commits synchronously and writes every rebalance
callback to a JSON Lines file with the generation and member id it had then
(`KafkaConsumer.groupMetadata()`) and its whole assignment after the callback. A
`JavaGroup` starts such members, stops them (SIGTERM: the consumer closes, and a dynamic
member leaves the group), kills them (SIGKILL: the session timeout removes them) and reads
what they saw from their logs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.fixtures.real_kafka import RealKafka
from tests.kafka.javac import JavaUnavailable, compiled, kafka_classpath
from tests.settings import kafka_unavailable

SOURCE = Path(__file__).resolve().parents[1] / "kafka" / "consumer" / "GroupMember.java"
JVM_OPTIONS = ("-Xmx96m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dlog4j2.level=WARN")
STABLE_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
QUIET_S = 2.0  # no callback for this long, with a complete assignment: stable
CALLBACKS = ("assigned", "revoked", "lost")

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class Event:
    """One line of a member's log."""

    kind: str
    time_ms: int
    generation: int | None = None
    member_id: str | None = None
    partitions: frozenset[TopicPartition] = frozenset()
    assignment: frozenset[TopicPartition] = frozenset()

    @classmethod
    def parse(cls, line: str) -> Event:
        raw = json.loads(line)
        return cls(
            raw["event"],
            raw["time_ms"],
            raw.get("generation"),
            raw.get("member_id"),
            frozenset((t, p) for t, p in raw.get("partitions", ())),
            frozenset((t, p) for t, p in raw.get("assignment", ())),
        )


@dataclass(frozen=True)
class JavaRuntime:
    """`java`, the Kafka classpath, and the folder of the compiled GroupMember class."""

    java: str
    classpath: str

    @classmethod
    def load(cls) -> JavaRuntime:
        """Raises JavaUnavailable where Java, javac or the classpath is missing."""
        java = shutil.which("java")
        if java is None:
            raise JavaUnavailable("java is not installed")
        classpath = kafka_classpath()
        classes = compiled(SOURCE, classpath, "consumer")
        return cls(java, f"{classes}{os.pathsep}{classpath}")

    @classmethod
    def for_test(cls) -> JavaRuntime:
        """`load()`, or skip the test saying why (fail under GROUPSCOPE_REQUIRE_KAFKA)."""
        try:
            return cls.load()
        except JavaUnavailable as exc:
            kafka_unavailable(str(exc))


class JavaMember:
    """One GroupMember JVM; its events are read back from `log`."""

    def __init__(
        self,
        runtime: JavaRuntime,
        log: Path,
        args: list[str],
        settings: dict[str, str | int | float],
    ) -> None:
        self.log, self.settings = log, settings
        instance_id = settings.get("instance-id")
        self.instance_id = None if instance_id is None else str(instance_id)
        self.err = log.with_suffix(".err")
        with open(self.err, "wb") as err:
            self.process = subprocess.Popen(
                [runtime.java, *JVM_OPTIONS, "-cp", runtime.classpath, "GroupMember", *args],
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        self.killed_at: float | None = None  # time.time() of the SIGKILL

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def events(self) -> list[Event]:
        """Every complete line written so far."""
        if not self.log.exists():
            return []
        text = self.log.read_text()
        return [Event.parse(line) for line in text.split("\n")[:-1]]

    def callbacks(self) -> list[Event]:
        return [e for e in self.events() if e.kind in CALLBACKS]

    def assigned(self) -> list[Event]:
        return [e for e in self.events() if e.kind == "assigned"]

    def member_ids(self) -> list[str]:
        """The member ids it had, in order of first use."""
        return list(dict.fromkeys(e.member_id for e in self.assigned() if e.member_id))

    def identity(self, event: Event) -> str:
        """How the history store names the member: its instance id if static (KIP-345)."""
        assert event.member_id is not None
        return self.instance_id or event.member_id

    def signal(self, sig: signal.Signals) -> None:
        if self.running:
            self.process.send_signal(sig)

    def wait(self, timeout: float = STOP_TIMEOUT_S) -> None:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"{self.log.name} ignored SIGTERM: {self.stderr()}") from None

    def stop(self) -> None:
        """SIGTERM: the consumer is woken up and closed, and writes `closed`."""
        self.signal(signal.SIGTERM)
        self.wait()
        if not self.events() or self.events()[-1].kind != "closed":
            raise AssertionError(f"{self.log.name} did not close: {self.stderr()}")

    def kill(self) -> None:
        """SIGKILL: no close, no LeaveGroup; the coordinator waits out the session."""
        self.killed_at = time.time()
        self.signal(signal.SIGKILL)
        self.process.wait(STOP_TIMEOUT_S)

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")[-2000:] if self.err.exists() else ""


class JavaGroup:
    """Java members of one group on `topics` ({name: partitions}), all of them with
    `assignor` and the consumer `settings` (GroupMember's options, without the dashes)."""

    def __init__(
        self,
        runtime: JavaRuntime,
        broker: RealKafka,
        group: str,
        topics: dict[str, int],
        assignor: str,
        directory: Path,
        **settings: str | int | float,
    ) -> None:
        self.runtime, self.broker, self.group = runtime, broker, group
        self.topics, self.assignor, self.directory = topics, assignor, directory
        self.settings = settings
        self.members: list[JavaMember] = []  # every one started, in order
        self.aborted = False  # set when another scenario failed: stop waiting
        directory.mkdir(parents=True, exist_ok=True)

    @property
    def partitions(self) -> frozenset[TopicPartition]:
        return frozenset((t, p) for t, n in self.topics.items() for p in range(n))

    def live(self) -> list[JavaMember]:
        return [m for m in self.members if m.running]

    def start(self, instance_id: str | None = None, **overrides: str | int | float) -> JavaMember:
        settings = self.settings | overrides
        if instance_id is not None:
            settings["instance-id"] = instance_id
        args = [
            *("--bootstrap", self.broker.bootstrap_servers, "--group", self.group),
            *("--topics", ",".join(self.topics), "--assignor", self.assignor),
            *("--log", str(self.directory / f"member-{len(self.members)}.jsonl")),
        ]
        for name, value in settings.items():
            args += [f"--{name}", str(value).lower() if isinstance(value, bool) else str(value)]
        member = JavaMember(
            self.runtime, self.directory / f"member-{len(self.members)}.jsonl", args, settings
        )
        self.members.append(member)
        return member

    def generation(self) -> int:
        """The latest generation any member was assigned in, -1 before any."""
        return max((e.generation or -1 for m in self.members for e in m.assigned()), default=-1)

    def _stable(self, newer_than: int) -> bool:
        live = self.live()
        lasts = [m.callbacks() for m in live]
        if not live or not all(lasts):
            return False
        last = [events[-1] for events in lasts]
        owned = [e.assignment for e in last]
        return (
            all(e.kind == "assigned" for e in last)
            and len({e.generation for e in last}) == 1
            and (last[0].generation or -1) > newer_than
            and all(owned)
            and sum(map(len, owned)) == len(frozenset().union(*owned)) == len(self.partitions)
            and time.time() - max(e.time_ms for e in last) / 1000 > QUIET_S
        )

    def await_stable(self, newer_than: int = -1, timeout: float = STABLE_TIMEOUT_S) -> int:
        """Wait until every running member was last given an assignment, all in one
        generation newer than `newer_than`, together every partition once, and no callback
        came for QUIET_S seconds; returns that generation."""
        deadline = time.monotonic() + timeout
        while not self._stable(newer_than):
            if self.aborted:
                raise AssertionError(f"{self.group}: aborted")
            dead = [m for m in self.members if not m.running and m.killed_at is None]
            dead = [m for m in dead if not m.events() or m.events()[-1].kind != "closed"]
            if dead:
                raise AssertionError(f"{self.group}: a member died: {dead[0].stderr()}")
            if time.monotonic() > deadline:
                state = {m.log.name: m.callbacks()[-1:] for m in self.live()}
                raise AssertionError(f"{self.group} not stable after {timeout}s: {state}")
            time.sleep(0.2)
        return self.generation()

    def stop_all(self) -> None:
        """SIGTERM to every running member at once, then wait for each to close."""
        live = self.live()
        for member in live:
            member.signal(signal.SIGTERM)
        for member in live:
            member.stop()

    def kill_all(self) -> None:
        for member in self.live():
            member.kill()
