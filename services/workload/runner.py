"""`run_workload`: topics, the trickle, the groups, and the schedule, until stopped."""

from __future__ import annotations

import copy
import multiprocessing
import sys
import threading
import time
from collections.abc import Callable

from services.workload.config import ClientConfigError, WorkloadConfig
from services.workload.events import EventPump
from services.workload.fleet import GroupFleet
from services.workload.member import consumer_config
from services.workload.monitor import Monitor
from services.workload.producer import Trickle
from services.workload.schedule import run_step, steps
from services.workload.summary import WorkloadSummary
from services.workload.topics import ensure_topics


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def check_client_config(config: WorkloadConfig) -> None:
    """Build (and close) each group's consumer once, so that a bad property is one
    ClientConfigError here rather than a crash in every member process."""
    from confluent_kafka import Consumer, KafkaException

    for spec in config.groups:
        member = GroupFleet.member_spec_for(spec, config, f"{spec.name}-check")
        try:
            Consumer(consumer_config(member)).close()
        except KafkaException as exc:
            raise ClientConfigError(f"group {spec.name}: {exc.args[0].str()}") from None


def run_workload(
    config: WorkloadConfig,
    stop: threading.Event | None = None,
    say: Callable[[str], None] = _stderr,
) -> WorkloadSummary:
    """Run until `stop` is set or `config.duration_s` has passed; then stop every member
    cleanly and return what happened. Progress goes to `say`, one line at a time."""
    stop = stop or threading.Event()
    halt = threading.Event()
    started = time.monotonic()

    def timed(line: str) -> None:
        say(f"[{time.monotonic() - started:5.0f}s] {line}")

    check_client_config(config)
    client = {"bootstrap.servers": config.bootstrap_servers, **config.kafka_config}
    summary = WorkloadSummary()
    summary.topics_created = ensure_topics(
        client, config.topics, config.partitions, config.replication_factor
    )
    if summary.topics_created:
        timed(f"created topics {', '.join(summary.topics_created)}")

    context = multiprocessing.get_context("spawn")  # no fork of librdkafka's threads
    lock = threading.Condition()
    fleets: list[GroupFleet] = []
    monitor = Monitor(config, fleets, None, stop, halt, timed)
    pump = EventPump(lock, monitor.tick)
    trickle = Trickle(client, config.topics, config.rate)
    monitor.trickle = trickle
    for spec in config.groups:
        fleet = GroupFleet(spec, config, context, pump)
        fleet.say = timed
        fleets.append(fleet)
    pump.start()
    trickle.start()
    try:
        _start_groups(config, fleets, halt, timed)
        _follow_schedule(config, fleets, halt, timed, summary)
    finally:
        if not halt.is_set():
            halt.set()  # an exception: stop the waits of any step still running
        timed("stopping: every member leaves its group")
        for fleet in fleets:
            fleet.stop_all()
        trickle.stop()
        pump.drain(5)
        pump.stop()
    summary.produced = trickle.produced
    summary.produce_failures = trickle.failed
    summary.seconds = time.monotonic() - started
    summary.warnings = list(monitor.warnings)
    summary.groups = {f.spec.name: copy.copy(f.summary) for f in fleets}
    return summary


def _start_groups(
    config: WorkloadConfig,
    fleets: list[GroupFleet],
    halt: threading.Event,
    say: Callable[[str], None],
) -> None:
    """Start every group's first members, then wait (up to the join timeout) until each
    has had its first assignment, so that the first step meets settled groups."""
    handles = []
    for fleet in fleets:
        handles += [(fleet, fleet.start_member()) for _ in range(fleet.spec.members)]
        say(f"{fleet.spec.name}: {fleet.spec.members} members ({fleet.spec.label})")
    deadline = time.monotonic() + config.join_timeout_s
    joined = all(
        fleet.wait_joined(handle, max(deadline - time.monotonic(), 0), halt)
        for fleet, handle in handles
    )
    if joined:
        say("every member has its first assignment")


def _follow_schedule(
    config: WorkloadConfig,
    fleets: list[GroupFleet],
    halt: threading.Event,
    say: Callable[[str], None],
    summary: WorkloadSummary,
) -> None:
    by_name = {f.spec.name: f for f in fleets}
    last = None if config.cycles is None else config.cycles * len(config.steps)
    for index, step in enumerate(steps(list(by_name), config.steps)):
        if index == last or halt.wait(config.step_interval_s):
            return
        if run_step(step, by_name[step.group], halt, say):
            summary.steps.append(str(step))
