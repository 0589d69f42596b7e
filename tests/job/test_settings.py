"""The Spark glue's `GROUPSCOPE_*` knobs: read once, defaults where unset, and a bad
value one line naming its variable (spark_jobs/settings.py)."""

from __future__ import annotations

import pytest

from services.cli import UsageError
from spark_jobs.settings import SparkSettings


def test_the_defaults() -> None:
    settings = SparkSettings.from_environment({})
    assert settings == SparkSettings()
    assert settings.driver_java_options == "-XX:+UseParallelGC"
    assert settings.driver_memory == "2g"
    assert settings.log_level == "WARN"
    assert settings.shuffle_partitions == 4
    assert settings.jvm_archive == ""
    assert settings.kafka_reader == "auto"
    assert settings.spark_kafka_version is None


def test_values_are_taken() -> None:
    settings = SparkSettings.from_environment(
        {
            "GROUPSCOPE_DRIVER_JAVA_OPTIONS": "",
            "GROUPSCOPE_DRIVER_MEMORY": "512m",
            "GROUPSCOPE_SPARK_LOG_LEVEL": "info",
            "GROUPSCOPE_SHUFFLE": "16",
            "GROUPSCOPE_JVM_ARCHIVE": "off",
            "GROUPSCOPE_KAFKA_READER": "python",
            "GROUPSCOPE_SPARK_KAFKA_VERSION": "4.1.1",
            "OTHER": "x",
        }
    )
    assert settings == SparkSettings("", "512m", "info", 16, "off", "python", "4.1.1")
    # empty means unset, as before
    assert SparkSettings.from_environment({"GROUPSCOPE_SPARK_KAFKA_VERSION": ""}) == SparkSettings()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("GROUPSCOPE_DRIVER_JAVA_OPTIONS", "-Da='b", 'GROUPSCOPE_DRIVER_JAVA_OPTIONS="-Da=\'b": '),
        ("GROUPSCOPE_DRIVER_MEMORY", "lots", "GROUPSCOPE_DRIVER_MEMORY='lots': expected a JVM"),
        ("GROUPSCOPE_DRIVER_MEMORY", "", "GROUPSCOPE_DRIVER_MEMORY='': expected"),
        ("GROUPSCOPE_SPARK_LOG_LEVEL", "LOUD", "GROUPSCOPE_SPARK_LOG_LEVEL='LOUD': expected one"),
        ("GROUPSCOPE_SHUFFLE", "0", "GROUPSCOPE_SHUFFLE='0': expected a positive number"),
        ("GROUPSCOPE_SHUFFLE", "four", "GROUPSCOPE_SHUFFLE='four': expected"),
        ("GROUPSCOPE_SHUFFLE", "-1", "GROUPSCOPE_SHUFFLE='-1': expected"),
        ("GROUPSCOPE_SHUFFLE", str(2**31), "GROUPSCOPE_SHUFFLE='2147483648': expected"),
        ("GROUPSCOPE_KAFKA_READER", "fast", "GROUPSCOPE_KAFKA_READER='fast': expected one of"),
        ("GROUPSCOPE_SPARK_KAFKA_VERSION", "latest", "GROUPSCOPE_SPARK_KAFKA_VERSION='latest'"),
    ],
)
def test_a_bad_value_is_one_line_naming_its_variable(name: str, value: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        SparkSettings.from_environment({name: value})
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_the_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPSCOPE_SHUFFLE", "8")
    assert SparkSettings.from_environment().shuffle_partitions == 8
