"""The tracker's state saved beside the checkpoint comes back whole (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.groupfilter import GroupFilter
from services.simulator.params import Params
from services.simulator.runner import simulate
from services.simulator.scenarios import build
from services.tracker import GenerationTracker, state
from spark_jobs import tracker_files
from spark_jobs.batch import BatchProcessor
from tests.tracker.test_causes import MemorySink, records
from tests.tracker.test_generations import (
    TOPIC_ID,
    classic,
    epoch,
    feed,
    kip848_records,
    member,
    member_meta,
    target,
    target_epoch,
    tp,
)


def test_the_cluster_wide_topic_names_survive_a_restart(tmp_path: Path) -> None:
    """A target kept from before the restart is named after it, with no new lookup."""
    records = kip848_records(named=False)
    tracker = GenerationTracker()
    tracker.topic_names[TOPIC_ID] = "stock"
    feed(tracker, records[:3])  # m1's target, its epoch not yet complete
    tracker_files.TrackerFiles(tmp_path).save(4, tracker)

    restored = tracker_files.latest(tmp_path)
    assert restored is not None
    assert restored.topic_names == {TOPIC_ID: "stock"}
    assert restored.unnamed_topic_ids() == set()
    feed(restored, records[3:], start=3)
    generations, _ = restored.drain()
    assert [dict(m.assignment) for m in generations[0].members] == [{"stock": [0, 1, 2, 3]}]


def test_a_state_saved_before_topic_names_existed_loads(tmp_path: Path) -> None:
    raw = state.dump(GenerationTracker())
    del raw["topic_names"]
    assert state.load(raw).topic_names == {}


def test_a_group_the_filter_drops_is_forgotten_and_starts_afresh(tmp_path: Path) -> None:
    """A state saved without a filter: the group now excluded is dropped from it, so that
    were it included again, its next epoch would be a first one, not a rebalance from
    an epoch long gone."""
    tracker = GenerationTracker()
    tracker.topic_names[TOPIC_ID] = "stock"
    feed(tracker, [classic("a", 1, "range", [member("a-1", tp("t", 0))])])
    feed(tracker, kip848_records(named=False), start=1)
    tracker.drain()
    assert tracker.groups() == {"a", "k"}
    tracker_files.TrackerFiles(tmp_path).save(4, tracker)

    excluding = BatchProcessor(
        None, "test", 50, state_dir=tmp_path, groups=GroupFilter.of(exclude=["^k$"])
    )
    assert excluding.tracker.groups() == {"a"}
    kept = BatchProcessor(None, "test", 50, state_dir=tmp_path)
    assert kept.tracker.groups() == {"a", "k"}
    for processor, rebalance in ((excluding, False), (kept, True)):
        feed(
            processor.tracker,
            [member_meta("m3"), *epoch(3), target("m3", [0]), target_epoch(3)],
            20,
        )
        (third,) = processor.tracker.drain()[0]
        assert third.generation == 3 and (third.rebalance is not None) is rebalance


@pytest.mark.parametrize("scenario", ["mixed", "crash-loop,kip848", "rolling-restart"])
def test_each_batch_saved_on_its_base_loads_as_the_whole_state(
    tmp_path: Path, scenario: str
) -> None:
    """A scenario's records in batches of 200, saved after each by one `TrackerFiles`
    (bases and the changes on them) as a job saves them: after every batch, the newest
    files load as exactly the state `state.dump` writes whole, and the tracker restored
    from them goes on as the one that never stopped."""
    specs, duration = build(scenario.split(","), Params({}), None)
    sink = MemorySink()
    simulate(specs, sink, str(tmp_path / "sim"), duration, seed=3)
    stream = list(records(sink))
    files = tracker_files.TrackerFiles(tmp_path / "state", least_changes=0)
    tracker = GenerationTracker()
    bases = set()
    batch_id = 0
    for batch_id, first in enumerate(range(0, len(stream), 200)):
        for record, position in stream[first : first + 200]:
            tracker.add(record, position)
        tracker.drain()
        files.save(batch_id, tracker)
        bases.add(files.base_name)
        restored = tracker_files.latest(tmp_path / "state")
        assert restored is not None
        assert state.dump(restored) == state.dump(tracker), batch_id
    # rebalances changed enough groups for new bases, but not in every batch
    assert 1 < len(bases) < batch_id + 1
    assert len(list((tmp_path / "state").glob("tracker-*.json"))) == tracker_files.KEEP
    assert len(list((tmp_path / "state").glob("snapshots-*.json"))) <= tracker_files.KEEP


def test_a_state_saved_whole_by_an_older_job_loads(tmp_path: Path) -> None:
    """Files written before bases existed hold the whole state, with no base."""
    tracker = GenerationTracker()
    feed(tracker, [classic("a", 1, "range", [member("a-1", tp("t", 0))])])
    (tmp_path / "tracker-000000000007.json").write_text(json.dumps(state.dump(tracker)))
    restored = tracker_files.latest(tmp_path)
    assert restored is not None and state.dump(restored) == state.dump(tracker)
