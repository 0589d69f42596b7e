"""The streaming job's sources as the store knows them, and forgetting one.

A source (`kafka:BOOTSTRAP/__consumer_offsets`, a replay directory, ...) of a cluster
(migration 0010: the same source name may serve jobs of two clusters) has a
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
SELECT cluster, source, max(updated_at) FROM (
    SELECT cluster, source, updated_at FROM pipeline_status
    UNION ALL
    SELECT cluster, source, updated_at FROM pipeline_progress
) s
GROUP BY cluster, source
ORDER BY source, cluster
"""
)


@dataclass(frozen=True)
class KnownSource:
    cluster: str
    name: str
    last_report: datetime | None


def known_sources(engine: Engine) -> list[KnownSource]:
    """Every (cluster, source) with a status or progress row, with its latest report."""
    try:
        with engine.connect() as conn:
            return [KnownSource(c, name, at) for c, name, at in conn.execute(KNOWN)]
    except DBAPIError as exc:
        raise StoreUnavailableError(f"sources not read: {first_line(exc)}") from exc


def forget_source(engine: Engine, source: str, cluster: str) -> tuple[int, int]:
    """Delete `source`'s status and progress rows of `cluster` in one transaction.

    Returns (status rows, progress rows) deleted. The job recreates them if it still
    runs on that source.
    """
    try:
        with engine.begin() as conn:
            status = conn.execute(
                text("DELETE FROM pipeline_status WHERE cluster = :c AND source = :s"),
                {"c": cluster, "s": source},
            ).rowcount
            progress = conn.execute(
                text("DELETE FROM pipeline_progress WHERE cluster = :c AND source = :s"),
                {"c": cluster, "s": source},
            ).rowcount
    except DBAPIError as exc:
        raise StoreUnavailableError(f"{source} not forgotten: {first_line(exc)}") from exc
    return status, progress
