"""The exporter process over HTTP: /metrics (plain and gzip), /healthz, /readyz, lag
from a real Kafka-protocol broker, and a store outage that keeps the last metrics."""

from __future__ import annotations

import gzip
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine

from services.exporter.app import Exporter, ExporterConfig
from services.exporter.lag import LogEndPoller
from services.store.batch import OffsetCommit, PipelineReport
from services.store.clusters import DEFAULT_CLUSTER
from services.store.database import create_store_engine
from services.store.repository import HistoryStore
from tests.fixtures.batches import SOURCE, batch


def get(url: str, gzipped: bool = False) -> tuple[int, bytes, dict]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if gzipped else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), dict(exc.headers)


def samples(body: bytes) -> dict:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def commit(topic: str, partition: int, offset: int, source_offset: int) -> OffsetCommit:
    return OffsetCommit(
        "payments", topic, partition, offset, 7, source_offset, commit_time=datetime.now(UTC)
    )


@pytest.fixture
def exporter(store_engine: Engine, kafka_broker):
    topic = kafka_broker.create_topic(partitions=2)
    kafka_broker.produce(topic, [0, 1] * 5)
    HistoryStore(store_engine).write_batch(
        batch(1, offsets=[commit(topic, 0, 3, 1), commit(topic, 1, 5, 2)])
    )
    poller = LogEndPoller({"bootstrap.servers": kafka_broker.bootstrap_servers})
    app = Exporter(
        ExporterConfig(host="127.0.0.1", port=0, interval_s=0.2),
        store_engine,
        {DEFAULT_CLUSTER: poller},
    )
    app.start()
    yield app, topic
    app.stop()


def test_metrics_health_and_readiness(exporter, store_engine: Engine) -> None:
    app, topic = exporter
    base = f"http://127.0.0.1:{app.port}"
    status, body, _ = get(base + "/metrics")
    assert status == 200
    s = samples(body)
    labels = (("cluster", "default"), ("group", "payments"), ("topic", topic))
    assert s[("groupscope_lag_sum", labels)] == (5 - 3) + (5 - 5)
    assert s[("groupscope_committed_offset_sum", labels)] == 8
    assert s[("groupscope_exporter_lag_partitions", ())] == 2
    # The standard collectors, under their usual names.
    assert ("process_resident_memory_bytes", ()) in s
    assert any(name == "python_info" for name, _ in s)
    assert any(name.startswith("python_gc_") for name, _ in s)
    assert not any(name.startswith("groupscope_exporter_process_") for name, _ in s)
    status, zipped, headers = get(base + "/metrics", gzipped=True)
    assert headers["Content-Encoding"] == "gzip"
    assert samples(gzip.decompress(zipped)).keys() == s.keys()
    assert get(base + "/healthz")[0] == 200
    status, reason, _ = get(base + "/readyz")
    assert status == 503 and b"has not reported" in reason
    store = HistoryStore(store_engine)
    store.report_status(PipelineReport(SOURCE, datetime.now(UTC), False, 1234))
    app.refresh()
    status, reason, _ = get(base + "/readyz")
    assert status == 503 and b"1234 records behind" in reason
    store.report_status(PipelineReport(SOURCE, datetime.now(UTC), True, 0))
    app.refresh()
    assert get(base + "/readyz")[0] == 200
    assert get(base + "/nope")[0] == 404


def test_a_store_outage_keeps_the_last_metrics_and_counts_errors(exporter) -> None:
    app, topic = exporter
    before = samples(get(f"http://127.0.0.1:{app.port}/metrics")[1])
    app.engine = create_store_engine("postgresql://nobody@127.0.0.1:1/none")
    assert app.refresh() is False
    after = samples(get(f"http://127.0.0.1:{app.port}/metrics")[1])
    # Counted as the refresh fails, not once the store is back (the refresh loop may
    # have failed too meanwhile).
    assert after[("groupscope_exporter_refresh_errors_total", ())] >= 1
    assert (
        after[
            (
                "groupscope_lag_sum",
                (("cluster", "default"), ("group", "payments"), ("topic", topic)),
            )
        ]
        == 2
    )
    assert app.stats.refresh_errors >= 1
    assert get(f"http://127.0.0.1:{app.port}/readyz")[0] == 503
    assert before.keys() == after.keys()


def test_lag_follows_the_log_between_refreshes(exporter, kafka_broker) -> None:
    app, topic = exporter
    kafka_broker.produce(topic, [1] * 4)
    deadline = time.monotonic() + 20
    labels = (("cluster", "default"), ("group", "payments"), ("topic", topic))
    while time.monotonic() < deadline:
        s = samples(get(f"http://127.0.0.1:{app.port}/metrics")[1])
        if s[("groupscope_lag_sum", labels)] == 2 + 4:
            break
        time.sleep(0.2)
    assert s[("groupscope_lag_sum", labels)] == 6
    assert s[("groupscope_lag_seconds", labels)] > 0


def test_command_rejects_bad_flags_with_one_line() -> None:
    for flags, message in (
        (["--interval", "soon"], "--interval expects a duration"),
        (["--port", "70000"], "--port must be 0-65535"),
        (["--storm-rebalances", "0"], "--storm-rebalances must be at least 1"),
        (["--database-url", "mysql://x"], "expected a PostgreSQL URL"),
        (["--cluster-bootstrap", "us"], "--cluster-bootstrap expects NAME=SERVERS, not 'us'"),
        (["--bootstrap-servers", "b:1", "--cluster", "e u"], "--cluster 'e u': a cluster name"),
        (
            ["--bootstrap-servers", "b:1", "--cluster-bootstrap", "default=c:1"],
            "--cluster-bootstrap default: the cluster's brokers are given twice",
        ),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "services.cli", "exporter", *flags],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert message in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
