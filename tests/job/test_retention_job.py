"""`groupscope stream --retention`: the job prunes the history it wrote, keeping what
is current, and creates the offset history's day partitions ahead. Real Spark
(local[2]) and PostgreSQL, over a small replay directory recorded three days ago."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from services.cli import main
from services.simulator import Params, ReplayDirectory, build, simulate
from services.store.partitions import day_partitions, days_ahead
from services.store.snapshots import latest_generations


@pytest.fixture(scope="module")
def old_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rolling restart that ended three days ago."""
    out = tmp_path_factory.mktemp("capture")
    specs, duration = build(["rolling-restart"], Params(), None)
    start_ms = int((time.time() - 3 * 86_400) * 1000)
    simulate(specs, ReplayDirectory(out, rows_per_file=300), out, duration or 600_000, 3, start_ms)
    return out


def rows(engine: Engine, sql: str) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql)).all()]


def test_the_job_prunes_what_is_older_than_its_retention(
    old_capture: Path, store_engine: Engine, database_url: str, spark, tmp_path: Path, caplog
) -> None:
    args = ["stream", "--source", "replay", str(old_capture), "--once"]
    args += ["--database-url", database_url, "--checkpoint", str(tmp_path / "ck")]
    assert main([*args, "--retention", "2d"]) == 0
    log = [r.getMessage() for r in caplog.records if r.name == "groupscope.stream"]
    pruned = [line for line in log if line.startswith("retention: history before")]
    assert len(pruned) == 1 and "generations rows" in pruned[0]  # logged once, in one line

    latest = latest_generations(store_engine)
    assert latest  # the groups' latest generations stayed ...
    per_group = rows(store_engine, "SELECT group_name, count(*) FROM generations GROUP BY 1")
    # ... and nothing older: every earlier generation began before the cutoff
    assert per_group == [(group, 1) for group in sorted(latest)]
    assert rows(store_engine, "SELECT count(*) FROM offset_history") == [(0,)]
    offsets = rows(store_engine, "SELECT count(*) FROM committed_offsets")
    assert offsets[0][0] > 0  # the current offsets stay
    assert rows(store_engine, "SELECT count(*) FROM pipeline_progress")[0][0] > 0
    with store_engine.connect() as conn:
        days = [p.day for p in day_partitions(conn)]
    assert days == days_ahead(datetime.now(UTC))

    # Without --retention (the default) nothing goes. The same capture replayed writes
    # its offset history again (the generations not: the job resumes after the latest).
    assert main([*args, "--reset-checkpoint"]) == 0
    assert rows(store_engine, "SELECT count(*) FROM offset_history")[0][0] > 0
    assert rows(store_engine, "SELECT count(*) FROM generations") == [(len(latest),)]
    newest = rows(store_engine, "SELECT max(minute) FROM offset_history")[0][0]
    assert isinstance(newest, datetime) and newest < datetime.now(UTC) - timedelta(days=2)
