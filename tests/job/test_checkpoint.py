"""The checkpoint and the history store cannot silently disagree: a new database gets a
new checkpoint, and a checkpoint ahead of its database is refused until reset. Real
Spark (local[2]) and PostgreSQL, over a small replay directory."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from services.cli import main
from services.simulator import Params, ReplayDirectory, build, simulate
from services.store.batch import BatchHealth
from services.store.database import create_store_engine
from services.store.repository import HistoryStore
from spark_jobs import stream as stream_job
from spark_jobs.checkpoint import CheckpointResetError, database_identity, default_location, prepare
from tests.fixtures.batches import SOURCE, batch
from tests.job.test_stream_truth import table_contents


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scenario, in files small enough for a few micro-batches."""
    out = tmp_path_factory.mktemp("capture")
    specs, duration = build(["rolling-restart"], Params(), None)
    simulate(specs, ReplayDirectory(out, rows_per_file=300), out, duration or 600_000, seed=3)
    return out


@contextmanager
def databases(postgres_server, template: str, n: int) -> Iterator[list[tuple[str, Engine]]]:
    """`n` new, migrated databases: (URL, engine) each."""
    names = [postgres_server.create_database(template=template) for _ in range(n)]
    opened = [
        (postgres_server.url(name), create_store_engine(postgres_server.url(name)))
        for name in names
    ]
    try:
        yield opened
    finally:
        for (_, engine), name in zip(opened, names, strict=True):
            engine.dispose()
            postgres_server.drop_database(name)


def stream(capture: Path, url: str, *extra: str) -> int:
    return main(
        [
            *("stream", "--source", "replay", str(capture), "--once", "--database-url", url),
            *("--max-files-per-trigger", "3", *extra),
        ]
    )


def counts(engine: Engine) -> tuple[int, int] | None:
    """(batches_total, records_total) of the only source, None before any batch."""
    with engine.connect() as conn:
        row = conn.execute(text("SELECT batches_total, records_total FROM pipeline_status")).first()
    return None if row is None else (row[0], row[1])


def test_a_new_database_gets_a_new_checkpoint_under_the_data_dir(
    capture: Path, postgres_server, migrated_template, spark, tmp_path: Path, monkeypatch
) -> None:
    data, cwd = tmp_path / "data", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.setenv("GROUPSCOPE_DATA_DIR", str(data))
    monkeypatch.delenv("GROUPSCOPE_CHECKPOINT", raising=False)
    monkeypatch.chdir(cwd)
    with databases(postgres_server, migrated_template, 2) as [(first, one), (second, two)]:
        assert stream(capture, first) == 0
        assert stream(capture, second) == 0  # same source, another database
        checkpoints = sorted(p.name for p in (data / "checkpoints").iterdir())
        assert len(checkpoints) == 2  # keyed on the database too
        assert not (cwd / ".groupscope").exists()  # nothing under the current directory
        records = counts(one)
        assert records is not None and records[0] >= 2 and records[1] > 500
        assert counts(two) == records
        assert table_contents(two) == table_contents(one)


def test_a_checkpoint_ahead_of_its_database_is_refused_until_reset(
    capture: Path, postgres_server, migrated_template, spark, tmp_path: Path, capsys
) -> None:
    checkpoint = str(tmp_path / "ck")
    with databases(postgres_server, migrated_template, 2) as [(first, one), (second, two)]:
        assert stream(capture, first, "--checkpoint", checkpoint) == 0
        capsys.readouterr()
        # The same checkpoint with a new database (or one restored from a backup).
        assert stream(capture, second, "--checkpoint", checkpoint) == 1
        err = capsys.readouterr().err.strip()
        assert "\n" not in err
        assert "holds nothing" in err and "--reset-checkpoint" in err
        assert counts(two) is None  # nothing written, nothing claimed

        assert stream(capture, second, "--checkpoint", checkpoint, "--reset-checkpoint") == 0
        assert table_contents(two) == table_contents(one)
        assert counts(two) == counts(one)
        aside = [p.name for p in tmp_path.iterdir() if p.name.startswith("ck.reset-")]
        assert len(aside) == 1

        # Reset again into the same database: Spark's batch ids restart at 0, and the
        # replay's batches are counted (as read again), not taken for replays.
        assert stream(capture, second, "--checkpoint", checkpoint, "--reset-checkpoint") == 0
        batches, records = counts(one)  # type: ignore[misc]
        assert counts(two) == (2 * batches, 2 * records)
        assert table_contents(two) == table_contents(one)


def test_the_default_checkpoint_is_keyed_on_the_database_without_its_password(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("GROUPSCOPE_DATA_DIR", str(tmp_path))
    source = "kafka:broker:9092/__consumer_offsets"
    here = default_location(source, "postgresql://app:one@db/groupscope")
    assert here.parent == tmp_path / "checkpoints"
    # The same database however it is spelled: password, scheme, default port.
    assert default_location(source, "postgres://app:two@db:5432/groupscope") == here
    assert default_location(source, "postgresql://app@db/other") != here
    assert default_location(source, None) != here  # the embedded server
    assert default_location("replay:/captures/a", "postgresql://app:one@db/groupscope") != here
    assert "one" not in database_identity("postgresql://app:one@db/groupscope")
    assert str(tmp_path) in database_identity(None)


def test_spark_submit_refuses_a_checkpoint_ahead_in_one_line(
    database_url: str, tmp_path: Path, capsys
) -> None:
    """Spark's own layout: batch 4 committed. The database holds nothing of it."""
    capture = tmp_path / "capture"
    (capture / "records").mkdir(parents=True)
    checkpoint = tmp_path / "ck"
    (checkpoint / "commits").mkdir(parents=True)
    (checkpoint / "commits" / "4").write_text('v1\n{"nextBatchWatermarkMs":0}')
    code = stream_job.main(
        [
            *("--source", "replay", str(capture), "--once"),
            *("--database-url", database_url, "--checkpoint", str(checkpoint)),
        ]
    )
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("groupscope stream: checkpoint") and "\n" not in err
    assert "committed batch 4" in err and "--reset-checkpoint" in err


def test_a_checkpoint_elsewhere_is_left_alone(store_engine: Engine) -> None:
    """hdfs:, s3a: ...: Spark's logs cannot be read here, so neither checked nor reset,
    and the store's batch count is not restarted as if the checkpoint were new."""
    store = HistoryStore(store_engine)
    store.write_batch(replace(batch(5), health=BatchHealth(3, 0.1)))
    remote = Path("hdfs://namenode/groupscope/ck")
    assert prepare(remote, store, SOURCE, "db", reset_requested=False) == {}
    assert store.last_batch(SOURCE) == 5
    with pytest.raises(CheckpointResetError, match="move hdfs:"):
        prepare(remote, store, SOURCE, "db", reset_requested=True)
