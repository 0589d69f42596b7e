"""SIGTERM and SIGINT stop `stream`, `exporter` and `demo --serve` cleanly: each runs as a
real process on its own embedded PostgreSQL, gets the signal, and must exit 128 + signal
promptly, with the PostgreSQL server and every child process (Spark's JVM) gone and no
traceback; a stream stopped part way continues correctly when started again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest
from sqlalchemy import text

from services.simulator import Params, ReplayDirectory, build, simulate
from services.store.database import create_store_engine
from services.store.embedded import EmbeddedPostgres


class Command:
    """`python -m services.cli ARGS` with its stderr read line by line in the background."""

    def __init__(self, args: list[str], data_dir: Path) -> None:
        env = {**os.environ, "GROUPSCOPE_DATA_DIR": str(data_dir)}
        env.pop("GROUPSCOPE_DATABASE_URL", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "services.cli", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:  # type: ignore[union-attr]
            self.lines.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def wait_for(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(needle in line for line in self.lines):
            assert self.process.poll() is None, f"exited {self.process.returncode}: {self.stderr}"
            assert time.monotonic() < deadline, f"no {needle!r} in: {self.stderr[-3000:]}"
            time.sleep(0.2)

    def stop(self, signum: int, timeout: float) -> tuple[int, float]:
        """Send `signum`; the exit status and the seconds it took to exit."""
        sent = time.monotonic()
        self.process.send_signal(signum)
        code = self.process.wait(timeout)
        self._reader.join(10)
        return code, time.monotonic() - sent

    def kill(self) -> None:
        if self.process.poll() is None:
            for child in psutil.Process(self.process.pid).children(recursive=True):
                child.kill()
            self.process.kill()
            self.process.wait(30)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def postmaster(pgdata: Path) -> int:
    """The pid of the running server in `pgdata` (its postmaster.pid file's first line)."""
    pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    assert alive(pid)
    return pid


def assert_all_gone(pids: list[int], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [psutil.Process(p).cmdline()[:3] for p in pids if alive(p)]
    assert not left, f"still running: {left}"


def assert_stopped_cleanly(job: Command, signum: int, pgdata: Path, timeout: float = 60) -> float:
    """Signal the job; check its exit, its PostgreSQL and its children. Returns seconds."""
    server = postmaster(pgdata)
    children = [c.pid for c in psutil.Process(job.process.pid).children(recursive=True)]
    code, seconds = job.stop(signum, timeout)
    print(f"{job.process.args[3]}: exit {code} {seconds:.1f}s after signal {signum}")
    assert code == 128 + signum, job.stderr[-3000:]
    assert "Traceback" not in job.stderr, job.stderr[-3000:]
    assert not alive(server), "the embedded PostgreSQL outlived the command"
    assert not (pgdata / "postmaster.pid").exists()
    assert_all_gone(children)
    return seconds


@pytest.fixture
def job_data_dir(data_dir: Path) -> Iterator[Path]:
    """The data dir of a command under test; a server it leaves running is stopped after."""
    yield data_dir
    pid_file = data_dir / "pg" / "postmaster.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text().splitlines()[0])
        if alive(pid):
            psutil.Process(pid).terminate()


def migrate(data_dir: Path) -> None:
    env = {**os.environ, "GROUPSCOPE_DATA_DIR": str(data_dir)}
    env.pop("GROUPSCOPE_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "db", "upgrade"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_exporter_stops_its_database_on_a_signal(job_data_dir: Path, signum: int) -> None:
    migrate(job_data_dir)
    job = Command(["exporter", "--port", "0", "--host", "127.0.0.1"], job_data_dir)
    try:
        job.wait_for("groupscope exporter: http://", 60)
        seconds = assert_stopped_cleanly(job, signum, job_data_dir / "pg")
        assert seconds < 10
    finally:
        job.kill()


@pytest.mark.spark
def test_the_demo_stops_its_database_and_spark_on_sigterm(job_data_dir: Path) -> None:
    workdir = job_data_dir / "demo"
    job = Command(["demo", "--serve", "--port", "0", "--workdir", str(workdir)], job_data_dir)
    try:
        job.wait_for("Serving metrics until Ctrl-C", 400)
        seconds = assert_stopped_cleanly(job, signal.SIGTERM, workdir / "pg")
        assert seconds < 20
    finally:
        job.kill()


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A crash-loop storm beside a scaling group: several small files, a batch each."""
    out = tmp_path_factory.mktemp("capture")
    specs, duration = build(["crash-loop", "scale-out"], Params(), None)
    simulate(specs, ReplayDirectory(out, rows_per_file=300), out, duration, seed=5)
    return out


def truth(capture: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (capture / "truth" / name).read_text().splitlines()]


@pytest.mark.spark
def test_a_stream_stopped_by_sigterm_restarts_where_it_stopped(
    job_data_dir: Path, capture: Path, tmp_path: Path
) -> None:
    files = len(list((capture / "records").iterdir()))
    assert files >= 6
    source = ["stream", "--source", "replay", str(capture), "--checkpoint", str(tmp_path / "ck")]
    job = Command([*source, "--max-files-per-trigger", "1", "--trigger", "1s"], job_data_dir)
    try:
        job.wait_for("groupscope.stream batch 1:", 400)
        seconds = assert_stopped_cleanly(job, signal.SIGTERM, job_data_dir / "pg", 120)
    finally:
        job.kill()
    assert seconds < 60
    assert "stopping: waiting for the batch in flight" in job.stderr

    with EmbeddedPostgres(job_data_dir / "pg") as server:
        engine = create_store_engine(server.uri())
        try:
            with engine.connect() as conn:
                done = conn.execute(text("SELECT max(batch_id) FROM pipeline_progress")).scalar()
        finally:
            engine.dispose()
    assert done is not None and 1 <= done < files - 1  # stopped part way

    env = {**os.environ, "GROUPSCOPE_DATA_DIR": str(job_data_dir)}
    env.pop("GROUPSCOPE_DATABASE_URL", None)
    restart = subprocess.run(
        [sys.executable, "-m", "services.cli", *source, "--once"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert restart.returncode == 0, restart.stderr[-3000:]
    assert not (job_data_dir / "pg" / "postmaster.pid").exists()

    commits: dict[str, int] = {}
    for key in pq.read_table(capture / "records", columns=["key"]).column("key").to_pylist():
        if key and int.from_bytes(key[:2], "big") in (0, 1):  # an offset commit's key
            group = key[4 : 4 + int.from_bytes(key[2:4], "big")].decode()
            commits[group] = commits.get(group, 0) + 1
    expected_generations = {
        (g["group"], g["generation"]) for g in truth(capture, "generations.jsonl")
    }
    expected_commits = {
        (c["group"], c["topic"], c["partition"]): c["offset"]
        for c in truth(capture, "commits.jsonl")
    }
    with EmbeddedPostgres(job_data_dir / "pg") as server:
        engine = create_store_engine(server.uri())
        try:
            with engine.connect() as conn:
                generations = set(
                    map(tuple, conn.execute(text("SELECT group_name, generation FROM generations")))
                )
                offsets = {
                    (r[0], r[1], r[2]): r[3]
                    for r in conn.execute(
                        text(
                            "SELECT group_name, topic, partition, committed_offset "
                            "FROM committed_offsets WHERE NOT deleted"
                        )
                    )
                }
                counted = dict(conn.execute(text("SELECT name, commits_total FROM groups")).all())
        finally:
            engine.dispose()
    assert generations == expected_generations
    assert offsets == expected_commits
    # the batch in flight at the stop, replayed by the restart, counted its commits once
    assert {g: n for g, n in counted.items() if n} == commits


def test_the_next_command_stops_a_server_left_by_a_killed_one(job_data_dir: Path) -> None:
    """SIGKILL leaves the server running and the dead pid in the server's handle list;
    the next command must still stop the server when it is done with it."""
    migrate(job_data_dir)
    job = Command(["exporter", "--port", "0", "--host", "127.0.0.1"], job_data_dir)
    try:
        job.wait_for("groupscope exporter: http://", 60)
        server = postmaster(job_data_dir / "pg")
        job.process.kill()
        job.process.wait(30)
    finally:
        job.kill()
    assert alive(server)  # nothing could stop it
    env = {**os.environ, "GROUPSCOPE_DATA_DIR": str(job_data_dir)}
    env.pop("GROUPSCOPE_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "storms"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert not alive(server)
