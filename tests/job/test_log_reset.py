"""A log that went backwards: the job's topic deleted and recreated on a real broker
(tansu), as when `__consumer_offsets` is recreated or a cluster replaced. The new log's
records land at new positions, the reset is logged and counted, and reading goes on.
Real Spark (local[2]) and PostgreSQL."""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from pyspark.sql.streaming.datasource import ReadAllAvailable
from sqlalchemy import Engine, text

from services.cli import main
from services.codec import encode_key, encode_value
from services.store.database import create_store_engine
from spark_jobs.kafka_source import KafkaStreamReader


def produce_commits(bootstrap: str, topic: str, group: str, offsets: range) -> None:
    """One offset commit of `group` (topic orders, partition 0) per committed offset, each
    in a record batch of its own (tansu's ListOffsets is exact only then)."""
    producer = Producer({"bootstrap.servers": bootstrap, "batch.num.messages": 1})
    key = encode_key("offset_commit", {"group": group, "topic": "orders", "partition": 0})
    for offset in offsets:
        value = encode_value("offset_commit", 3, {"offset": offset, "commit_timestamp": 1})
        producer.produce(topic, value, key, partition=0)
        producer.flush(10)


def recreate(kafka_broker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for future in admin.delete_topics([topic]).values():
        future.result(30)
    deadline = time.monotonic() + 30
    while topic in admin.list_topics(timeout=5).topics:
        assert time.monotonic() < deadline, f"topic {topic} was not deleted"
        time.sleep(0.1)
    kafka_broker.create_topic(topic, 1)


def stored(engine: Engine) -> dict[str, tuple[int, int]]:
    """{group: (committed offset, source offset)} of partition orders-0."""
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT group_name, committed_offset, source_offset FROM committed_offsets")
        ).all()
    return {group: (offset, position) for group, offset, position in rows}


def resets(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT log_resets_total FROM pipeline_status")).scalar_one()


def test_a_log_that_went_backwards_is_read_again_at_new_positions(
    kafka_broker, database_url: str, spark, tmp_path: Path, caplog
) -> None:
    topic = kafka_broker.create_topic(partitions=1)
    bootstrap = kafka_broker.bootstrap_servers
    args = [
        *("stream", "--bootstrap-servers", bootstrap, "--topic", topic, "--once"),
        *("--database-url", database_url, "--checkpoint", str(tmp_path / "ck")),
        *("--offsets-partitions", "1"),
    ]
    engine = create_store_engine(database_url)
    try:
        produce_commits(bootstrap, topic, "before", range(100, 108))  # offsets 0-7
        assert main(args) == 0
        assert stored(engine) == {"before": (107, 7)}
        assert resets(engine) == 0

        recreate(kafka_broker, topic)  # the log restarts at offset 0, below the checkpoint's 8
        produce_commits(bootstrap, topic, "after", range(200, 203))  # offsets 0-2
        caplog.clear()
        assert main(args) == 0
        # Stored after everything before the reset: position 8 + Kafka offset 2.
        assert stored(engine) == {"before": (107, 7), "after": (202, 10)}
        assert resets(engine) == 1
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert any("partition 0" in e and "below the checkpoint's 8" in e for e in errors), errors

        produce_commits(bootstrap, topic, "after", range(203, 204))  # offset 3 of the new log
        assert main(args) == 0
        assert stored(engine) == {"before": (107, 7), "after": (203, 11)}
        assert resets(engine) == 1  # counted once

        # The checkpoint lost (deleted by hand): the store kept the base, so the new
        # log's next record still lands above everything stored.
        shutil.rmtree(tmp_path / "ck")
        produce_commits(bootstrap, topic, "after", range(204, 205))  # offset 4
        assert main(args) == 0
        assert stored(engine) == {"before": (107, 7), "after": (204, 12)}
        assert resets(engine) == 1
    finally:
        engine.dispose()


class Watermarks(KafkaStreamReader):
    """The reader with the broker's watermarks scripted, to plan offsets without one."""

    def __init__(self, marks: dict[str, tuple[int, int]], **options: str) -> None:
        super().__init__({"topic": "t", "bootstrap.servers": "unused", **options})
        self.marks = marks

    def _watermarks(self) -> dict[str, tuple[int, int]]:
        return self.marks


def test_a_reset_partition_is_planned_from_its_start_with_a_new_base() -> None:
    reader = Watermarks({"0": (0, 3), "1": (0, 40)})
    end = reader.latestOffset({"0": 8, "1": 30}, ReadAllAvailable())
    assert end == {"0": 3, "1": 40, "bases": {"0": 8}}
    ranges = [
        (r.partition, r.start, r.end, r.base) for r in reader.partitions({"0": 8, "1": 30}, end)
    ]
    assert ranges == [(0, 0, 3, 8), (1, 30, 40, 0)]
    # The next batch goes on from there, the base carried; a second reset adds to it.
    reader.marks = {"0": (0, 1), "1": (0, 40)}
    assert reader.latestOffset(end, ReadAllAvailable()) == {"0": 1, "1": 40, "bases": {"0": 11}}


def test_a_reset_is_believed_only_when_a_second_look_confirms_it() -> None:
    class Flaky(Watermarks):
        def __init__(self, answers: list[dict[str, tuple[int, int]]]) -> None:
            super().__init__(answers[0])
            self.answers = answers

        def _watermarks(self) -> dict[str, tuple[int, int]]:
            return self.answers.pop(0)

    once = Flaky([{"0": (0, 0)}, {"0": (0, 12)}])  # one odd answer, then the log again
    assert once.latestOffset({"0": 8}, ReadAllAvailable()) == {"0": 12}
    twice = Flaky([{"0": (0, 0)}, {"0": (0, 1)}])
    assert twice.latestOffset({"0": 8}, ReadAllAvailable()) == {"0": 1, "bases": {"0": 8}}


def test_a_new_checkpoint_starts_from_the_carried_bases() -> None:
    reader = Watermarks({"0": (0, 3)}, bases=json.dumps({"0": 8}))
    assert reader.initialOffset() == {"0": 0, "bases": {"0": 8}}
    assert Watermarks({"0": (0, 3)}).initialOffset() == {"0": 0}  # the format of old
