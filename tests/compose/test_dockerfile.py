"""The Dockerfile and the image's entry point (docker/entrypoint.sh), which the job's
`spark-submit` line and every other role go through."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from spark_jobs import connector
from tests.compose.stack import ROOT

DOCKERFILE = ROOT / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def test_base_images_are_pinned_python_311_on_bookworm():
    args = dict(a.split("=", 1) for k, a in instructions() if k == "ARG" and "=" in a)
    bases = [a.split()[0] for k, a in instructions() if k == "FROM"]
    assert bases and all(b == "${PYTHON_IMAGE}" for b in bases)
    assert args["PYTHON_IMAGE"] == "python:3.11-slim-bookworm"


def test_every_copied_path_exists_and_is_not_docker_ignored():
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".venv", ".git", ".groupscope"} <= ignored
    copied = []
    for keyword, rest in instructions():
        if keyword == "COPY" and not rest.startswith("--from"):
            copied += shlex.split(rest)[:-1]
    assert "docker/entrypoint.sh" in copied and "spark_jobs" in copied
    for source in copied:
        assert (ROOT / source).exists(), source
        assert source.split("/")[0] not in ignored, source


def test_the_runtime_has_java_17_the_installed_project_and_the_entry_point():
    text = " ".join(a for _, a in instructions())
    assert "openjdk-17-jre-headless" in text
    assert "pip wheel --no-cache-dir --no-deps --wheel-dir /wheels ." in text
    assert "pip install --no-cache-dir --no-deps /wheels/*.whl" in text
    steps = instructions()
    assert ("COPY", "docker/entrypoint.sh /usr/local/bin/groupscope-entrypoint") in steps
    assert ("ENTRYPOINT", '["groupscope-entrypoint"]') in steps
    assert os.access(ENTRYPOINT, os.X_OK)
    # the dependencies layer reads the same list pip would install
    assert "tomllib.load(open('/tmp/pyproject.toml', 'rb'))['project']['dependencies']" in text


def _run(args: list[str], path_first: Path | None = None) -> subprocess.CompletedProcess:
    bin_dir = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in (str(path_first or ""), bin_dir, os.environ["PATH"]) if p)
    env = {**os.environ, "PATH": path, "PYTHON": sys.executable}
    return subprocess.run(
        ["sh", str(ENTRYPOINT), *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_kafka_package_is_the_connector_of_the_installed_spark():
    """Its version is the installed Spark's where Maven Central serves that."""
    result = _run(["kafka-package"])
    assert result.returncode == 0, result.stderr
    scala = "2.13"  # Spark 4 is built for Scala 2.13 only
    version = connector.SUBSTITUTES.get(pyspark.__version__, pyspark.__version__)
    assert result.stdout.strip() == f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{version}"
    assert result.stdout.strip() == connector.coordinate()


def test_job_runs_stream_py_under_spark_submit_with_the_connector(tmp_path):
    """A stand-in spark-submit records its arguments (Maven Central is out of reach)."""
    fake = tmp_path / "spark-submit"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    fake.chmod(0o755)
    result = _run(["job", "--source", "spark-kafka", "--bootstrap-servers", "k:9092"], tmp_path)
    assert result.returncode == 0, result.stderr
    argv = result.stdout.splitlines()
    package = argv[argv.index("--packages") + 1]
    assert package == connector.coordinate()
    assert argv[argv.index("--master") + 1] == "local[*]"
    assert argv[argv.index("--conf") + 1] == "spark.jars.ivy=/var/cache/groupscope/ivy"
    script = Path(argv[-5])
    assert script.name == "stream.py" and script.parent.name == "spark_jobs"
    assert script.is_file()
    assert argv[-4:] == ["--source", "spark-kafka", "--bootstrap-servers", "k:9092"]


@pytest.mark.parametrize(
    "args, expected", [(["partition-for", "KafkaConsumerDemo"], "35"), ([], "usage: groupscope")]
)
def test_anything_else_is_the_groupscope_command(args, expected):
    result = _run(args)
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout


def test_nothing_forces_local_only_networking():
    env = " ".join(a for k, a in instructions() if k == "ENV")
    assert "SPARK_LOCAL_IP" not in env and "PYSPARK_PYTHON=python" in env


def test_job_takes_the_spark_master_from_the_environment(tmp_path, monkeypatch):
    fake = tmp_path / "spark-submit"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    fake.chmod(0o755)
    monkeypatch.setenv("GROUPSCOPE_SPARK_MASTER", "spark://spark-master:7077")
    result = _run(["job", "--source", "spark-kafka", "--bootstrap-servers", "k:9092"], tmp_path)
    assert result.returncode == 0, result.stderr
    argv = result.stdout.splitlines()
    assert argv[argv.index("--master") + 1] == "spark://spark-master:7077"
