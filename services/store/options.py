"""The `--database-url` option every store-backed command shares.

Imports nothing heavy: command modules use it at registration time.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable

from services.store.errors import StoreError

DATABASE_URL_ENV = "GROUPSCOPE_DATABASE_URL"
URL_SCHEMES = ("postgresql+psycopg://", "postgresql://", "postgres://")

DATABASE_URL_HELP = (
    "PostgreSQL (14 or newer) to use, e.g. postgresql://user:pass@host:5432/groupscope "
    f"(env {DATABASE_URL_ENV}). Default: the embedded server under ./.groupscope/pg "
    "(or $GROUPSCOPE_DATA_DIR/pg)."
)


def postgres_url(value: str) -> str:
    """argparse type: a PostgreSQL URL, or a one-line reason why not."""
    if not value.startswith(URL_SCHEMES):
        raise argparse.ArgumentTypeError(
            "expected a PostgreSQL URL such as postgresql://user@host:5432/dbname"
        )
    return value


def add_database_url_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        type=postgres_url,
        default=os.environ.get(DATABASE_URL_ENV) or None,
        metavar="URL",
        help=DATABASE_URL_HELP,
    )


def reports_store_errors(
    command: Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """Turn a store error (database down, too old) into one line on stderr and exit 1."""

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except StoreError as exc:
            print(f"groupscope {args.command}: {exc}", file=sys.stderr)
            return 1

    return run
