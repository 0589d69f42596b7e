"""Choosing the database and opening an engine on it.

`--database-url` / `GROUPSCOPE_DATABASE_URL` names any external PostgreSQL 14 or newer;
without one, groupscope starts the embedded server (see `services.store.embedded`).
URLs may use `postgres://`, `postgresql://` or `postgresql+psycopg://`; the store
always talks through psycopg 3.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from sqlalchemy import Connection, Engine, create_engine, make_url, text
from sqlalchemy.exc import DBAPIError

from services.store.embedded import EmbeddedPostgres, data_dir
from services.store.errors import StoreUnavailableError, UnsupportedServerError, first_line
from services.store.options import URL_SCHEMES

MINIMUM_SERVER_VERSION = 140000


def sqlalchemy_url(url: str) -> str:
    """The SQLAlchemy form of a PostgreSQL URL, with the psycopg 3 driver."""
    for scheme in URL_SCHEMES:
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url[len(scheme) :]
    raise ValueError(f"not a PostgreSQL URL (expected postgresql://...): {url.split('@')[-1]}")


def redacted(url: str | None) -> str:
    """How to name a database to people: no password; the data dir for the embedded one."""
    if url is None:
        return f"the embedded PostgreSQL in {data_dir() / 'pg'}"
    return make_url(sqlalchemy_url(url)).set(drivername="postgresql").render_as_string()


def create_store_engine(url: str, **options: Any) -> Engine:
    """An engine whose pool notices a restarted server instead of handing out dead links.

    `options` go to `sqlalchemy.create_engine` (pool sizes, echo, ...).
    """
    return create_engine(sqlalchemy_url(url), pool_pre_ping=True, **options)


def psycopg_connection(conn: Connection) -> psycopg.Connection[tuple[Any, ...]]:
    """The psycopg connection under `conn`, for COPY and server-side work."""
    raw = conn.connection.driver_connection
    if not isinstance(raw, psycopg.Connection):  # create_store_engine's driver is psycopg
        raise TypeError(f"the store talks through psycopg 3, not {type(raw).__name__}")
    return raw


def check_server(engine: Engine) -> None:
    """Fail clearly when the server is unreachable or too old."""
    try:
        with engine.connect() as conn:
            version = int(conn.execute(text("SHOW server_version_num")).scalar_one())
    except DBAPIError as exc:
        raise StoreUnavailableError(
            f"cannot reach PostgreSQL at {redacted(engine.url.render_as_string(False))}: "
            f"{first_line(exc)}"
        ) from exc
    if version < MINIMUM_SERVER_VERSION:
        raise UnsupportedServerError(
            f"groupscope needs PostgreSQL 14 or newer; the server is {version // 10000}"
        )


@contextmanager
def database_url(url: str | None, *, existing: bool = False) -> Iterator[str]:
    """`url` itself, or the embedded server's URL (started for the block) when None.

    With `existing`, for commands that only read, a data dir without an embedded
    cluster is a `StoreUnavailableError` instead of a new, empty cluster (initdb writes
    some 46 MB only for the command to find no history in it).
    """
    if url is not None:
        yield url
        return
    embedded = EmbeddedPostgres()
    if existing and not embedded.exists():
        raise StoreUnavailableError(
            f"no history store in {embedded.pgdata}: run 'groupscope stream' to record "
            "one, or give --database-url"
        )
    with embedded:
        yield embedded.uri()


@contextmanager
def open_database(url: str | None, *, existing: bool = False) -> Iterator[Engine]:
    """A checked engine on `url`, or on the embedded server when `url` is None."""
    with database_url(url, existing=existing) as resolved:
        engine = create_store_engine(resolved)
        try:
            check_server(engine)
            yield engine
        finally:
            engine.dispose()
