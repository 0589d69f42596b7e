"""End to end: the simulator's crash-loop storm, ending now, through the streaming job
(real Spark, real PostgreSQL), the exporter (a subprocess, with lag from a real
Kafka-protocol broker), and a real Prometheus scraping it with the shipped
configuration and rules. The storm alert goes to firing, and every dashboard query,
PromQL and SQL, returns data for the run's group and topic (but the last rebalance's lag,
which an exporter started after the storm must not claim to know)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from services.cli import main
from services.codec import encode_key, encode_value, partition_for
from services.simulator import Params, ReplayDirectory, build, simulate
from tests.dashboards.grafana import (
    PROMETHEUS_CONFIG,
    RULES,
    dashboards,
    every_query,
    substitute_promql,
    substitute_sql,
    textbox_defaults,
    variables,
)
from tests.fixtures.prometheus import Prometheus, free_port, stop_process

PARTITIONS = 12
STORM_ALERT = "GroupscopeRebalanceStorm"
EXPORTER_START_S = 60.0


@dataclass
class Run:
    group: str
    topic: str
    database_url: str
    exporter: str  # host:port


def corrupt_records(directory: Path, now_ms: int) -> None:
    """Two records the job cannot decode, beside the good ones, in a file of their own."""
    key = encode_key("offset_commit", {"group": "late", "topic": "t", "partition": 0})
    value = encode_value("offset_commit", 3, {"offset": 77, "commit_timestamp": now_ms})
    p = partition_for("late")
    rows = [(p, 10_000_000, key, value[:-2]), (p, 10_000_001, b"\x00\x63whatever", b"\x00\x00")]
    table = pa.table(
        {
            "topic": ["__consumer_offsets"] * len(rows),
            "partition": pa.array([r[0] for r in rows], pa.int32()),
            "offset": pa.array([r[1] for r in rows], pa.int64()),
            "timestamp": pa.array([now_ms] * len(rows), pa.timestamp("ms", tz="UTC")),
            "key": pa.array([r[2] for r in rows], pa.binary()),
            "value": pa.array([r[3] for r in rows], pa.binary()),
        }
    )
    pq.write_table(table, directory / "records" / "part-99999.parquet")


def produce_past(bootstrap: str, topic: str, committed: dict[int, int], ahead: int) -> None:
    """Fill each partition to `ahead` messages past the group's committed offset. tansu
    answers ListOffsets with its last batch's base offset plus one, so the last message
    of each partition goes in a batch of its own, which makes that answer exact."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for partition, offset in committed.items():
        for _ in range(offset + ahead - 1):
            producer.produce(topic, b"m", partition=partition)
            producer.poll(0)
    assert producer.flush(60) == 0
    for partition in committed:
        producer.produce(topic, b"m", partition=partition)
        assert producer.flush(30) == 0


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def exporter_command(database_url: str, port: int) -> list[str]:
    """`groupscope exporter` as the README runs it (the venv's console script)."""
    script = Path(sys.executable).with_name("groupscope")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "services.cli"]
    return [
        *command,
        "exporter",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--database-url",
        database_url,
        "--interval",
        "1s",
    ]


@pytest.fixture(scope="module")
def run(
    prometheus_binary: str,  # first: skip before the costly part if Prometheus is missing
    spark,
    postgres_server,
    migrated_template,
    kafka_broker,
    tmp_path_factory,
) -> Iterator[Run]:
    """The crash-loop storm ending now, streamed into a fresh store, with its topic on the
    broker, and the exporter serving it."""
    out = tmp_path_factory.mktemp("e2e")
    topic = kafka_broker.create_topic(partitions=PARTITIONS)
    specs, duration = build(["crash-loop"], Params({"rate": "1"}), None)
    specs = [replace(s, topics={topic: PARTITIONS}) for s in specs]
    [group] = [s.name for s in specs]
    now_ms = int(time.time() * 1000)
    replay = out / "replay"
    simulate(
        specs, ReplayDirectory(replay), str(replay), duration, seed=3, start_ms=now_ms - duration
    )
    corrupt_records(replay, now_ms)

    name = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(name)
    process = None
    try:
        args = ["stream", "--source", "replay", str(replay), "--once"]
        assert main([*args, "--database-url", url, "--checkpoint", str(out / "checkpoint")]) == 0
        committed = {}
        for line in (replay / "truth" / "commits.jsonl").read_text().splitlines():
            row = json.loads(line)
            committed[row["partition"]] = row["offset"]
        assert len(committed) == PARTITIONS
        produce_past(kafka_broker.bootstrap_servers, topic, committed, ahead=25)
        port = free_port()
        log = out / "exporter.log"
        with open(log, "wb") as sink:
            process = subprocess.Popen(
                [
                    *exporter_command(url, port),
                    "--bootstrap-servers",
                    kafka_broker.bootstrap_servers,
                ],
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + EXPORTER_START_S
        while _status(f"http://127.0.0.1:{port}/readyz") != 200:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the exporter never got ready:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield Run(group, topic, url, f"127.0.0.1:{port}")
    finally:
        if process is not None:
            stop_process(process)
        postgres_server.drop_database(name)


def shipped_config(target: str) -> str:
    """dashboards/prometheus/prometheus.yml as shipped, pointed at this run's exporter and
    the repository's rules, scraping and evaluating every second."""
    text = PROMETHEUS_CONFIG.read_text()
    for old, new in (
        ("exporter:9308", target),
        ("/etc/prometheus/rules.yml", str(RULES)),
    ):
        assert old in text
        text = text.replace(old, new)
    text, n = re.subn(
        r"(scrape_interval|evaluation_interval|scrape_timeout): \d+s", r"\1: 1s", text
    )
    assert n >= 3
    return text


@pytest.fixture(scope="module")
def prometheus(run: Run, start_prometheus) -> Prometheus:
    server = start_prometheus(config_text=shipped_config(run.exporter))
    server.wait_for(
        lambda: [
            t
            for t in server.targets()
            if t["labels"]["job"] == "groupscope" and t["health"] == "up"
        ],
        60,
        "the exporter target to be up",
    )
    # Enough scrapes for rate() and increase() over the dashboards' intervals.
    server.wait_for(
        lambda: server.query("count_over_time(groupscope_exporter_series[1m]) >= 6"),
        60,
        "six scrapes of the exporter",
    )
    return server


def firing(server: Prometheus, alertname: str) -> list[dict]:
    return [
        a
        for a in server.alerts()
        if a["labels"]["alertname"] == alertname and a["state"] == "firing"
    ]


def test_the_storm_alert_fires(run: Run, prometheus: Prometheus) -> None:
    alerts = prometheus.wait_for(
        lambda: firing(prometheus, STORM_ALERT), 60, f"{STORM_ALERT} to fire"
    )
    [alert] = alerts
    assert alert["labels"]["group"] == run.group
    assert alert["labels"]["severity"] == "warning"
    assert alert["annotations"]["summary"].startswith(f"Rebalance storm in group {run.group}: ")
    expected = f"groupscope postmortem {run.group} --cluster default --since 30m"
    assert expected in alert["annotations"]["description"]
    series = prometheus.query(f'ALERTS{{alertname="{STORM_ALERT}", alertstate="firing"}}')
    assert [s["metric"]["group"] for s in series] == [run.group]


def test_no_other_alert_fires_on_a_healthy_pipeline(run: Run, prometheus: Prometheus) -> None:
    """The job has just caught up, the exporter refreshes, lag is small and known: only the
    storm is wrong with this group."""
    prometheus.wait_for(lambda: firing(prometheus, STORM_ALERT), 60, f"{STORM_ALERT} to fire")
    others = {a["labels"]["alertname"] for a in prometheus.alerts()} - {STORM_ALERT}
    assert others == set()
    # Every rule evaluated on the real series without an error (e.g. a vector matching
    # that only breaks on real label sets).
    rules = [r for g in prometheus.rule_groups() for r in g["rules"]]
    assert rules and [r["name"] for r in rules if r["health"] != "ok"] == []


# How far the group fell behind during its last rebalance: the exporter started after the
# storm, so it sampled none of its rebalances and must say nothing of them (where it did,
# tests/exporter/test_real_kafka_lag.py).
UNSAMPLED = "groupscope_group_last_rebalance_lag_"


def test_every_dashboard_promql_query_returns_data(run: Run, prometheus: Prometheus) -> None:
    values = {"cluster": "default", "group": run.group, "topic": run.topic}
    prom = [q for q in every_query() if not q.is_sql]
    assert len(prom) >= 40
    empty, unsampled = [], []
    for q in prom:
        expr = substitute_promql(q.text, values)
        if UNSAMPLED in expr:
            unsampled.append(prometheus.query(expr))
        elif not prometheus.query(expr):
            empty.append(f"{q}: {expr}")
    assert empty == []
    assert len(unsampled) == 2 and not any(unsampled)
    # The lag panels show real lag: the run left 25 messages per partition unconsumed.
    [lag] = prometheus.query(f'groupscope_lag_sum{{group="{run.group}", topic="{run.topic}"}}')
    assert float(lag["value"][1]) > 0


def test_the_variables_offer_the_run_s_group_and_topic(run: Run, prometheus: Prometheus) -> None:
    expected = {"cluster": "default", "group": run.group, "topic": run.topic}
    for name, d in dashboards().items():
        for v in variables(d, "query"):
            m = re.fullmatch(r"label_values\((.+), (\w+)\)", v["definition"])
            selector = substitute_promql(m.group(1), {"cluster": "default", "group": run.group})
            label_values = prometheus.get(
                f"/api/v1/label/{m.group(2)}/values", **{"match[]": selector}
            )
            assert expected[v["name"]] in label_values, (name, v["name"], label_values)


def test_every_dashboard_sql_query_returns_data(run: Run) -> None:
    now = datetime.now(UTC)
    start = (now - timedelta(hours=1)).isoformat()
    end = (now + timedelta(minutes=5)).isoformat()
    values = {
        "cluster": ["default"],
        "group": [run.group],
        "topic": [run.topic],
        **textbox_defaults(),
    }
    sql_queries = [q for q in every_query() if q.is_sql]
    assert sql_queries
    empty = []
    with psycopg.connect(run.database_url) as conn:
        for q in sql_queries:
            if not conn.execute(substitute_sql(q.text, values, start, end)).fetchall():
                empty.append(str(q))
    assert empty == []
