"""The `--database-url` option every store-backed command shares.

Imports nothing heavy: command modules use it at registration time.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable

from services.settings import env
from services.store.errors import ClusterChoiceError, StoreError

DATABASE_URL_ENV = "GROUPSCOPE_DATABASE_URL"
URL_SCHEMES = ("postgresql+psycopg://", "postgresql://", "postgres://")

DATABASE_URL_HELP = (
    "PostgreSQL (14 or newer) to use, e.g. postgresql://user:pass@host:5432/groupscope "
    f"(env {DATABASE_URL_ENV}). Default: the embedded server under ./.groupscope/pg "
    "(or $GROUPSCOPE_DATA_DIR/pg)."
)


def add_database_url_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        default=env(DATABASE_URL_ENV) or None,
        metavar="URL",
        help=DATABASE_URL_HELP,
    )


def add_cluster_argument(parser: argparse.ArgumentParser, help: str, *, default: bool) -> None:
    """`--cluster NAME` (env GROUPSCOPE_CLUSTER): the job's cluster, which defaults to
    `default` (`default=True`), or the cluster a query reads, which defaults to the
    store's only one (None here; `services.store.clusters.choose`)."""
    parser.add_argument(
        "--cluster",
        default=env("GROUPSCOPE_CLUSTER", "default") if default else env("GROUPSCOPE_CLUSTER"),
        metavar="NAME",
        help=help,
    )


def store_command(
    command: Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """Wrap a command that uses the store.

    A malformed `--database-url` or a bad or missing `--cluster` is bad input (exit 2);
    a store error (database down, too old, not migrated) is one line on stderr and exit 1.
    """

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        from services.cli import UsageError

        url = args.database_url
        if url is not None and not url.startswith(URL_SCHEMES):
            raise UsageError(
                "--database-url: expected a PostgreSQL URL such as "
                "postgresql://user@host:5432/dbname"
            )
        try:
            return command(args)
        except ClusterChoiceError as exc:
            raise UsageError(str(exc)) from None
        except StoreError as exc:
            print(f"groupscope {args.command}: {exc}", file=sys.stderr)
            return 1

    return run
