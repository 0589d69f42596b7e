"""The run's clock, ticked by the event thread: the end of the run, progress lines, the
health file, and a warning for a group that nobody has been assigned to."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence

from services.workload.config import WorkloadConfig
from services.workload.fleet import GroupFleet
from services.workload.producer import Trickle

KIP848_HINT = (
    "; KIP-848 (group.protocol=consumer) needs Apache Kafka 4.0 or newer (3.7+ with "
    "group.coordinator.rebalance.protocols=classic,consumer): run without --kip848"
)


class Monitor:
    def __init__(
        self,
        config: WorkloadConfig,
        fleets: Sequence[GroupFleet],
        trickle: Trickle | None,
        stop: threading.Event,
        halt: threading.Event,
        say: Callable[[str], None],
    ) -> None:
        self.config = config
        self.fleets = fleets
        self.trickle = trickle
        self.stop = stop
        self.halt = halt
        self.say = say
        self.started = time.monotonic()
        self.shown = self.started
        self.warnings: list[str] = []
        self._warned: set[str] = set()
        self._health_warned = False

    def tick(self) -> None:
        now = time.monotonic()
        duration = self.config.duration_s
        if self.stop.is_set() or (duration is not None and now - self.started >= duration):
            self.halt.set()
        if self.config.health_file:
            self._touch(self.config.health_file)
        self._watch_joins(now)
        if now - self.shown >= self.config.progress_interval_s:
            self.shown = now
            self.progress()

    def _touch(self, path: str) -> None:
        """Touch the health file; a file that cannot be written is warned about once, and
        the run goes on (its liveness check then fails, which is what it is for)."""
        try:
            with open(path, "a"):
                os.utime(path)
        except OSError as exc:
            if not self._health_warned:
                self._health_warned = True
                self.warnings.append(f"health file not written: {exc}")
                self.say(f"warning: health file not written: {exc}")

    def _watch_joins(self, now: float) -> None:
        for fleet in self.fleets:
            name = fleet.spec.name
            if name in self._warned or fleet.summary.joined:
                continue
            if now - fleet.started_at >= self.config.join_timeout_s:
                self._warned.add(name)
                hint = KIP848_HINT if fleet.spec.assignor is None else ""
                warning = (
                    f"{name}: no member has been assigned partitions after "
                    f"{self.config.join_timeout_s:.0f}s{hint}"
                )
                self.warnings.append(warning)
                self.say(f"warning: {warning}")

    def progress(self) -> None:
        if self.trickle is not None:
            self.say(f"produced {self.trickle.produced:,} messages")
        for fleet in self.fleets:
            with fleet.lock:
                line = fleet.summary.line()
            self.say(f"  {line}")
