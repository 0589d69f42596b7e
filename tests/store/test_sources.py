"""`groupscope db forget-source`: a source's status and progress rows, and nothing else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from services.cli import main
from services.store.batch import PipelineReport
from services.store.database import create_store_engine
from services.store.repository import HistoryStore
from services.store.sources import known_sources

OLD = datetime.now(UTC) - timedelta(hours=1)


def test_forget_source_deletes_its_status_and_progress_only(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = create_store_engine(database_url)
    try:
        store = HistoryStore(engine)
        store.report_status(PipelineReport("old", OLD, False))
        store.report_status(PipelineReport("kept", OLD, True, 0))
        with psycopg.connect(database_url, autocommit=True) as conn:
            for source, partition in (("old", 0), ("old", 1), ("kept", 0)):
                conn.execute(
                    "INSERT INTO pipeline_progress (cluster, source, partition, last_offset, "
                    "batch_id, updated_at) VALUES ('default', %s, %s, 10, 1, %s)",
                    [source, partition, OLD],
                )
        assert [s.name for s in known_sources(engine)] == ["kept", "old"]
        assert main(["db", "forget-source", "old", "--database-url", database_url]) == 0
        assert capsys.readouterr().out == (
            "forgot old of cluster default: 1 status row(s), 2 progress row(s) deleted\n"
        )
        assert [s.name for s in known_sources(engine)] == ["kept"]
        assert store.progress("kept") == {0: (10, 1)}
    finally:
        engine.dispose()


def test_a_source_of_two_clusters_is_forgotten_for_the_one_named(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two clusters' jobs replayed directories of the same name: forgetting it needs the
    cluster, and takes only that cluster's rows."""
    engine = create_store_engine(database_url)
    try:
        for cluster in ("east", "west"):
            HistoryStore(engine, cluster=cluster).report_status(
                PipelineReport("replay:/data", OLD, True, 0)
            )
        args = ["db", "forget-source", "replay:/data", "--database-url", database_url]
        assert main(args) == 2
        assert capsys.readouterr().err == (
            "groupscope db: replay:/data reported for the clusters east, west: "
            "give --cluster NAME\n"
        )
        assert main([*args, "--cluster", "north"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("groupscope db: no source named 'replay:/data' in cluster 'north'")
        assert "replay:/data of cluster east" in err and err.count("\n") == 1
        assert main([*args, "--cluster", "west"]) == 0
        assert "forgot replay:/data of cluster west: 1 status row(s)" in capsys.readouterr().out
        assert [(s.cluster, s.name) for s in known_sources(engine)] == [("east", "replay:/data")]
    finally:
        engine.dispose()


def test_forget_source_on_an_empty_store_says_so_in_one_line(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "forget-source", "nope", "--database-url", database_url]) == 2
    err = capsys.readouterr().err
    assert err == "groupscope db: no source named 'nope'; the store knows no source\n"


def test_forget_source_on_an_unmigrated_database_exits_1_with_one_line(
    empty_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "forget-source", "x", "--database-url", empty_database_url]) == 1
    err = capsys.readouterr().err
    assert "run 'groupscope db upgrade' first" in err and err.count("\n") == 1
