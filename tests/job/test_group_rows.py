"""The job's filter on the reduced offset commits (an Arrow table, no Spark needed): the
rows of dropped groups go, and what they stood for is kept."""

from __future__ import annotations

import pyarrow as pa

from services.groupfilter import GroupFilter
from spark_jobs.group_rows import drop_filtered


def reduced(rows: list[tuple[str | None, int, int, int]]) -> pa.Table:
    """Reduced rows as `reduce_batch` leaves them: group, n, source partition, offset."""
    return pa.table(
        {
            "group": pa.array([r[0] for r in rows], pa.string()),
            "n": pa.array([r[1] for r in rows], pa.int64()),
            "source_partition": pa.array([r[2] for r in rows], pa.int32()),
            "source_offset": pa.array([r[3] for r in rows], pa.int64()),
            "value": pa.array([b"v"] * len(rows), pa.binary()),
        }
    )


def test_dropped_rows_are_counted_and_their_positions_kept() -> None:
    table = reduced(
        [
            ("payments", 3, 0, 10),
            ("canary-1", 5, 0, 14),  # the partition's last offset is a dropped group's
            ("canary-1", 2, 0, 12),  # another partition of the same group
            (None, 1, 1, 7),  # a record SQL did not decode: for the codec
            ("canary-2", 4, 2, 30),
            ("payments", 1, 2, 3),
        ]
    )
    kept, dropped = drop_filtered(table, GroupFilter.of(exclude=["^canary-"]))
    assert kept.column("group").to_pylist() == ["payments", None, "payments"]
    assert kept.column_names == table.column_names
    assert dropped.records == 5 + 2 + 4
    assert dropped.end_offsets == {0: 14, 2: 30}
    assert sorted(dropped.partitions) == [("canary-1", 0), ("canary-2", 2)]


def test_nothing_dropped_leaves_the_table_as_it_is() -> None:
    table = reduced([("payments", 3, 0, 10), (None, 1, 1, 7)])
    kept, dropped = drop_filtered(table, GroupFilter.of(include=["pay"]))
    assert kept is table
    assert (dropped.records, dropped.end_offsets, dropped.partitions) == (0, {}, [])
