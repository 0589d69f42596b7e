"""Alembic environment: runs migrations online against the store's database.

The URL comes from `config.attributes["url"]` (set by `services.store.migrate`), or from
the `sqlalchemy.url` main option for plain `alembic` use. There is no alembic.ini:
`services.store.migrate.alembic_config()` builds the configuration in code so that it
works from an installed package.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from services.store.database import create_store_engine
from services.store.models import Base
from services.store.partitions import not_a_partition

target_metadata = Base.metadata


def run_on(connection: Connection) -> None:
    context.configure(
        connection=connection, target_metadata=target_metadata, include_name=not_a_partition
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    config = context.config
    connection = config.attributes.get("connection")
    if connection is not None:
        run_on(connection)
        return
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    engine = create_store_engine(url)
    try:
        with engine.connect() as conn:
            run_on(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("groupscope migrations run online only: pass a database URL")
run_migrations_online()
