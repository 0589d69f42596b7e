"""Naming KIP-848 topic ids from the cluster: the id format, a broker that does not
answer, and a real Apache Kafka 4.3.1 broker."""

from __future__ import annotations

import logging
import time
import uuid

import pytest
from confluent_kafka import Uuid

from services.codec.compiler import uuid_to_str
from spark_jobs.topic_names import RETRY_AFTER_S, TopicNames, kafka_uuid
from tests.fixtures.real_kafka import RealKafka, free_port


def test_a_confluent_uuid_reads_as_kafkas_uuid_to_string() -> None:
    """Kafka's `Uuid.toString()` is URL-safe base64; librdkafka's `str()` is not. Bits
    with the sign bit set and bytes that encode to `+` and `/` (`-` and `_`) included."""
    for raw in (b"\xff" * 8 + b"\xfb\xef\xbe" * 2 + b"\x00\x01", uuid.uuid4().bytes):
        msb = int.from_bytes(raw[:8], "big", signed=True)
        lsb = int.from_bytes(raw[8:], "big", signed=True)
        assert kafka_uuid(Uuid(msb, lsb)) == uuid_to_str(raw)


def test_a_broker_that_does_not_answer_leaves_the_ids_and_is_asked_again_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Nothing listens on the port: the lookup gives up after its timeout, says so once,
    and later batches keep the ids without waiting until RETRY_AFTER_S has passed."""
    now = [0.0]
    names = TopicNames(
        {"bootstrap.servers": f"127.0.0.1:{free_port()}"}, timeout=1.0, clock=lambda: now[0]
    )
    topic_id = uuid_to_str(uuid.uuid4().bytes)
    with caplog.at_level(logging.WARNING, logger="groupscope.topic_names"):
        started = time.monotonic()
        assert names.resolve({topic_id}) == {}
        assert time.monotonic() - started < 5.0
        started = time.monotonic()
        assert names.resolve({topic_id}) == {}
        assert time.monotonic() - started < 0.5  # not asked again yet
        now[0] += RETRY_AFTER_S
        started = time.monotonic()
        assert names.resolve({topic_id}) == {}
        assert time.monotonic() - started >= 1.0  # asked again
    assert len(caplog.records) == 1 and topic_id in caplog.text
    assert topic_id not in names.unknown  # a failed lookup says nothing about the id


@pytest.mark.real_kafka
def test_the_cluster_names_its_topics_and_not_a_deleted_one(real_kafka: RealKafka) -> None:
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    kept, deleted = real_kafka.create_topic(partitions=2), real_kafka.create_topic()
    admin = AdminClient(real_kafka.client_config())
    ids = {
        name: kafka_uuid(future.result(30).topic_id)
        for name, future in admin.describe_topics(TopicCollection([kept, deleted])).items()
    }
    for future in admin.delete_topics([deleted]).values():
        future.result(30)
    deadline = time.monotonic() + 30
    while deleted in admin.list_topics(timeout=5).topics:
        assert time.monotonic() < deadline, f"{deleted} is still listed"
        time.sleep(0.2)

    names = TopicNames(real_kafka.client_config())
    assert names.resolve(ids.values()) == {ids[kept]: kept}
    assert names.unknown == {ids[deleted]}


def test_a_property_librdkafka_refuses_leaves_the_ids(caplog: pytest.LogCaptureFixture) -> None:
    """`--source spark-kafka` takes Java client properties; one librdkafka refuses must
    not stop the job."""
    config = {"bootstrap.servers": "127.0.0.1:9", "sasl.jaas.config": "x"}
    with caplog.at_level(logging.WARNING, logger="groupscope.topic_names"):
        names = TopicNames(config)
    assert names.resolve({uuid_to_str(uuid.uuid4().bytes)}) == {}
    assert "JAAS" in caplog.text
