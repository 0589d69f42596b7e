"""The streaming job, end to end on real Spark and PostgreSQL, against the simulator's
ground truth: every generation, assignment, join/leave and move, exactly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import Engine, text

from services.cli import main
from services.codec import encode_key, encode_value, partition_for
from services.simulator import SCENARIOS, Params, ReplayDirectory, build, simulate
from services.store.database import create_store_engine
from services.store.errors import StoreUnavailableError
from services.store.repository import HistoryStore
from services.store.retry import RetryPolicy
from spark_jobs.batch import BatchProcessor
from spark_jobs.sources import replay

SCENARIO_NAMES = [n for n in SCENARIOS if n not in ("many-groups", "mixed")]


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every scenario but the load test, composed into one replay directory."""
    out = tmp_path_factory.mktemp("capture")
    specs, duration = build(SCENARIO_NAMES, Params(), None)
    simulate(specs, ReplayDirectory(out, rows_per_file=4000), out, duration or 600_000, seed=11)
    return out


def corrupt_file(directory: Path) -> list[tuple[int, int]]:
    """Bad records beside good ones, in a file of their own; returns their positions."""
    good_key = encode_key("offset_commit", {"group": "late", "topic": "t", "partition": 0})
    good = encode_value("offset_commit", 3, {"offset": 77, "commit_timestamp": 1})
    p = partition_for("late")
    rows = [
        (p, 1_000_000, good_key, good[:-2]),  # truncated
        (p, 1_000_001, good_key, good),  # fine
        (p, 1_000_002, b"\x00\x02\x00\x09grp", None),  # group key shorter than it says
        (p, 1_000_003, b"\x00\x63whatever", b"\x00\x00"),  # a record type from the future
        (p, 1_000_004, None, b"\x00\x01"),  # no key at all
        # A commit key whose topic length overruns it, twice: both records fail, though
        # they share a key and would otherwise be reduced to the latest.
        (p, 1_000_005, b"\x00\x01\x00\x01gxx-padding", good),
        (p, 1_000_006, b"\x00\x01\x00\x01gxx-padding", good),
    ]
    table = pa.table(
        {
            "topic": ["__consumer_offsets"] * len(rows),
            "partition": pa.array([r[0] for r in rows], pa.int32()),
            "offset": pa.array([r[1] for r in rows], pa.int64()),
            "timestamp": pa.array([1_767_225_600_000] * len(rows), pa.timestamp("ms", tz="UTC")),
            "key": pa.array([r[2] for r in rows], pa.binary()),
            "value": pa.array([r[3] for r in rows], pa.binary()),
        }
    )
    pq.write_table(table, directory / "records" / "part-99999.parquet")
    return [
        (p, 1_000_000),
        (p, 1_000_002),
        (p, 1_000_003),
        (p, 1_000_004),
        (p, 1_000_005),
        (p, 1_000_006),
    ]


def stream_args(capture: Path, url: str, checkpoint: Path, files_per_batch: int) -> list[str]:
    """`groupscope stream` over the capture, once, into the database at `url`."""
    return [
        *("stream", "--source", "replay", str(capture), "--once", "--database-url", url),
        *("--checkpoint", str(checkpoint), "--max-files-per-trigger", str(files_per_batch)),
    ]


@pytest.fixture(scope="module")
def streamed(
    capture: Path, postgres_server, migrated_template: str, spark, tmp_path_factory
) -> Iterator[tuple[Engine, list[tuple[int, int]]]]:
    bad = corrupt_file(capture)
    name = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(name)
    checkpoint = tmp_path_factory.mktemp("checkpoint")
    code = main(stream_args(capture, url, checkpoint, files_per_batch=2))
    assert code == 0
    engine = create_store_engine(url)
    yield engine, bad
    engine.dispose()
    postgres_server.drop_database(name)


def truth(capture: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (capture / "truth" / name).read_text().splitlines()]


def stored_assignments(engine: Engine) -> dict[tuple[str, int], dict[str, list]]:
    sql = text(
        "SELECT g.group_name, g.generation, coalesce(m.group_instance_id, m.member_id), "
        "a.topic, a.partitions FROM generations g "
        "LEFT JOIN generation_members m ON m.generation_pk = g.id "
        "LEFT JOIN assignments a ON a.generation_pk = g.id AND a.member_id = m.member_id"
    )
    out: dict[tuple[str, int], dict[str, list]] = {}
    with engine.connect() as conn:
        for group, generation, ident, topic, partitions in conn.execute(sql):
            members = out.setdefault((group, generation), {})
            if ident is not None:
                members.setdefault(ident, [])
                if topic is not None:
                    members[ident] += [[topic, p] for p in partitions]
    return {k: {m: sorted(tps) for m, tps in v.items()} for k, v in out.items()}


def test_generations_and_assignments_equal_the_truth(streamed, capture: Path) -> None:
    engine, _ = streamed
    expected = {
        (g["group"], g["generation"]): {m: sorted(tps) for m, tps in g["assignment"].items()}
        for g in truth(capture, "generations.jsonl")
    }
    assert len(expected) > 50
    assert stored_assignments(engine) == expected


def test_rebalances_equal_the_truth(streamed, capture: Path) -> None:
    engine, _ = streamed
    expected = {
        (r["group"], r["to_generation"]): (
            r["from_generation"],
            len(r["joined"]),
            len(r["left"]),
            r["moves"]["total"],
            r["moves"]["from_surviving"],
            r["cooperative"],
        )
        for r in truth(capture, "rebalances.jsonl")
        if r["from_generation"] is not None
    }
    sql = text(
        "SELECT group_name, to_generation, from_generation, members_joined, members_left, "
        "partitions_moved, moves_from_survivors, cooperative_episode, baseline_moves, "
        "minimum_moves FROM rebalances"
    )
    with engine.connect() as conn:
        rows = conn.execute(sql).all()
    got = {(r[0], r[1]): tuple(r[2:8]) for r in rows}
    assert got == expected
    assert any(r.cooperative_episode for r in rows)
    for r in rows:  # the baseline and the minimum are real numbers, the minimum the least
        assert r.minimum_moves is not None and r.baseline_moves is not None
        assert r.minimum_moves <= r.baseline_moves


def disruptive_truth(capture: Path) -> dict[tuple[str, int], bool]:
    """Which of the simulator's rebalances disrupted running members, by the rules of
    docs/architecture.md ("Storms"), from the ground truth: the assignments before and
    after, the moves from survivors, and formation by the groups' rebalance timeouts
    (max.poll.interval.ms, which the simulated members send)."""
    specs, _ = build(SCENARIO_NAMES, Params(), None)
    timeouts = {spec.name: spec.max_poll_interval_ms for spec in specs}
    generations: dict[str, list[dict]] = {}
    for g in truth(capture, "generations.jsonl"):
        generations.setdefault(g["group"], []).append(g)
    forming: dict[tuple[str, int], bool] = {}
    for group, history in generations.items():
        until, previous = None, None
        for g in sorted(history, key=lambda g: (g["log_partition"], g["log_offset"])):
            members = g["assignment"]
            if not members:
                until = None
            elif previous is None:
                until = g["time"] + timeouts[group] if g["generation"] <= 1 else None
            elif not previous["assignment"]:
                until = g["time"] + timeouts[group]
            elif until is not None and (
                g["time"] > until or set(previous["assignment"]) - set(members)
            ):
                until = None
            forming[(group, g["generation"])] = until is not None
            previous = g
    assignments = {(g["group"], g["generation"]): g for gs in generations.values() for g in gs}
    expected = {}
    for r in truth(capture, "rebalances.jsonl"):
        if r["from_generation"] is None:
            continue
        before = assignments[(r["group"], r["from_generation"])]["assignment"]
        after = assignments[(r["group"], r["to_generation"])]
        eager = r["group_type"] == "classic" and "cooperative" not in (after["protocol"] or "")
        if eager:
            lost = any(before[m] for m in set(before) & set(after["assignment"]))
        else:
            lost = r["moves"]["from_surviving"] > 0
        expected[(r["group"], r["to_generation"])] = (
            lost and not forming[(r["group"], r["to_generation"])]
        )
    return expected


def test_disruptive_rebalances_and_storms_follow_the_truth(streamed, capture: Path) -> None:
    """The job marks exactly the rebalances that took partitions from running members;
    the crash loop storms, the KIP-848 group (forming, leaving, resubscribing) does not."""
    engine, _ = streamed
    expected = disruptive_truth(capture)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT group_name, to_generation, disruptive FROM rebalances"))
        got = {(r[0], r[1]): r[2] for r in rows}
        storms = conn.execute(text("SELECT group_name, rebalances FROM rebalance_storms")).all()
    assert got == expected
    assert True in got.values() and False in got.values()
    kip848 = [v for (group, _), v in got.items() if group == "kip848-0"]
    assert False in kip848 and kip848.count(True) < 5
    stormed = {group for group, _ in storms}
    assert "crash-loop-0" in stormed
    assert "kip848-0" not in stormed and "steady-0" not in stormed


def test_committed_offsets_equal_the_truth(streamed, capture: Path) -> None:
    engine, _ = streamed
    expected = {
        (c["group"], c["topic"], c["partition"]): (c["offset"], c["leader_epoch"], c["metadata"])
        for c in truth(capture, "commits.jsonl")
    }
    sql = text(
        "SELECT group_name, topic, partition, committed_offset, leader_epoch, metadata "
        "FROM committed_offsets WHERE NOT deleted AND group_name <> 'late'"
    )
    with engine.connect() as conn:
        got = {(r[0], r[1], r[2]): (r[3], r[4], r[5]) for r in conn.execute(sql)}
    assert got == expected


def test_bad_records_are_stored_and_the_good_ones_land(streamed) -> None:
    engine, bad = streamed
    with engine.connect() as conn:
        failures = conn.execute(
            text("SELECT source_partition, source_offset, reason, key FROM decode_failures")
        ).all()
        late = conn.execute(
            text("SELECT committed_offset FROM committed_offsets WHERE group_name = 'late'")
        ).scalar_one()
    assert sorted((f[0], f[1]) for f in failures) == sorted(bad)
    reasons = " | ".join(f[2] for f in failures)
    assert "commit_timestamp" in reasons and "unknown record type 99" in reasons
    keys = {(f[0], f[1]): f[3] for f in failures}
    assert keys.pop((partition_for("late"), 1_000_004)) is None  # kept as it came: no key
    assert all(keys.values())  # the raw bytes are kept
    assert late == 77


def test_pipeline_health_commit_counts_and_states_are_recorded(streamed, capture: Path) -> None:
    engine, _ = streamed
    table = pq.read_table(capture / "records", columns=["key", "value"])
    records = table.column("key").to_pylist()
    values = table.column("value").to_pylist()
    commits: dict[str, int] = {}
    for key, value in zip(records, values, strict=True):
        if key and value is not None and int.from_bytes(key[:2], "big") in (0, 1):
            group = key[4 : 4 + int.from_bytes(key[2:4], "big")].decode()
            commits[group] = commits.get(group, 0) + 1
    with engine.connect() as conn:
        status = conn.execute(
            text(
                "SELECT records_total, batches_total, caught_up, records_behind, "
                "last_batch_seconds FROM pipeline_status"
            )
        ).one()
        stored = dict(
            conn.execute(
                text("SELECT name, commits_total FROM groups WHERE commits_total > 0")
            ).all()
        )
        states = dict(
            conn.execute(text("SELECT state, count(*) FROM generations GROUP BY state")).all()
        )
        categories = {r[0] for r in conn.execute(text("SELECT category FROM decode_failures"))}
    assert status.records_total == len(records)
    assert status.batches_total >= 2 and status.caught_up and status.records_behind == 0
    assert status.last_batch_seconds > 0
    # every offset commit record counted once, the ones superseded within a batch too;
    # tombstones (deleted or expired offsets) are not commits
    # (the truncated 'late' commit and both commits under the overrunning key 'g' failed
    # to decode, so they are not commits)
    commits["late"] -= 1
    assert commits.pop("g") == 2
    assert stored == commits
    assert {"stable", "rebalancing"} <= states.keys() <= {"stable", "empty", "rebalancing"}
    # without the type id, offsets or lengths: a bounded label set
    assert categories == {
        "GroupMetadataKey v0: length exceeds",
        "OffsetCommitKey v0: length exceeds",
        "OffsetCommitValue v3: truncated",
        "key: key shorter than",
        "unknown record type",
    }


def table_contents(engine: Engine) -> dict[str, list]:
    """What a run leaves behind, without the ids and times that differ between runs."""
    queries = {
        "generations": "SELECT group_name, generation, assignor, member_count, source_partition,"
        " source_offset FROM generations",
        "rebalances": "SELECT group_name, from_generation, to_generation, partitions_moved,"
        " moves_from_survivors, baseline_moves, minimum_moves FROM rebalances",
        "offsets": "SELECT group_name, topic, partition, committed_offset, deleted, source_offset"
        " FROM committed_offsets",
        "failures": "SELECT source_partition, source_offset, reason FROM decode_failures",
        "progress": "SELECT partition, last_offset FROM pipeline_progress",
        "groups": "SELECT name, type, deleted_at IS NULL FROM groups",
        "history": "SELECT * FROM offset_history",
    }
    with engine.connect() as conn:
        return {k: sorted(map(tuple, conn.execute(text(q)).all())) for k, q in queries.items()}


class FailingStore:
    """Fails its second batch as if the database went away mid-write."""

    def __init__(self, store: HistoryStore) -> None:
        self.store, self.calls = store, 0

    def write_batch(self, batch) -> None:
        self.calls += 1
        if self.calls == 2:
            raise StoreUnavailableError("database went away (injected)")
        self.store.write_batch(batch)


def run_query(spark, capture: Path, store, checkpoint: Path, engine: Engine) -> None:
    from services.store.snapshots import latest_generations

    processor = BatchProcessor(
        store,
        f"replay:{capture}",
        50,
        latest_generations(engine),
        RetryPolicy(attempts=1),
        state_dir=checkpoint / "groupscope",
    )
    query = (
        replay(spark, capture, max_files=2)
        .writeStream.foreachBatch(processor)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    finally:
        query.stop()


def test_replay_and_restart_after_a_failed_batch_equal_an_uninterrupted_run(
    streamed, capture: Path, postgres_server, migrated_template: str, spark, tmp_path
) -> None:
    engine, _ = streamed
    name = postgres_server.create_database(template=migrated_template)
    other = create_store_engine(postgres_server.url(name))
    try:
        checkpoint = tmp_path / "checkpoint"
        with pytest.raises(Exception, match="injected"):
            run_query(spark, capture, FailingStore(HistoryStore(other)), checkpoint, other)
        run_query(spark, capture, HistoryStore(other), checkpoint, other)  # restart
        assert table_contents(other) == table_contents(engine)
        # Replaying everything from scratch (a lost checkpoint) changes nothing either.
        run_query(spark, capture, HistoryStore(other), tmp_path / "fresh", other)
        assert table_contents(other) == table_contents(engine)
    finally:
        other.dispose()
        postgres_server.drop_database(name)


def commit_counts(engine: Engine) -> list[tuple]:
    with engine.connect() as conn:
        return sorted(map(tuple, conn.execute(text("SELECT name, commits_total FROM groups"))))


def batch_counts(engine: Engine) -> tuple[int, int, int]:
    """(batches_total, records_total, last_batch_id) of the pipeline."""
    sql = "SELECT batches_total, records_total, last_batch_id FROM pipeline_status"
    with engine.connect() as conn:
        return tuple(conn.execute(text(sql)).one())  # type: ignore[return-value]


def test_a_job_killed_mid_run_resumes_to_the_same_database(
    streamed, capture: Path, postgres_server, migrated_template: str, tmp_path
) -> None:
    """kill -9 of the whole job (Python driver and JVM) just after a batch was written
    and logged, when Spark has most likely not yet committed it: the restart replays it."""
    engine, _ = streamed
    name = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(name)
    other = create_store_engine(url)
    command = [
        *(sys.executable, "-m", "services.cli"),
        *stream_args(capture, url, tmp_path / "checkpoint", files_per_batch=1),
    ]
    try:
        job = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, start_new_session=True)
        seen = []
        for line in job.stderr:  # type: ignore[union-attr]
            seen.append(line)
            if "groupscope.stream batch 1:" in line:
                os.killpg(job.pid, signal.SIGKILL)
                break
        job.wait(60)
        assert job.returncode == -signal.SIGKILL, "".join(seen[-20:])
        with other.connect() as conn:
            last = conn.execute(text("SELECT max(batch_id) FROM pipeline_progress")).scalar_one()
        assert 1 <= last < 5  # killed part way through the six batches
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        assert table_contents(other) == table_contents(engine)
        assert commit_counts(other) == commit_counts(engine)  # the replayed batch counted once
        # and in the pipeline's counters: each batch id once, each record once
        batches, records, last_batch = batch_counts(other)
        assert (batches, records) == (last_batch + 1, batch_counts(engine)[1])
    finally:
        other.dispose()
        postgres_server.drop_database(name)


def offset_history_figures(engine: Engine) -> dict[str, list]:
    """Everything derived from the offset history: its rows, each generation's progress
    (as the postmortem's COMMITTED column shows it) and each group's commit count and
    last commit."""
    queries = {
        "history": "SELECT * FROM offset_history",
        "progress": "SELECT group_name, generation, committed_progress FROM group_timeline",
        "commits": "SELECT name, commits_total, last_commit_timestamp FROM groups",
    }
    with engine.connect() as conn:
        return {k: sorted(map(tuple, conn.execute(text(q))), key=repr) for k, q in queries.items()}


def postmortems(url: str, groups: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    """`groupscope postmortem GROUP --json` of each group."""
    out = {}
    capsys.readouterr()
    for group in groups:
        assert main(["postmortem", group, "--json", "--database-url", url]) == 0
        out[group] = json.loads(capsys.readouterr().out)
    return out


def test_a_backlog_in_one_batch_leaves_the_history_a_live_run_leaves(
    streamed, capture: Path, postgres_server, migrated_template: str, tmp_path, capsys
) -> None:
    """The capture read in one micro-batch (a first run over a backlog) and in several
    (`streamed`, as a live job reads it): the same offset history, the same progress per
    generation, commit counts and postmortems; and after the backlog, every generation
    during which its group committed shows how far it got, not `-` or 0."""
    engine, _ = streamed
    live_url = engine.url.render_as_string(hide_password=False)
    assert batch_counts(engine)[0] >= 3
    name = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(name)
    backlog = create_store_engine(url)
    try:
        assert main(stream_args(capture, url, tmp_path / "checkpoint", files_per_batch=100)) == 0
        assert batch_counts(backlog)[0] == 1
        figures = offset_history_figures(backlog)
        assert figures == offset_history_figures(engine)
        with backlog.connect() as conn:
            groups = list(conn.execute(text("SELECT name FROM groups WHERE type IS NOT NULL")))
        names = sorted(g for (g,) in groups)
        answers = postmortems(url, names, capsys)
        # Causes and commit gaps included: the evidence pass gives the tracker in one
        # batch what it gets from many (docs/architecture.md, "Rebalance causes").
        assert answers == postmortems(live_url, names, capsys)

        # The steady group commits throughout: each generation moved its offsets on,
        # the last one too (before, a backlog left one point per partition: no progress
        # anywhere, and 0, "may have stalled", for the last generation).
        steady = answers["steady-0"]["generations"]
        assert all(g["committed_progress"] > 0 for g in steady)
        progress = [p for _, _, p in figures["progress"]]
        assert sum(p is not None and p > 0 for p in progress) > len(progress) // 2
        assert main(["postmortem", "steady-0", "--database-url", url]) == 0
        lines = capsys.readouterr().out.splitlines()
        header = next(line for line in lines if "COMMITTED" in line)
        start = header.index("COMMITTED")
        column = [line[start : start + len("COMMITTED")].strip() for line in lines]
        committed = [c for c, line in zip(column, lines, strict=True) if line[:4].isdigit()]
        assert len(committed) == len(steady)
        assert all(c.isdigit() and int(c) > 0 for c in committed), lines
    finally:
        backlog.dispose()
        postgres_server.drop_database(name)


def reference_tracker(capture: Path):
    """Every record of the capture through the tracker in log order, every offset commit
    included: the evidence a job should give it however it cuts the log into batches."""
    from services.codec import decode_record
    from services.tracker import GenerationTracker, Position

    table = pq.read_table(capture / "records").sort_by(
        [("partition", "ascending"), ("offset", "ascending")]
    )
    tracker = GenerationTracker()
    for row in table.to_pylist():
        if row["offset"] >= 1_000_000:  # the corrupt file's
            continue
        position = Position(row["partition"], row["offset"], row["timestamp"])
        tracker.add(decode_record(row["key"], row["value"]), position)
    return tracker


def stored_causes_and_costs(engine: Engine) -> dict[tuple[str, int], tuple]:
    sql = text(
        "SELECT group_name, to_generation, causes, gap_partitions, gap_waiting, "
        "gap_max, gap_median FROM rebalances"
    )
    with engine.connect() as conn:
        return {
            (r[0], r[1]): (
                sorted((c["cause"], c["possible"]) for c in r[2]),
                r[3],
                r[4],
                r[5],
                r[6],
            )
            for r in conn.execute(sql)
        }


def test_one_backlog_batch_settles_what_many_small_batches_do(
    streamed, capture: Path, postgres_server, migrated_template: str, tmp_path
) -> None:
    """The whole capture as ONE batch (a backfill): each rebalance's causes and commit
    gaps equal those of the run in small batches, and those of the tracker fed every
    record; the removals are settled (the crash loop's session timeouts, the slow
    consumer's poll timeout, the scale-in's LeaveGroups), and the gaps equal the
    simulator's ground truth."""
    from tests.tracker.test_cost import truth_costs

    engine, _ = streamed
    name = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(name)
    other = create_store_engine(url)
    try:
        code = main(stream_args(capture, url, tmp_path / "checkpoint", files_per_batch=1000))
        assert code == 0
        assert batch_counts(other)[0] == 1
        backlog, small = stored_causes_and_costs(other), stored_causes_and_costs(engine)
    finally:
        other.dispose()
        postgres_server.drop_database(name)
    assert backlog == small
    tracker = reference_tracker(capture)
    generations, _ = tracker.drain()
    costs = {(c.source_partition, c.source_offset): c for c in tracker.drain_costs()}
    expected = {
        (g.group, g.generation): (
            sorted((c.cause, c.possible) for c in g.causes),
            costs[(g.source_partition, g.source_offset)].measured,
            costs[(g.source_partition, g.source_offset)].waiting,
            costs[(g.source_partition, g.source_offset)].gap_max,
            costs[(g.source_partition, g.source_offset)].gap_median,
        )
        for g in generations
        if g.rebalance is not None
    }
    assert backlog == expected
    settled = {
        (group.rsplit("-", 1)[0], cause)
        for (group, _), (causes, *_) in backlog.items()
        for cause, possible in causes
        if not possible
    }
    assert {
        ("crash-loop", "session_timeout"),
        ("slow-consumer", "poll_timeout"),
        ("scale-in", "scale_in"),
    } <= settled
    micros = {
        k: (
            m,
            w,
            None if a is None else a // timedelta(microseconds=1),
            None if b is None else b // timedelta(microseconds=1),
        )
        for k, (_, m, w, a, b) in backlog.items()
    }
    truth_gaps = truth_costs(capture / "truth")
    assert {k: v for k, v in micros.items() if v != (0, 0, None, None)} == {
        k: v for k, v in truth_gaps.items() if v != (0, 0, None, None)
    }
