"""`groupscope stream` flag handling: bad input is one line and exit 2, before Spark starts."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import pytest

from services.cli import main
from spark_jobs.settings import SparkSettings
from spark_jobs.stream import redact
from spark_jobs.stream_config import StreamConfig, parse_seconds


@pytest.mark.parametrize(
    ("text", "seconds"), [("5s", 5.0), ("500ms", 0.5), ("1m", 60.0), ("2", 2.0)]
)
def test_trigger_durations(text: str, seconds: float) -> None:
    assert parse_seconds(text) == seconds


def replay_dir(tmp_path: Path) -> str:
    (tmp_path / "records").mkdir()
    return str(tmp_path)


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["--trigger", "soon"], "--trigger expects a duration"),
        (["--kafka-config", "novalue"], "--kafka-config expects KEY=VALUE"),
        (["--offsets-partitions", "0"], "--offsets-partitions must be positive"),
        (["--master", "spark//host:7077"], "--master 'spark//host:7077': expected"),
        (["--master", "local[0]"], "--master 'local[0]': expected"),
        (["--conf", "spark.ui.enabled"], "--conf expects KEY=VALUE"),
        (["--conf", "=true"], "--conf expects KEY=VALUE"),
        (["--conf", "ui.enabled=true"], "--conf ui.enabled: not a Spark property"),
        (["--conf", "spark.master=nowhere"], "--master 'nowhere': expected"),
        (["--retention", "10m"], "--retention must be at least 1h"),
        (["--retention", "forever"], "--retention expects a duration"),
        (["--cluster", "prod eu"], "--cluster 'prod eu': a cluster name is"),
        (["--cluster", ""], "--cluster '': a cluster name is"),
        (["--retry-max-delay", "0s"], "--retry-max-delay must be positive"),
        (["--read-stall-timeout", "later"], "--read-stall-timeout expects a duration"),
    ],
)
def test_bad_flags_exit_2_with_one_line(tmp_path: Path, capsys, extra: list[str], reason: str):
    assert main(["stream", "--source", "replay", replay_dir(tmp_path), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert reason in err and "\n" not in err


def test_an_unknown_kafka_reader_is_refused(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPSCOPE_KAFKA_READER", "fast")
    assert main(["stream", "--bootstrap-servers", "127.0.0.1:1", "--once"]) == 2
    err = capsys.readouterr().err.strip()
    assert "GROUPSCOPE_KAFKA_READER='fast'" in err and "\n" not in err


def test_a_directory_without_records_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["stream", "--source", "replay", str(tmp_path)]) == 2
    assert "not a replay directory" in capsys.readouterr().err


def test_secrets_are_masked_in_logs() -> None:
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required password="x";'
    shown = redact(
        {
            "sasl.password": "hunter2",
            "ssl.key.password": "x",
            "sasl.jaas.config": jaas,
            "security.protocol": "SSL",
        }
    )
    assert shown == {
        "sasl.password": "***",
        "ssl.key.password": "***",
        "sasl.jaas.config": "***",
        "security.protocol": "SSL",
    }


@pytest.mark.parametrize(
    ("name", "value"),
    [("GROUPSCOPE_SHUFFLE", "0"), ("GROUPSCOPE_DRIVER_MEMORY", "lots")],
)
def test_a_bad_spark_variable_exits_2_with_one_line(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert main(["stream", "--source", "replay", replay_dir(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{name}={value!r}: expected" in err and "\n" not in err


def test_the_stream_config_is_built_once_from_flags_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.cli import build_parser

    monkeypatch.setenv("GROUPSCOPE_SHUFFLE", "8")
    monkeypatch.setenv("GROUPSCOPE_KAFKA_READER", "python")
    args = build_parser().parse_args(
        [
            *("stream", "--bootstrap-servers", "b:9092", "--trigger", "1m"),
            *("--master", " local[2] ", "--conf", "spark.ui.enabled=true"),
            *("--kafka-config", "security.protocol=SSL"),
        ]
    )
    config = StreamConfig.from_arguments(args)
    assert (config.kind, config.directory, config.name) == (
        "kafka",
        None,
        "kafka:b:9092/" + args.topic,
    )
    assert config.trigger == 60.0 and config.master == "local[2]" and config.reader == "python"
    assert config.spark_conf == {"spark.ui.enabled": "true"}
    assert config.kafka == {"security.protocol": "SSL"}
    assert config.spark == SparkSettings(shuffle_partitions=8, kafka_reader="python")
    assert config.max_outage is None  # a live job waits without limit
    assert (config.retry_max_delay, config.read_stall_timeout) == (10.0, 30.0)
    assert [*islice(config.backoff.delays(), 7)] == [0.5, 1, 2, 4, 8, 10, 10]
    assert [*islice(config.broker_backoff.delays(), 6)] == [1, 2, 4, 8, 10, 10]

    monkeypatch.setenv("GROUPSCOPE_RETRY_MAX_DELAY", "750ms")
    short = StreamConfig.from_arguments(
        build_parser().parse_args(
            ["stream", "--bootstrap-servers", "b:9092", "--read-stall-timeout", "5s"]
        )
    )
    assert (short.retry_max_delay, short.read_stall_timeout) == (0.75, 5.0)
    assert [*islice(short.backoff.delays(), 3)] == [0.5, 0.75, 0.75]
    assert [*islice(short.broker_backoff.delays(), 3)] == [0.75, 0.75, 0.75]

    replay = StreamConfig.from_arguments(
        build_parser().parse_args(["stream", "--source", "replay", replay_dir(tmp_path), "--once"])
    )
    assert replay.kind == "replay" and replay.reader is None and replay.bootstrap_servers == ""
    assert replay.name == f"replay:{tmp_path.resolve()}"


def test_the_read_stall_timeout_counts_whole_polls() -> None:
    from spark_jobs.range_reader import IDLE_POLLS, POLL_MS, stall_polls

    assert stall_polls(IDLE_POLLS * POLL_MS / 1000) == IDLE_POLLS  # the default: 30 s
    assert (stall_polls(5), stall_polls(2.5), stall_polls(0.1)) == (5, 3, 1)
