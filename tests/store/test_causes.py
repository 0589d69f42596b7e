"""End to end: simulated crash-loop and static rolling restart through the tracker into
the store; causes, commit gaps and static replacements come back through group_timeline
and the postmortem query."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine

from services.postmortem.queries import timeline
from services.simulator.params import Params
from services.simulator.runner import simulate
from services.simulator.scenarios import build
from services.store.batch import BatchWrite
from services.store.database import create_store_engine
from services.store.repository import HistoryStore
from services.tracker import GenerationTracker
from tests.tracker.test_causes import MemorySink, records


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = create_store_engine(database_url)
    yield engine
    engine.dispose()


def test_causes_and_static_replacements_reach_the_timeline(engine: Engine, tmp_path: Path) -> None:
    specs, duration = build(["crash-loop", "rolling-restart-static"], Params({}), None)
    sink = MemorySink()
    simulate(specs, sink, str(tmp_path), duration, seed=7)
    tracker = GenerationTracker()
    for record, position in records(sink):
        tracker.add(record, position)
    generations, events = tracker.drain()
    replacements = tracker.drain_replacements()
    costs = tracker.drain_costs()
    batch = BatchWrite(
        1,
        "test",
        datetime.now(UTC),
        generations=generations,
        group_events=events,
        replacements=replacements,
        costs=costs,
    )
    store = HistoryStore(engine)
    store.write_batch(batch)
    store.write_batch(batch)  # a replay adds nothing
    with engine.connect() as conn:
        crash = timeline(conn, "crash-loop-0", None, None)
        static = timeline(conn, "rolling-restart-static-0", None, None)
    expected = {
        g.generation: [c.as_dict() for c in g.causes]
        for g in generations
        if g.group == "crash-loop-0" and g.rebalance is not None
    }
    assert {e.generation: e.causes for e in crash if e.moves is not None} == expected
    assert all(e.causes is None for e in crash if e.moves is None)
    assert any(c["cause"] == "session_timeout" for cs in expected.values() for c in cs)
    offsets = {g.source_offset: g.generation for g in generations if g.group == "crash-loop-0"}
    gaps = {
        offsets[c.source_offset]: (c.measured, c.waiting, c.gap_max, c.gap_median)
        for c in costs
        if c.group == "crash-loop-0"
    }
    stored = {
        e.generation: (e.gap.partitions, e.gap.waiting, e.gap.longest, e.gap.median)
        for e in crash
        if e.gap is not None
    }
    assert stored == gaps and len(gaps) == len(expected)
    assert any(measured for measured, *_ in gaps.values())
    rejoined = [r["new_member_id"] for e in static for r in e.replaced_without_rebalance]
    assert rejoined == [r.new_member_id for r in replacements]
    assert len(rejoined) == 4
