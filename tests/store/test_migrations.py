"""Migrations build exactly the models' schema, and undo it."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from services.store.database import create_store_engine
from services.store.migrate import current_revision, downgrade, head_revision, upgrade
from services.store.models import Base

TABLES = set(Base.metadata.tables)


def test_upgrade_empty_database_to_head_and_downgrade_back(empty_database_url: str) -> None:
    engine = create_store_engine(empty_database_url)
    try:
        assert current_revision(engine) is None
        upgrade(empty_database_url)
        assert current_revision(engine) == head_revision()
        assert set(inspect(engine).get_table_names()) >= TABLES
        assert set(inspect(engine).get_view_names()) >= {
            "group_timeline",
            "partition_ownership",
            "rebalance_storms",
            "offset_history_entries",
            "assignments",
        }

        downgrade(empty_database_url, "base")
        inspector = inspect(engine)
        assert set(inspector.get_table_names()) <= {"alembic_version"}
        assert inspector.get_view_names() == []
        with engine.connect() as conn:
            functions = conn.execute(
                text("SELECT proname FROM pg_proc WHERE proname = ANY(:names)"),
                {"names": ["members_missing_from", "rebalance_storms_between"]},
            ).all()
        assert functions == []
        assert current_revision(engine) is None
    finally:
        engine.dispose()


def test_upgrade_twice_is_harmless(empty_database_url: str) -> None:
    upgrade(empty_database_url)
    upgrade(empty_database_url)
    engine = create_store_engine(empty_database_url)
    try:
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_models_and_migrations_agree(database_url: str) -> None:
    engine = create_store_engine(database_url)
    try:
        with engine.connect() as conn:
            differences = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    assert differences == []


def test_0003_fills_in_state_and_partition_count_of_older_generations(
    empty_database_url: str,
) -> None:
    engine = create_store_engine(empty_database_url)
    try:
        upgrade(empty_database_url, "0002")
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO groups VALUES ('g', 'classic', 7, now(), now())"))
            conn.execute(
                text(
                    "INSERT INTO generations (id, group_name, generation, time, member_count,"
                    " source_partition, source_offset, source_timestamp, batch_id) VALUES"
                    " (1, 'g', 1, now(), 2, 7, 10, now(), 1),"
                    " (2, 'g', 2, now(), 0, 7, 11, now(), 1)"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO generation_members (generation_pk, member_id, subscribed_topics,"
                    " assignment) VALUES (1, 'a', '{t,u}', '{\"t\": [0, 1], \"u\": [4]}'),"
                    " (1, 'b', '{t}', '{\"t\": [2]}')"
                )
            )
        upgrade(empty_database_url)
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT id, state, partition_count FROM generations ORDER BY id")
            ).all()
        assert [tuple(r) for r in rows] == [(1, "stable", 4), (2, "empty", 0)]
    finally:
        engine.dispose()
