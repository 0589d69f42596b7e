"""Alembic, configured in code so that migrations run from an installed package."""

from __future__ import annotations

from alembic import command
from alembic.config import Config

from services.store.revision import migrations_dir

MIGRATIONS_DIR = migrations_dir()


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
