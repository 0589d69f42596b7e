"""Which Kafka connector `--source spark-kafka` loads, and when the job leaves the
user's packages alone (spark_jobs/connector.py). Loading it for real is
tests/job/test_real_kafka.py's."""

from __future__ import annotations

import pyspark
import pytest

from spark_jobs import connector
from spark_jobs.spark_conf import submit_args_settings


def test_the_connector_is_the_installed_sparks_or_its_substitute() -> None:
    scala, version = connector.installed()
    assert (scala, version) == ("2.13", pyspark.__version__)
    expected = connector.SUBSTITUTES.get(version, version)
    assert connector.coordinate() == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{expected}"


def test_a_version_central_serves_is_taken_as_it_is() -> None:
    assert connector.coordinate("2.13", "4.1.1").endswith("_2.13:4.1.1")
    assert connector.coordinate("2.13", "4.3.0").endswith("_2.13:4.2.0")


def test_the_version_can_be_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPSCOPE_SPARK_KAFKA_VERSION", "4.1.1")
    assert connector.coordinate("2.13", "4.3.0").endswith("_2.13:4.1.1")


def test_the_connector_is_added_to_packages_with_the_shipped_jars_excluded() -> None:
    conf = connector.with_connector({"spark.sql.x": "1"}, {})
    assert conf["spark.jars.packages"] == connector.coordinate()
    assert "org.apache.hadoop:hadoop-client-runtime" in conf["spark.jars.excludes"]
    assert conf["spark.sql.x"] == "1"


def test_packages_the_user_gave_are_kept() -> None:
    given = {"spark.jars.packages": "io.delta:delta-spark_2.13:4.0.0"}
    conf = connector.with_connector({}, given)
    assert (
        conf["spark.jars.packages"] == f"io.delta:delta-spark_2.13:4.0.0,{connector.coordinate()}"
    )


@pytest.mark.parametrize(
    "given",
    [
        {"spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1"},
        {"spark.jars": "/opt/jars/spark-sql-kafka-0-10_2.13-4.2.0.jar"},
    ],
)
def test_a_connector_the_user_named_is_not_replaced(given: dict[str, str]) -> None:
    assert connector.with_connector({"spark.a": "b"}, given) == {"spark.a": "b"}


def test_excludes_the_user_set_are_kept() -> None:
    conf = connector.with_connector({}, {"spark.jars.excludes": "a:b"})
    assert "spark.jars.excludes" not in conf


def test_packages_and_jars_in_pyspark_submit_args_count_as_given() -> None:
    found = submit_args_settings(
        "--packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1 --jars=/x.jar pyspark-shell"
    )
    assert found["spark.jars.packages"].endswith(":4.1.1")
    assert found["spark.jars"] == "/x.jar"
    assert connector.named(found)


def test_the_coordinate_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    assert connector.main([]) == 0
    assert capsys.readouterr().out.strip() == connector.coordinate()
    assert connector.main(["--nonsense"]) == 2


def test_the_maven_cache_path_follows_the_coordinate(tmp_path) -> None:
    jar = connector.m2_jar("org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0", tmp_path)
    assert jar == tmp_path / (
        "org/apache/spark/spark-sql-kafka-0-10_2.13/4.2.0/spark-sql-kafka-0-10_2.13-4.2.0.jar"
    )


@pytest.mark.spark
@pytest.mark.postgres
def test_a_session_without_the_connector_ends_the_job_in_one_line(tmp_path) -> None:
    """A jar the user named (so the job adds no package) that does not exist: Spark
    starts without the connector, and the job says so and exits 1."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [
            *(sys.executable, "-m", "services.cli", "stream", "--once"),
            *("--source", "spark-kafka", "--bootstrap-servers", "127.0.0.1:1"),
            *("--conf", f"spark.jars={tmp_path}/spark-sql-kafka-0-10_2.13-4.2.0.jar"),
        ],
        env={**os.environ, "GROUPSCOPE_DATA_DIR": str(tmp_path / "data")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"groupscope stream: {connector.missing_message()}"
    assert "Traceback" not in done.stderr
