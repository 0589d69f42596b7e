"""The replay directory contract: Spark's Kafka-source schema, bounded atomic files."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import pairwise

import pyarrow as pa
import pyarrow.parquet as pq

from tests.simulator.helpers import run

SPARK_KAFKA_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("ms", tz="UTC")),
        ("key", pa.binary()),
        ("value", pa.binary()),
    ]
)


def test_parquet_files_have_sparks_kafka_schema_and_bounded_size(tmp_path):
    result = run(tmp_path, "mixed", fmt="parquet", rows_per_file=1000)
    files = sorted((tmp_path / "records").iterdir())
    assert [f.name for f in files] == [f"part-{i:05d}.parquet" for i in range(len(files))]
    assert len(files) == -(-len(result.rows) // 1000)
    for path in files:
        table = pq.read_table(path)
        assert table.schema.remove_metadata() == SPARK_KAFKA_SCHEMA
        assert table.num_rows <= 1000
    nulls = pq.read_table(files[0]).column("value").null_count + sum(
        pq.read_table(f).column("value").null_count for f in files[1:]
    )
    tombstones = sum(1 for r in result.rows if r["value"] is None)
    assert nulls == tombstones


def test_jsonl_and_parquet_hold_the_same_rows(tmp_path):
    as_json = run(tmp_path / "j", "kip848", fmt="jsonl", rows_per_file=500)
    as_parquet = run(tmp_path / "p", "kip848", fmt="parquet", rows_per_file=700)
    assert as_json.rows == as_parquet.rows


def test_jsonl_lines_are_what_groupscope_decode_reads(tmp_path):
    run(tmp_path, "scale-in", members=2, to=0, delete_after="3m", duration_ms=200_000)
    [path] = sorted((tmp_path / "records").iterdir())
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    assert list(first) == ["topic", "partition", "offset", "timestamp", "key", "value"]
    assert isinstance(first["timestamp"], int) and first["key"] == first["key"].lower()
    assert any(json.loads(line)["value"] is None for line in lines)
    decoded = subprocess.run(
        [sys.executable, "-m", "services.cli", "decode"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(decoded) == len(lines)
    assert not [d for d in decoded if "error" in json.loads(d)]


def test_no_temporary_files_are_left(tmp_path):
    run(tmp_path, "steady", fmt="parquet", rows_per_file=300)
    names = [p.name for p in (tmp_path / "records").iterdir()]
    assert names and all(n.startswith("part-") and n.endswith(".parquet") for n in names)


def test_files_are_read_in_the_order_they_were_written(tmp_path):
    """Spark's file source orders new files by modification time (Hadoop: milliseconds);
    files written within one clock tick must not tie, or a batch may take a later file
    before an earlier one and the earlier one's records then look like replays."""
    from services.simulator import ReplayDirectory

    sink = ReplayDirectory(tmp_path, rows_per_file=1)
    for offset in range(40):
        sink.write((0, offset, 1_000, [b"k"], [b"v"]))
    sink.close()
    files = sorted((tmp_path / "records").glob("part-*.parquet"))
    assert len(files) == 40
    stamps = [f.stat().st_mtime_ns // 1_000_000 for f in files]  # what Hadoop sees
    assert all(b > a for a, b in pairwise(stamps)), stamps
