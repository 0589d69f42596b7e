"""A batch that fails is not kept at all, and the caller is told clearly why."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from services.store import repository
from services.store.batch import GroupEvent, SourceProgress
from services.store.database import create_store_engine
from services.store.embedded import EmbeddedPostgres
from services.store.errors import BatchRejectedError, StoreUnavailableError
from services.store.migrate import upgrade
from services.store.repository import HistoryStore, Statements
from services.store.retry import RetryPolicy
from tests.fixtures.batches import at, batch, commit, generation, member

KILL_OWN_BACKEND = "SELECT pg_terminate_backend(pg_backend_pid())"


class KillAfter(Statements):
    """The server ends the session right after `statement` ran (None: after the last
    statement, just before the commit), on the first `times` batches only."""

    def __init__(self, statement: str | None, times: int = 1) -> None:
        self.statement = statement
        self.left = times

    def execute(self, cursor, statement, params) -> None:
        super().execute(cursor, statement, params)
        if statement == self.statement:
            self._kill(cursor)

    def before_commit(self, cursor) -> None:
        if self.statement is None:
            self._kill(cursor)

    def _kill(self, cursor) -> None:
        if self.left > 0:
            self.left -= 1
            cursor.execute(KILL_OWN_BACKEND)


def counts(engine: Engine) -> dict[str, int]:
    tables = ("groups", "generations", "committed_offsets", "offset_history", "pipeline_progress")
    with engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables}


def full_batch(batch_id: int = 1):
    return batch(
        batch_id,
        offsets=[commit(10, 100), commit(20, 101, partition=1)],
        generations=[generation(1, 102, [member("a-1", {"orders": [0, 1]})])],
        progress=[SourceProgress(35, 102)],
    )


def test_connection_killed_mid_batch_keeps_nothing_and_says_so(store_engine: Engine) -> None:
    # The server ends the session after groups, generations and offsets were merged.
    store = HistoryStore(store_engine, KillAfter(repository.UPSERT_OFFSETS))
    with pytest.raises(StoreUnavailableError, match="batch 1 of __consumer_offsets not written"):
        store.write_batch(full_batch())

    assert set(counts(store_engine).values()) == {0}
    assert HistoryStore(store_engine).progress("__consumer_offsets") == {}


def test_after_a_killed_connection_the_retry_lands_the_whole_batch(store_engine: Engine) -> None:
    # The first attempt dies after every statement ran, just before the commit.
    sleeps: list[float] = []
    store = HistoryStore(store_engine, KillAfter(None))
    RetryPolicy(attempts=3, initial_delay=0.25).run(
        lambda: store.write_batch(full_batch()), sleep=sleeps.append
    )

    assert sleeps == [0.25]
    assert counts(store_engine) == {
        "groups": 1,
        "generations": 1,
        "committed_offsets": 2,
        "offset_history": 1,
        "pipeline_progress": 1,
    }


def test_unreachable_database_raises_after_backing_off(tmp_path) -> None:
    engine = create_store_engine(f"postgresql://postgres@/groupscope?host={tmp_path}&port=1")
    sleeps: list[float] = []
    store = HistoryStore(engine)
    with pytest.raises(StoreUnavailableError, match="not written"):
        RetryPolicy(attempts=4, initial_delay=0.5, multiplier=2.0, max_delay=1.5).run(
            lambda: store.write_batch(full_batch()), sleep=sleeps.append
        )
    assert sleeps == [0.5, 1.0, 1.5]
    engine.dispose()


def test_rejected_data_keeps_nothing_and_is_not_retried(store_engine: Engine) -> None:
    bad = batch(
        1,
        offsets=[commit(10, 100)],
        group_events=[GroupEvent("billing", at(0), 35, 99, type="not-a-protocol")],
    )
    attempts: list[int] = []

    def write() -> None:
        attempts.append(1)
        HistoryStore(store_engine).write_batch(bad)

    with pytest.raises(BatchRejectedError, match="ck_groups_type"):
        RetryPolicy(attempts=5).run(write, sleep=lambda _: None)
    assert len(attempts) == 1
    assert set(counts(store_engine).values()) == {0}


def test_server_restarted_mid_batch_then_the_retry_lands_it(data_dir) -> None:
    with EmbeddedPostgres(data_dir / "pg", delete_on_stop=True) as server:
        upgrade(server.uri())
        engine = create_store_engine(server.uri())

        class RestartFirst(Statements):
            """The server restarts once, after the batch was staged, before its merge."""

            restarted = False

            def execute(self, cursor, statement, params) -> None:
                if not self.restarted:
                    self.restarted = True
                    server.restart()
                super().execute(cursor, statement, params)

        HistoryStore(engine).write_batch(batch(1, offsets=[commit(5, 50)]))
        store = HistoryStore(engine, RestartFirst())
        sleeps: list[float] = []
        RetryPolicy(attempts=3, initial_delay=0.1).run(
            lambda: store.write_batch(full_batch(2)), sleep=sleeps.append
        )
        assert sleeps == [0.1]
        assert counts(engine)["committed_offsets"] == 2
        engine.dispose()
