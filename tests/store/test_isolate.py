"""Bisection finds exactly the records the database refuses; the rest is accepted."""

from __future__ import annotations

from sqlalchemy import Engine, text

from services.store import isolate
from services.store.batch import DecodeFailure, SourceProgress
from services.store.repository import HistoryStore
from tests.fixtures.batches import batch, commit, generation, member


def test_the_refused_records_are_found_and_the_rest_lands(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    twice = [member("a-1", {"t": [0]}), member("a-1", {"t": [1]})]
    whole = batch(
        1,
        offsets=[commit(n, 100 + n, partition=n) for n in range(10)],
        generations=[
            generation(1, 150, twice, group="dup-1"),
            generation(1, 200, [member("b-1", {"t": [0]})], group="fine"),
            generation(1, 201, twice, group="dup-2"),
        ],
        # No encoding can send a lone surrogate: refused however it is written.
        decode_failures=[DecodeFailure(35, 300, "bad \ud800", b"k", b"v")],
        progress=[SourceProgress(35, 300)],
    )
    assert store.rejection(whole) is not None
    rejected = isolate.rejected_records(store, whole)
    assert rejected.keys() == {(35, 150), (35, 201), (35, 300)}
    assert "pk_generation_members" in rejected[(35, 201)]
    assert "surrogates not allowed" in rejected[(35, 300)]
    store.write_batch(isolate.without(whole, rejected.keys(), []))
    with store_engine.connect() as conn:
        offsets = conn.execute(text("SELECT source_offset FROM committed_offsets")).scalars()
        groups = conn.execute(text("SELECT group_name FROM generations")).scalars()
        assert sorted(offsets) == [100 + n for n in range(10)]
        assert list(groups) == ["fine"]


def test_a_rejection_no_record_causes_names_no_record(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    # A source partition beyond int4 breaks the progress row, whatever the records.
    whole = batch(1, offsets=[commit(1, 100)], progress=[SourceProgress(2**40, 100)])
    assert store.rejection(whole) is not None
    assert isolate.rejected_records(store, whole) == {}
