"""The parent's side of one group: its member processes, and what they reported.

`start_member`, `stop_member` (SIGTERM: the member commits and leaves the group) and
`crash_member` (SIGKILL: the coordinator finds out only when the session times out)
are what the schedule's steps are made of.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from services.workload.config import GroupSpec, WorkloadConfig
from services.workload.events import EventPump
from services.workload.member import MemberSpec, run_member
from services.workload.summary import GroupSummary

STOP_TIMEOUT_S = 20.0


@dataclass
class MemberHandle:
    name: str
    process: Any  # multiprocessing.Process
    started_at: float = field(default_factory=time.monotonic)
    joined: bool = False  # has had an assignment callback
    owned: int = 0  # partitions owned after the last callback
    leaving: bool = False  # asked to stop, or killed
    stopped: bool = False  # reported a clean close (a SIGTERM, maybe from outside)
    closed: bool = False  # its pipe has closed: the process has ended


class GroupFleet:
    def __init__(
        self,
        spec: GroupSpec,
        config: WorkloadConfig,
        context: Any,
        pump: EventPump,
    ) -> None:
        self.spec = spec
        self.config = config
        self.context = context
        self.pump = pump
        self.lock = pump.lock
        self.members: list[MemberHandle] = []  # running and not leaving, oldest first
        self.started_at = time.monotonic()
        self.summary = GroupSummary(spec.name, spec.label, spec.topics)
        self.errors_seen: set[str] = set()
        self.say: Any = lambda _line: None
        self._numbers = itertools.count(1)

    @staticmethod
    def member_spec_for(spec: GroupSpec, config: WorkloadConfig, name: str) -> MemberSpec:
        return MemberSpec(
            name=name,
            group=spec.name,
            topics=spec.topics,
            assignor=spec.assignor,
            session_timeout_ms=config.session_timeout_ms,
            commit_interval_s=config.commit_interval_s,
            config={"bootstrap.servers": config.bootstrap_servers, **config.kafka_config},
        )

    def start_member(self) -> MemberHandle:
        name = f"{self.spec.name}-{next(self._numbers)}"
        receive, send = self.context.Pipe(duplex=False)
        spec = self.member_spec_for(self.spec, self.config, name)
        process = self.context.Process(target=run_member, args=(spec, send), name=name, daemon=True)
        process.start()
        send.close()  # the child holds the only writing end: its exit closes the pipe
        handle = MemberHandle(name, process)
        with self.lock:
            self.members.append(handle)
            self.summary.members_started += 1
            self.summary.members = len(self.members)
        self.pump.watch(
            receive,
            lambda event: self._on_event(handle, event),
            lambda: self._on_close(handle),
        )
        return handle

    def _leave(self, handle: MemberHandle) -> None:
        with self.lock:
            handle.leaving = True
            if handle in self.members:
                self.members.remove(handle)
            self.summary.members = len(self.members)

    def stop_member(self, handle: MemberHandle) -> None:
        """A clean stop: SIGTERM, then wait for the process (SIGKILL after a timeout)."""
        self._leave(handle)
        handle.process.terminate()
        handle.process.join(STOP_TIMEOUT_S)
        if handle.process.is_alive():
            handle.process.kill()
            handle.process.join()
        with self.lock:
            self.summary.members_stopped += 1

    def crash_member(self, handle: MemberHandle) -> None:
        """A crash: SIGKILL, no LeaveGroup; the session stays until it times out."""
        self._leave(handle)
        handle.process.kill()
        handle.process.join()
        with self.lock:
            self.summary.crashes += 1

    def wait_joined(self, handle: MemberHandle, timeout: float, halt: threading.Event) -> bool:
        """Wait until the member has had its first assignment (or it ended, or `halt`)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while not (handle.joined or handle.closed or halt.is_set()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(min(left, 0.5))
            return handle.joined

    def _on_event(self, handle: MemberHandle, event: tuple) -> None:
        kind, values = event[0], event[2:]
        s = self.summary
        if kind in ("assign", "revoke", "lost"):
            handle.owned = values[1]
            if kind == "assign":
                s.assign_callbacks += 1
                handle.joined = s.joined = True
            elif kind == "revoke":
                s.revoke_callbacks += 1
            else:
                s.lost_callbacks += 1
        elif kind == "consumed":
            s.consumed += values[0]
        elif kind == "commit":
            s.commits += 1
        elif kind == "commit_failed":
            s.commit_failures += 1
        elif kind == "stopped":
            handle.stopped = True
        elif kind == "error":
            s.errors += 1
            if values[0] not in self.errors_seen:  # each distinct error once
                self.errors_seen.add(values[0])
                self.say(f"{handle.name}: consumer error: {values[0]}")

    def _on_close(self, handle: MemberHandle) -> None:
        handle.closed = True
        if not handle.leaving:  # it ended by itself: count it out
            if not handle.stopped:
                handle.process.join(1)
                code = handle.process.exitcode
                self.say(f"{handle.name} exited unexpectedly (exit code {code})")
            if handle in self.members:
                self.members.remove(handle)
            self.summary.members = len(self.members)

    def stop_all(self) -> None:
        """Stop every member at once (SIGTERM), then wait for them all. The summary's
        `members` keeps the count from before."""
        with self.lock:
            handles = list(self.members)
            self.members.clear()
            for handle in handles:
                handle.leaving = True
        for handle in handles:
            handle.process.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for handle in handles:
            handle.process.join(max(deadline - time.monotonic(), 0.1))
            if handle.process.is_alive():
                handle.process.kill()
                handle.process.join()
        with self.lock:
            self.summary.members_stopped += len(handles)
