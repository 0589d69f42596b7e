"""Offset ranges across aborted transactions, read from Apache Kafka 4.3.1 itself.

tansu 0.6.0 writes transaction markers but delivers aborted records to read_committed
consumers, so tests/job/test_range_reader.py shows a range ending on a commit marker
only. Kafka filters the aborted records out: a range over them has gaps where they
were, and must still end at its end instead of polling until it gives up
(`range_reader.IDLE_POLLS`).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from spark_jobs import range_reader
from spark_jobs.range_reader import SCHEMA, read_range
from tests.fixtures.real_kafka import RealKafka
from tests.job.test_range_reader import KINDS

pytestmark = pytest.mark.real_kafka

# Partition 0: committed 0-4 (marker 5), aborted 6-9 (marker 10), committed 11-13
# (marker 14), aborted 15-16 (marker 17): the log ends on an aborted transaction.
LAYOUT = [(5, "commit"), (4, "abort"), (3, "commit"), (2, "abort")]
COMMITTED = [0, 1, 2, 3, 4, 11, 12, 13]
END = 18


@pytest.fixture(scope="module")
def topic(real_kafka: RealKafka) -> str:
    from confluent_kafka import Producer

    name = real_kafka.create_topic(partitions=1)
    producer = Producer(real_kafka.client_config(**{"transactional.id": name}))
    producer.init_transactions(30)
    n = 0
    for count, end in LAYOUT:
        producer.begin_transaction()
        for _ in range(count):
            producer.produce(name, f"v{n}".encode(), f"k{n}".encode(), partition=0)
            n += 1
        assert producer.flush(30) == 0  # abort_transaction drops what is not sent yet
        if end == "commit":
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    return name


def offsets(broker: RealKafka, topic: str, kind: str, start: int, end: int) -> list[int]:
    config = broker.client_config()
    table = pa.Table.from_batches(list(read_range(topic, 0, start, end, config, kind)), SCHEMA)
    return table.column("offset").to_pylist()


@pytest.fixture(autouse=True)
def few_idle_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A range that waited for records that never come would fail in 3 polls, not 30."""
    monkeypatch.setattr(range_reader, "IDLE_POLLS", 3)


def test_the_log_is_laid_out_as_the_test_expects(real_kafka: RealKafka, topic: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(real_kafka.client_config(**{"group.id": "x", "log_level": 0}))
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
    assert (low, high) == (0, END)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "start,end",
    [(0, END), (0, 11), (3, 13), (6, 11), (15, END), (5, 6), (10, 12)],
    ids=["all", "to-the-abort-marker", "across", "only-aborted", "aborted-tail", "marker", "gap"],
)
def test_a_range_is_its_committed_records_and_ends(
    real_kafka: RealKafka, topic: str, kind: str, start: int, end: int
) -> None:
    expected = [o for o in COMMITTED if start <= o < end]
    assert offsets(real_kafka, topic, kind, start, end) == expected
