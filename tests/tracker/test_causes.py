"""Rebalance causes against the simulator's ground truth, scenario by scenario.

Each scenario's records go through the tracker in log order, offset commits included
(their times are the evidence of timeouts). `expected` maps the ground-truth events
between two rebalances to the causes they must produce; the tracker never sees them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from services.codec import decode_record
from services.simulator.log import Batch
from services.simulator.params import Params
from services.simulator.runner import simulate
from services.simulator.scenarios import SCENARIOS, build
from services.store.batch import Generation
from services.tracker import GenerationTracker, Position


class MemorySink:
    def __init__(self) -> None:
        self.batches: list[Batch] = []

    def write(self, batch: Batch) -> None:
        self.batches.append(batch)

    def write_transaction(self, batch: Batch, commit: bool) -> None:
        if commit:  # read_committed: aborted commits never count
            self.batches.append(batch)

    def close(self) -> None:
        pass


def records(sink: MemorySink) -> Iterator[tuple[dict[str, Any], Position]]:
    for batch in sink.batches:
        time = datetime.fromtimestamp(batch.timestamp / 1000, tz=UTC)
        for i, (key, value) in enumerate(zip(batch.keys, batch.values, strict=True)):
            yield decode_record(key, value), Position(batch.partition, batch.offset + i, time)


def run(scenario: str, tmp: Path, **settings: str) -> tuple[list[Generation], Path]:
    specs, duration = build([scenario], Params(settings), None)
    sink = MemorySink()
    simulate(specs, sink, str(tmp), duration, seed=7)
    tracker = GenerationTracker()
    for record, position in records(sink):
        tracker.add(record, position)
    generations, _ = tracker.drain()
    return generations, tmp / "truth"


def truth(path: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path / f"{name}.jsonl").open()]


REMOVALS = {
    "session-timeout": "session_timeout",
    "poll-timeout": "poll_timeout",
    "rebalance-timeout": "poll_timeout",
}


def expected(events: list[dict[str, Any]], seen_hosts: set[str]) -> set[str]:
    """The causes that the ground-truth `events` (since the previous rebalance) imply.

    A join from a host that ran a member of the group before is a restart (each slot, a
    pod, keeps its host), else a scale-out. A graceful leave (`leave`, or a dynamic
    member's `restart`, which closes the consumer) is a scale-in unless its host rejoins
    in the same rebalance. Removals by the coordinator are their timeouts."""
    out: set[str] = set()
    joins = {e["details"]["client_host"] for e in events if e["kind"] == "join"}
    for e in events:
        kind, host = e["kind"], e["details"].get("client_host")
        if kind == "join":
            out.add("restart" if host in seen_hosts else "scale_out")
            seen_hosts.add(host)
        elif kind == "leave" or (kind == "restart" and "-instance-" not in (e["member"] or "")):
            out.add("restart" if host in joins else "scale_in")
        elif kind in REMOVALS:
            out.add(REMOVALS[kind])
        elif kind == "subscribe":
            out.add("subscription_change")
        elif kind == "add-partitions":
            out.add("partitions_added")
    return out


Row = tuple[int, set[str], set[str], set[str]]


def compare(generations: list[Generation], path: Path) -> list[Row]:
    """(to_generation, expected causes, settled causes, possible causes) of every
    rebalance in the truth."""
    by_generation = {(g.group, g.generation): g for g in generations}
    events = truth(path, "events")
    out = []
    for group in sorted({r["group"] for r in truth(path, "rebalances")}):
        hosts: set[str] = set()
        previous = None
        for r in (r for r in truth(path, "rebalances") if r["group"] == group):
            window = [
                e
                for e in events
                if e["group"] == group
                and (previous is None or previous < e["time"])
                and e["time"] <= r["time"]
            ]
            want = expected(window, hosts)
            previous = r["time"]
            if r["from_generation"] is None:
                continue
            g = by_generation[(group, r["to_generation"])]
            assert g.rebalance is not None and g.rebalance.from_generation == r["from_generation"]
            settled = {c.cause for c in g.causes if not c.possible}
            possible = {c.cause for c in g.causes if c.possible}
            out.append((r["to_generation"], want, settled, possible))
    return out


SCENARIO_CAUSES = {
    "rolling-restart": {"scale_in", "restart"},
    "crash-loop": {"restart", "session_timeout"},
    "scale-out": {"scale_out"},
    "scale-in": {"scale_in"},
    "slow-consumer": {"poll_timeout", "scale_out", "restart"},
    "subscription-change": {"subscription_change"},
    "partitions-added": {"partitions_added"},
    "mixed": {
        "scale_in",
        "restart",
        "session_timeout",
        "scale_out",
        "subscription_change",
        "partitions_added",
    },
    "eager-vs-cooperative": {"scale_out", "scale_in", "restart", "session_timeout"},
    "kip848": {
        "scale_out",
        "scale_in",
        "restart",
        "session_timeout",
        "subscription_change",
        "partitions_added",
    },
}


@pytest.mark.parametrize("scenario", sorted(SCENARIO_CAUSES))
def test_causes_match_the_ground_truth(scenario: str, tmp_path: Path) -> None:
    generations, path = run(scenario, tmp_path)
    rows = compare(generations, path)
    assert rows, "the scenario rebalanced"
    # Never wrong: every settled cause happened, and every cause that happened is
    # settled or flagged possible (a departure with no commits of its own to time it).
    wrong = [row for row in rows if not row[2] <= row[1] <= row[2] | row[3]]
    assert wrong == []
    exact = [row for row in rows if row[1] == row[2]]
    assert len(exact) >= 0.75 * len(rows), rows
    # Every cause the scenario is about is settled somewhere.
    assert set().union(*(row[2] for row in rows)) == SCENARIO_CAUSES[scenario]
    for g in generations:
        if g.rebalance is not None:
            assert g.causes and all(c.explanation for c in g.causes)


def test_static_restarts_within_the_session_timeout_rebalance_nothing(tmp_path: Path) -> None:
    specs, duration = build(["rolling-restart-static"], Params({}), None)
    sink = MemorySink()
    simulate(specs, sink, str(tmp_path), duration, seed=7)
    tracker = GenerationTracker()
    for record, position in records(sink):
        tracker.add(record, position)
    generations, _ = tracker.drain()
    rejoins = [e for e in truth(tmp_path / "truth", "events") if e["kind"] == "static-rejoin"]
    replacements = tracker.drain_replacements()
    assert len(rejoins) == 4
    assert [(r.instance_id, r.new_member_id) for r in replacements] == [
        (e["member"], e["details"]["member_id"]) for e in rejoins
    ]
    assert all(g.rebalance is None for g in generations)


def test_a_leave_with_no_commits_to_time_it_leaves_every_removal_possible(
    tmp_path: Path,
) -> None:
    """Members with no partitions (more members than partitions) never commit, so their
    departure cannot be timed: scale_in, session_timeout and poll_timeout stay possible."""
    generations, _ = run("scale-in", tmp_path, partitions="2")
    idle = [g for g in generations if g.rebalance is not None and all(c.possible for c in g.causes)]
    assert idle
    for g in idle:
        assert {c.cause for c in g.causes} == {"scale_in", "session_timeout", "poll_timeout"}


def test_the_vocabulary_is_the_scenarios_and_unknown() -> None:
    assert set(SCENARIO_CAUSES) <= set(SCENARIOS)
