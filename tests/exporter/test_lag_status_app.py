"""Lag status end to end: commits in the real history store, log ends from a real
Kafka-protocol broker, the exporter's windows, its metrics, /status and the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine

from services.cli import main
from services.exporter.app import Exporter, ExporterConfig
from services.exporter.lag import LogEndPoller
from services.exporter.lagstatus import ERR, OK, STALL, STOP, WARN
from services.store.batch import OffsetCommit
from services.store.clusters import DEFAULT_CLUSTER
from services.store.repository import HistoryStore
from tests.exporter.test_app import get, samples
from tests.fixtures.batches import batch

T0 = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)
STEP_S = 10.0


class Run:
    """Rounds of: the broker's log grows, the groups commit, the exporter refreshes."""

    def __init__(self, engine: Engine, broker, topic: str) -> None:
        self.store = HistoryStore(engine)
        self.broker = broker
        self.topic = topic
        self.now = T0.timestamp()
        self.round = 0
        self.source_offset = 0
        # The refresh loop refreshes once at start; the test refreshes every round.
        config = ExporterConfig(host="127.0.0.1", port=0, interval_s=3600, per_partition=True)
        poller = LogEndPoller({"bootstrap.servers": broker.bootstrap_servers})
        self.app = Exporter(config, engine, {DEFAULT_CLUSTER: poller}, clock=lambda: self.now)

    def step(self, produced: list[int], commits: dict[tuple[str, int], int]) -> None:
        """One round: `produced` records to those partitions, then `commits`
        ((group, partition) -> offset), committed at this round's time."""
        self.round += 1
        self.broker.produce(self.topic, produced)
        at = T0 + timedelta(seconds=self.round * STEP_S)
        rows = []
        for (group, partition), offset in commits.items():
            self.source_offset += 1
            rows.append(
                OffsetCommit(
                    group, self.topic, partition, offset, 0, self.source_offset, commit_time=at
                )
            )
        self.store.write_batch(batch(self.round, offsets=rows, time=at))
        self.now = at.timestamp() + 1
        assert self.app.refresh()


@pytest.fixture
def run(store_engine: Engine, kafka_broker):
    topic = kafka_broker.create_topic(partitions=3)
    run = Run(store_engine, kafka_broker, topic)
    run.app.start()
    yield run
    run.app.stop()


def test_statuses_follow_burrows_rules_through_the_exporter(run: Run, capsys) -> None:
    """payments: p0 keeps up (OK), p1 commits one offset over and over while the log
    grows (STALL), p2 advances but falls further behind (WARN): the group is ERR.
    billing keeps up on p0: OK. Then billing stops committing while the log grows:
    after longer than its window spans, STOP."""
    log = [0, 0, 0]
    for i in range(4):
        produced = [0, 1, 2, 2] if i else [0, 0, 1, 1, 2, 2]
        for p in produced:
            log[p] += 1
        run.step(
            produced,
            {
                ("payments", 0): log[0],
                ("payments", 1): 1,
                ("payments", 2): i + 1,
                ("billing", 0): log[0],
            },
        )
        if i == 0:  # one commit observed per partition: not judged yet
            first = samples(get(f"http://127.0.0.1:{run.app.port}/metrics")[1])
            assert (
                first[
                    ("groupscope_group_lag_status", (("cluster", "default"), ("group", "payments")))
                ]
                == 0
            )
    port = run.app.port
    s = samples(get(f"http://127.0.0.1:{port}/metrics")[1])
    topic = run.topic

    def partition(group: str, p: int) -> float:
        key = (("cluster", "default"), ("group", group), ("partition", str(p)), ("topic", topic))
        return s[("groupscope_partition_lag_status", key)]

    assert [partition("payments", p) for p in range(3)] == [OK, STALL, WARN]
    assert partition("billing", 0) == OK
    assert (
        s[("groupscope_group_lag_status", (("cluster", "default"), ("group", "payments")))] == ERR
    )
    assert s[("groupscope_group_lag_status", (("cluster", "default"), ("group", "billing")))] == OK

    code, body, _ = get(f"http://127.0.0.1:{port}/status")
    groups = {g["group"]: g for g in json.loads(body)["groups"]}
    assert code == 200 and groups["payments"]["status"] == "ERR"
    assert groups["payments"]["partitions_by_status"] == {"OK": 1, "STALL": 1, "WARN": 1}
    assert groups["payments"]["worst"]["partition"] == 1
    code, body, _ = get(f"http://127.0.0.1:{port}/status?group=payments")
    detail = json.loads(body)
    stalled = next(p for p in detail["partitions"] if p["partition"] == 1)
    assert [w["offset"] for w in stalled["window"]] == [1, 1, 1, 1]
    assert [w["lag"] for w in stalled["window"]] == [1, 2, 3, 4]
    assert get(f"http://127.0.0.1:{port}/status?group=nobody")[0] == 404

    assert main(["lag-status", "--exporter", f"http://127.0.0.1:{port}"]) == 0
    table = capsys.readouterr().out
    assert table.index("payments") < table.index("billing")  # worst first
    assert "STALL 1" in table and max(len(line) for line in table.splitlines()) <= 120
    assert main(["lag-status", "--json", "--exporter", f"http://127.0.0.1:{port}", "payments"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "ERR"

    # billing stops; payments p0 keeps up. billing's window spans 30 s (rounds 1-4); 40 s
    # later it has lag and no commit for longer than that, but the last 10 polls still
    # saw the log end at its last commit: not STOP yet (Burrow's recent-lag-zero rule).
    for _ in range(4):
        log[0] += 1
        run.step([0], {("payments", 0): log[0]})
    s = samples(get(f"http://127.0.0.1:{port}/metrics")[1])
    assert partition("billing", 0) == OK
    for _ in range(7):  # 10 polls after the last one that saw it caught up: STOP
        log[0] += 1
        run.step([0], {("payments", 0): log[0]})
    s = samples(get(f"http://127.0.0.1:{port}/metrics")[1])
    assert partition("billing", 0) == STOP
    assert s[("groupscope_group_lag_status", (("cluster", "default"), ("group", "billing")))] == ERR


def test_without_log_ends_there_is_no_lag_status(store_engine: Engine, capsys) -> None:
    """An exporter that polls no broker judges nothing, and says why."""
    HistoryStore(store_engine).write_batch(
        batch(1, offsets=[OffsetCommit("g", "t", 0, 5, 0, 1, commit_time=T0)])
    )
    app = Exporter(ExporterConfig(host="127.0.0.1", port=0, interval_s=60), store_engine)
    app.start()
    try:
        s = samples(get(f"http://127.0.0.1:{app.port}/metrics")[1])
        assert not any(name == "groupscope_group_lag_status" for name, _ in s)
        code, body, _ = get(f"http://127.0.0.1:{app.port}/status")
        assert code == 503 and "--bootstrap-servers" in json.loads(body)["error"]
        assert main(["lag-status", "--exporter", f"http://127.0.0.1:{app.port}"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--bootstrap-servers" in err
    finally:
        app.stop()
