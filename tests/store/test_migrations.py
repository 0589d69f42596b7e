"""Migrations build exactly the models' schema, and undo it."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from services.cli import main
from services.store.batch import OffsetCommit
from services.store.database import create_store_engine
from services.store.migrate import downgrade, upgrade
from services.store.models import Base
from services.store.partitions import not_a_partition
from services.store.repository import HistoryStore
from services.store.revision import current_revision, head_revision
from tests.fixtures.batches import at, batch

TABLES = set(Base.metadata.tables)


def test_upgrade_empty_database_to_head_and_downgrade_back(empty_database_url: str) -> None:
    engine = create_store_engine(empty_database_url)
    try:
        assert current_revision(engine) is None
        upgrade(empty_database_url)
        assert current_revision(engine) == head_revision()
        assert set(inspect(engine).get_table_names()) >= TABLES
        assert set(inspect(engine).get_view_names()) >= {
            "group_timeline",
            "partition_ownership",
            "rebalance_storms",
            "offset_history_entries",
            "assignments",
        }

        downgrade(empty_database_url, "base")
        inspector = inspect(engine)
        assert set(inspector.get_table_names()) <= {"alembic_version"}
        assert inspector.get_view_names() == []
        with engine.connect() as conn:
            functions = conn.execute(
                text("SELECT proname FROM pg_proc WHERE proname = ANY(:names)"),
                {"names": ["members_missing_from", "rebalance_storms_between"]},
            ).all()
        assert functions == []
        assert current_revision(engine) is None
    finally:
        engine.dispose()


def test_upgrade_twice_is_harmless(empty_database_url: str) -> None:
    upgrade(empty_database_url)
    upgrade(empty_database_url)
    engine = create_store_engine(empty_database_url)
    try:
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_models_and_migrations_agree(database_url: str) -> None:
    engine = create_store_engine(database_url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"include_name": not_a_partition})
            differences = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert differences == []


def test_0003_fills_in_state_and_partition_count_of_older_generations(
    empty_database_url: str,
) -> None:
    engine = create_store_engine(empty_database_url)
    try:
        upgrade(empty_database_url, "0002")
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO groups VALUES ('g', 'classic', 7, now(), now())"))
            conn.execute(
                text(
                    "INSERT INTO generations (id, group_name, generation, time, member_count,"
                    " source_partition, source_offset, source_timestamp, batch_id) VALUES"
                    " (1, 'g', 1, now(), 2, 7, 10, now(), 1),"
                    " (2, 'g', 2, now(), 0, 7, 11, now(), 1)"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO generation_members (generation_pk, member_id, subscribed_topics,"
                    " assignment) VALUES (1, 'a', '{t,u}', '{\"t\": [0, 1], \"u\": [4]}'),"
                    " (1, 'b', '{t}', '{\"t\": [2]}')"
                )
            )
        upgrade(empty_database_url)
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT id, state, partition_count FROM generations ORDER BY id")
            ).all()
        assert [tuple(r) for r in rows] == [(1, "stable", 4), (2, "empty", 0)]
    finally:
        engine.dispose()


# (group, type, assignor, members' rebalance timeout in ms,
#  [(seconds, {member: partitions}, moves_from_survivors)]):
# the tracker's cases (tests/tracker/test_disruptive.py) as rows written before 0005.
BACKFILL_GROUPS = [
    (
        "k",
        "consumer",
        "uniform",
        1000,
        [
            (0, {"m1": [0, 1, 2, 3]}, None),
            (0.4, {"m1": [0, 1], "m2": [2, 3]}, 2),  # forming within the 1 s timeout
            (30, {"m1": [0, 1, 2, 3]}, 0),  # m2 left: nothing taken from m1
            (60, {"m1": [0, 1], "m3": [2, 3]}, 2),  # m3 takes from m1
            (90, {"m1": [0, 1], "m3": [2, 3]}, 0),  # an epoch that moves nothing
        ],
    ),
    (
        "e",
        "classic",
        "range",
        300_000,
        [
            (0, {"a": [0, 1, 2, 3]}, None),
            (2, {"a": [0, 1], "b": [2, 3]}, 2),  # forming
            (400, {"a": [0], "b": [1, 2], "c": [3]}, 2),  # after the 300 s timeout
            (500, {"a": [0, 1], "c": [2, 3]}, 1),  # b left: a and c revoked everything
            (600, {}, 0),  # everybody left
            (700, {"a": [0, 1, 2, 3]}, 0),  # forming again
        ],
    ),
]


def test_0005_marks_formation_leaves_and_idle_epochs_of_older_rebalances_not_disruptive(
    empty_database_url: str,
) -> None:
    engine = create_store_engine(empty_database_url)
    try:
        upgrade(empty_database_url, "0004")
        pk = 0
        with engine.begin() as conn:
            for partition, (group, kind, assignor, timeout, generations) in enumerate(
                BACKFILL_GROUPS
            ):
                conn.execute(
                    text("INSERT INTO groups VALUES (:g, :t, :p, now(), now())"),
                    {"g": group, "t": kind, "p": partition},
                )
                previous = None
                for number, (seconds, members, from_survivors) in enumerate(generations, 1):
                    pk += 1
                    when = "2026-03-01T12:00:00Z"
                    conn.execute(
                        text(
                            "INSERT INTO generations (id, group_name, generation, assignor,"
                            " time, member_count, source_partition, source_offset,"
                            " source_timestamp, batch_id) VALUES (:pk, :g, :n, :a,"
                            " CAST(:t AS timestamptz) + make_interval(secs => :s), :c, :p, :pk,"
                            " CAST(:t AS timestamptz) + make_interval(secs => :s), 1)"
                        ),
                        {
                            "pk": pk,
                            "g": group,
                            "n": number,
                            "a": assignor,
                            "t": when,
                            "s": seconds,
                            "c": len(members),
                            "p": partition,
                        },
                    )
                    for mid, partitions in members.items():
                        conn.execute(
                            text(
                                "INSERT INTO generation_members (generation_pk, member_id,"
                                " rebalance_timeout_ms, subscribed_topics, assignment)"
                                " VALUES (:pk, :m, :timeout, '{t}', CAST(:a AS json))"
                            ),
                            {
                                "pk": pk,
                                "m": mid,
                                "timeout": timeout,
                                "a": json.dumps({"t": partitions}),
                            },
                        )
                    if previous is not None:
                        conn.execute(
                            text(
                                "INSERT INTO rebalances (to_generation_pk, from_generation_pk,"
                                " group_name, from_generation, to_generation, time,"
                                " members_joined, members_left, partitions_moved,"
                                " partitions_revoked, partitions_newly_assigned,"
                                " moves_from_survivors, cooperative_episode)"
                                " SELECT :pk, :prev, :g, :n - 1, :n, time, 0, 0, 0, 0, 0, :s,"
                                " false FROM generations WHERE id = :pk"
                            ),
                            {
                                "pk": pk,
                                "prev": previous,
                                "g": group,
                                "n": number,
                                "s": from_survivors,
                            },
                        )
                    previous = pk
        upgrade(empty_database_url)
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT group_name, disruptive FROM rebalances ORDER BY to_generation_pk")
            ).all()
            timeline = (
                conn.execute(
                    text(
                        "SELECT disruptive FROM group_timeline WHERE group_name = 'k'"
                        " ORDER BY generation"
                    )
                )
                .scalars()
                .all()
            )
        assert [tuple(r) for r in rows] == [
            ("k", False),
            ("k", False),
            ("k", True),
            ("k", False),
            ("e", False),
            ("e", True),
            ("e", True),
            ("e", False),
            ("e", False),
        ]
        assert timeline == [None, False, False, True, False]
        downgrade(empty_database_url, "0004")
        upgrade(empty_database_url)
    finally:
        engine.dispose()


# Offset history as stores before 0007 kept it: (batch id, seconds after T0 of the batch,
# [(partition, offset or None, commit time in seconds or None, source offset)]), group g.
BATCH_HISTORY = [
    (1, 10, [(0, 100, 5, 10), (1, 50, 6, 11)]),
    (2, 20, [(0, 120, 15, 12)]),  # minute 0's latest of partition 0
    (3, 70, [(0, 200, 65, 13), (1, None, None, 14)]),  # a tombstone: its batch's minute
    (4, 200, [(0, 260, 190, 15)]),
]
T0_SQL = "CAST('2026-03-01T12:00:00Z' AS timestamptz)"


def seed_batch_history(conn) -> None:
    conn.execute(text(f"INSERT INTO groups VALUES ('g', 'classic', 7, {T0_SQL}, {T0_SQL})"))
    for number, seconds in ((1, 0), (2, 180)):
        conn.execute(
            text(
                "INSERT INTO generations (group_name, generation, time, member_count,"
                " source_partition, source_offset, source_timestamp, batch_id) VALUES"
                f" ('g', :n, {T0_SQL} + make_interval(secs => :s), 0, 7, :n, {T0_SQL}, 1)"
            ),
            {"n": number, "s": seconds},
        )
    for batch_id, seconds, entries in BATCH_HISTORY:
        conn.execute(
            text(
                "INSERT INTO offset_history (group_name, source_offset, batch_id, batch_time,"
                " topics, partitions, committed_offsets, commit_timestamps, source_offsets,"
                f" commit_count) SELECT 'g', max(o), :b, {T0_SQL} + make_interval(secs => :s),"
                " array_agg(text 't' ORDER BY o), array_agg(p ORDER BY o), array_agg(c ORDER BY o),"
                f" array_agg({T0_SQL} + make_interval(secs => ts) ORDER BY o),"
                " array_agg(o ORDER BY o), count(*) FROM (SELECT"
                " unnest(CAST(:p AS int[])) p, unnest(CAST(:c AS bigint[])) c,"
                " unnest(CAST(:t AS float8[])) ts, unnest(CAST(:o AS bigint[])) o) e"
            ),
            {
                "b": batch_id,
                "s": seconds,
                "p": [e[0] for e in entries],
                "c": [e[1] for e in entries],
                "t": [e[2] for e in entries],
                "o": [e[3] for e in entries],
            },
        )


def query(engine, sql: str) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


def test_db_upgrade_moves_the_offset_history_to_minutes_and_keeps_the_batches(
    empty_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`groupscope db upgrade` on a store with per-batch offset history (0006): each
    partition's latest entry of each minute moves over, the old rows stay as they were
    in offset_history_batches, the views read the new shape, the job's writes merge into
    it; a downgrade brings back the old table with what was written since."""
    engine = create_store_engine(empty_database_url)
    try:
        upgrade(empty_database_url, "0006")
        with engine.begin() as conn:
            seed_batch_history(conn)
        before = query(engine, "SELECT * FROM offset_history ORDER BY source_offset")

        assert main(["db", "upgrade", "--database-url", empty_database_url]) == 0
        assert f"to {head_revision()} (head)" in capsys.readouterr().out
        assert query(engine, "SELECT * FROM offset_history_batches ORDER BY 2") == before
        entries = query(
            engine,
            "SELECT extract(epoch FROM minute - " + T0_SQL + "), partition, committed_offset,"
            " source_offset, commits FROM offset_history_entries ORDER BY source_offset",
        )
        assert entries == [
            (0, 1, 50, 11, None),
            (0, 0, 120, 12, None),
            (60, 0, 200, 13, None),
            (60, 1, None, 14, None),
            (180, 0, 260, 15, None),
        ]
        # generation 1 moved partition 0 from 120 to 200 (the minute's latest points),
        # generation 2 from 200 to 260
        progress = "SELECT committed_progress FROM group_timeline ORDER BY generation"
        assert query(engine, progress) == [(80,), (60,)]

        # The job's next commit of partition 0 in minute 3 replaces the moved entry.
        commit = OffsetCommit("g", "t", 0, 300, 7, 16, commit_time=at(195), commits=2)
        HistoryStore(engine).write_batch(batch(9, offsets=[commit]))
        assert query(engine, "SELECT commits_total FROM groups") == [(2,)]
        assert query(engine, progress) == [(80,), (100,)]

        downgrade(empty_database_url, "0006")
        after = query(engine, "SELECT * FROM offset_history ORDER BY source_offset")
        assert after[:-1] == before
        assert after[-1][:3] == ("g", 16, -1)  # what was written since, a row per minute
        assert after[-1][4:] == (["t"], [0], [300], [at(195)], [16], None)
        # the old views count every batch's point again
        assert query(engine, progress) == [(100,), (100,)]
    finally:
        engine.dispose()


def test_0009_partitions_the_offset_history_by_day_without_losing_a_row(
    empty_database_url: str,
) -> None:
    """Upgrade to 0009 with history in place: every row moves into a day partition (the
    days within the longest retention) or the default one (a minute far in the past or
    the future), the views read the same, new writes land in their day; a downgrade
    brings every row back into one plain table."""
    from datetime import UTC, datetime, timedelta

    from services.store.batch import DecodeFailure, Repair

    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    minutes = [
        today - timedelta(hours=14),
        today + timedelta(minutes=30),
        datetime(2020, 1, 1, tzinfo=UTC),
        datetime(2100, 1, 1, tzinfo=UTC),
    ]
    engine = create_store_engine(empty_database_url)
    history = "SELECT * FROM offset_history ORDER BY group_name, minute"
    entries = "SELECT * FROM offset_history_entries ORDER BY source_offset"
    kind = "SELECT relkind FROM pg_class WHERE relname = 'offset_history'"
    try:
        # Written by the store's code (at head), then taken back to 0008.
        upgrade(empty_database_url)
        HistoryStore(engine).write_batch(
            batch(
                1,
                offsets=[
                    OffsetCommit("g", "t", p, 10 * i, 7, i, commit_time=m)
                    for i, m in enumerate(minutes)
                    for p in (0, 1)
                ],
                decode_failures=[DecodeFailure(7, 99, "bad", b"k", None, None)],
                repairs=[Repair(7, 98, "metadata", "nul", original=b"\0")],
            )
        )
        downgrade(empty_database_url, "0008")
        before, entries_before = query(engine, history), query(engine, entries)
        assert len(before) == 4

        upgrade(empty_database_url, "0009")
        assert query(engine, kind) == [("p",)]
        assert query(engine, history) == before
        assert query(engine, entries) == entries_before
        leaves = query(
            engine,
            "SELECT tableoid::regclass::text, count(*) FROM offset_history GROUP BY 1 ORDER BY 1",
        )
        yesterday = today - timedelta(days=1)
        assert leaves == [
            ("offset_history_default", 2),
            (f"offset_history_p{yesterday:%Y%m%d}", 1),
            (f"offset_history_p{today:%Y%m%d}", 1),
        ]
        stored = "SELECT count(*) FROM {} WHERE stored_at IS NOT NULL"
        assert query(engine, stored.format("decode_failures")) == [(1,)]
        assert query(engine, stored.format("record_repairs")) == [(1,)]
        assert query(engine, "SELECT count(*) FROM group_timeline") == [(0,)]

        later = today + timedelta(hours=2)
        with engine.begin() as conn:  # a write of 0009's shape
            conn.execute(
                text(
                    "INSERT INTO offset_history VALUES ('g', :m, '{t}', '{0}', '{99}',"
                    " ARRAY[CAST(:m AS timestamptz)], '{50}', '{1}')"
                ),
                {"m": later},
            )
        assert query(
            engine, f"SELECT tableoid::regclass::text FROM offset_history WHERE minute = '{later}'"
        ) == [(f"offset_history_p{today:%Y%m%d}",)]
        after = query(engine, history)

        downgrade(empty_database_url, "0008")
        assert query(engine, kind) == [("r",)]
        assert query(engine, history) == after
        columns = {c["name"] for c in inspect(engine).get_columns("record_repairs")}
        assert "stored_at" not in columns
        pruned = {"pruned_rebalances", "pruned_decode_failures"}
        assert set(inspect(engine).get_table_names()) == TABLES - pruned | {"alembic_version"}
    finally:
        engine.dispose()


# Every table 0010 gives a cluster, and the views that show it.
CLUSTER_TABLES = (
    "groups",
    "generations",
    "rebalances",
    "static_replacements",
    "committed_offsets",
    "offset_history",
    "decode_failures",
    "record_repairs",
    "pruned_rebalances",
    "pruned_decode_failures",
    "pipeline_progress",
    "pipeline_status",
)
CLUSTER_VIEWS = (
    "group_timeline",
    "partition_ownership",
    "offset_history_entries",
    "generation_offset_progress",
    "rebalance_storms",
)


def cluster_history():
    """One batch that writes a row into every table 0010 gives a cluster: a group
    through three generations (two rebalances, a static replacement, a commit gap),
    its offsets, a decode failure, a repair, the batch's progress and health."""
    from services.store.batch import (
        BatchHealth,
        Cause,
        DecodeFailure,
        RebalanceCost,
        Repair,
        SourceProgress,
        StaticReplacement,
    )
    from tests.fixtures.batches import churn, commit, generation, member

    one = [member("app-1", {"orders": [0, 1]}, instance="i-1")]
    two = [member("app-1", {"orders": [0]}, instance="i-1"), member("app-2", {"orders": [1]})]
    gens = [
        generation(1, 10, one, time=at(0)),
        generation(2, 20, two, time=at(60), churn=churn(1, 10, moved=1, joined=1)),
        generation(3, 30, one, time=at(120), churn=churn(2, 20, moved=1, left=1)),
    ]
    gens[1] = replace(gens[1], causes=[Cause("scale_out", "app-2 joined")])
    return batch(
        1,
        generations=gens,
        offsets=[commit(100 * i, 11 + 10 * i, time=at(30 + 60 * i)) for i in range(3)],
        decode_failures=[DecodeFailure(35, 99, "bad key", b"k", None, at(5))],
        repairs=[Repair(35, 98, "metadata", "nul", original=b"\0")],
        replacements=[StaticReplacement("billing", 3, at(130), 35, 31, "i-1", "app-1", "app-1b")],
        costs=[RebalanceCost("billing", 35, 20, 1, 0, timedelta(seconds=4), timedelta(seconds=4))],
        progress=[SourceProgress(35, 31)],
        health=BatchHealth(records=9, seconds=0.5),
    )


def table_rows(engine, name: str, *leave_out: str) -> list[tuple]:
    """Every row of `name` (a table, a view or a subquery), sorted, without the columns
    `leave_out`."""
    with engine.connect() as conn:
        result = conn.execute(text(f"SELECT * FROM {name}"))
        keep = [i for i, c in enumerate(result.keys()) if c not in leave_out]
        return sorted((tuple(repr(r[i]) for i in keep) for r in result), key=str)


def test_0010_files_the_history_under_a_cluster_without_losing_a_row(
    empty_database_url: str,
) -> None:
    """A one-cluster store (revision 0009) upgraded with `db upgrade --cluster prod`:
    every row of every table and view is there as before, under `prod`; a second
    cluster's job then writes the same records (same group, same positions) beside it
    without touching a row of prod's; a downgrade refuses while two clusters are in."""
    from sqlalchemy.exc import IntegrityError

    engine = create_store_engine(empty_database_url)
    try:
        upgrade(empty_database_url)  # seeded at head: the store's code writes 0010's shape
        HistoryStore(engine).write_batch(cluster_history())
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO pruned_rebalances (cluster, group_name, cause, rebalances,"
                    " disruptive, partitions_moved, baseline_moves, minimum_moves)"
                    " VALUES ('default', 'billing', 'restart', 2, 1, 3, 2, 1)"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO pruned_decode_failures (cluster, category, failures)"
                    " VALUES ('default', 'bad key', 4)"
                )
            )
        downgrade(empty_database_url, "0009")
        columns = {c["name"] for c in inspect(engine).get_columns("groups")}
        assert "cluster" not in columns
        before = {name: table_rows(engine, name) for name in CLUSTER_TABLES + CLUSTER_VIEWS}
        assert all(
            before[name] for name in CLUSTER_TABLES + CLUSTER_VIEWS if name != "rebalance_storms"
        )

        assert (
            main(["db", "upgrade", "--cluster", "prod", "--database-url", empty_database_url]) == 0
        )
        for name in CLUSTER_TABLES + CLUSTER_VIEWS:
            assert table_rows(engine, name, "cluster") == before[name], name
            assert query(engine, f"SELECT DISTINCT cluster FROM {name}") in ([("prod",)], []), name

        # The same records from another cluster: new rows, prod's unchanged.
        HistoryStore(engine, cluster="dev").write_batch(cluster_history())
        for name in (*CLUSTER_TABLES[:8], "pipeline_progress", "pipeline_status"):
            counts = query(engine, f"SELECT cluster, count(*) FROM {name} GROUP BY 1 ORDER BY 1")
            assert counts[0][1] == counts[1][1] and [c for c, _ in counts] == ["dev", "prod"], name
        timeline = "(SELECT * FROM group_timeline WHERE cluster = '{}') t"
        prod, dev = (
            table_rows(engine, timeline.format(c), "cluster", "generation_pk")
            for c in ("prod", "dev")
        )
        assert prod == dev and len(prod) == 3
        # The cluster is part of the key: no row without one.
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(
                text("INSERT INTO groups (name, first_seen, last_seen) VALUES ('x', now(), now())")
            )
        with pytest.raises(RuntimeError, match="2 clusters \\(dev, prod\\)"):
            downgrade(empty_database_url, "0009")
    finally:
        engine.dispose()
