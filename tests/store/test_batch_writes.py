"""HistoryStore.write_batch on a real PostgreSQL: contents, idempotence, ordering."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from services.store.batch import BatchHealth, DecodeFailure, GroupEvent, Member, SourceProgress
from services.store.models import Base
from services.store.repository import HistoryStore
from tests.fixtures.batches import SOURCE, at, batch, churn, commit, generation, member

TABLES = [table.name for table in Base.metadata.sorted_tables]


def snapshot(engine: Engine) -> dict[str, list[tuple]]:
    with engine.connect() as conn:
        return {
            table: sorted(map(tuple, conn.execute(text(f"SELECT * FROM {table}")).all()), key=repr)
            for table in TABLES
        }


def scalar(engine: Engine, sql: str, **params: object) -> object:
    with engine.connect() as conn:
        return conn.execute(text(sql), params).scalar()


def offsets(engine: Engine) -> dict[tuple[str, int], tuple[int | None, bool]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT topic, partition, committed_offset, deleted FROM committed_offsets")
        ).all()
    return {(t, p): (o, d) for t, p, o, d in rows}


def two_generation_batch(batch_id: int = 1):
    first = generation(1, 100, [member("a-1", {"orders": [0, 1, 2, 3]})], time=at(0))
    second = generation(
        2,
        105,
        [member("a-1", {"orders": [0, 1]}), member("b-1", {"orders": [2, 3]}, host="/10.0.0.2")],
        time=at(30),
        churn=churn(1, 100, moved=2, from_survivors=2, baseline=2, minimum=2, joined=1),
    )
    return batch(
        batch_id,
        offsets=[commit(10, 90), commit(12, 95), commit(7, 96, partition=1)],
        generations=[first, second],
        decode_failures=[DecodeFailure(35, 97, "unknown record type 99", b"\x00\x63", b"\x01")],
        progress=[SourceProgress(partition=35, last_offset=110)],
    )


def test_a_batch_lands_in_every_table(store_engine: Engine) -> None:
    HistoryStore(store_engine).write_batch(two_generation_batch())
    rows = snapshot(store_engine)

    assert [r[:3] for r in rows["groups"]] == [("billing", "classic", 35)]
    assert len(rows["generations"]) == 2
    assert len(rows["generation_members"]) == 3
    with store_engine.connect() as conn:
        assignments = conn.execute(text("SELECT member_id, partitions FROM assignments")).all()
    assert sorted(map(tuple, assignments)) == [
        ("a-1", [0, 1]),
        ("a-1", [0, 1, 2, 3]),
        ("b-1", [2, 3]),
    ]
    assert offsets(store_engine) == {("orders", 0): (12, False), ("orders", 1): (7, False)}
    assert scalar(store_engine, "SELECT count(*) FROM offset_history") == 1
    assert scalar(store_engine, "SELECT count(*) FROM offset_history_entries") == 2
    assert rows["decode_failures"][0][2:5] == ("unknown record type 99", b"\x00\x63", b"\x01")
    assert HistoryStore(store_engine).progress("__consumer_offsets") == {35: (110, 1)}


def test_rebalance_links_both_generations_and_their_distance(store_engine: Engine) -> None:
    HistoryStore(store_engine).write_batch(two_generation_batch())
    with store_engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT f.generation, t.generation, r.elapsed, r.partitions_moved "
                "FROM rebalances r JOIN generations t ON t.id = r.to_generation_pk "
                "JOIN generations f ON f.id = r.from_generation_pk"
            )
        ).one()
    assert (row[0], row[1], row[2].total_seconds(), row[3]) == (1, 2, 30.0, 2)


def test_rebalance_may_refer_to_a_generation_of_an_earlier_batch(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    store.write_batch(batch(1, generations=[generation(4, 200, [member("a-1", {"t": [0]})])]))
    later = generation(
        5, 260, [member("a-1", {"t": [0]})], time=at(90), churn=churn(4, 200, left=1)
    )
    store.write_batch(batch(2, generations=[later]))
    elapsed = scalar(store_engine, "SELECT elapsed FROM rebalances WHERE to_generation = 5")
    assert elapsed.total_seconds() == 90


def test_replaying_a_batch_changes_nothing(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    store.write_batch(two_generation_batch())
    before = snapshot(store_engine)
    store.write_batch(two_generation_batch())
    assert snapshot(store_engine) == before


def counted(batch_id: int, records: int, log_resets: int = 0):
    return replace(two_generation_batch(batch_id), health=BatchHealth(records, 0.5, log_resets))


def pipeline_counts(engine: Engine) -> tuple:
    with engine.connect() as conn:
        return tuple(
            conn.execute(
                text(
                    "SELECT batches_total, records_total, log_resets_total, last_batch_id "
                    "FROM pipeline_status"
                )
            ).one()
        )


def test_a_replayed_batch_is_counted_once(store_engine: Engine) -> None:
    """A crash between the store write and Spark's checkpoint commit replays the batch:
    it adds nothing to the counters. A new checkpoint's batch ids start at 0 and count."""
    store = HistoryStore(store_engine)
    store.write_batch(counted(0, 10))
    store.write_batch(counted(1, 7, log_resets=1))
    store.write_batch(counted(1, 7, log_resets=1))  # replayed
    store.write_batch(counted(0, 10))  # an older one replayed
    assert pipeline_counts(store_engine) == (2, 17, 1, 1)
    assert store.last_batch(SOURCE) == 1
    store.restart_batches(SOURCE)  # --reset-checkpoint: replay from the start
    assert store.last_batch(SOURCE) is None
    store.write_batch(counted(0, 10))
    assert pipeline_counts(store_engine) == (3, 27, 1, 0)


def test_replaying_an_older_batch_after_a_newer_one_changes_nothing(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    store.write_batch(two_generation_batch(1))
    store.write_batch(
        batch(2, offsets=[commit(50, 300)], progress=[SourceProgress(35, 300)], time=at(60))
    )
    before = snapshot(store_engine)
    store.write_batch(two_generation_batch(1))
    assert snapshot(store_engine) == before
    assert offsets(store_engine)[("orders", 0)] == (50, False)
    assert store.progress("__consumer_offsets") == {35: (300, 2)}


def test_an_older_record_never_moves_a_committed_offset_backwards(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    store.write_batch(batch(1, offsets=[commit(500, 2_000)]))
    store.write_batch(batch(2, offsets=[commit(400, 1_500)]))
    assert offsets(store_engine)[("orders", 0)] == (500, False)


def test_within_a_batch_the_latest_source_position_wins(store_engine: Engine) -> None:
    records = [commit(30, 12), commit(10, 10), commit(20, 11)]
    HistoryStore(store_engine).write_batch(batch(1, offsets=records))
    assert offsets(store_engine)[("orders", 0)] == (30, False)
    assert scalar(store_engine, "SELECT committed_offset FROM offset_history_entries") == 30


def test_a_tombstone_is_not_undone_by_a_replayed_older_commit(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    store.write_batch(batch(1, offsets=[commit(10, 100)]))
    store.write_batch(batch(2, offsets=[commit(None, 150)]))
    store.write_batch(batch(1, offsets=[commit(10, 100)]))
    assert offsets(store_engine)[("orders", 0)] == (None, True)


def test_pipeline_progress_never_moves_backwards(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    store.write_batch(batch(7, progress=[SourceProgress(3, 900), SourceProgress(4, 10)]))
    store.write_batch(batch(6, progress=[SourceProgress(3, 800), SourceProgress(4, 20)]))
    assert store.progress("__consumer_offsets") == {3: (900, 7), 4: (20, 6)}


def test_a_position_base_is_kept_and_never_lowered(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    store.write_batch(batch(1, progress=[SourceProgress(35, 7), SourceProgress(36, 3)]))
    assert store.position_bases(SOURCE) == {}
    store.write_batch(batch(2, progress=[SourceProgress(35, 10, base=8)]))  # a log reset
    store.write_batch(batch(3, progress=[SourceProgress(35, 11)]))  # a base never lowers
    assert store.position_bases(SOURCE) == {35: 8}
    assert store.progress(SOURCE) == {35: (11, 3), 36: (3, 1)}


def test_group_tombstone_and_recreation_follow_source_order(store_engine: Engine) -> None:
    store = HistoryStore(store_engine)
    tombstone = GroupEvent("billing", at(10), 35, 500, deleted=True)
    store.write_batch(batch(1, group_events=[tombstone]))
    assert scalar(store_engine, "SELECT deleted_at FROM groups") == at(10)

    older_generation = generation(3, 400, [member("a-1", {"t": [0]})], time=at(5))
    store.write_batch(batch(2, generations=[older_generation]))
    assert scalar(store_engine, "SELECT deleted_at FROM groups") == at(10)

    recreated = generation(0, 600, [member("a-2", {"t": [0]})], time=at(20))
    store.write_batch(batch(3, generations=[recreated]))
    assert scalar(store_engine, "SELECT deleted_at FROM groups") is None
    assert scalar(store_engine, "SELECT first_seen FROM groups") == at(5)
    assert scalar(store_engine, "SELECT last_seen FROM groups") == at(20)


def test_a_group_known_only_from_commits_exists_without_a_type(store_engine: Engine) -> None:
    HistoryStore(store_engine).write_batch(batch(1, offsets=[commit(1, 1, group="etl")]))
    with store_engine.connect() as conn:
        row = conn.execute(text("SELECT name, type, coordinator_partition FROM groups")).one()
    assert tuple(row) == ("etl", None, 35)


def test_an_empty_batch_writes_nothing(store_engine: Engine) -> None:
    HistoryStore(store_engine).write_batch(batch(1))
    assert all(rows == [] for rows in snapshot(store_engine).values())


commit_records = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 10_000)),
    min_size=1,
    max_size=30,
    unique_by=lambda r: r[1],
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(records=commit_records, data=st.data())
def test_any_delivery_order_with_replays_ends_at_the_latest_source_position(
    store_engine: Engine, records: list[tuple[int, int]], data: st.DataObject
) -> None:
    with store_engine.begin() as conn:
        conn.execute(text("TRUNCATE committed_offsets, offset_history, groups CASCADE"))
    # Each commit's offset and time are derived from its position, so "latest" (of all,
    # and of each minute) is checkable.
    commits = [
        commit(source_offset * 7, source_offset, partition=p, time=at(source_offset / 10))
        for p, source_offset in records
    ]
    deliveries = data.draw(st.lists(st.sampled_from(commits), min_size=0, max_size=40))
    ordered = data.draw(st.permutations(commits + deliveries))
    store = HistoryStore(store_engine)
    chunk = data.draw(st.integers(1, 10))
    for i in range(0, len(ordered), chunk):
        store.write_batch(batch(i, offsets=ordered[i : i + chunk]))

    latest: dict[int, int] = {}
    minutes: dict[tuple[int, datetime], int] = {}
    for p, source_offset in records:
        latest[p] = max(latest.get(p, -1), source_offset)
        minute = at(source_offset / 10).replace(second=0, microsecond=0)
        minutes[(p, minute)] = max(minutes.get((p, minute), -1), source_offset)
    expected = {("orders", p): (source_offset * 7, False) for p, source_offset in latest.items()}
    assert offsets(store_engine) == expected
    # The history keeps each minute's latest commit, however the commits were batched.
    with store_engine.connect() as conn:
        entries = conn.execute(
            text("SELECT partition, minute, committed_offset FROM offset_history_entries")
        ).all()
    assert sorted(map(tuple, entries)) == sorted(
        (p, minute, source_offset * 7) for (p, minute), source_offset in minutes.items()
    )


def history(engine: Engine) -> tuple[list[tuple], list[tuple]]:
    """The offset history's rows, and each group's commit count and last commit time."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT * FROM offset_history ORDER BY 1, 2")).all()
        groups = conn.execute(
            text("SELECT name, commits_total, last_commit_timestamp FROM groups ORDER BY 1")
        ).all()
    return list(map(tuple, rows)), list(map(tuple, groups))


def test_the_offset_history_is_the_same_in_one_batch_or_in_many(store_engine: Engine) -> None:
    """The same commits of two partitions over three minutes, as a backlog in one batch
    and live one at a time (each batch written twice: a replay): the same history, with
    each minute's latest commit, its count, tombstones at their record's time, and every
    commit counted once."""
    tombstone = replace(commit(None, 108), commit_time=None, record_time=at(125), commits=0)
    timeless = replace(commit(60, 109, partition=1), commit_time=None, record_time=at(130))
    commits = [
        commit(10, 100, time=at(5)),
        commit(20, 101, time=at(50)),  # minute 0's latest of partition 0
        commit(5, 102, partition=1, time=at(59)),
        replace(commit(30, 103, time=at(61)), commits=3),  # stands for 3 commit records
        commit(40, 104, time=at(119)),
        commit(50, 105, partition=1, time=at(70)),
        commit(45, 106, time=at(120)),
        commit(47, 107, time=at(121)),
        tombstone,  # minute 2 of partition 0: deleted after 47
        timeless,  # minute 2 by its record's time
    ]
    store = HistoryStore(store_engine)
    store.write_batch(batch(1, offsets=commits))
    backlog = history(store_engine)
    with store_engine.begin() as conn:
        conn.execute(text("TRUNCATE committed_offsets, offset_history, groups CASCADE"))
    for batch_id, c in enumerate(commits, start=1):
        store.write_batch(batch(batch_id, offsets=[c]))
        store.write_batch(batch(batch_id, offsets=[c]))
    assert history(store_engine) == backlog
    with store_engine.connect() as conn:
        entries = conn.execute(
            text(
                "SELECT minute, partition, committed_offset, commits "
                "FROM offset_history_entries ORDER BY minute, source_offset"
            )
        ).all()
    assert [tuple(e) for e in entries] == [
        (at(0), 0, 20, 2),
        (at(0), 1, 5, 1),
        (at(60), 0, 40, 4),
        (at(60), 1, 50, 1),
        (at(120), 0, None, 2),
        (at(120), 1, 60, 1),
    ]
    assert backlog[1] == [("billing", 11, at(121))]  # a tombstone is no commit


def test_member_text_survives_copy_byte_for_byte(store_engine: Engine) -> None:
    odd = 'a\tb\nc\\d"e,{f} g\r é ∅ NULL \\N'
    topics = (odd, "plain", "", "NULL")
    strange = Member(
        member_id=odd,
        client_id=odd,
        client_host=None,
        group_instance_id="\\N",
        subscribed_topics=topics,
        owned_partitions={odd: (1, 2)},
        assignment={odd: range(3), "plain": [7]},
    )
    HistoryStore(store_engine).write_batch(batch(1, generations=[generation(1, 10, [strange])]))
    with store_engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT member_id, client_id, client_host, group_instance_id, "
                "subscribed_topics, owned_partitions, assignment FROM generation_members"
            )
        ).one()
    assert tuple(row) == (
        odd,
        odd,
        None,
        "\\N",
        list(topics),
        {odd: [1, 2]},
        {odd: [0, 1, 2], "plain": [7]},
    )
