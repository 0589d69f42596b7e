"""Choosing the database and opening an engine on it.

`--database-url` / `GROUPSCOPE_DATABASE_URL` names any external PostgreSQL 14 or newer;
without one, groupscope starts the embedded server (see `services.store.embedded`).
URLs may use `postgres://`, `postgresql://` or `postgresql+psycopg://`; the store
always talks through psycopg 3.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import DBAPIError

from services.store.embedded import EmbeddedPostgres
from services.store.errors import StoreUnavailableError, UnsupportedServerError

MINIMUM_SERVER_VERSION = 140000
_SCHEMES = ("postgresql+psycopg://", "postgresql://", "postgres://")


def sqlalchemy_url(url: str) -> str:
    """The SQLAlchemy form of a PostgreSQL URL, with the psycopg 3 driver."""
    for scheme in _SCHEMES:
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url[len(scheme) :]
    raise ValueError(f"not a PostgreSQL URL (expected postgresql://...): {url.split('@')[-1]}")


def create_store_engine(url: str) -> Engine:
    """An engine whose pool notices a restarted server instead of handing out dead links."""
    return create_engine(sqlalchemy_url(url), pool_pre_ping=True)


def check_server(engine: Engine) -> None:
    """Fail clearly when the server is unreachable or too old."""
    try:
        with engine.connect() as conn:
            version = int(conn.execute(text("SHOW server_version_num")).scalar_one())
    except DBAPIError as exc:
        raise StoreUnavailableError(
            f"cannot reach PostgreSQL at {engine.url.render_as_string(hide_password=True)}: "
            f"{str(exc.orig).strip().splitlines()[0]}"
        ) from exc
    if version < MINIMUM_SERVER_VERSION:
        raise UnsupportedServerError(
            f"groupscope needs PostgreSQL 14 or newer; the server is {version // 10000}"
        )


@contextmanager
def open_database(url: str | None) -> Iterator[Engine]:
    """An engine on `url`, or on the embedded server when `url` is None."""
    embedded = EmbeddedPostgres() if url is None else None
    if embedded is not None:
        url = embedded.start()
    engine = create_store_engine(url)
    try:
        check_server(engine)
        yield engine
    finally:
        engine.dispose()
        if embedded is not None:
            embedded.stop()
