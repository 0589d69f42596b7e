"""The exporter's per-cluster client properties from its flags and variables
(services/exporter/clusters.py): the layering, and bad input as one line and exit 2.
Polling with them, against a SASL broker and a plain one, is test_real_kafka_sasl.py's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from services.cli import build_parser, main
from services.exporter.clusters import cluster_clients
from services.kafka_options import kafka_config


def clients(*flags: str) -> dict[str, dict[str, str]]:
    args = build_parser().parse_args(["exporter", *flags])
    return cluster_clients(args, kafka_config(args))


def properties(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_a_clusters_own_properties_go_on_top_of_the_shared_ones(tmp_path: Path) -> None:
    shared = properties(tmp_path / "shared", "security.protocol=SSL\nclient.id=file\n")
    eu = properties(
        tmp_path / "eu",
        "# eu's login\nsecurity.protocol = SASL_SSL\nsasl.username=eu\nsasl.password=f\n"
        "bootstrap.servers=elsewhere:9092\n",
    )
    got = clients(
        *("--cluster", "eu", "--bootstrap-servers", "eu:9093"),
        *("--cluster-bootstrap", "us=us:9093", "--cluster-bootstrap", "ap=ap:9093"),
        *("--kafka-config-file", shared, "--kafka-config", "client.id=flag"),
        *("--cluster-kafka-config", "eu:sasl.password=flag=with=equals"),
        *("--cluster-kafka-config-file", f"eu={eu}"),
        *("--cluster-kafka-config", "us:ssl.ca.location=/us/ca.pem"),
    )
    assert got == {
        "eu": {
            "security.protocol": "SASL_SSL",
            "client.id": "flag",
            "sasl.username": "eu",
            "sasl.password": "flag=with=equals",  # its flags over its file
            "bootstrap.servers": "eu:9093",  # always the flags' brokers
        },
        "us": {
            "security.protocol": "SSL",
            "client.id": "flag",
            "ssl.ca.location": "/us/ca.pem",
            "bootstrap.servers": "us:9093",
        },
        "ap": {"security.protocol": "SSL", "client.id": "flag", "bootstrap.servers": "ap:9093"},
    }


def test_the_files_come_from_the_environment_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eu = properties(tmp_path / "eu", "sasl.username=eu\n")
    us = properties(tmp_path / "us", "sasl.username=us\n")
    ap = properties(tmp_path / "ap", "sasl.username=ap\n")
    monkeypatch.setenv("GROUPSCOPE_CLUSTER_BOOTSTRAP", "us=us:9092;ap=ap:9092")
    monkeypatch.setenv("GROUPSCOPE_CLUSTER_KAFKA_CONFIG_FILE", f"eu={eu};us={us}")
    got = clients(
        *("--cluster", "eu", "--bootstrap-servers", "eu:9092"),
        *("--cluster-kafka-config-file", f"ap={ap}"),
    )
    assert {name: config["sasl.username"] for name, config in got.items()} == {
        "eu": "eu",
        "us": "us",
        "ap": "ap",
    }


def test_bad_cluster_properties_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = properties(tmp_path / "good", "security.protocol=SASL_SSL\n")
    bad = properties(tmp_path / "bad", "security.protocol=SASL_SSL\nsasl.username\n")
    brokers = ("--bootstrap-servers", "eu:9092", "--cluster", "eu")
    for flags, message in (
        (
            ("--cluster-kafka-config-file", f"us={good}"),
            "--cluster-kafka-config-file us: no brokers for cluster 'us'; give "
            "--cluster-bootstrap us=SERVERS (or --cluster us with --bootstrap-servers)",
        ),
        (
            (*brokers, "--cluster-kafka-config", "us:a=b"),
            "--cluster-kafka-config us: no brokers for cluster 'us'",
        ),
        (
            (*brokers, "--cluster-kafka-config-file", f"eu={tmp_path / 'none'}"),
            f"--cluster-kafka-config-file eu: cannot read {tmp_path / 'none'}: "
            "No such file or directory",
        ),
        (
            (*brokers, "--cluster-kafka-config-file", f"eu={tmp_path}"),
            f"--cluster-kafka-config-file eu: cannot read {tmp_path}: Is a directory",
        ),
        (
            (*brokers, "--cluster-kafka-config-file", f"eu={bad}"),
            f"--cluster-kafka-config-file eu: {bad}: not KEY=VALUE: 'sasl.username'",
        ),
        (
            (*brokers, *("--cluster-kafka-config-file", f"eu={good}") * 2),
            "--cluster-kafka-config-file eu: the cluster's properties file is given twice",
        ),
        (
            (*brokers, "--cluster-kafka-config-file", good),
            f"--cluster-kafka-config-file expects NAME=FILE, not {good!r}",
        ),
        (
            (*brokers, "--cluster-kafka-config", "eu:sasl.username"),
            "--cluster-kafka-config expects NAME:KEY=VALUE, got 'eu:sasl.username'",
        ),
        (
            (*brokers, "--cluster-kafka-config", "sasl.username=eu"),
            "--cluster-kafka-config expects NAME:KEY=VALUE, got 'sasl.username=eu'",
        ),
        (
            (*brokers, "--cluster-kafka-config", "e u:a=b"),
            "--cluster-kafka-config 'e u': a cluster name is",
        ),
        (
            (*brokers, "--kafka-config-file", str(bad)),
            f"--kafka-config-file: {bad}: not KEY=VALUE: 'sasl.username'",
        ),
    ):
        assert main(["exporter", *flags]) == 2, flags
        err = capsys.readouterr().err
        assert err.startswith(f"groupscope exporter: {message}"), err
        assert err.count("\n") == 1, err


def test_a_property_librdkafka_refuses_is_one_line() -> None:
    """Kafka's Java clients take `sasl.jaas.config`, librdkafka refuses it: said before
    the exporter serves, with the cluster's name, and its log line masks the value."""
    secret = 'PlainLoginModule required username="eu" password="hunter2";'
    done = subprocess.run(
        [
            *(sys.executable, "-m", "services.cli", "exporter", "--cluster", "eu"),
            *("--bootstrap-servers", "127.0.0.1:1"),
            *("--cluster-kafka-config", f"eu:sasl.jaas.config={secret}"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    logged, said = done.stderr.strip().splitlines()
    assert logged.endswith(
        "lag of cluster eu from {'sasl.jaas.config': '***', 'bootstrap.servers': '127.0.0.1:1'}"
    )
    assert said.startswith("groupscope exporter: cluster eu's client properties: Java JAAS")
