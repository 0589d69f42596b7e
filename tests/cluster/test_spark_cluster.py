"""The job on a real Spark standalone cluster: a master and two workers on loopback
(`tests/fixtures/spark_cluster.py`), whose nodes have no virtualenv, no PYTHONPATH and a
Python without any of the project's packages.

The commands are the documented ones: the shell block of docs/operations.md's "Running
on a Spark cluster", read from the page, with only its placeholders replaced (the
master's `spark://host:7077`, `broker:9092`, the database URL, and `...` by the test's
own options) and the job's arguments a test needs (`--topic`, `--once`, a checkpoint)
appended; `make dist` is run as its Makefile recipe, with the virtualenv's `bin/`. So a
change to the page that breaks a command breaks these tests. They run where the page
says, in a checkout (here a directory with the source tree's `spark_jobs/`), with the
virtualenv's `bin/` first on PATH. What only the test needs (an event log, a fixed UI
port) comes from `spark-defaults.conf` in `$SPARK_CONF_DIR`, which the job keeps.

Spark's event log (JSON lines) shows where every task ran: on the workers' executors,
none in the driver. `groupscope stream --master` reads offset commits from a real
broker; spark-submit reads a rolling restart, produced to a topic that plays
`__consumer_offsets`, in several micro-batches, and one worker is SIGKILLed with its
executor while a task of a batch runs there (seen in the driver's REST API, then
frozen with SIGSTOP until the driver confirms it still runs): the event log shows the
task lost on that executor and re-run on the other. Each time the whole history store
equals a local-mode run of the same records, row for row (`store_contents`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import text

from services.cli import main
from services.simulator import Params, build, simulate
from services.simulator.kafka_sink import KafkaTopic
from services.store.database import create_store_engine
from services.store.models import Base
from tests.fixtures.real_kafka import free_port
from tests.fixtures.spark_cluster import StandaloneCluster, node_environment

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RUN_TIMEOUT_S = 300.0
RECORDS_PER_BATCH = "400"  # the rolling restart's 934 records in three batches


def documented(prefix: str) -> str:
    """The command of docs/operations.md's "Running on a Spark cluster" shell block
    that starts with `prefix`: continuation lines joined, a trailing comment dropped."""
    page = (ROOT / "docs" / "operations.md").read_text()
    section = page.split("## Running on a Spark cluster\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [re.sub(r"\s+#\s.*$", "", line) for line in block.replace("\\\n", " ").splitlines()]
    (command,) = (" ".join(c.split()) for c in commands if c.startswith(prefix))
    return command


def substitute(command: str, placeholders: dict[str, str], *args: str) -> str:
    """`command` with each placeholder (which must be there) replaced, `args` appended."""
    for placeholder, value in placeholders.items():
        assert placeholder in command, (placeholder, command)
        command = command.replace(placeholder, value)
    return " ".join([command, *map(shlex.quote, args)])


def make_dist() -> str:
    """`make dist` as the Makefile has it, with this virtualenv's `bin/` for `$(BIN)`:
    `make` itself would first set up a virtualenv in the checkout."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\ndist:", 1)[1].splitlines()[1]
    return recipe.strip().replace("$(BIN)/", f"{BIN}/")


def driver_environment(conf_dir: Path) -> dict[str, str]:
    """The machine the job starts on: groupscope, python and spark-submit on PATH (this
    virtualenv, importing the source tree), and the test's spark-defaults.conf."""
    path = os.pathsep.join([str(BIN), os.environ.get("PATH", "")])
    return os.environ | {"PATH": path, "PYTHONPATH": str(ROOT), "SPARK_CONF_DIR": str(conf_dir)}


def shell(command: str, cwd: Path) -> None:
    result = subprocess.run(
        ["bash", "-ec", command],
        cwd=cwd,
        env=driver_environment(cwd),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert result.returncode == 0, f"{command}: {result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def driver_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """A checkout where the job starts: `make dist` (while the cluster starts), then the
    documented unpacking into ./environment (the driver's own Python processes, which
    plan the Kafka source, run spark.pyspark.python too)."""
    work = tmp_path_factory.mktemp("driver")
    assert documented("make dist") == "make dist"  # run as its recipe (make_dist)
    (work / "spark_jobs").symlink_to(ROOT / "spark_jobs")
    packing = subprocess.Popen(
        ["bash", "-ec", make_dist()],
        cwd=work,
        env=driver_environment(work),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        request.getfixturevalue("spark_cluster")
    finally:
        _, err = packing.communicate(timeout=RUN_TIMEOUT_S)
    assert packing.returncode == 0, err
    shell(documented("mkdir -p environment"), work)
    return work


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


def store(postgres_server, migrated_template: str) -> str:
    return postgres_server.url(postgres_server.create_database(template=migrated_template))


# Left out of the comparison, and why: surrogate keys, numbered in the order rows were
# inserted (a generation's is compared as the generation it names), and times of
# ingestion (the driver's clock when a batch was written, and how long it took).
NOT_COMPARED = {
    "generations": {"id"},
    "generation_members": {"generation_pk"},
    "rebalances": {"to_generation_pk", "from_generation_pk"},
    "pipeline_progress": {"updated_at"},
    "pipeline_status": {
        *("last_batch_time", "updated_at", "last_batch_seconds"),
        *("input_rows_per_second", "processed_rows_per_second"),
    },
}
GENERATION_KEYS = {"generation_pk", "to_generation_pk", "from_generation_pk"}


def store_contents(url: str) -> dict[str, list]:
    """Every table of the history store (all of `Base.metadata`, so a new one is
    compared too), every column but those in NOT_COMPARED, rows sorted."""
    named = "(SELECT row(group_name, generation, source_partition, source_offset)::text"
    engine = create_store_engine(url)
    try:
        with engine.connect() as conn:
            contents = {}
            for table in Base.metadata.sorted_tables:
                left_out = NOT_COMPARED.get(table.name, set())
                columns = [
                    f"{named} FROM generations WHERE id = {c.name})"
                    if c.name in GENERATION_KEYS
                    else f'"{c.name}"'
                    for c in table.columns
                    if c.name not in left_out or c.name in GENERATION_KEYS
                ]
                rows = conn.execute(text(f"SELECT {', '.join(columns)} FROM {table.name}"))
                contents[table.name] = sorted(map(tuple, rows), key=repr)
            return contents
    finally:
        engine.dispose()


def test_the_store_comparison_covers_every_table() -> None:
    tables = {t.name: {c.name for c in t.columns} for t in Base.metadata.sorted_tables}
    for table, columns in NOT_COMPARED.items():
        assert columns <= tables[table], table
    assert {"generation_members", "offset_history", "record_repairs"} <= set(tables)


def spark_defaults(directory: Path, events: Path, ui_port: int) -> Path:
    """What only the test needs, in spark-defaults.conf: an event log to see where tasks
    ran, and the driver's UI (its REST API) on a known port."""
    directory.mkdir()
    events.mkdir()
    settings = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": str(events),
        "spark.eventLog.compress": "false",
        "spark.ui.port": str(ui_port),
    }
    lines = (f"{key} {value}\n" for key, value in settings.items())
    (directory / "spark-defaults.conf").write_text("".join(lines))
    return directory


def run(command: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run a shell command to its end (bounded); spark-submit passes the Python
    driver's stderr on to its stdout."""
    process = subprocess.Popen(
        ["bash", "-ec", command],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        out, _ = process.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
        raise AssertionError(f"ran over {RUN_TIMEOUT_S}s: {out[-3000:]}") from None
    return process.returncode, out


def events(directory: Path) -> list[dict]:
    """The application's event log: Spark 4 rolls it (`eventlog_v2_<app>/events_<n>_<app>`)."""
    (app,) = directory.iterdir()
    files = sorted(app.glob("events_*"), key=lambda p: int(p.name.split("_")[1]))
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line]


def task_ends(log: list[dict]) -> list[dict]:
    return [e for e in log if e["Event"] == "SparkListenerTaskEnd"]


def successful_tasks(log: list[dict]) -> Counter[str]:
    """Tasks that succeeded, by the executor that ran them ('driver' in local mode)."""
    return Counter(
        e["Task Info"]["Executor ID"]
        for e in task_ends(log)
        if e["Task End Reason"]["Reason"] == "Success"
    )


class MidTaskKill:
    """Kills a worker while a task runs on its executor. Polls the driver's REST API
    for a running task on an executor that has finished one already; freezes (SIGSTOP)
    the worker and executor it runs on, so that it cannot finish; if the driver still
    sees it running a second later, SIGKILLs them (a lost machine), else lets them go on
    (SIGCONT) and waits for another task."""

    def __init__(self, cluster: StandaloneCluster, ui_port: int) -> None:
        self.cluster, self.api = cluster, f"http://127.0.0.1:{ui_port}/api/v1/applications"
        self.killed: dict | None = None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> MidTaskKill:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopping.set()
        self.thread.join(30)

    def _get(self, path: str) -> list:
        with urllib.request.urlopen(f"{self.api}{path}", timeout=5) as response:
            return json.load(response)

    def _running(self, app: str) -> dict[int, dict]:
        """Tasks the driver sees running, by task id, with their stage."""
        running = {}
        for stage in self._get(f"/{app}/stages?status=active&details=true"):
            for task in (stage.get("tasks") or {}).values():
                if task["status"] == "RUNNING":
                    running[task["taskId"]] = task | {"stageId": stage["stageId"]}
        return running

    def _watch(self) -> None:
        while not self.stopping.is_set() and self.killed is None:
            try:
                apps = self._get("")
                for task in self._running(apps[0]["id"]).values() if apps else ():
                    if self._try(apps[0]["id"], task):
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
                pass
            time.sleep(0.02)

    def _try(self, app: str, task: dict) -> bool:
        worker = self.cluster.worker_of(app, task["executorId"])
        executors = {e["id"]: e for e in self._get(f"/{app}/executors")}
        if worker is None or not executors[task["executorId"]]["completedTasks"]:
            return False  # not before the executor has run a task to its end
        self.cluster.signal_worker(worker, signal.SIGSTOP)
        try:
            time.sleep(1.0)
            if task["taskId"] in self._running(app):
                self.cluster.kill_worker(worker)
                self.killed = task | {"worker": worker}
                return True
        finally:
            if self.killed is None:
                self.cluster.signal_worker(worker, signal.SIGCONT)
        return False


def assert_rerun_elsewhere(log: list[dict], killed: dict) -> None:
    """The task the kill landed in, and every other the executor lost, failed there and
    succeeded on the surviving executor."""
    ends = task_ends(log)
    lost = killed["executorId"]
    failed = [
        e
        for e in ends
        if e["Task Info"]["Executor ID"] == lost and e["Task End Reason"]["Reason"] != "Success"
    ]
    assert killed["taskId"] in {e["Task Info"]["Task ID"] for e in failed}, failed
    assert {e["Task End Reason"]["Reason"] for e in failed} == {"ExecutorLostFailure"}
    removed = {e["Executor ID"] for e in log if e["Event"] == "SparkListenerExecutorRemoved"}
    assert removed == {lost}
    (survivor,) = set(successful_tasks(log)) - {lost}
    for failure in failed:
        where = (failure["Stage ID"], failure["Task Info"]["Index"])
        reruns = [
            e
            for e in ends[ends.index(failure) :]
            if (e["Stage ID"], e["Task Info"]["Index"]) == where
            and e["Task End Reason"]["Reason"] == "Success"
        ]
        assert [e["Task Info"]["Executor ID"] for e in reruns] == [survivor], where


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
    conf = spark_defaults(tmp_path / "conf", tmp_path / "events", free_port())
    command = substitute(
        documented("groupscope stream --master"),
        {
            "spark://host:7077": spark_cluster.master_url,
            "broker:9092": real_kafka.bootstrap_servers,
            " ...": "",
        },
        *("--once", "--database-url", cluster_url, "--checkpoint", str(tmp_path / "cluster")),
    )
    code, out = run(command, driver_dir, driver_environment(conf))
    assert code == 0, out[-3000:]
    ran = successful_tasks(events(tmp_path / "events"))
    assert "driver" not in ran and len(ran) == 2, ran  # both workers' executors, only them
    cluster = store_contents(cluster_url)
    assert cluster == store_contents(local_url)
    # committed_offsets' columns begin cluster, group_name, topic
    committed = [row for row in cluster["committed_offsets"] if row[2] == topic]
    assert len(committed) == 36  # every commit of the test, read on the executors


@pytest.fixture(scope="module")
def restart_topic(real_kafka) -> str:
    """A rolling restart, produced to a topic of 50 partitions that plays
    `__consumer_offsets`."""
    topic = real_kafka.create_topic(partitions=50)
    sink = KafkaTopic(real_kafka.bootstrap_servers, topic)
    specs, duration = build(["rolling-restart"], Params(), None)
    simulate(specs, sink, None, duration or 600_000, seed=3)
    sink.close()
    return topic


def restart_args(topic: str, checkpoint: Path) -> list[str]:
    return [
        *("--topic", topic, "--once", "--max-records-per-trigger", RECORDS_PER_BATCH),
        *("--checkpoint", str(checkpoint)),
    ]


@pytest.mark.real_kafka
def test_spark_submit_survives_a_worker_killed_while_its_task_runs(
    spark_cluster: StandaloneCluster,
    driver_dir: Path,
    real_kafka,
    restart_topic: str,
    postgres_server,
    migrated_template,
    spark,
    tmp_path: Path,
) -> None:
    local_url, url = (store(postgres_server, migrated_template) for _ in range(2))
    local = ["stream", "--bootstrap-servers", real_kafka.bootstrap_servers]
    local += ["--database-url", local_url, *restart_args(restart_topic, tmp_path / "local")]
    assert main(local) == 0
    ui_port = free_port()
    conf = spark_defaults(tmp_path / "conf", tmp_path / "events", ui_port)
    command = substitute(
        documented("spark-submit"),
        {
            "spark://host:7077": spark_cluster.master_url,
            "broker:9092": real_kafka.bootstrap_servers,
            "postgresql://groupscope@db/groupscope": url,
        },
        *restart_args(restart_topic, tmp_path / "checkpoint"),
    )
    try:
        with MidTaskKill(spark_cluster, ui_port) as kill:
            code, out = run(command, driver_dir, driver_environment(conf))
    finally:
        for index in range(spark_cluster.count):
            if index not in spark_cluster.workers:
                spark_cluster.start_worker(index)
    assert code == 0, out[-3000:]
    assert kill.killed is not None, out[-3000:]
    log = events(tmp_path / "events")
    ran = successful_tasks(log)
    assert "driver" not in ran and len(ran) == 2, (ran, kill.killed)  # both, only them
    assert_rerun_elsewhere(log, kill.killed)
    assert out.count("groupscope.stream batch ") >= 3, out[-3000:]  # several micro-batches
    cluster, reference = store_contents(url), store_contents(local_url)
    assert cluster == reference
    for table in ("generations", "generation_members", "rebalances", "offset_history"):
        assert reference[table], table
