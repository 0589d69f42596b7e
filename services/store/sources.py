"""The streaming job's sources as the store knows them, and forgetting one.

A source (`kafka:BOOTSTRAP/__consumer_offsets`, a replay directory, ...) has a
`pipeline_status` row, which the exporter's /readyz reads, and `pipeline_progress` rows,
the last offset processed per partition. A run against a wrong bootstrap address leaves
its rows behind for good; `groupscope db forget-source` removes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from services.store.errors import StoreUnavailableError, first_line

KNOWN = text(
    """
SELECT source, max(updated_at) FROM (
    SELECT source, updated_at FROM pipeline_status
    UNION ALL
    SELECT source, updated_at FROM pipeline_progress
) s
GROUP BY source
ORDER BY source
"""
)


@dataclass(frozen=True)
class KnownSource:
    name: str
    last_report: datetime | None


def known_sources(engine: Engine) -> list[KnownSource]:
    """Every source with a status or progress row, with its latest report."""
    try:
        with engine.connect() as conn:
            return [KnownSource(name, at) for name, at in conn.execute(KNOWN)]
    except DBAPIError as exc:
        raise StoreUnavailableError(f"sources not read: {first_line(exc)}") from exc


def forget_source(engine: Engine, source: str) -> tuple[int, int]:
    """Delete `source`'s status and progress rows in one transaction.

    Returns (status rows, progress rows) deleted. The job recreates them if it still
    runs on that source.
    """
    try:
        with engine.begin() as conn:
            status = conn.execute(
                text("DELETE FROM pipeline_status WHERE source = :s"), {"s": source}
            ).rowcount
            progress = conn.execute(
                text("DELETE FROM pipeline_progress WHERE source = :s"), {"s": source}
            ).rowcount
    except DBAPIError as exc:
        raise StoreUnavailableError(f"{source} not forgotten: {first_line(exc)}") from exc
    return status, progress
