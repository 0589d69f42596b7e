"""Hostile strings reach PostgreSQL storable, each change in `record_repairs`, once."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from services.store.batch import DecodeFailure, GroupEvent, Repair
from services.store.errors import BatchRejectedError
from services.store.repository import HistoryStore
from services.store.sanitize import storable_key
from tests.fixtures.batches import at, batch, commit, generation, member

LONG_GROUP = "billing-" + "x" * 4000


def hostile_batch(batch_id: int = 1):
    return batch(
        batch_id,
        offsets=[
            commit(1, 100, group="bill\x00ing"),
            commit(2, 101, group=LONG_GROUP, topic="t" * 3000),
            commit(3, 102),
        ],
        generations=[
            generation(
                1,
                103,
                [member("m" * 3000, {"orders": [0]}, host="/10.\x00")],
                group=LONG_GROUP,
                assignor="ran\x00ge",
            )
        ],
        group_events=[GroupEvent("gone\x00", at(1), 35, 104, type="classic", deleted=True)],
        decode_failures=[DecodeFailure(35, 105, "bad \x00 reason", b"k", None)],
        repairs=[Repair(35, 102, "commit_timestamp", "out of range", original_ms=2**62)],
    )


def repairs(engine: Engine) -> list[tuple]:
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT source_offset, field, original, original_ms, stored, batch_id "
                    "FROM record_repairs ORDER BY source_offset, field"
                )
            )
        ]


def test_hostile_strings_are_stored_repaired_and_recorded(store_engine: Engine) -> None:
    HistoryStore(store_engine).write_batch(hostile_batch())
    long_key = storable_key(LONG_GROUP)
    with store_engine.connect() as conn:
        groups = set(conn.execute(text("SELECT name FROM groups")).scalars())
        offsets = dict(
            conn.execute(text("SELECT group_name, committed_offset FROM committed_offsets")).all()
        )
        member_row = conn.execute(
            text("SELECT member_id, client_host FROM generation_members")
        ).one()
        assignor = conn.execute(text("SELECT assignor FROM generations")).scalar_one()
        reason = conn.execute(text("SELECT reason FROM decode_failures")).scalar_one()
    assert groups == {"bill\ufffding", long_key, "billing", "gone\ufffd"}
    assert offsets == {"bill\ufffding": 1, long_key: 2, "billing": 3}
    assert tuple(member_row) == (storable_key("m" * 3000), "/10.\ufffd")
    assert (assignor, reason) == ("ran\ufffdge", "bad \ufffd reason")
    got = {(r[0], r[1]): r[2:] for r in repairs(store_engine)}
    assert got == {
        (100, "key.group"): (b"bill\x00ing", None, "bill\ufffding", 1),
        (101, "key.group"): (LONG_GROUP.encode(), None, long_key, 1),
        (101, "key.topic"): (b"t" * 3000, None, storable_key("t" * 3000), 1),
        (102, "commit_timestamp"): (None, 2**62, None, 1),
        (103, "key.group"): (LONG_GROUP.encode(), None, long_key, 1),
        (103, "members[0].member_id"): (b"m" * 3000, None, storable_key("m" * 3000), 1),
        (103, "members[0].client_host"): (b"/10.\x00", None, "/10.\ufffd", 1),
        (103, "protocol"): (b"ran\x00ge", None, "ran\ufffdge", 1),
        (103, "leader"): (b"m" * 3000, None, storable_key("m" * 3000), 1),  # a member id too
        (104, "key.group"): (b"gone\x00", None, "gone\ufffd", 1),
        (105, "reason"): (b"bad \x00 reason", None, "bad \ufffd reason", 1),
    }


def test_a_replayed_batch_records_no_repair_twice(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    store.write_batch(hostile_batch(1))
    before = repairs(store_engine)
    store.write_batch(hostile_batch(2))
    assert repairs(store_engine) == before


def test_a_dry_run_names_the_rejection_and_keeps_nothing(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    twice = generation(1, 100, [member("a-1", {"t": [0]}), member("a-1", {"t": [1]})])
    assert store.rejection(batch(1, offsets=[commit(1, 99)])) is None
    reason = store.rejection(batch(1, offsets=[commit(1, 99)], generations=[twice]))
    assert reason is not None and "pk_generation_members" in reason
    with store_engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM groups")).scalar_one() == 0


def test_a_string_no_encoding_can_send_is_a_rejection_not_a_crash(store_engine: Engine) -> None:
    # The decoders never produce a lone surrogate (strict UTF-8); another writer might.
    store = HistoryStore(store_engine)
    hostile = batch(1, offsets=[commit(1, 99, group="a\ud800")])
    reason = store.rejection(hostile)
    assert reason is not None and "surrogates not allowed" in reason


def test_a_program_limit_is_the_data_s_doing_not_an_outage(store_engine: Engine) -> None:
    # Sanitized keys fit an index, so a too-long index entry is produced here by hand:
    # PostgreSQL's own error, which psycopg files under OperationalError, must not be
    # retried as an outage for ever.
    store = HistoryStore(store_engine)
    wide = "INSERT INTO wide SELECT string_agg(md5(i::text), '') FROM generate_series(1, 200) i"
    with (
        pytest.raises(BatchRejectedError, match="index row size"),
        store._transaction("probe") as cursor,
    ):
        cursor.execute("CREATE TEMP TABLE wide (k text PRIMARY KEY)")
        cursor.execute(wide)
