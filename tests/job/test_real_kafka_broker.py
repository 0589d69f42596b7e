"""The Apache Kafka fixture itself (tests/fixtures/real_kafka.py): a real broker that
writes `__consumer_offsets`, takes the settings a test gives it, and keeps its log across
a stop or a crash and a start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.real_kafka import START_TIMEOUT_S, RealKafka, Settings, launch


def produce(broker: RealKafka, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer(broker.client_config())
    for i in range(count):
        producer.produce(topic, f"m{i}".encode(), partition=0)
    assert producer.flush(30) == 0


def committed(broker: RealKafka, group: str, topic: str) -> int:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(broker.client_config())
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
    (future,) = admin.list_consumer_group_offsets([request]).values()
    return future.result(30).topic_partitions[0].offset


def offsets_partitions(broker: RealKafka) -> int:
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient(broker.client_config()).list_topics("__consumer_offsets", timeout=10)
    return len(metadata.topics["__consumer_offsets"].partitions)


def high_watermark(broker: RealKafka, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(broker.client_config(**{"group.id": "watermarks"}))
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        consumer.close()


@pytest.mark.real_kafka
def test_the_session_broker_writes_its_own_consumer_offsets(real_kafka: RealKafka) -> None:
    assert real_kafka.start_seconds[0] < START_TIMEOUT_S
    topic = real_kafka.create_topic(partitions=1)
    produce(real_kafka, topic, 5)
    real_kafka.commit("fixture-group", {(topic, 0): 3})
    assert committed(real_kafka, "fixture-group", topic) == 3
    assert offsets_partitions(real_kafka) == 50
    assert real_kafka.log.stat().st_size > 0  # log4j writes beside the data


@pytest.mark.real_kafka
def test_a_test_owned_broker_takes_its_settings(
    start_real_kafka: Callable[..., RealKafka],
) -> None:
    from confluent_kafka.admin import AdminClient

    broker = start_real_kafka(offsets_partitions=3, rack="rack-a")
    topic = broker.create_topic(partitions=1)
    broker.commit("g", {(topic, 0): 1})
    assert offsets_partitions(broker) == 3
    admin = AdminClient(broker.client_config())
    (node,) = admin.describe_cluster().result(10).nodes
    assert node.rack == "rack-a"
    assert "offsets.retention.minutes" not in broker.config.read_text()


@pytest.mark.real_kafka
@pytest.mark.parametrize("how", ["stop", "kill"])
def test_a_restarted_broker_keeps_its_log_and_committed_offsets(
    start_real_kafka: Callable[..., RealKafka], how: str
) -> None:
    broker = start_real_kafka(offsets_partitions=1)
    topic = broker.create_topic(partitions=1)
    produce(broker, topic, 7)
    broker.commit("survivor", {(topic, 0): 4})
    if how == "stop":
        assert broker.stop() < 30
    else:
        broker.kill()
    assert not broker.running
    took = broker.start()
    assert took < START_TIMEOUT_S
    assert high_watermark(broker, topic) == 7
    assert committed(broker, "survivor", topic) == 4


def test_without_kafka_the_tests_skip_or_fail_when_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.prefix", str(tmp_path))  # a virtualenv without `make kafka`
    monkeypatch.delenv("GROUPSCOPE_REQUIRE_KAFKA", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"no Kafka classpath at .*make kafka"):
        launch(tmp_path / "broker", Settings())
    monkeypatch.setenv("GROUPSCOPE_REQUIRE_KAFKA", "1")
    with pytest.raises(pytest.fail.Exception, match="GROUPSCOPE_REQUIRE_KAFKA is set"):
        launch(tmp_path / "broker", Settings())
