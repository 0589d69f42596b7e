"""Alembic, configured in code so that migrations run from an installed package."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from services.store.errors import SchemaOutdatedError


def _migrations_dir() -> Path:
    # The folder holding env.py, found through the import system so that it works
    # from a wheel, an editable install or a source checkout alike.
    spec = find_spec("migrations.env")
    if spec is None or spec.origin is None:
        raise RuntimeError("the groupscope 'migrations' package is not installed")
    return Path(spec.origin).parent


MIGRATIONS_DIR = _migrations_dir()


def alembic_config(url: str, cluster: str | None = None) -> Config:
    """Alembic's configuration for the store at `url`. `cluster` names the history of a
    store from before migration 0010, which held one cluster (default: `default`)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["url"] = url
    if cluster is not None:
        config.attributes["cluster"] = cluster
    return config


def upgrade(url: str, revision: str = "head", cluster: str | None = None) -> None:
    command.upgrade(alembic_config(url, cluster), revision)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


def head_revision() -> str:
    head = ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
    if head is None:
        raise RuntimeError(f"the groupscope migrations in {MIGRATIONS_DIR} have no revision")
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def require_head(engine: Engine) -> None:
    """Fail clearly when the database lacks the latest schema, instead of a SQL error later."""
    current, head = current_revision(engine), head_revision()
    if current != head:
        state = f"is at revision {current}" if current else "has no groupscope schema"
        raise SchemaOutdatedError(
            f"the database {state}, not {head}; run 'groupscope db upgrade' first"
        )
