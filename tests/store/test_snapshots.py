"""latest_generations: what the streaming job reads back on start."""

from __future__ import annotations

from sqlalchemy import Engine

from services.store.batch import GroupEvent
from services.store.repository import HistoryStore
from services.store.snapshots import latest_generations
from tests.fixtures.batches import at, batch, generation, member


def test_latest_generation_of_each_live_group_with_assignments(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    store.write_batch(
        batch(
            1,
            generations=[
                generation(1, 10, [member("a-1", {"orders": [0, 1]})]),
                generation(2, 20, [member("a-1", {"orders": [0]}), member("b-1", {"orders": [1]})]),
                generation(1, 30, [member("x-1", {"t": [0]})], group="gone"),
            ],
        )
    )
    store.write_batch(batch(2, group_events=[GroupEvent("gone", at(5), 35, 40, deleted=True)]))

    latest = latest_generations(store_engine)
    assert set(latest) == {"billing"}
    billing = latest["billing"]
    assert (billing.generation, billing.source_offset) == (2, 20)
    assert {m.member_id: m.assignment for m in billing.members} == {
        "a-1": {"orders": [0]},
        "b-1": {"orders": [1]},
    }
