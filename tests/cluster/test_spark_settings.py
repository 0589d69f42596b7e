"""The job keeps the Spark settings it is given (spark-submit's flags, `--conf`,
`spark-defaults.conf`) and fills in only the unset ones: a real driver JVM each, local
mode, started by spark-submit or by the job itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.real_kafka import free_port
from tests.fixtures.spark_cluster import spark_home

# Each test starts a driver JVM in local mode (spark-submit or the job itself).
pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
KEYS = (
    "spark.master",
    "spark.app.name",
    "spark.driver.memory",
    "spark.ui.enabled",
    "spark.sql.shuffle.partitions",
    "spark.sql.session.timeZone",
    "spark.driver.host",
)
SCRIPT = f"""
import json, sys
from spark_jobs.session import SubmittedMasterError, spark_session, spark_settings
from spark_jobs.session import under_spark_submit
refused = None
if under_spark_submit():
    try:
        spark_settings(master="local[2]")
    except SubmittedMasterError as exc:
        refused = str(exc)
session = spark_session()
conf = session.sparkContext.getConf()
shown = {{k: conf.get(k, None) for k in {KEYS!r}}}
shown["runtime shuffle"] = session.conf.get("spark.sql.shuffle.partitions")
shown["heap MiB"] = session.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory() >> 20
shown["refused"] = refused
print(json.dumps(shown))
session.stop()
"""


# The job's own variables that set Spark: none may leak in from the caller's shell.
SPARK_VARIABLES = {
    "GROUPSCOPE_SPARK_MASTER",
    "GROUPSCOPE_DRIVER_MEMORY",
    "GROUPSCOPE_DRIVER_JAVA_OPTIONS",
    "GROUPSCOPE_SHUFFLE",
}


def settings_of(command: list[str], tmp_path: Path, **env: str) -> dict:
    script = tmp_path / "show_settings.py"
    script.write_text(SCRIPT)
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYSPARK_", "SPARK_")) and k not in SPARK_VARIABLES
    }
    result = subprocess.run(
        [*command, str(script)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env=clean | {"PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable} | env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_spark_submit_settings_are_kept_and_only_the_unset_filled(tmp_path: Path) -> None:
    submit = spark_home() / "bin" / "spark-submit"
    shown = settings_of(
        [
            *(str(submit), "--master", "local[1]", "--driver-memory", "700m"),
            *("--conf", "spark.sql.shuffle.partitions=7", "--conf", "spark.ui.enabled=true"),
            *("--conf", f"spark.ui.port={free_port()}"),
            *("--conf", f"spark.pyspark.driver.python={sys.executable}"),
        ],
        tmp_path,
    )
    assert shown["spark.master"] == "local[1]"  # not replaced by local[*]
    assert shown["spark.driver.memory"] == "700m" and shown["heap MiB"] <= 700
    assert shown["spark.ui.enabled"] == "true"
    assert shown["spark.sql.shuffle.partitions"] == shown["runtime shuffle"] == "7"
    assert shown["spark.sql.session.timeZone"] == "UTC"  # unset: the job's default
    assert shown["spark.app.name"] == "show_settings.py"  # spark-submit's name
    assert "local[2] disagrees with spark-submit's --master local[1]" in shown["refused"]


def test_spark_defaults_conf_is_kept_when_the_job_starts_spark(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        "# a site's defaults\n"
        "spark.master                  local[1]\n"
        "spark.driver.memory=640m\n"
        "spark.sql.shuffle.partitions  9\n"
    )
    shown = settings_of([sys.executable], tmp_path, SPARK_CONF_DIR=str(conf))
    assert shown["spark.master"] == "local[1]"
    assert shown["spark.driver.memory"] == "640m" and shown["heap MiB"] <= 640
    assert shown["spark.sql.shuffle.partitions"] == shown["runtime shuffle"] == "9"
    # what nobody set, for local mode: the job's defaults
    assert shown["spark.ui.enabled"] == "false"
    assert shown["spark.app.name"] == "groupscope"
    assert shown["spark.driver.host"] == "127.0.0.1"
    assert shown["refused"] is None


def test_without_settings_the_job_fills_its_defaults(tmp_path: Path) -> None:
    shown = settings_of([sys.executable], tmp_path, GROUPSCOPE_DRIVER_MEMORY="600m")
    assert shown["spark.master"] == "local[*]"
    assert shown["spark.driver.memory"] == "600m" and shown["heap MiB"] <= 600
    assert shown["spark.sql.shuffle.partitions"] == shown["runtime shuffle"] == "4"
    assert shown["spark.ui.enabled"] == "false"


def test_package_refuses_a_destination_it_cannot_write_in_one_line(tmp_path: Path, capsys):
    from services.cli import main

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["package", "--out", str(blocker / "env.tar.gz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("groupscope package: cannot write") and "\n" not in err
