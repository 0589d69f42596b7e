"""Pipeline health from Spark's own view of the query, for the store's pipeline_status.

Between batches the job reports whether it has caught up with its source, how many
records it is behind, and its rates. Spark knows all of it: `query.status` says whether
data is waiting, and `query.lastProgress` carries each source's latest available
offsets beside the offsets the last batch ended at (`SupportsAdmissionControl`).
Kafka sources count records: groupscope's own source reports `{partition: offset}`,
Spark's connector `{topic: {partition: offset}}`. A replay directory's offsets count
files (`{"logOffset": n}`), so it reports only whether it has caught up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from services.store.batch import PipelineReport


def _positions(offsets: Any, prefix: str = "") -> dict[str, int]:
    """Flatten a source's offsets JSON into {partition path: offset}."""
    if isinstance(offsets, str):
        try:
            offsets = json.loads(offsets)
        except ValueError:
            return {}
    if isinstance(offsets, Mapping):
        out: dict[str, int] = {}
        for key, value in offsets.items():
            out.update(_positions(value, f"{prefix}/{key}"))
        return out
    if isinstance(offsets, int) and not isinstance(offsets, bool):
        return {prefix: offsets}
    return {}


def records_behind(source_progress: Mapping[str, Any]) -> int | None:
    """Records between where the last batch ended and the latest available, or None
    when the source does not count records."""
    latest = _positions(source_progress.get("latestOffset"))
    end = _positions(source_progress.get("endOffset"))
    if not latest or any(path.endswith("logOffset") for path in latest):
        return None
    return sum(max(offset - end.get(path, 0), 0) for path, offset in latest.items())


def report(
    source: str,
    status: Mapping[str, Any],
    progress: Mapping[str, Any] | None,
    finished: bool = False,
    now: datetime | None = None,
) -> PipelineReport:
    """The pipeline's state from `query.status` and `query.lastProgress`.

    Caught up means Spark has run at least one batch (or finished an `--once` run) and
    sees no data waiting, and no batch is running.
    """
    sources = (progress or {}).get("sources") or [{}]
    behind = 0 if finished else records_behind(sources[0])
    waiting = status.get("isDataAvailable") or status.get("isTriggerActive")
    caught_up = finished or (progress is not None and not waiting)
    if caught_up and behind is None:
        behind = 0  # nothing is waiting, whatever the source counts in
    return PipelineReport(
        source=source,
        at=now or datetime.now(UTC),
        caught_up=bool(caught_up),
        records_behind=behind,
        input_rate=_rate((progress or {}).get("inputRowsPerSecond")),
        processed_rate=_rate((progress or {}).get("processedRowsPerSecond")),
    )


def _rate(value: Any) -> float | None:
    try:
        rate = float(value)
    except (TypeError, ValueError):
        return None
    return rate if rate == rate and rate not in (float("inf"), float("-inf")) else None
