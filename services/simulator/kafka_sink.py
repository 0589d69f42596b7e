"""The broker sink: records produced to a topic that plays `__consumer_offsets`.

Keys and values go as raw bytes to the computed partition, with the record's timestamp
(CreateTime). Transactional commits use a second, transactional producer
(`transactional.id`): the plain producer is flushed first so that log order per
partition holds, then begin, produce, and commit or abort, so that the broker writes the
batch and its end marker as Kafka's transaction coordinator does. Offsets are the
broker's; the ground truth's offsets are those of the simulated log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.simulator.log import Batch

_TIMEOUT_S = 30.0


class KafkaTopic:
    """A `Sink` producing to `topic` on `bootstrap_servers` with confluent-kafka."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        config: Mapping[str, str] | None = None,
        transactional_id: str = "groupscope-simulator",
    ) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        base = {"bootstrap.servers": bootstrap_servers, **(config or {})}
        self._producer = Producer({**base, "linger.ms": 20, "enable.idempotence": True})
        self._base = base
        self._transactional_id = transactional_id
        self._txn: Any = None
        self._errors: list[str] = []

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self._errors.append(str(err))

    def _produce(self, producer: Any, batch: Batch) -> None:
        topic, partition, timestamp = self.topic, batch.partition, batch.timestamp
        for key, value in zip(batch.keys, batch.values, strict=True):
            while True:
                try:
                    producer.produce(
                        topic,
                        value=value,
                        key=key,
                        partition=partition,
                        timestamp=timestamp,
                        on_delivery=self._on_delivery,
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
        producer.poll(0)
        self._raise_errors()

    def write(self, batch: Batch) -> None:
        self._produce(self._producer, batch)

    def write_transaction(self, batch: Batch, commit: bool) -> None:
        from confluent_kafka import Producer

        self._flush(self._producer)
        if self._txn is None:
            self._txn = Producer({**self._base, "transactional.id": self._transactional_id})
            self._txn.init_transactions(_TIMEOUT_S)
        self._txn.begin_transaction()
        self._produce(self._txn, batch)
        self._flush(self._txn)
        if commit:
            self._txn.commit_transaction(_TIMEOUT_S)
        else:
            self._txn.abort_transaction(_TIMEOUT_S)

    def _flush(self, producer: Any) -> None:
        remaining = producer.flush(_TIMEOUT_S)
        if remaining:
            raise RuntimeError(f"{remaining} records not delivered to {self.topic}")
        self._raise_errors()

    def _raise_errors(self) -> None:
        if self._errors:
            raise RuntimeError(f"producing to {self.topic} failed: {self._errors[0]}")

    def close(self) -> None:
        self._flush(self._producer)


def create_offsets_topic(
    bootstrap_servers: str,
    topic: str,
    partitions: int = 50,
    config: Mapping[str, str] | None = None,
) -> None:
    """Create `topic` with `partitions` partitions unless it exists."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap_servers, **(config or {})})
    if topic in admin.list_topics(timeout=_TIMEOUT_S).topics:
        return
    futures = admin.create_topics([NewTopic(topic, partitions, 1)])
    for future in futures.values():
        future.result(_TIMEOUT_S)
