"""Rebalance costs (commit gaps of moved partitions) against the simulator's ground truth.

The simulator knows when each moved partition's new owner got it and when it next
committed (`truth/gaps.jsonl`); the tracker sees only the records, offset commits
included, in log order. Every rebalance's measured partitions, waiting partitions and
longest and median gap must equal the truth's, to the millisecond, also when the
tracker's state is saved and loaded (a job restart) between records.
"""

from __future__ import annotations

import json
import statistics
from datetime import timedelta
from pathlib import Path

import pytest

from services.simulator.params import Params
from services.simulator.runner import simulate
from services.simulator.scenarios import build
from services.store.batch import RebalanceCost
from services.tracker import GenerationTracker, state
from tests.tracker.test_causes import MemorySink, records

# Scenarios whose rebalances move partitions: crashes, stalls, leaves, restarts, KIP-848.
SCENARIOS = ["crash-loop", "slow-consumer", "scale-in", "eager-vs-cooperative", "kip848", "mixed"]

Cost = tuple[int, int, int | None, int | None]  # measured, waiting, max and median gap (µs)


def truth_costs(path: Path) -> dict[tuple[str, int], Cost]:
    rows: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
    for r in map(json.loads, (path / "gaps.jsonl").open()):
        gaps, waiting = rows.setdefault((r["group"], r["to_generation"]), ([], []))
        if r["stopped"] is None:
            continue  # no commit before: no gap to measure
        if r["resumed"] is None:
            waiting.append(1)
        else:
            gaps.append(r["resumed"] - r["stopped"])
    return {
        k: (
            len(gaps),
            len(waiting),
            max(gaps) * 1000 if gaps else None,
            round(statistics.median(gaps) * 1000) if gaps else None,
        )
        for k, (gaps, waiting) in rows.items()
    }


def micros(cost: RebalanceCost) -> Cost:
    def us(d: timedelta | None) -> int | None:
        return None if d is None else d // timedelta(microseconds=1)

    return cost.measured, cost.waiting, us(cost.gap_max), us(cost.gap_median)


def run(scenario: str, tmp: Path, restart_every: int | None) -> tuple[dict, Path, list]:
    """The scenario through the tracker; with `restart_every`, its state goes through
    JSON and back (as the job saves it) every that many records."""
    specs, duration = build([scenario], Params({}), None)
    sink = MemorySink()
    simulate(specs, sink, str(tmp), duration, seed=7)
    tracker = GenerationTracker()
    generations, costs = [], {}
    for i, (record, position) in enumerate(records(sink)):
        tracker.add(record, position)
        if restart_every and i % restart_every == 0:
            generations += tracker.drain()[0]
            costs.update({(c.source_partition, c.source_offset): c for c in tracker.drain_costs()})
            tracker = state.load(json.loads(json.dumps(state.dump(tracker))))
    generations += tracker.drain()[0]
    costs.update({(c.source_partition, c.source_offset): c for c in tracker.drain_costs()})
    by_position = {(g.source_partition, g.source_offset): g for g in generations}
    got = {}
    for position, c in costs.items():
        g = by_position[position]
        assert g.rebalance is not None and c.group == g.group
        got[(g.group, g.generation)] = micros(c)
    return got, tmp / "truth", generations


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_commit_gaps_equal_the_ground_truth(scenario: str, tmp_path: Path) -> None:
    got, truth, generations = run(scenario, tmp_path, restart_every=None)
    want = truth_costs(truth)
    assert want, "the scenario moved partitions"
    # Every rebalance has a cost; those that moved nothing measured none.
    assert len(got) == sum(1 for g in generations if g.rebalance is not None)
    assert {k: v for k, v in got.items() if v != (0, 0, None, None)} == {
        k: v for k, v in want.items() if v != (0, 0, None, None)
    }
    assert any(v[0] for v in got.values())


def test_a_restart_between_records_keeps_the_waiting_partitions(tmp_path: Path) -> None:
    """The saved state carries the rebalances waiting for their first commits."""
    live, _, _ = run("mixed", tmp_path / "live", restart_every=None)
    restarted, _, _ = run("mixed", tmp_path / "restarted", restart_every=97)
    assert restarted == live
    waited = state.dump(GenerationTracker())
    assert waited["costs"] == {}


def test_a_rebalance_waits_until_its_moved_partitions_commit_again(tmp_path: Path) -> None:
    """The crash loop's log cut just after its first rebalance that moved partitions:
    every moved partition committed before, none since, so all of them wait, with no
    gap yet, and the saved state keeps them."""
    specs, duration = build(["crash-loop"], Params({}), None)
    sink = MemorySink()
    simulate(specs, sink, str(tmp_path), duration, seed=7)
    tracker = GenerationTracker()
    for record, position in records(sink):
        tracker.add(record, position)
        moved = [g for g in tracker.generations if g.rebalance and g.rebalance.moved]
        if moved:
            break
    [g] = moved
    assert g.rebalance is not None
    [cost] = [c for c in tracker.drain_costs() if c.source_offset == g.source_offset]
    assert (cost.measured, cost.waiting, cost.gap_max) == (0, g.rebalance.moved, None)
    [saved] = state.dump(tracker)["costs"]["crash-loop-0"]
    assert len(saved["open"]) == g.rebalance.moved
