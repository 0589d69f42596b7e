"""The replay-directory sink: records as Spark's Kafka source would show them.

Layout: `DIR/records/part-NNNNN.parquet` (or `.jsonl`), numbered from 00000 in log
order, at most `rows_per_file` rows each. Each file is written under a hidden temporary
name (`.part-NNNNN.*.tmp`) and renamed into place, so a reader listing `part-*` never
sees a partial file. Rows are in the order the coordinator appended them; within each
`partition`, offsets increase.

Row schema (Spark's Kafka source): `topic` string, `partition` int32, `offset` int64,
`timestamp` timestamp[ms, UTC], `key` binary, `value` binary (null: a tombstone). In
JSON Lines the timestamp is epoch milliseconds and key/value are lowercase hex (value
null for a tombstone), the line format `groupscope decode` reads.

A read_committed consumer never sees aborted transactional records or control records,
so neither is written here; their offsets are gaps.
"""

from __future__ import annotations

import json
import os
import time
from itertools import repeat
from pathlib import Path

from services.simulator.log import Batch

_MS = 1_000_000

FORMATS = ("parquet", "jsonl")
DEFAULT_ROWS_PER_FILE = 200_000


class ReplayDirectory:
    """A `Sink` writing `records/part-NNNNN.{parquet,jsonl}` files under `root`."""

    def __init__(
        self,
        root: str | os.PathLike,
        topic: str = "__consumer_offsets",
        fmt: str = "parquet",
        rows_per_file: int = DEFAULT_ROWS_PER_FILE,
    ) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
        if rows_per_file < 1:
            raise ValueError("rows_per_file must be at least 1")
        self.dir = Path(root) / "records"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.topic = topic
        self.fmt = fmt
        self.rows_per_file = rows_per_file
        self.files = 0
        self._last_stamp_ns = 0
        # Columns of the rows not yet written: partition, offset, timestamp, key, value.
        self._columns: tuple[list, list, list, list, list] = ([], [], [], [], [])

    def write(self, batch: Batch) -> None:
        partition, offset, timestamp, keys, values = batch
        n = len(keys)
        partitions, offsets, timestamps, key_column, value_column = self._columns
        partitions.extend(repeat(partition, n))
        offsets.extend(range(offset, offset + n))
        timestamps.extend(repeat(timestamp, n))
        key_column.extend(keys)
        value_column.extend(values)
        if len(key_column) >= self.rows_per_file:
            self._flush(self.rows_per_file)

    def write_transaction(self, batch: Batch, commit: bool) -> None:
        if commit:
            self.write(batch)

    def close(self) -> None:
        self._flush(1)

    def _flush(self, at_least: int) -> None:
        """Write files of `rows_per_file` rows while at least `at_least` rows wait."""
        columns = self._columns
        while len(columns[3]) >= at_least:
            n = min(self.rows_per_file, len(columns[3]))
            self._write_file([c[:n] for c in columns])
            for c in columns:
                del c[:n]

    def _write_file(self, columns: list[list]) -> None:
        name = f"part-{self.files:05d}.{self.fmt}"
        tmp = self.dir / f".{name}.tmp"
        if self.fmt == "parquet":
            _write_parquet(tmp, self.topic, columns)
        else:
            _write_jsonl(tmp, self.topic, columns)
        # Spark's file source reads new files in order of modification time, which the
        # file system keeps to its clock tick: files written within one tick tie, and a
        # tie is read in any order. A later file read first would make the earlier one's
        # records look like replays (the store keeps each partition's last offset), so
        # each file's time is at least a millisecond (Hadoop's resolution) after the last.
        stamp = max(time.time_ns() // _MS * _MS, self._last_stamp_ns + _MS)
        os.utime(tmp, ns=(stamp, stamp))
        self._last_stamp_ns = stamp
        os.replace(tmp, self.dir / name)
        self.files += 1


def _write_parquet(path: Path, topic: str, columns: list[list]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    partitions, offsets, timestamps, keys, values = columns
    table = pa.table(
        {
            "topic": pa.array([topic] * len(keys), pa.string()),
            "partition": pa.array(partitions, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.array(timestamps, pa.timestamp("ms", tz="UTC")),
            "key": pa.array(keys, pa.binary()),
            "value": pa.array(values, pa.binary()),
        }
    )
    pq.write_table(table, path)


def _write_jsonl(path: Path, topic: str, columns: list[list]) -> None:
    line = (
        "{{" + f'"topic": {json.dumps(topic)}, '
        '"partition": {}, "offset": {}, "timestamp": {}, "key": "{}", "value": {}}}\n'
    ).format
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(
            line(p, o, ts, k.hex(), "null" if v is None else f'"{v.hex()}"')
            for p, o, ts, k, v in zip(*columns, strict=True)
        )


def read_replay(root: str | os.PathLike) -> list[dict]:
    """Every row of a replay directory in file order, as dicts with bytes keys and values.

    The reader side of the contract above, for tests and tools (timestamps as epoch ms).
    """
    rows: list[dict] = []
    for path in sorted((Path(root) / "records").glob("part-*")):
        if path.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            ts = table.column("timestamp").cast(pa.int64()).to_pylist()
            for row, t in zip(table.to_pylist(), ts, strict=True):
                rows.append({**row, "timestamp": t})
        else:
            with open(path, encoding="utf-8") as lines:
                for line in lines:
                    row = json.loads(line)
                    row["key"] = bytes.fromhex(row["key"])
                    row["value"] = None if row["value"] is None else bytes.fromhex(row["value"])
                    rows.append(row)
    return rows
