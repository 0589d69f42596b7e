"""Retention: a prune deletes the history before its cutoff and never what is current.

One store, seeded once, is counted dry, pruned, and pruned again; the tests read what
each step left. Days (UTC): the offset history has partitions for 02-27 to 03-02; the
cutoff is 03-01 06:00, "now" an hour later (the shortest retention).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from services.cli import main
from services.exporter.snapshot import read_snapshot
from services.store.batch import DecodeFailure, OffsetCommit, Repair, StaticReplacement
from services.store.database import create_store_engine
from services.store.partitions import DEFAULT, day_partitions, ensure_days
from services.store.repository import HistoryStore
from services.store.retention import Maintenance, PruneReport, prune
from services.store.snapshots import latest_generations
from tests.fixtures.batches import batch, churn, generation, member

NOW = datetime(2026, 3, 1, 7, 0, tzinfo=UTC)
CUTOFF = NOW - timedelta(hours=1)
DAYS = [date(2026, 2, 27), date(2026, 2, 28), date(2026, 3, 1), date(2026, 3, 2)]


def t(day: int, hour: float, month: int = 3, year: int = 2026) -> datetime:
    return datetime(year, month, day, tzinfo=UTC) + timedelta(hours=hour)


def commit(source_offset: int, time: datetime, group: str = "billing") -> OffsetCommit:
    return OffsetCommit(group, "orders", 0, source_offset * 10, 35, source_offset, time)


# billing: generations 1 and 2 are wholly before the cutoff; 3 was current at the
# cutoff; 4 came after it. idle: one old generation, its latest. skewed: the latest by
# position has the earlier time (a clock that went back). storming: five disruptive
# rebalances in the last ten minutes.
GENERATIONS = [
    generation(1, 100, [member("a-1", {"orders": [0, 1]})], time=t(27, 10, 2)),
    generation(
        2,
        101,
        [member("a-1", {"orders": [0]}), member("b-1", {"orders": [1]})],
        time=t(28, 10, 2),
        churn=churn(1, 100, moved=1),
    ),
    generation(3, 102, [member("b-1", {"orders": [0, 1]})], time=t(1, 3), churn=churn(2, 101)),
    generation(4, 103, [member("c-1", {"orders": [0, 1]})], time=t(1, 9), churn=churn(3, 102)),
    generation(1, 200, [member("i-1", {"t": [0]})], group="idle", time=t(27, 1, 2)),
    generation(1, 300, [member("s-1", {"t": [0]})], group="skewed", time=t(28, 10, 2)),
    generation(2, 301, [member("s-1", {"t": [0]})], group="skewed", time=t(27, 10, 2)),
    *(
        generation(
            n,
            400 + n,
            [member(f"m-{n}", {"t": [0]})],
            group="storming",
            time=NOW - timedelta(minutes=10 - n),
            churn=None if n == 1 else churn(n - 1, 399 + n, moved=1, from_survivors=1),
        )
        for n in range(1, 7)
    ),
]
HISTORY = {  # minute: kept
    t(27, 10, 2): False,  # a day partition wholly before the cutoff: dropped
    t(28, 10, 2): False,
    t(1, 5): False,  # the day of the cutoff, before it: deleted row-wise
    t(1, 8): True,
    t(2, 8): True,
    t(1, 0, 1, 2025): False,  # no day partition: the default partition's
    t(1, 0, 1, 2027): True,
}
FAILURES = [
    DecodeFailure(35, 900, "old", b"k", b"v", t(27, 10, 2)),
    DecodeFailure(35, 901, "recent", b"k", b"v", t(1, 8)),
    DecodeFailure(35, 902, "no time: stored now", b"k", b"v", None),
]
REPLACEMENTS = [  # of billing's generation 1 (pruned) and 3 (kept, though before the cutoff)
    StaticReplacement("billing", 1, t(27, 11, 2), 35, 150, "app", "x-1", "x-2"),
    StaticReplacement("billing", 3, t(1, 4), 35, 151, "app", "y-1", "y-2"),
]
PRUNED_ROWS = {
    "offset_history": 2,  # row by row: 03-01 05:00 and 2025's (default partition)
    "generations": 2,  # billing 1 and 2; idle has no older one, storming none
    "generation_members": 3,
    "rebalances": 1,  # billing 1 -> 2 (generation 1 had none)
    "static_replacements": 1,
    "offset_history_batches": 1,
    "decode_failures": 1,
    "record_repairs": 1,
}
QUERIES = {
    "generations": "SELECT group_name, generation FROM generations",
    "members": "SELECT g.group_name, g.generation, m.member_id FROM generation_members m "
    "JOIN generations g ON g.id = m.generation_pk",
    "rebalances": "SELECT group_name, from_generation, to_generation, from_generation_pk IS NULL"
    " FROM rebalances",
    "history": "SELECT group_name, minute FROM offset_history",
    "offsets": "SELECT group_name, topic, partition, committed_offset FROM committed_offsets",
    "replacements": "SELECT group_name, generation FROM static_replacements",
    "failures": "SELECT source_offset FROM decode_failures",
    "repairs": "SELECT source_offset FROM record_repairs",
    "batches": "SELECT source_offset FROM offset_history_batches",
    "progress": "SELECT partition, last_offset FROM pipeline_progress",
    "groups": "SELECT name FROM groups",
}


def contents(engine: Engine) -> dict[str, list[tuple[object, ...]]]:
    with engine.connect() as conn:
        return {k: sorted(map(tuple, conn.execute(text(q)).all())) for k, q in QUERIES.items()}


def seed(engine: Engine) -> None:
    ensure_days(engine, DAYS)
    store = HistoryStore(engine)
    store.write_batch(
        batch(
            1,
            generations=GENERATIONS,
            offsets=[commit(500 + i, minute) for i, minute in enumerate(HISTORY)],
            decode_failures=FAILURES,
            replacements=REPLACEMENTS,
            repairs=[
                Repair(35, 910, "metadata", "nul", original=b"a\0"),
                Repair(35, 911, "x", "y"),
            ],
        )
    )
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE record_repairs SET stored_at = :old WHERE source_offset = 910"),
            {"old": t(27, 0, 2)},
        )
        conn.execute(
            text(
                "INSERT INTO offset_history_batches VALUES ('billing', 1, 1, :old, '{}', '{}',"
                " '{}', '{}', '{}', 0), ('billing', 2, 2, :new, '{}', '{}', '{}', '{}', '{}', 0)"
            ),
            {"old": t(27, 0, 2), "new": t(1, 8)},
        )


def exported(engine: Engine) -> tuple[object, ...]:
    """What the exporter's counters are built from: rebalances, moves and causes per
    group, decode failures per category."""
    snapshot = read_snapshot(engine, 600, NOW)
    return snapshot.rebalances, snapshot.rebalance_causes, snapshot.failures


@dataclass
class Run:
    before: dict[str, list[tuple[object, ...]]]
    dry: PruneReport
    after_dry: dict[str, list[tuple[object, ...]]]
    pruned: PruneReport
    after: dict[str, list[tuple[object, ...]]]
    again: PruneReport
    after_again: dict[str, list[tuple[object, ...]]]
    snapshot_before: dict[str, object]
    snapshot_after: dict[str, object]
    exported_before: tuple[object, ...]
    exported_after: tuple[object, ...]
    partitions_after: list[str]
    storms_after: list[tuple[object, ...]]


@pytest.fixture(scope="module")
def run(postgres_server, migrated_template: str) -> Iterator[Run]:
    name = postgres_server.create_database(template=migrated_template)
    engine = create_store_engine(postgres_server.url(name))
    try:
        seed(engine)
        before, snapshot_before = contents(engine), latest_generations(engine)
        exported_before = exported(engine)
        dry = prune(engine, CUTOFF, dry_run=True)
        after_dry = contents(engine)
        pruned = prune(engine, CUTOFF)
        after = contents(engine)
        again = prune(engine, CUTOFF)
        with engine.connect() as conn:
            names = [p.name for p in day_partitions(conn)]
            storms = conn.execute(
                text(
                    "SELECT group_name, rebalances FROM rebalance_storms_between("
                    ":from, :to, interval '10 minutes', 5)"
                ),
                {"from": NOW - timedelta(minutes=10), "to": NOW},
            ).all()
        yield Run(
            before,
            dry,
            after_dry,
            pruned,
            after,
            again,
            contents(engine),
            snapshot_before,
            latest_generations(engine),
            exported_before,
            exported(engine),
            names,
            [tuple(s) for s in storms],
        )
    finally:
        engine.dispose()
        postgres_server.drop_database(name)


def test_a_dry_run_counts_what_the_prune_then_deletes_and_changes_nothing(run: Run) -> None:
    assert run.after_dry == run.before
    assert run.dry.rows == run.pruned.rows
    assert [p.name for p in run.dry.partitions] == [p.name for p in run.pruned.partitions]
    assert run.pruned.complete and not run.pruned.busy


def test_the_prune_removes_the_old_rows_of_every_table(run: Run) -> None:
    assert run.pruned.rows == PRUNED_ROWS
    gone = set(run.before["history"]) - set(run.after["history"])
    assert gone == {("billing", minute) for minute, kept in HISTORY.items() if not kept}
    assert ("billing", 1) not in run.after["generations"]
    assert ("billing", 2) not in run.after["generations"]
    assert run.after["replacements"] == [("billing", 3)]
    assert run.after["failures"] == [(901,), (902,)]
    assert run.after["repairs"] == [(911,)]
    assert run.after["batches"] == [(2,)]


def test_whole_days_go_by_dropping_their_partitions(run: Run) -> None:
    assert [p.name for p in run.pruned.partitions] == [
        "offset_history_p20260227",
        "offset_history_p20260228",
    ]
    assert run.partitions_after == ["offset_history_p20260301", "offset_history_p20260302"]


def test_what_is_current_stays(run: Run) -> None:
    # Each group's latest generation with its members: what the job resumes from.
    assert run.snapshot_after == run.snapshot_before
    assert set(run.snapshot_after) == {"billing", "idle", "skewed", "storming"}
    # The generation current at the cutoff stays with its rebalance, whose earlier
    # generation went; so does the skewed group's pair (the latest by position is older).
    assert {("billing", 3), ("billing", 4), ("idle", 1), ("skewed", 1), ("skewed", 2)} <= set(
        run.after["generations"]
    )
    assert ("billing", 2, 3, True) in run.after["rebalances"]
    assert run.storms_after == [("storming", 5)]
    for table in ("offsets", "progress", "groups"):
        assert run.after[table] == run.before[table]


def test_the_exporters_counters_count_what_was_pruned(run: Run) -> None:
    assert run.after["rebalances"] != run.before["rebalances"]
    assert run.exported_after == run.exported_before


def test_a_second_prune_deletes_nothing(run: Run) -> None:
    assert run.after_again == run.after
    assert not any(run.again.rows.values()) and run.again.partitions == []


def test_the_periodic_pruner_creates_days_prunes_and_waits_an_interval(
    store_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    seed(store_engine)
    log = logging.getLogger("groupscope.test")
    maintenance = Maintenance(store_engine, 3600, log, interval_s=3600)
    with caplog.at_level(logging.INFO, "groupscope.test"):
        report = maintenance.tick(NOW)
        assert report is not None and report.rows["generations"] == 2
        assert maintenance.tick(NOW) is None  # not due again for an hour
    with store_engine.connect() as conn:
        days = [p.day for p in day_partitions(conn)]
    assert days == [date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3)]
    lines = [r.getMessage() for r in caplog.records]
    assert any("offset history: created partitions offset_history_p20260303" in m for m in lines)
    assert any(
        m.startswith("retention: history before 2026-03-01T06:00:00Z: deleted") for m in lines
    )


def test_a_prune_in_turns_of_one_transaction_ends_as_one_and_is_logged_once(
    store_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    seed(store_engine)
    log = logging.getLogger("groupscope.test")
    maintenance = Maintenance(store_engine, 3600, log, budget_s=0)
    turns = []
    with caplog.at_level(logging.INFO, "groupscope.test"):
        while not turns or not turns[-1].complete:
            report = maintenance.tick(NOW)
            assert report is not None and len(turns) < 50
            turns.append(report)
    assert len(turns) > 5  # each turn ran one transaction and yielded
    assert {table: sum(t.rows[table] for t in turns) for table in PRUNED_ROWS} == PRUNED_ROWS
    pruned = [r.getMessage() for r in caplog.records if r.getMessage().startswith("retention:")]
    assert len(pruned) == 1 and "2 generations rows" in pruned[0]
    assert "2 offset_history day partition(s)" in pruned[0]


def test_the_periodic_pruner_outlives_a_database_outage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = create_store_engine(f"postgresql://nobody@/groupscope?host={tmp_path}&port=1")
    try:
        maintenance = Maintenance(engine, 3600, logging.getLogger("groupscope.test"), retry_s=60)
        with caplog.at_level(logging.WARNING, "groupscope.test"):
            assert maintenance.tick(NOW) is None
        assert maintenance.failures == 1
        assert "retried in 60s" in caplog.records[-1].getMessage()
        assert maintenance.tick(NOW) is None and maintenance.failures == 1  # not yet due
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("soon", "--older-than expects a duration"),
        ("30m", "--older-than must be at least 1h"),
        ("400d", "--older-than: duration '400d' is too long"),
    ],
)
def test_bad_durations_exit_2_with_one_line(
    value: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://nobody@/nowhere?host=/nonexistent&port=1"  # never reached
    assert main(["db", "prune", "--older-than", value, "--database-url", url]) == 2
    err = capsys.readouterr().err
    assert reason in err and err.count("\n") == 1


def test_db_prune_prints_the_report_as_json(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    engine = create_store_engine(database_url)
    try:
        seed(engine)
    finally:
        engine.dispose()
    # Against the real clock everything seeded is old: billing keeps its latest
    # generation, storming its last, skewed both (its latest by position is older).
    assert (
        main(["db", "prune", "--older-than", "1d", "--json", "--database-url", database_url]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["complete"] and not report["dry_run"]
    assert report["rows"]["generations"] == 8
    assert [p["name"] for p in report["partitions_dropped"]] == [
        f"offset_history_p{d:%Y%m%d}" for d in DAYS
    ]
    assert DEFAULT not in str(report["partitions_dropped"])
