"""The reduced offset commits of groups the job's filter drops, taken out of the batch
while it is still one Arrow table.

`reduce_batch` leaves one row per (group, topic, partition) with its record count `n`;
the rows of dropped groups are removed here, before any becomes a Python object, a
store row or a tracker input, and what they were is kept: how many records they stood
for (the batch log line's "filtered"), the last source offset per partition (so the
job's progress still covers them) and each dropped group's source partition (for the
coordinator-partition check). Rows without a group (every record SQL did not decode:
group records, flexible or malformed ones) stay, for the codec, which filters what it
decodes by the same rule.

The filter runs on the driver, not in Spark SQL, so that it is Python's `re` (the
syntax `--groups-include` is checked with before Spark starts, and the exporter's) and
not Java's: the two differ in places (`\\d` and `\\w` on non-ASCII names, `[a&&b]`,
`\\p{L}`), and a group whose commits and generations went by different rules would be
half stored. What it costs to carry the dropped rows to the driver is measured in
docs/performance.md ("Group filters").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from services.groupfilter import GroupFilter


@dataclass
class Dropped:
    """What the dropped rows were."""

    records: int = 0
    end_offsets: dict[int, int] = field(default_factory=dict)  # source partition: offset
    partitions: list[tuple[str, int]] = field(default_factory=list)  # (group, source p.)


def drop_filtered(table: pa.Table, groups: GroupFilter) -> tuple[pa.Table, Dropped]:
    """`table` (reduced rows: `group`, `n`, `source_partition`, `source_offset`) without
    the rows of the groups `groups` drops, and what those were."""
    names = table.column("group")
    dropped = groups.dropped(pc.unique(names).to_pylist())
    if not dropped:
        return table, Dropped()
    mask = pc.is_in(names, value_set=pa.array(dropped, pa.string()))  # null: False
    gone = table.filter(mask).select(["group", "n", "source_partition", "source_offset"])
    ends = gone.group_by("source_partition").aggregate([("source_offset", "max")])
    pairs = gone.group_by(["group", "source_partition"]).aggregate([])
    return table.filter(pc.invert(mask)), Dropped(
        records=pc.sum(gone.column("n")).as_py() or 0,
        end_offsets={r["source_partition"]: r["source_offset_max"] for r in ends.to_pylist()},
        partitions=[(r["group"], r["source_partition"]) for r in pairs.to_pylist()],
    )
