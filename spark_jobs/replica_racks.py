"""Each partition's replica racks, asked of the cluster, for rack-aware baselines.

Kafka's client-side assignors assign by rack (KIP-881) when members state `client.rack`
and the partitions' replicas lie on racks that differ
(`AbstractPartitionAssignor.useRackAwareAssignment`). The members' racks are in
`__consumer_offsets`; the replicas' racks are cluster metadata. The tracker stays pure, so
the job's driver asks the cluster for the topics of a batch's rack-aware generations
(`GenerationTracker.rack_topics`) and hands the answer to the tracker
(`GenerationTracker.partition_racks`). The racks are the cluster's when the batch is
processed, not when the record was written: a backfill over a period whose replica
placement changed is measured on today's placement.

One DescribeTopics request names every replica's broker with its rack. The answer is
cached: a topic is asked again when a batch assigns more of its partitions than the
cluster had (partitions added), and every topic a batch wants at most every REFRESH_S
otherwise (a reassignment moves replicas). A lookup never stops the stream: on a broker
error it is logged once, the baselines use what is cached (a topic never answered gets
none: the rackless baseline) and the cluster is asked again after RETRY_AFTER_S.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from spark_jobs.cluster_lookup import ClusterLookup

log = logging.getLogger("groupscope.replica_racks")

TIMEOUT_S = 10.0
RETRY_AFTER_S = 30.0  # after a failed lookup, batches use the cache this long
REFRESH_S = 300.0  # a topic's racks are asked again at most this often, unless it grew

Racks = list[tuple[str, ...]]  # each partition's replica racks, in partition order


class ReplicaRacks:
    """Topic -> each partition's replica racks, from the cluster, cached (see the module)."""

    def __init__(
        self,
        config: dict[str, Any],
        timeout: float = TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`config`: the job's Kafka client properties, `bootstrap.servers` included."""
        self._cluster = ClusterLookup(
            config, log, "baselines will not assign by rack", RETRY_AFTER_S, clock
        )
        self._timeout = timeout
        self._clock = clock
        self.racks: dict[str, Racks] = {}
        self._asked: dict[str, int] = {}  # topic -> the partitions wanted when last asked
        self._refresh_at = 0.0
        self._said: set[str] = set()  # topics whose error was logged

    def lookup(self, wanted: Mapping[str, int]) -> dict[str, Racks]:
        """The racks of those `wanted` topics (topic -> partitions the batch assigns) the
        cluster described; asks it for the topics it has not been asked about, that
        grew since, or all of them once REFRESH_S has passed."""
        due = self._clock() >= self._refresh_at
        if due:
            self._asked.clear()
        ask = sorted(t for t, n in wanted.items() if n > self._asked.get(t, -1))
        if ask and self._cluster.ready() and self._describe(ask, wanted) and due:
            self._refresh_at = self._clock() + REFRESH_S
        return {t: self.racks[t] for t in wanted if t in self.racks}

    def _describe(self, topics: list[str], wanted: Mapping[str, int]) -> bool:
        """Asks the cluster for `topics`; False when it did not answer."""
        from confluent_kafka import KafkaError, KafkaException, TopicCollection

        topic_errors = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_AUTHORIZATION_FAILED)
        described: dict[str, Racks] = {}
        refused: dict[str, str] = {}
        try:
            futures = self._cluster.admin.describe_topics(
                TopicCollection(topics), request_timeout=self._timeout
            )
            for name, future in futures.items():
                try:
                    partitions = sorted(future.result().partitions, key=lambda p: p.id)
                except KafkaException as exc:
                    if exc.args and exc.args[0].code() in topic_errors:
                        refused[name] = exc.args[0].str()
                        continue
                    raise
                described[name] = [
                    tuple(sorted({n.rack for n in p.replicas if n.rack})) for p in partitions
                ]
        except KafkaException as exc:
            self._cluster.failed(f"cannot describe topics {topics} (rackless baselines): {exc}")
            return False
        self._cluster.answered()
        for topic in topics:
            self._asked[topic] = max(wanted[topic], len(described.get(topic, ())))
            self.racks.pop(topic, None)
        self.racks.update(described)
        new = {t: why for t, why in refused.items() if t not in self._said}
        if new:
            log.warning("no replica racks for %s (rackless baselines)", new)
            self._said |= new.keys()
        return True
