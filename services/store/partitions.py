"""The offset history's day partitions: created ahead, found, dropped (migration 0009).

`offset_history` is partitioned by range of `minute`, one partition per UTC day named
`offset_history_pYYYYMMDD`, plus `offset_history_default` for any minute no day
covers (a backlog older than the partitions, a clock far off). A write therefore
never fails for want of a partition; the job keeps today's and the next days'
partitions in place (`ensure_days`) so that the default partition stays small.

Locks, on a live database (PostgreSQL's ALTER TABLE and DROP TABLE): a day is created
as a table of its own and then attached, which takes SHARE UPDATE EXCLUSIVE on
`offset_history` (writes and reads go on) and ACCESS EXCLUSIVE on the default
partition while the rows of that day are moved out of it (none, unless the job was
away). Dropping a day's partition takes ACCESS EXCLUSIVE on `offset_history` for as
long as unlinking its files takes. Both run under `lock_timeout`: when the job's batch
or a long query holds the table, they give up within `LOCK_TIMEOUT` instead of
queueing every later batch behind them, and are retried later.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import Connection, Engine, text

TABLE = "offset_history"
DEFAULT = "offset_history_default"
PREFIX = "offset_history_p"
DAY = timedelta(days=1)
# Today and the next two days: a job that stops for up to two days still writes into
# day partitions when it comes back before the pruner's next run.
DAYS_AHEAD = 2
LOCK_TIMEOUT = "2s"
_NAME = re.compile(r"^offset_history_p(\d{8})$")

PARTITIONS = """
SELECT c.relname, c.reltuples::bigint
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'offset_history'::regclass
"""


@dataclass(frozen=True)
class DayPartition:
    """One day of the offset history: minutes from `start` (midnight UTC) to `end`."""

    name: str
    day: date
    # PostgreSQL's estimate (pg_class.reltuples, from the last VACUUM or ANALYZE); -1
    # when the table was never analysed.
    rows_estimate: int

    @property
    def start(self) -> datetime:
        return datetime.combine(self.day, time(), UTC)

    @property
    def end(self) -> datetime:
        return self.start + DAY


def name_of(day: date) -> str:
    return f"{PREFIX}{day:%Y%m%d}"


def day_partitions(conn: Connection) -> list[DayPartition]:
    """The day partitions that exist, oldest first (the default partition is not one)."""
    found = []
    for name, estimate in conn.execute(text(PARTITIONS)).all():
        match = _NAME.match(name)
        if match:
            day = datetime.strptime(match.group(1), "%Y%m%d").date()
            found.append(DayPartition(name, day, estimate))
    return sorted(found, key=lambda p: p.day)


def days_ahead(now: datetime, ahead: int = DAYS_AHEAD) -> list[date]:
    """Today (UTC) and the `ahead` days after it."""
    today = now.astimezone(UTC).date()
    return [today + timedelta(days=i) for i in range(ahead + 1)]


def ensure_days(engine: Engine, days: Iterable[date]) -> list[str]:
    """Create the partitions of `days` that do not exist yet, each in a short transaction
    of its own, moving the day's rows out of the default partition; returns the names
    created. Raises sqlalchemy's DBAPIError when the database is away or a lock is not
    granted within `LOCK_TIMEOUT` (the caller retries later: writes meanwhile go to the
    default partition)."""
    with engine.connect() as conn:
        existing = {p.day for p in day_partitions(conn)}
    created = []
    for day in sorted(set(days) - existing):
        with engine.begin() as conn:
            create_day(conn, day)
        created.append(name_of(day))
    return created


def create_day(conn: Connection, day: date) -> None:
    """Create and attach `day`'s partition in the caller's transaction."""
    name = name_of(day)
    start = datetime.combine(day, time(), UTC)
    bounds = {"start": start, "end": start + DAY}
    conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
    conn.execute(text(f"LOCK TABLE {DEFAULT} IN ACCESS EXCLUSIVE MODE"))
    conn.execute(text(f"CREATE TABLE {name} (LIKE {TABLE} INCLUDING DEFAULTS)"))
    conn.execute(
        text(
            f"WITH moved AS (DELETE FROM {DEFAULT} WHERE minute >= :start AND minute < :end "
            f"RETURNING *) INSERT INTO {name} SELECT * FROM moved"
        ),
        bounds,
    )
    # ATTACH PARTITION takes no parameters: the bounds as literals, from a date.
    conn.execute(
        text(
            f"ALTER TABLE {TABLE} ATTACH PARTITION {name} FOR VALUES "
            f"FROM ('{bounds['start'].isoformat()}') TO ('{bounds['end'].isoformat()}')"
        )
    )


def drop_day(conn: Connection, partition: DayPartition) -> None:
    """Drop a day's partition with its rows, in the caller's transaction."""
    conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
    conn.execute(text(f"DROP TABLE {partition.name}"))


def not_a_partition(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic's `include_name` filter: the offset history's partitions are not tables
    of the models (autogenerate and the models' test would drop them)."""
    return not (type_ == "table" and name is not None and (name == DEFAULT or _NAME.match(name)))
