"""The tracker's state saved beside the checkpoint comes back whole (no Spark)."""

from __future__ import annotations

from pathlib import Path

from services.tracker import GenerationTracker, state
from spark_jobs import tracker_files
from tests.tracker.test_generations import TOPIC_ID, feed, kip848_records


def test_the_cluster_wide_topic_names_survive_a_restart(tmp_path: Path) -> None:
    """A target kept from before the restart is named after it, with no new lookup."""
    records = kip848_records(named=False)
    tracker = GenerationTracker()
    tracker.topic_names[TOPIC_ID] = "stock"
    feed(tracker, records[:3])  # m1's target, its epoch not yet complete
    tracker_files.save(tmp_path, 4, tracker)

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
