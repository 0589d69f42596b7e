"""The exporter process through real outages: its own PostgreSQL stopped and started, a
database that does not exist yet or is not migrated, a database host that accepts
connections and never answers, stale and degraded sources, and 400 idle connections.

Every exporter here is a `groupscope exporter` subprocess scraped over HTTP."""

from __future__ import annotations

import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from services.cli import main
from services.store.batch import OffsetCommit, PipelineReport
from services.store.database import create_store_engine
from services.store.embedded import EmbeddedPostgres
from services.store.migrate import upgrade
from services.store.repository import HistoryStore
from tests.fixtures.batches import SOURCE, batch
from tests.fixtures.postgres import PostgresServer

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")
ERRORS = ("groupscope_exporter_refresh_errors_total", ())
LAST_COMMIT = (
    "groupscope_group_last_commit_timestamp_seconds",
    (("cluster", "default"), ("group", "payments")),
)
LAST_REFRESH = ("groupscope_exporter_last_refresh_timestamp_seconds", ())


@dataclass
class Running:
    process: subprocess.Popen
    base: str  # http://host:port
    log: Path

    def get(self, path: str, timeout: float = 10) -> tuple[int, str]:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(self.base + path, timeout=timeout) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def metrics(self) -> dict:
        status, body = self.get("/metrics")
        assert status == 200
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body)
            for s in family.samples
        }

    def threads(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))


@contextmanager
def exporter(
    tmp_path: Path, *flags: str, host: str = "127.0.0.1", **variables: str
) -> Iterator[Running]:
    """`groupscope exporter` on a free port, until the block ends (SIGTERM, then kill).

    `variables` are GROUPSCOPE_* settings for its environment."""
    log = tmp_path / f"exporter-{time.monotonic_ns()}.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), **variables}
    env.pop("GROUPSCOPE_DATABASE_URL", None)
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "services.cli",
                "exporter",
                "--host",
                host,
                "--port",
                "0",
                *flags,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp_path,
        )
    try:
        found = wait_for(
            lambda: (
                re.search(r"groupscope exporter: (http://\S+)/metrics ", log.read_text())
                or (process.poll() is not None and AssertionError(log.read_text()))
            ),
            60,
            "the exporter to serve",
        )
        if isinstance(found, AssertionError):
            raise found
        yield Running(process, found.group(1), log)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def wait_for(check: Callable[[], T | None], seconds: float, what: str) -> T:
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what}")
        time.sleep(0.2)


def seed(url: str, *reports: PipelineReport, cluster: str = "default") -> None:
    """A group of `cluster` with one commit a minute ago, and the job's reports."""
    engine = create_store_engine(url)
    try:
        store = HistoryStore(engine, cluster=cluster)
        store.write_batch(
            batch(
                1,
                offsets=[
                    OffsetCommit(
                        "payments",
                        "orders",
                        0,
                        42,
                        7,
                        1,
                        commit_time=datetime.now(UTC) - timedelta(minutes=1),
                    )
                ],
            )
        )
        for report in reports:
            store.report_status(report)
    finally:
        engine.dispose()


def caught_up(source: str = SOURCE, minutes_ago: float = 0) -> PipelineReport:
    return PipelineReport(source, datetime.now(UTC) - timedelta(minutes=minutes_ago), True, 0)


@pytest.fixture
def own_postgres(data_dir: Path) -> Iterator[EmbeddedPostgres]:
    """A PostgreSQL of this test alone (the session's shared server is never stopped)."""
    server = EmbeddedPostgres(data_dir / "pg")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_database_outage_counts_errors_moves_the_ages_and_recovers(
    own_postgres: EmbeddedPostgres, data_dir: Path, tmp_path: Path
) -> None:
    url = own_postgres.uri()
    upgrade(url)
    seed(url, caught_up())
    with exporter(tmp_path, "--database-url", url, "--interval", "0.5s") as running:
        wait_for(lambda: running.get("/readyz")[0] == 200, 30, "ready before the outage")
        before = running.metrics()
        assert before[ERRORS] == 0

        own_postgres.stop()  # the server process ends: the outage is real
        assert not (data_dir / "pg" / "postmaster.pid").exists()
        outage_started = time.monotonic()
        _status, reason = wait_for(
            lambda: (r := running.get("/readyz"))[0] == 503 and r, 30, "unready in the outage"
        )
        assert "the history store could not be read" in reason
        first = wait_for(lambda: (m := running.metrics())[ERRORS] >= 1 and m, 30, "an error")
        time.sleep(3)
        second = running.metrics()
        # Counted as they fail (every 0.5 s), while the database is still down.
        assert second[ERRORS] >= first[ERRORS] + 3
        # The ages keep moving with the clock from the last values read; the stored
        # moments stay.
        assert second[LAST_COMMIT] == first[LAST_COMMIT]
        age = ("groupscope_pipeline_status_age_seconds", (("cluster", "default"),))
        assert second[age] - first[age] == pytest.approx(3, abs=1.5)
        # The last metrics stay up; the last refresh stays where it was.
        assert (
            second[
                (
                    "groupscope_committed_offset_sum",
                    (("cluster", "default"), ("group", "payments"), ("topic", "orders")),
                )
            ]
            == 42
        )
        assert second[LAST_REFRESH] == first[LAST_REFRESH]
        assert running.get("/healthz")[0] == 200
        assert running.get("/readyz")[0] == 503

        restarted = EmbeddedPostgres(data_dir / "pg")
        try:
            assert restarted.start() == url
            outage = time.monotonic() - outage_started
            wait_for(lambda: running.get("/readyz")[0] == 200, 30, "ready after the outage")
            after = running.metrics()
            assert after[LAST_REFRESH] > second[LAST_REFRESH]
            assert after[ERRORS] >= second[ERRORS]
            time.sleep(1.5)
            assert running.metrics()[ERRORS] == after[ERRORS]  # no more errors
            assert running.get("/healthz")[0] == 200
        finally:
            restarted.stop()
    log = running.log.read_text()
    assert "Traceback" not in log
    # Logged once when the outage began, however many refreshes failed.
    assert log.count("exporter not ready: the history store could not be read") == 1, log
    assert outage >= 3


def test_a_frozen_database_counts_as_failed_refreshes_until_it_thaws(
    own_postgres: EmbeddedPostgres, data_dir: Path, tmp_path: Path
) -> None:
    """SIGSTOP on every process of the server: a paused VM. The exporter's pooled
    connection waits forever on its socket; the refresh loop must notice."""
    import psutil

    url = own_postgres.uri()
    upgrade(url)
    seed(url, caught_up())
    postmaster = psutil.Process(int((data_dir / "pg" / "postmaster.pid").read_text().split()[0]))
    with exporter(tmp_path, "--database-url", url, "--interval", "0.5s") as running:
        wait_for(lambda: running.get("/readyz")[0] == 200, 30, "ready before the freeze")
        frozen = [postmaster, *postmaster.children(recursive=True)]
        for process in frozen:
            process.suspend()
        try:
            before = running.metrics()[ERRORS]
            # A refresh counts as failed once it has waited 30 s (the stall limit).
            _status, reason = wait_for(
                lambda: (r := running.get("/readyz"))[0] == 503 and r, 45, "unready when frozen"
            )
            assert "the history store has not answered a refresh for 3" in reason
            assert running.metrics()[ERRORS] == before + 1
            assert running.get("/healthz")[0] == 200
        finally:
            for process in frozen:
                process.resume()
        wait_for(lambda: running.get("/readyz")[0] == 200, 30, "ready after the thaw")
    assert "not ready: the history store has not answered" in running.log.read_text()


class BlackHole:
    """A TCP server that accepts connections and never says a word: a hung database."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self.socket.getsockname()[1]

    def close(self) -> None:
        self.socket.close()


def test_a_database_that_never_answers_fails_each_refresh_within_the_connect_timeout(
    tmp_path: Path,
) -> None:
    hole = BlackHole()
    url = f"postgresql://groupscope@127.0.0.1:{hole.port}/groupscope"
    try:
        with exporter(
            tmp_path,
            "--database-url",
            url,
            "--interval",
            "0.5s",
            GROUPSCOPE_DATABASE_CONNECT_TIMEOUT="2s",
        ) as running:
            assert running.get("/healthz")[0] == 200
            status, reason = running.get("/readyz")
            assert status == 503 and "timeout" in reason
            start = running.metrics()[ERRORS]
            time.sleep(6)
            # One attempt per 2 s timeout + 0.5 s interval: 2 or 3 in 6 s.
            assert running.metrics()[ERRORS] >= start + 2
    finally:
        hole.close()


def test_started_before_the_database_exists_it_serves_and_becomes_ready(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    name = f"groupscope_late_{os.getpid()}"
    postgres_server.drop_database(name)
    url = postgres_server.url(name)
    try:
        with exporter(tmp_path, "--database-url", url, "--interval", "0.3s") as running:
            assert running.get("/healthz")[0] == 200
            status, reason = running.get("/readyz")
            assert status == 503 and f'database "{name}" does not exist' in reason
            assert running.metrics()[ERRORS] >= 1

            postgres_server.execute(f"CREATE DATABASE {name}")
            status, reason = wait_for(
                lambda: (r := running.get("/readyz"))[1].find("schema") > 0 and r,
                30,
                "the missing schema in /readyz",
            )
            assert status == 503
            assert "has no groupscope schema" in reason and "groupscope db upgrade" in reason

            assert main(["db", "upgrade", "--database-url", url]) == 0
            reason = wait_for(
                lambda: (r := running.get("/readyz"))[1].startswith("the streaming job") and r[1],
                30,
                "the schema found",
            )
            assert "has not reported yet" in reason
            seed(url, caught_up())
            wait_for(lambda: running.get("/readyz")[0] == 200, 30, "ready")
            assert running.metrics()[
                ("groupscope_group_commits_total", (("cluster", "default"), ("group", "payments")))
            ]
        log = running.log.read_text()
        assert "Traceback" not in log
        # Each state logged once, however many refreshes found it.
        assert log.count("exporter not ready: the history store could not be read") == 1, log
        assert log.count("exporter not ready: the database has no groupscope schema") == 1, log
    finally:
        postgres_server.drop_database(name)


WRONG = "kafka:wrong-host:9092/__consumer_offsets"


def test_a_stale_source_does_not_count_for_readiness_and_can_be_forgotten(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A run against a wrong address under a mistyped --cluster that never caught up, 20
    # minutes ago; the real job has caught up just now.
    seed(database_url, caught_up())
    seed(
        database_url,
        PipelineReport(WRONG, datetime.now(UTC) - timedelta(minutes=20), False),
        cluster="typo",
    )
    flags = ("--database-url", database_url, "--interval", "0.3s")
    with exporter(tmp_path, *flags, GROUPSCOPE_SOURCE_STALE_AFTER="10m") as running:
        status, reason = wait_for(
            lambda: (r := running.get("/readyz"))[0] == 200 and r, 30, "ready"
        )
        assert WRONG in reason and "not counted" in reason
        s = running.metrics()
        assert s[("groupscope_pipeline_stale", (("cluster", "typo"),))] == 1
        assert s[("groupscope_pipeline_stale", (("cluster", "default"),))] == 0
        info = "groupscope_pipeline_info"
        assert s[(info, (("cluster", "typo"), ("source", WRONG)))] == 1

        # Unknown names list the known sources; a recent source needs --force.
        assert main(["db", "forget-source", "nope", "--database-url", database_url]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and WRONG in err and SOURCE in err
        assert main(["db", "forget-source", SOURCE, "--database-url", database_url]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--force" in err

        assert main(["db", "forget-source", WRONG, "--database-url", database_url]) == 0
        assert f"forgot {WRONG} of cluster typo: 1 status row(s)" in capsys.readouterr().out
        wait_for(
            lambda: ("groupscope_pipeline_stale", (("cluster", "typo"),)) not in running.metrics(),
            30,
            "the forgotten source gone from /metrics",
        )
        status, reason = running.get("/readyz")
        assert status == 200 and WRONG not in reason
    assert (
        "source kafka:wrong-host:9092/__consumer_offsets has not reported"
        in running.log.read_text()
    )


def test_only_stale_sources_mean_not_ready(database_url: str, tmp_path: Path) -> None:
    seed(database_url, caught_up(minutes_ago=3))
    with exporter(
        tmp_path, "--database-url", database_url, GROUPSCOPE_SOURCE_STALE_AFTER="2m"
    ) as running:
        status, reason = running.get("/readyz")
        assert status == 503 and "no source of the streaming job has reported for 3m" in reason


def test_a_degraded_source_is_published_and_not_ready(database_url: str, tmp_path: Path) -> None:
    seed(database_url, caught_up())
    with exporter(tmp_path, "--database-url", database_url, "--interval", "0.3s") as running:
        wait_for(lambda: running.get("/readyz")[0] == 200, 30, "ready")
        labels = (("cluster", "default"),)
        assert running.metrics()[("groupscope_pipeline_degraded", labels)] == 0
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE pipeline_status SET degraded_reason = %s, "
                "degraded_since = '2026-11-23 15:00:00+00', log_resets_total = 2",
                ["the source's brokers are unreachable: Connection refused"],
            )
        _status, reason = wait_for(
            lambda: (r := running.get("/readyz"))[0] == 503 and r, 30, "unready when degraded"
        )
        assert reason.strip() == (
            f"the streaming job is degraded on {SOURCE} since 2026-11-23 15:00:00Z: "
            "the source's brokers are unreachable: Connection refused"
        )
        s = running.metrics()
        assert s[("groupscope_pipeline_degraded", labels)] == 1
        assert s[("groupscope_pipeline_log_resets_total", labels)] == 2
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("UPDATE pipeline_status SET degraded_reason = NULL, degraded_since = NULL")
        wait_for(lambda: running.get("/readyz")[0] == 200, 30, "ready again")
        assert running.metrics()[("groupscope_pipeline_degraded", labels)] == 0
    log = running.log.read_text()
    assert log.count("is degraded: the source's brokers are unreachable") == 1
    assert "is no longer degraded" in log


def test_idle_connections_cost_no_thread_and_are_closed_after_the_timeout(
    database_url: str, tmp_path: Path
) -> None:
    with exporter(
        tmp_path,
        "--database-url",
        database_url,
        GROUPSCOPE_EXPORTER_HTTP_TIMEOUT="2s",
        GROUPSCOPE_EXPORTER_MAX_CONNECTIONS="64",
    ) as running:
        host, port = running.base.removeprefix("http://").rsplit(":", 1)
        for _ in range(8):  # every worker started
            assert running.get("/metrics")[0] == 200
        baseline = running.threads()
        idle = [socket.create_connection((host, int(port)), timeout=5) for _ in range(400)]
        try:
            opened = time.monotonic()
            time.sleep(0.5)
            assert running.threads() <= baseline + 3  # the pool may start its other workers
            # A scrape is still served meanwhile, at once.
            started = time.monotonic()
            status, body = running.get("/metrics", timeout=5)
            assert status == 200 and "groupscope_exporter_series" in body
            assert time.monotonic() - started < 1.5
            assert running.threads() <= baseline + 3
            # Every idle connection is closed by the server within the timeout (the
            # oldest at once, to stay within --max-connections).
            closed = wait_for(lambda: all_closed(idle), 10, "the idle connections closed")
            assert closed and time.monotonic() - opened < 2 + 3
        finally:
            for conn in idle:
                conn.close()
        assert running.get("/healthz")[0] == 200


def all_closed(connections: list[socket.socket]) -> bool:
    """True once the server closed every one (end of stream or reset)."""
    with selectors.DefaultSelector() as selector:
        for conn in connections:
            selector.register(conn, selectors.EVENT_READ)
        readable = {key.fileobj for key, _ in selector.select(0)}
    if len(readable) < len(connections):
        return False
    for conn in connections:
        try:
            if conn.recv(1) != b"":
                return False
        except ConnectionResetError:
            pass
    return True


def test_it_listens_on_the_chosen_address_ipv6_too(database_url: str, tmp_path: Path) -> None:
    with exporter(tmp_path, "--database-url", database_url, host="::1") as running:
        assert running.base.startswith("http://[::1]:")
        assert running.get("/healthz")[0] == 200
        port = int(running.base.rsplit(":", 1)[1])
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_bad_exporter_flags_get_one_line() -> None:
    for flags, message in (
        (["--connect-timeout", "1s"], "--connect-timeout must be at least 2s"),
        (["--max-connections", "0"], "--max-connections must be 1-10,000"),
        (["--http-timeout", "0s"], "--http-timeout must be positive"),
        (["--source-stale-after", "later"], "--source-stale-after expects a duration"),
        (["--host", "no.such.host.invalid"], "cannot listen on no.such.host.invalid"),
    ):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "services.cli",
                "exporter",
                "--database-url",
                "postgresql://nobody@127.0.0.1:1/none",
                *flags,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 2, done.stderr
        assert message in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
