"""`groupscope stream --groups-exclude`, end to end on real Spark and PostgreSQL: the
dropped groups (a classic and a KIP-848 one) leave nothing in the store, every one of
their records is counted in the batch log lines, the kept group is stored as the
simulator's truth has it, and the job's progress still covers the whole log."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from sqlalchemy import text

from services.cli import main
from services.codec import decode_record
from services.simulator import Params, ReplayDirectory, build, simulate
from services.store.database import create_store_engine

DROPPED = ("kip848-0", "steady-0")
KEPT = "crash-loop-0"


def records_by_group(capture: Path) -> tuple[Counter[str], dict[int, int]]:
    """Every record's group in the capture, and the last offset of each partition."""
    groups: Counter[str] = Counter()
    ends: dict[int, int] = {}
    for path in sorted((capture / "records").glob("*.parquet")):
        for row in pq.read_table(path).to_pylist():
            key = decode_record(row["key"], row["value"])["key"]
            groups[key.get("group", key.get("group_id"))] += 1
            ends[row["partition"]] = max(ends.get(row["partition"], -1), row["offset"])
    return groups, ends


def test_dropped_groups_are_counted_not_stored(
    tmp_path: Path, postgres_server, migrated_template: str, spark, caplog
) -> None:
    capture = tmp_path / "capture"
    specs, _ = build(["steady", "crash-loop", "kip848"], Params(), None)
    simulate(specs, ReplayDirectory(capture, rows_per_file=700), capture, 5 * 60_000, seed=3)
    groups, ends = records_by_group(capture)
    assert set(groups) == {*DROPPED, KEPT}
    name = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(name)
    argv = ["stream", "--source", "replay", str(capture), "--once", "--database-url", url]
    argv += ["--checkpoint", str(tmp_path / "checkpoint"), "--max-files-per-trigger", "2"]
    argv += ["--groups-exclude", "^kip848-", "--groups-exclude", r"^steady-\d+$"]
    with caplog.at_level(logging.INFO, logger="groupscope.stream"):
        assert main(argv) == 0
    batches = [r.getMessage() for r in caplog.records if re.match(r"batch \d+: ", r.getMessage())]
    filtered = [re.search(r", (\d+) of filtered groups\)", line) for line in batches]
    assert len(batches) > 1 and all(filtered)
    assert sum(int(m.group(1)) for m in filtered if m) == groups["kip848-0"] + groups["steady-0"]

    engine = create_store_engine(url)
    try:
        with engine.connect() as conn:
            for table in ("generations", "committed_offsets", "offset_history", "rebalances"):
                stored = conn.execute(text(f"SELECT DISTINCT group_name FROM {table}"))
                assert {g for (g,) in stored} == {KEPT}, table
            assert conn.execute(text("SELECT name FROM groups")).scalars().all() == [KEPT]
            assert conn.execute(text("SELECT count(*) FROM decode_failures")).scalar() == 0
            generations = (
                conn.execute(text("SELECT generation FROM generations ORDER BY generation"))
                .scalars()
                .all()
            )
            rows = conn.execute(text("SELECT partition, last_offset FROM pipeline_progress"))
            progress = {partition: offset for partition, offset in rows}
    finally:
        engine.dispose()
        postgres_server.drop_database(name)
    truth = [
        json.loads(line)
        for line in (capture / "truth" / "generations.jsonl").read_text().splitlines()
    ]
    assert generations == sorted(g["generation"] for g in truth if g["group"] == KEPT)
    # Partitions holding only dropped groups' records are processed to their end too.
    assert progress == ends
