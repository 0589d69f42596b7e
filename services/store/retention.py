"""Retention: delete the history older than a cutoff, never what is still current.

`prune(engine, cutoff)` is what `groupscope db prune --older-than D` runs, and what the
streaming job runs every hour with `--retention D` (`Maintenance`). What goes:
- `offset_history`: the day partitions that end at or before the cutoff are dropped
  whole (`services.store.partitions`); the rows before the cutoff in the partition
  that holds it and in the default partition are deleted.
- `generations` (with their `generation_members` and the `rebalances` that produced
  them): a generation goes when a later generation of its group began at or before the
  cutoff. So the generation that was current at the cutoff stays, and
  `partition_ownership` still answers "who owned it at T" for any T after the cutoff;
  the latest generation of every group stays, whatever its age (the job resumes from
  it: `services.store.snapshots`), and so do its members and rebalance row.
- `static_replacements` before the cutoff whose generation went; `decode_failures`
  (by the record's timestamp, else when stored), `record_repairs` (when stored) and
  `offset_history_batches` (by batch time) before the cutoff.
What stays, whatever its age: `groups`, `committed_offsets` (updated in place: the
current offsets), `pipeline_progress` and `pipeline_status`. Rebalances within the
storm window of now are newer than any cutoff (`MIN_RETENTION_S`), so open storms stay.

Every delete is a short transaction over a range of the table's blocks (a TID range
scan, PostgreSQL 14+), so the whole table is read once however many batches it takes,
and no lock is held for long; a dropped partition holds `offset_history` exclusively
for the time its files take to unlink (`docs/performance.md`, "Retention").
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import psycopg.errors
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from services.store import partitions
from services.store.batch import primary_cause_sql
from services.store.errors import StoreError, first_line

# The shortest retention: longer than the storm window (the exporter's default 10m), so
# that a storm still going on is never pruned.
MIN_RETENTION_S = 3600
# Blocks (8 kB) of a table per delete transaction; fewer for generations, whose rows
# each take their members with them (a generation of 2,000 members is 2,000 rows).
BLOCKS = 1024
GENERATION_BLOCKS = 64
# The job prunes at most this often, and retries this soon after a failure.
INTERVAL_S = 3600.0
RETRY_S = 60.0
# How long one turn of the job's pruning may take before it yields to the job's loop
# (health reports); the rest is done on the next turn, seconds later.
BUDGET_S = 10.0


def _doomed(g: str) -> str:
    """True for a generation `g` that pruning deletes: before the cutoff, with a later
    generation of its group (in the views' order: time, then position) that began at
    or before the cutoff, and not its group's latest by position (the snapshot's)."""
    return f"""({g}.time < :cutoff
    AND EXISTS (SELECT 1 FROM generations n
        WHERE n.cluster = {g}.cluster AND n.group_name = {g}.group_name
        AND n.time <= :cutoff AND (n.time, n.source_offset) > ({g}.time, {g}.source_offset))
    AND EXISTS (SELECT 1 FROM generations n
        WHERE n.cluster = {g}.cluster AND n.group_name = {g}.group_name
        AND (n.source_partition, n.source_offset) > ({g}.source_partition, {g}.source_offset)))"""


# The rebalances about to go, added to what the exporter counts on
# (`pruned_rebalances`), in the transaction that deletes them: its counters never drop.
FOLD_REBALANCES = f"""
INSERT INTO pruned_rebalances AS p (cluster, group_name, cause, rebalances, disruptive,
    partitions_moved, baseline_moves, minimum_moves)
SELECT r.cluster, r.group_name, {primary_cause_sql("r")}, count(*),
    count(*) FILTER (WHERE r.disruptive),
    coalesce(sum(r.partitions_moved), 0), coalesce(sum(r.baseline_moves), 0),
    coalesce(sum(r.minimum_moves), 0)
FROM rebalances r
WHERE r.to_generation_pk = ANY(:ids)
GROUP BY 1, 2, 3
ON CONFLICT (cluster, group_name, cause) DO UPDATE SET
    rebalances = p.rebalances + excluded.rebalances,
    disruptive = p.disruptive + excluded.disruptive,
    partitions_moved = p.partitions_moved + excluded.partitions_moved,
    baseline_moves = p.baseline_moves + excluded.baseline_moves,
    minimum_moves = p.minimum_moves + excluded.minimum_moves
"""
# The same for the decode failures deleted (`gone`), per category.
FOLD_FAILURES = """
INSERT INTO pruned_decode_failures AS p (cluster, category, failures)
SELECT cluster, coalesce(category, reason), count(*) FROM gone GROUP BY 1, 2
ON CONFLICT (cluster, category) DO UPDATE SET failures = p.failures + excluded.failures
"""

# Table, the condition on its row `s` that prunes it (after the generations), and a
# statement that counts on what went (`gone`), if any.
ROW_TABLES: tuple[tuple[str, str, str | None], ...] = (
    (
        "static_replacements",
        "s.time < :cutoff AND NOT EXISTS (SELECT 1 FROM generations g "
        "WHERE g.cluster = s.cluster AND g.group_name = s.group_name "
        "AND g.generation = s.generation "
        f"AND NOT {_doomed('g')})",
        None,
    ),
    ("offset_history_batches", "s.batch_time < :cutoff", None),
    ("decode_failures", "coalesce(s.source_timestamp, s.stored_at) < :cutoff", FOLD_FAILURES),
    ("record_repairs", "s.stored_at < :cutoff", None),
)
HISTORY_ROWS = "s.minute < :cutoff"
# A range of a table's blocks: PostgreSQL 14+ reads just those (a TID range scan).
IN_BLOCKS = "ctid >= CAST(:first AS tid) AND ctid < CAST(:last AS tid)"
TABLES = (
    "offset_history",
    "generations",
    "generation_members",
    "rebalances",
    *(name for name, _, _ in ROW_TABLES),
)

Progress = Callable[[str, int, float], None]  # table, rows so far, fraction of its blocks


@dataclass
class Cursor:
    """Where a prune stopped when out of time: its step (the partitions, each table in
    turn) and the block of that step's table it goes on from."""

    step: int = 0
    block: int = 0


@dataclass
class PruneReport:
    """What a prune deleted (or, dry, would delete)."""

    cutoff: datetime
    dry_run: bool
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    # offset_history's day partitions dropped whole (their rows are not in `rows`).
    partitions: list[partitions.DayPartition] = field(default_factory=list)
    # False when it stopped early: out of time, or a partition's lock was not granted.
    complete: bool = True
    busy: list[str] = field(default_factory=list)  # partitions left for a lock
    seconds: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "cutoff": _iso(self.cutoff),
            "dry_run": self.dry_run,
            "complete": self.complete,
            "rows": self.rows,
            "partitions_dropped": [
                {
                    "name": p.name,
                    "from": _iso(p.start),
                    "to": _iso(p.end),
                    "rows_estimate": max(p.rows_estimate, 0),
                }
                for p in self.partitions
            ],
            "partitions_busy": self.busy,
            "seconds": round(self.seconds, 3),
        }

    def merged(self, later: PruneReport) -> PruneReport:
        """This turn's report and the `later` one's, as one (the later cutoff)."""
        return PruneReport(
            later.cutoff,
            self.dry_run,
            {table: n + later.rows[table] for table, n in self.rows.items()},
            self.partitions + later.partitions,
            later.complete,
            later.busy,
            self.seconds + later.seconds,
        )

    def summary(self) -> str:
        """One line: what went (or would), for the job's log and the command's output."""
        verb = "would delete" if self.dry_run else "deleted"
        parts = []
        if self.partitions:
            estimate = sum(max(p.rows_estimate, 0) for p in self.partitions)
            parts.append(
                f"{len(self.partitions)} offset_history day partition(s) "
                f"{self.partitions[0].day}..{self.partitions[-1].day} "
                f"(about {estimate:,} rows)"
            )
        parts += [f"{n:,} {table} rows" for table, n in self.rows.items() if n]
        what = ", ".join(parts) or "nothing"
        tail = "" if self.complete else "; not finished, continued later"
        if self.busy:
            tail += f" ({len(self.busy)} partition(s) locked by others)"
        return f"history before {_iso(self.cutoff)}: {verb} {what} in {self.seconds:.1f}s{tail}"


def prune(
    engine: Engine,
    cutoff: datetime,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
    deadline: float | None = None,
    cursor: Cursor | None = None,
) -> PruneReport:
    """Delete the history before `cutoff` (see the module's docstring); with `dry_run`,
    count it and change nothing. Stops between two transactions once `deadline`
    (`time.monotonic()`) has passed (after one transaction at least), with `complete`
    false and `cursor` where it stopped: running it again with that cursor goes on
    from there, without it starts over. Idempotent. Raises sqlalchemy's DBAPIError when
    the database fails."""
    started = time.monotonic()
    report = PruneReport(cutoff, dry_run)
    if dry_run:
        _count(engine, report)
    else:
        _Pruning(engine, report, progress, deadline, cursor or Cursor()).run()
    report.seconds = time.monotonic() - started
    return report


class _Pruning:
    def __init__(
        self,
        engine: Engine,
        report: PruneReport,
        progress: Progress | None,
        deadline: float | None,
        cursor: Cursor,
    ) -> None:
        self.engine, self.report, self.cursor = engine, report, cursor
        self.params = {"cutoff": report.cutoff}
        self.progress = progress or (lambda table, rows, fraction: None)
        self.deadline = deadline
        self.transactions = 0

    def run(self) -> None:
        """Each step in turn from the cursor's, each a transaction at a time; returns
        early (the cursor where it stopped) when out of time."""
        steps: list[Callable[[], bool]] = [self._drop_partitions]
        steps += [
            functools.partial(self._delete_rows, leaf, "offset_history", HISTORY_ROWS)
            for leaf in self._history_leaves()
        ]
        steps.append(self._delete_generations)
        steps += [
            functools.partial(self._delete_rows, table, table, condition, fold)
            for table, condition, fold in ROW_TABLES
        ]
        while self.cursor.step < len(steps):
            if not steps[self.cursor.step]():
                return
            self.cursor.step, self.cursor.block = self.cursor.step + 1, 0
        self.cursor.step = 0

    def _done(self, table: str, fraction: float) -> None:
        """After each transaction: counts it and reports progress."""
        self.transactions += 1
        self.progress(table, self.report.rows[table], fraction)

    def _out_of_time(self) -> bool:
        """Past the deadline, after at least one transaction (so every turn gets on)."""
        late = self.deadline is not None and time.monotonic() >= self.deadline
        if late and self.transactions:
            self.report.complete = False
            return True
        return False

    def _drop_partitions(self) -> bool:
        with self.engine.connect() as conn:
            old = [p for p in partitions.day_partitions(conn) if p.end <= self.report.cutoff]
        for partition in old:
            if self._out_of_time():
                return False
            try:
                with self.engine.begin() as conn:
                    partitions.drop_day(conn, partition)
            except DBAPIError as exc:
                if not isinstance(exc.orig, psycopg.errors.LockNotAvailable):
                    raise
                self.report.busy.append(partition.name)
                self.report.complete = False
                continue
            self.report.partitions.append(partition)
            self._done("offset_history", 0.0)
        return True

    def _history_leaves(self) -> list[str]:
        """The default partition and the day partition that holds the cutoff (one
        wholly before it but left by a lock is dropped next time, not emptied row by row)."""
        with self.engine.connect() as conn:
            days = partitions.day_partitions(conn)
        cutoff = self.report.cutoff
        return [partitions.DEFAULT] + [p.name for p in days if p.start < cutoff < p.end]

    def _delete_rows(
        self, table: str, counted_as: str, condition: str, fold: str | None = None
    ) -> bool:
        """Delete `table`'s rows `s` that meet `condition`, a block range at a time,
        running `fold` on them; False when out of time."""
        delete = f"DELETE FROM {table} s WHERE {IN_BLOCKS} AND {condition}"
        statement = text(
            delete
            if fold is None
            else f"WITH gone AS ({delete} RETURNING s.*), folded AS ({fold}) "
            "SELECT count(*) FROM gone"
        )
        for first, last, fraction in self._block_ranges(table, BLOCKS):
            if self._out_of_time():
                return False
            with self.engine.begin() as conn:
                result = conn.execute(statement, {**self.params, "first": first, "last": last})
                deleted = result.rowcount if fold is None else result.scalar_one()
                self.report.rows[counted_as] += int(deleted)
            self._done(counted_as, fraction)
        return True

    def _delete_generations(self) -> bool:
        doomed = text(f"SELECT id FROM generations s WHERE {IN_BLOCKS} AND {_doomed('s')}")
        rows = self.report.rows
        for first, last, fraction in self._block_ranges("generations", GENERATION_BLOCKS):
            if self._out_of_time():
                return False
            with self.engine.begin() as conn:
                ids = conn.execute(doomed, {**self.params, "first": first, "last": last})
                params = {"ids": list(ids.scalars())}
                if params["ids"]:
                    rows["generation_members"] += _deleted(
                        conn,
                        "DELETE FROM generation_members WHERE generation_pk = ANY(:ids)",
                        params,
                    )
                    conn.execute(text(FOLD_REBALANCES), params)
                    rows["rebalances"] += _deleted(
                        conn, "DELETE FROM rebalances WHERE to_generation_pk = ANY(:ids)", params
                    )
                    rows["generations"] += _deleted(
                        conn, "DELETE FROM generations WHERE id = ANY(:ids)", params
                    )
            self._done("generations", fraction)
        return True

    def _block_ranges(self, table: str, step: int) -> Iterator[tuple[str, str, float]]:
        """(first ctid, end ctid, fraction done) for each `step` blocks of `table` as
        large as it is now (rows added later are new, not old), from the cursor's block;
        the cursor moves on as each range is done."""
        with self.engine.connect() as conn:
            blocks = conn.execute(
                text("SELECT pg_relation_size(:t) / current_setting('block_size')::bigint"),
                {"t": table},
            ).scalar_one()
        for start in range(self.cursor.block, int(blocks), step):
            yield f"({start},0)", f"({start + step},0)", min(1.0, (start + step) / blocks)
            self.cursor.block = start + step


def _deleted(conn: Connection, sql: str, params: Mapping[str, object]) -> int:
    return int(conn.execute(text(sql), params).rowcount)


def _count(engine: Engine, report: PruneReport) -> None:
    """Fill `report` with what a prune would delete, changing nothing."""
    params = {"cutoff": report.cutoff}
    with engine.connect() as conn:
        days = partitions.day_partitions(conn)
        report.partitions = [p for p in days if p.end <= report.cutoff]
        kept = [partitions.DEFAULT] + [p.name for p in days if p.start < report.cutoff < p.end]
        report.rows["offset_history"] = sum(
            _scalar(conn, f"SELECT count(*) FROM {leaf} s WHERE {HISTORY_ROWS}", params)
            for leaf in kept
        )
        doomed = f"SELECT id FROM generations s WHERE {_doomed('s')}"
        report.rows["generations"] = _scalar(conn, f"SELECT count(*) FROM ({doomed}) d", params)
        report.rows["generation_members"] = _scalar(
            conn,
            f"SELECT count(*) FROM generation_members WHERE generation_pk IN ({doomed})",
            params,
        )
        report.rows["rebalances"] = _scalar(
            conn, f"SELECT count(*) FROM rebalances WHERE to_generation_pk IN ({doomed})", params
        )
        for table, condition, _ in ROW_TABLES:
            report.rows[table] = _scalar(
                conn, f"SELECT count(*) FROM {table} s WHERE {condition}", params
            )


def _scalar(conn: Connection, sql: str, params: Mapping[str, object]) -> int:
    return int(conn.execute(text(sql), params).scalar_one())


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Maintenance:
    """The streaming job's upkeep of the store, run from its loop between batches.

    At most every `INTERVAL_S`: create the offset history's partitions for today and
    the next days, then, with a retention, prune what is older. A turn takes at most
    `BUDGET_S` (an unfinished prune goes on at the next turn); a database that is away
    or a lock that is not granted is logged in one line and retried after `RETRY_S`:
    the job's batches go on meanwhile (writes for a day without a partition go to the
    default partition).
    """

    def __init__(
        self,
        engine: Engine,
        retention_s: float | None,
        log: logging.Logger,
        *,
        interval_s: float = INTERVAL_S,
        retry_s: float = RETRY_S,
        budget_s: float = BUDGET_S,
    ) -> None:
        self.engine, self.retention_s, self.log = engine, retention_s, log
        self.interval_s, self.retry_s, self.budget_s = interval_s, retry_s, budget_s
        self.next_turn = 0.0  # time.monotonic(): the first turn is the first call
        self.failures = 0
        self.pending: PruneReport | None = None  # a prune's turns so far, not yet logged
        self.cursor = Cursor()  # where the pending prune goes on

    def prepare(self, now: datetime | None = None) -> None:
        """Create the days' partitions before the first batch, so that its rows need not
        be moved out of the default partition later; a failure is logged (the first
        turn tries again)."""
        try:
            self._ensure(now or datetime.now(UTC))
        except DBAPIError as exc:
            self.log.warning("offset history partitions not created yet: %s", first_line(exc))

    def _ensure(self, now: datetime) -> None:
        created = partitions.ensure_days(self.engine, partitions.days_ahead(now))
        if created:
            self.log.info("offset history: created partitions %s", ", ".join(created))

    def tick(self, now: datetime | None = None, *, final: bool = False) -> PruneReport | None:
        """One turn if it is due (`final`: now, and to the end, as a `--once` run ends);
        the prune's report, None when nothing was pruned."""
        clock = time.monotonic()
        if clock < self.next_turn and not final:
            return None
        now = now or datetime.now(UTC)
        report = None
        try:
            self._ensure(now)
            if self.retention_s is not None:
                cutoff = now - timedelta(seconds=self.retention_s)
                deadline = None if final else clock + self.budget_s
                report = prune(self.engine, cutoff, deadline=deadline, cursor=self.cursor)
        except (DBAPIError, StoreError) as exc:
            self.failures += 1
            self.next_turn = time.monotonic() + self.retry_s
            self.log.warning(
                "retention: the store's upkeep failed (%s); retried in %.0fs",
                first_line(exc),
                self.retry_s,
            )
            return None
        self.failures = 0
        done = report is None or report.complete
        self.next_turn = time.monotonic() + (self.interval_s if done else 0.0)
        if report is not None:
            # A prune that takes several turns is logged once, when it ends or waits.
            pending = self.pending.merged(report) if self.pending else report
            self.pending = None if report.complete or report.busy else pending
            if self.pending is None:
                self.cursor = Cursor()
            if report.busy:  # a lock: wait before asking again
                self.next_turn = time.monotonic() + self.retry_s
            if self.pending is None and (
                report.busy or pending.partitions or any(pending.rows.values())
            ):
                self.log.info("retention: %s", pending.summary())
        return report


def retention_seconds(flag: str, value: str) -> float:
    """Seconds in a retention flag (`90d`, `12h`, `1d12h`); a one-line `UsageError`
    when it is no duration or shorter than `MIN_RETENTION_S`."""
    from services.cli import UsageError
    from services.durations import seconds_flag

    seconds = seconds_flag(flag, value)
    if seconds < MIN_RETENTION_S:
        raise UsageError(f"{flag} must be at least 1h (longer than a storm window), got {value!r}")
    return seconds
