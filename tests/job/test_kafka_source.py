"""The job's own Kafka source against a real Kafka-protocol broker (tansu).

Two tansu 0.6.0 limits shape these tests:

- ListOffsets(latest) answers with the base offset of the partition's last record batch
  plus one, not the log end offset, so the tests produce one record per batch
  (`batch.num.messages=1`), which makes its answer exact. Real Kafka needs no such setting.
- It writes transaction markers but does not filter aborted records for read_committed
  consumers, so no test here can show that aborted commits never count; the source asks
  for read_committed, which real Kafka honours (tests/job/test_real_kafka.py,
  tests/job/test_real_kafka_ranges.py).

It also refuses CreatePartitions: partitions added to a running topic are shown on Apache
Kafka itself, in tests/job/test_real_kafka_added_partitions.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from sqlalchemy import text

from services.cli import main
from services.simulator import Params, build, simulate
from services.simulator.kafka_sink import KafkaTopic
from services.store.database import create_store_engine
from spark_jobs.kafka_source import KafkaStreamReader, share

EXACT_OFFSETS = {"batch.num.messages": "1"}  # see the module docstring


def test_share_splits_a_read_limit_fairly() -> None:
    assert share({"0": 10, "1": 10}, 10) == {"0": 5, "1": 5}
    assert share({"0": 2, "1": 100}, 10) == {"0": 2, "1": 8}
    assert share({"0": 0, "1": 3}, 10) == {"0": 0, "1": 3}
    assert sum(share({str(i): 7 for i in range(50)}, 101).values()) == 101


def test_stream_from_kafka_equals_the_truth(
    kafka_broker, postgres_server, migrated_template, spark, tmp_path: Path
) -> None:
    topic = kafka_broker.create_topic(partitions=50)
    sink = KafkaTopic(kafka_broker.bootstrap_servers, topic, config=EXACT_OFFSETS)
    specs, _ = build(["mixed"], Params(), None)
    simulate(specs, sink, str(tmp_path), 300_000, seed=5)
    sink.close()

    name = postgres_server.create_database(template=migrated_template)
    url = postgres_server.url(name)
    code = main(
        [
            "stream",
            "--bootstrap-servers",
            kafka_broker.bootstrap_servers,
            "--topic",
            topic,
            "--once",
            "--database-url",
            url,
            "--checkpoint",
            str(tmp_path / "ck"),
            "--max-records-per-trigger",
            "1500",
        ]
    )
    assert code == 0
    engine = create_store_engine(url)
    try:
        with engine.connect() as conn:
            offsets = {
                (r[0], r[1], r[2]): r[3]
                for r in conn.execute(
                    text(
                        "SELECT group_name, topic, partition, committed_offset "
                        "FROM committed_offsets WHERE NOT deleted"
                    )
                )
            }
            generations = conn.execute(text("SELECT count(*) FROM generations")).scalar_one()
            batches = conn.execute(text("SELECT batches_total FROM pipeline_status")).scalar_one()
    finally:
        engine.dispose()
        postgres_server.drop_database(name)
    truth = [json.loads(line) for line in (tmp_path / "truth" / "commits.jsonl").open()]
    # The latest committed offsets: in this run every aborted commit (which tansu does
    # not filter, see above) is superseded by a later effective commit.
    assert offsets == {(c["group"], c["topic"], c["partition"]): c["offset"] for c in truth}
    truth_generations = (tmp_path / "truth" / "generations.jsonl").read_text().splitlines()
    assert generations == len(truth_generations)
    assert batches > 1  # the read limit split the backlog into several micro-batches


class ScriptedWatermarks(KafkaStreamReader):
    """The reader with the broker's metadata answers scripted: the read limits' planning
    against watermarks that move exactly when the test says."""

    def __init__(self, answers: list[dict[str, tuple[int, int]]]) -> None:
        super().__init__({"topic": "t", "bootstrap.servers": "unused"})
        self.answers = answers

    def _watermarks(self) -> dict[str, tuple[int, int]]:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_read_limits_and_available_now() -> None:
    reader = ScriptedWatermarks([{"0": (0, 100), "1": (0, 10)}])
    start = reader.initialOffset()
    assert reader.latestOffset(start, ReadMaxRows(30)) == {"0": 20, "1": 10}
    reader.prepareForTriggerAvailableNow()
    reader.answers = [{"0": (0, 500), "1": (0, 10)}]  # more arrives after the start
    assert reader.latestOffset(start, ReadAllAvailable()) == {"0": 100, "1": 10}


def test_retention_moved_past_the_checkpoint() -> None:
    """Compaction/retention deleted what the checkpoint points at: start at the earliest."""
    reader = ScriptedWatermarks([{"0": (40, 50)}])
    end = reader.latestOffset({"0": 10}, ReadAllAvailable())
    assert end == {"0": 50}
    assert [(r.start, r.end) for r in reader.partitions({"0": 10}, end)] == [(10, 50)]
