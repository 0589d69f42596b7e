"""The job on a real Spark standalone cluster: a master and two workers on loopback
(`tests/fixtures/spark_cluster.py`), whose nodes have no virtualenv, no PYTHONPATH and a
Python without any of the project's packages.

The job is submitted as the README says: the packed environment (`groupscope package`)
with `--archives ...#environment`, unpacked into `./environment` where the driver starts,
`spark.pyspark.python=./environment/bin/python`; from `groupscope stream --master
spark://...` with the Kafka source on a real broker, whose records the executors read
with the shipped code, and from spark-submit with the replay source, one worker
SIGKILLed (with its executor and Python workers) after the first batch. Spark's event
log (JSON lines) shows where every task ran: on the workers' executors, none in the
driver. Each time the history store equals a local-mode run of the same records, row
for row.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path

import pytest

from services.cli import main
from services.simulator import Params, ReplayDirectory, build, simulate
from services.store.database import create_store_engine
from tests.fixtures.spark_cluster import StandaloneCluster, node_environment, spark_home
from tests.job.test_stream_truth import table_contents

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 300.0
FILES_PER_BATCH = "2"


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rolling restart in four files: two micro-batches of two files."""
    out = tmp_path_factory.mktemp("capture")
    specs, duration = build(["rolling-restart"], Params(), None)
    simulate(specs, ReplayDirectory(out, rows_per_file=300), out, duration or 600_000, seed=3)
    return out


@pytest.fixture(scope="module")
def driver_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """Where the job starts: `groupscope package` writes the archive (while the cluster
    starts), unpacked into ./environment: the driver's own Python processes (planning
    the Kafka source) run spark.pyspark.python too."""
    work = tmp_path_factory.mktemp("driver")
    archive = work / "groupscope-env.tar.gz"
    packing = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "package", "--out", str(archive)],
        env=os.environ | {"PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        request.getfixturevalue("spark_cluster")
    finally:
        _, err = packing.communicate(timeout=RUN_TIMEOUT_S)
    assert packing.returncode == 0, err
    with tarfile.open(archive) as tar:
        tar.extractall(work / "environment", filter="tar")
    return work


def store(postgres_server, migrated_template: str) -> str:
    return postgres_server.url(postgres_server.create_database(template=migrated_template))


def contents(url: str) -> dict[str, list]:
    engine = create_store_engine(url)
    try:
        return table_contents(engine)
    finally:
        engine.dispose()


def cluster_options(driver_dir: Path, events: Path, submit: bool = False) -> list[str]:
    """The documented options for a cluster (spark-submit's `--archives`, or the
    `spark.archives` setting `groupscope stream --conf` takes), and an event log to see
    where tasks ran."""
    events.mkdir()
    archive = f"{driver_dir / 'groupscope-env.tar.gz'}#environment"
    return [
        *(("--archives", archive) if submit else ("--conf", f"spark.archives={archive}")),
        *("--conf", "spark.pyspark.python=./environment/bin/python"),
        *("--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={events}"),
        *("--conf", "spark.eventLog.compress=false"),
    ]


def run(args: list[str], cwd: Path, on_line=None) -> tuple[int, str]:
    """Run a command to its end (bounded), calling `on_line` with each line of its
    output (spark-submit passes the Python driver's stderr on to its stdout)."""
    process = subprocess.Popen(
        args,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    lines: list[str] = []
    deadline = time.monotonic() + RUN_TIMEOUT_S
    assert process.stdout is not None
    try:
        for line in process.stdout:
            lines.append(line)
            if on_line is not None:
                on_line(line)
            if time.monotonic() > deadline:
                raise AssertionError(f"ran over {RUN_TIMEOUT_S}s: {''.join(lines)[-3000:]}")
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, "".join(lines)


def events(directory: Path) -> list[dict]:
    """The application's event log: Spark 4 rolls it (`eventlog_v2_<app>/events_<n>_<app>`)."""
    (app,) = directory.iterdir()
    files = sorted(app.glob("events_*"), key=lambda p: int(p.name.split("_")[1]))
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line]


def successful_tasks(log: list[dict]) -> Counter[str]:
    """Tasks that succeeded, by the executor that ran them ('driver' in local mode)."""
    return Counter(
        e["Task Info"]["Executor ID"]
        for e in log
        if e["Event"] == "SparkListenerTaskEnd" and e["Task End Reason"]["Reason"] == "Success"
    )


def executors(log: list[dict], event: str) -> set[str]:
    return {e["Executor ID"] for e in log if e["Event"] == event}


PROBE = """
import json, os
from services.codec.records import accelerated
from spark_jobs import range_reader
for port in (9, 10):  # two readers: the fallback is told once a process
    range_reader._reader("auto", {"bootstrap.servers": f"127.0.0.1:{port}"})
print(json.dumps([accelerated(), range_reader.native_available()]), flush=True)
os._exit(0)
"""


def probe(environment: Path) -> tuple[list[bool], str]:
    """What a node's Python makes of the packed environment: whether the codec's and
    the Kafka reader's C extensions load, and what it says."""
    result = subprocess.run(
        [str(environment / "bin" / "python"), "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=environment.parent,  # not the source tree: `python -c` imports from its cwd
        env=node_environment(),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1]), result.stderr


def test_the_c_extensions_go_along_or_the_executor_falls_back_and_says_so_once(
    driver_dir: Path, tmp_path: Path
) -> None:
    loaded, said = probe(driver_dir / "environment")
    assert loaded == [True, True] and "cannot be loaded" not in said
    # The same environment where the extensions cannot load (built for another
    # platform, say): none of their files.
    packed, other = driver_dir / "environment", tmp_path / "environment"
    (other / "bin").mkdir(parents=True)
    shutil.copy(packed / "bin" / "python", other / "bin" / "python")
    (other / "site-packages").mkdir()
    for entry in (packed / "site-packages").iterdir():
        if entry.name in ("services", "spark_jobs"):
            ignore = shutil.ignore_patterns("*.so", "__pycache__")
            shutil.copytree(entry, other / "site-packages" / entry.name, ignore=ignore)
        else:
            (other / "site-packages" / entry.name).symlink_to(entry)
    loaded, said = probe(other)
    assert loaded == [False, False]
    assert said.count("spark_jobs._kafka_read cannot be loaded here") == 1, said


@pytest.mark.real_kafka
def test_groupscope_stream_reads_kafka_on_the_executors_with_the_shipped_code(
    spark_cluster: StandaloneCluster,
    driver_dir: Path,
    real_kafka,
    postgres_server,
    migrated_template,
    spark,
    tmp_path: Path,
) -> None:
    topic = real_kafka.create_topic(partitions=3)
    for group in range(12):
        real_kafka.commit(f"cluster-{group}", {(topic, p): 100 * group + p for p in range(3)})
    local_url, cluster_url = (store(postgres_server, migrated_template) for _ in range(2))
    source = ["--bootstrap-servers", real_kafka.bootstrap_servers, "--once"]
    local = ["stream", *source, "--database-url", local_url, "--checkpoint", str(tmp_path / "l")]
    assert main(local) == 0
    code, err = run(
        [
            *(sys.executable, "-m", "services.cli", "stream", *source),
            *("--master", spark_cluster.master_url),
            *cluster_options(driver_dir, tmp_path / "events"),
            *("--database-url", cluster_url, "--checkpoint", str(tmp_path / "cluster")),
        ],
        driver_dir,
    )
    assert code == 0, err[-3000:]
    ran = successful_tasks(events(tmp_path / "events"))
    assert "driver" not in ran and len(ran) == 2, ran  # both workers' executors, only them
    cluster = contents(cluster_url)
    assert cluster == contents(local_url)
    committed = [row for row in cluster["offsets"] if row[1] == topic]
    assert len(committed) == 36  # every commit of the test, read on the executors


@pytest.fixture(scope="module")
def local_contents(capture: Path, postgres_server, migrated_template, spark, tmp_path_factory):
    """The reference: the capture in local mode (local[2]), in the same batches."""
    url = store(postgres_server, migrated_template)
    checkpoint = tmp_path_factory.mktemp("local") / "checkpoint"
    args = ["stream", "--source", "replay", str(capture), "--once", "--database-url", url]
    assert main([*args, "--checkpoint", str(checkpoint), "--max-files-per-trigger", "2"]) == 0
    return contents(url)


def test_spark_submit_runs_on_the_workers_and_survives_one_killed(
    spark_cluster: StandaloneCluster,
    driver_dir: Path,
    capture: Path,
    local_contents: dict,
    postgres_server,
    migrated_template,
    tmp_path: Path,
) -> None:
    url = store(postgres_server, migrated_template)
    submit = Path(sys.executable).with_name("spark-submit")
    if not submit.exists():
        submit = spark_home() / "bin" / "spark-submit"
    killed: list[str] = []

    def kill_after_the_first_batch(line: str) -> None:
        if not killed and "groupscope.stream batch 0:" in line:
            spark_cluster.kill_worker(1)
            killed.append(line)

    try:
        code, err = run(
            [
                *(str(submit), "--master", spark_cluster.master_url),
                *cluster_options(driver_dir, tmp_path / "events", submit=True),
                *("--conf", f"spark.pyspark.driver.python={sys.executable}"),
                str(ROOT / "spark_jobs" / "stream.py"),
                *("--source", "replay", str(capture), "--once"),
                *("--max-files-per-trigger", FILES_PER_BATCH),
                *("--database-url", url, "--checkpoint", str(tmp_path / "checkpoint")),
            ],
            driver_dir,
            kill_after_the_first_batch,
        )
    finally:
        if 1 not in spark_cluster.workers:
            spark_cluster.start_worker(1)
    assert killed, err[-3000:]
    assert code == 0, err[-3000:]
    log = events(tmp_path / "events")
    ran = successful_tasks(log)
    assert "driver" not in ran and len(ran) == 2, ran  # both workers' executors, only them
    lost = executors(log, "SparkListenerExecutorRemoved")
    assert len(lost) == 1, lost  # the killed worker's executor
    (survivor,) = set(ran) - lost
    removed = next(i for i, e in enumerate(log) if e["Event"] == "SparkListenerExecutorRemoved")
    assert set(successful_tasks(log[removed:])) <= {survivor}  # the rest ran there
    assert contents(url) == local_contents
    assert local_contents["offsets"] and local_contents["generations"]
