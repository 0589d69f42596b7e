"""The `--database-url` option every store-backed command shares.

Imports nothing heavy: command modules use it at registration time.
"""

from __future__ import annotations

import argparse
import os

DATABASE_URL_ENV = "GROUPSCOPE_DATABASE_URL"

DATABASE_URL_HELP = (
    "PostgreSQL (14 or newer) to use, e.g. postgresql://user:pass@host:5432/groupscope "
    f"(env {DATABASE_URL_ENV}). Default: the embedded server under ./.groupscope/pg "
    "(or $GROUPSCOPE_DATA_DIR/pg)."
)


def add_database_url_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        default=os.environ.get(DATABASE_URL_ENV) or None,
        metavar="URL",
        help=DATABASE_URL_HELP,
    )
