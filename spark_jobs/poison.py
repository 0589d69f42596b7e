"""One record must never stop ingestion: a record the database rejects is set aside.

When the store rejects a batch (`BatchRejectedError`: a constraint, a value no column can
hold), retrying it fails the same way on every restart. `without_rejected` finds the
records responsible (`services.store.isolate`: bisection with rolled-back dry runs),
drops them from the batch and keeps each one in `decode_failures` with its raw key and
value, read back from the micro-batch by source position, and the database's reason.
The rest of the batch then lands. A generation set aside this way is missing from the
history; the next one's rebalance is stored without its earlier generation
(`rebalances.from_generation_pk` NULL), as for any generation the store never saw.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from services.store import isolate
from services.store.batch import BatchWrite, DecodeFailure
from services.store.errors import BatchRejectedError
from services.store.repository import HistoryStore

log = logging.getLogger("groupscope.stream")

CATEGORY = "not storable"


def raw_records(df: DataFrame, positions: Collection[isolate.Position]) -> dict[tuple, dict]:
    """`{(partition, offset): {"timestamp", "key", "value"}}` of the micro-batch's records
    at `positions` (the source's own columns, as they came)."""
    wanted = df.sparkSession.createDataFrame(sorted(positions), "partition int, offset long")
    rows = (
        df.join(F.broadcast(wanted), ["partition", "offset"])
        .select("partition", "offset", "timestamp", "key", "value")
        .toArrow()
        .to_pylist()
    )
    return {(r["partition"], r["offset"]): r for r in rows}


def without_rejected(
    store: HistoryStore, batch: BatchWrite, df: DataFrame, error: BatchRejectedError
) -> tuple[BatchWrite, int]:
    """The batch without the records the database rejects, each kept as a decode failure
    instead; and how many there were. Re-raises `error` if no record is to blame."""
    rejected = isolate.rejected_records(store, batch)
    if not rejected:
        raise error
    raw = raw_records(df, rejected.keys())
    failures = []
    for (partition, offset), reason in sorted(rejected.items()):
        record = raw.get((partition, offset), {})
        log.error(
            "batch %d: record at %d/%d set aside, the database rejects it: %s",
            batch.batch_id,
            partition,
            offset,
            reason,
        )
        failures.append(
            DecodeFailure(
                source_partition=partition,
                source_offset=offset,
                reason=f"{CATEGORY}: {reason}",
                key=record.get("key"),
                value=record.get("value"),
                source_time=record.get("timestamp"),
                category=CATEGORY,
            )
        )
    return isolate.without(batch, rejected.keys(), failures), len(failures)
