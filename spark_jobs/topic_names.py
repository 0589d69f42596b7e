"""Topic names for the topic ids of KIP-848 assignments, asked of the cluster.

Kafka 4.x writes a KIP-848 group's target assignment (ConsumerGroupTargetAssignmentMember)
with topic ids and no longer writes the ConsumerGroupPartitionMetadata record that named
them (a metadata hash in ConsumerGroupMetadataValue replaced it). The generation tracker
stays pure, so the job's driver asks the cluster for the names it lacks and hands them to
the tracker (`GenerationTracker.topic_names`). A lookup never stops the stream: on a broker
error the ids stay ids (logged once) and are asked again later; an id the cluster does not
know (a deleted topic) stays an id and is not asked again.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from spark_jobs.cluster_lookup import ClusterLookup

log = logging.getLogger("groupscope.topic_names")

TIMEOUT_S = 10.0
RETRY_AFTER_S = 30.0  # after a failed lookup, batches keep the ids this long
MASK = (1 << 64) - 1


def kafka_uuid(topic_id: Any) -> str:
    """A confluent-kafka `Uuid` as Kafka's `Uuid.toString()` writes it, which is how the
    codec decodes one: URL-safe base64 of the 16 bytes, unpadded. (`str()` of a `Uuid`
    is librdkafka's standard base64, with `+` and `/`: not the same string.)"""
    raw = (topic_id.get_most_significant_bits() & MASK).to_bytes(8, "big") + (
        topic_id.get_least_significant_bits() & MASK
    ).to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


class TopicNames:
    """Topic id -> name from the cluster's metadata, cached for the job's lifetime.

    One lookup describes every topic (ListTopics, then DescribeTopics: librdkafka describes
    topics by name only), so one call names all ids of a batch at once.
    """

    def __init__(
        self,
        config: dict[str, Any],
        timeout: float = TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`config`: the job's Kafka client properties, `bootstrap.servers` included. A
        property librdkafka refuses (a Java-only one given to `--source spark-kafka`)
        leaves the ids as ids, said once, rather than stopping the job."""
        self._cluster = ClusterLookup(
            config, log, "KIP-848 topic ids will not be named (kept as ids)", RETRY_AFTER_S, clock
        )
        self._timeout = timeout
        self.names: dict[str, str] = {}
        self.unknown: set[str] = set()  # ids the cluster did not know: deleted topics

    def resolve(self, ids: Iterable[str]) -> dict[str, str]:
        """Names for those of `ids` the cluster knows; asks it only for ids not asked
        about before, and not within RETRY_AFTER_S of a failed lookup."""
        wanted = set(ids) - self.unknown
        missing = wanted - self.names.keys()
        if missing and self._cluster.ready():
            self._lookup(missing)
        return {i: self.names[i] for i in wanted if i in self.names}

    def _lookup(self, missing: set[str]) -> None:
        from confluent_kafka import KafkaException, TopicCollection

        try:
            admin = self._cluster.admin
            topics = list(admin.list_topics(timeout=self._timeout).topics)
            futures = (
                admin.describe_topics(TopicCollection(topics), request_timeout=self._timeout)
                if topics
                else {}
            )
            described = {}
            for name, future in futures.items():
                try:
                    described[kafka_uuid(future.result().topic_id)] = name
                except KafkaException:
                    continue  # deleted since it was listed
        except KafkaException as exc:
            self._cluster.failed(
                f"cannot name KIP-848 topic ids {sorted(missing)} (kept as ids): {exc}"
            )
            return
        self._cluster.answered()
        self.names.update(described)
        gone = missing - described.keys()
        if gone:
            log.warning("topic ids %s name no topic in the cluster (kept as ids)", sorted(gone))
            self.unknown |= gone
