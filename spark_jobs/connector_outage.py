"""Broker outages under Spark's Kafka connector (`--source spark-kafka`).

The driver asks the broker whether it answers through Kafka's Java AdminClient in the
driver's JVM: the connector's own client library, with the very properties the
connector reads with (Java client properties, which librdkafka's, the own source's
probe, do not share: `sasl.jaas.config`, trust stores). A broker that does not answer
is an outage (`spark_jobs.dependencies.BrokerWatch`), as for the own source.

The connector itself only retries: its driver's offset reader tries
`fetchOffset.numRetries` times (3), each attempt blocking in `KafkaConsumer.position`
for `default.api.timeout.ms` (60 s), and a task's fetch waits
`kafkaConsumer.pollTimeoutMs` (`spark.network.timeout`, 120 s); then the query fails.
The job restarts such a query from its checkpoint once the broker answers again
(`spark_jobs.stream`). While the broker is away the connector's and the Kafka
clients' warnings (one per reconnect, a stack trace per failed attempt) are quieted;
the job logs the outage once instead.
"""

from __future__ import annotations

from typing import Any

from spark_jobs.broker import PROBE_TIMEOUT_S

# A warning per failed connect of every Kafka client (about one a second each): quiet
# for good, as the own source keeps librdkafka's connection errors out of the log.
CONNECTS = "org.apache.kafka.clients.NetworkClient"
# The loggers that repeat an outage while it lasts: the Kafka clients' and Spark's
# around a failed batch (the offset reader's retries, failed tasks, the query's end).
NOISY = (
    "org.apache.kafka",
    "org.apache.spark.sql.kafka010",
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.sql.execution.streaming",
)


class JavaBrokerProbe:
    """`problem()` for one topic, answered by a Java `Admin` client in the driver's JVM
    (DescribeTopics with a timeout): None when the broker answers with the topic's
    partitions, else why not, in one line."""

    def __init__(self, spark: Any, config: dict[str, str], topic: str) -> None:
        jvm = spark.sparkContext._jvm
        self.topic = topic
        self._jvm = jvm
        known = jvm.org.apache.kafka.clients.admin.AdminClientConfig.configNames()
        properties = jvm.java.util.Properties()
        for key, value in config.items():
            if known.contains(key):  # consumer-only properties would be logged as unused
                properties.setProperty(key, str(value))
        self._admin = jvm.org.apache.kafka.clients.admin.Admin.create(properties)

    def problem(self, timeout: float = PROBE_TIMEOUT_S) -> str | None:
        from py4j.protocol import Py4JJavaError

        jvm = self._jvm
        millis = int(timeout * 1000)
        options = jvm.org.apache.kafka.clients.admin.DescribeTopicsOptions().timeoutMs(millis)
        names = jvm.java.util.Collections.singletonList(self.topic)
        try:
            found = (
                self._admin.describeTopics(names, options)
                .allTopicNames()
                .get(millis + 1000, jvm.java.util.concurrent.TimeUnit.MILLISECONDS)
            )
        except Py4JJavaError as exc:
            return _reason(exc.java_exception)
        description = found.get(self.topic)
        if description is None or description.partitions().isEmpty():
            return f"topic {self.topic!r} not available: no metadata"
        return None

    def close(self) -> None:
        self._admin.close()


def _reason(error: Any) -> str:
    """The Kafka error inside a future's ExecutionException, as its class and message."""
    cause = error.getCause() or error
    name = cause.getClass().getSimpleName()
    message = cause.getMessage()
    return f"{name}: {message}" if message else name


class QuietConnector:
    """Keeps failed connects out of the log (`CONNECTS`), and turns the `NOISY` loggers
    of the driver's JVM off while the broker is away, back to what they were once it
    answers (in local mode the executors share that
    JVM; on a cluster their logs stay on the executors)."""

    def __init__(self, spark: Any) -> None:
        self._jvm = spark.sparkContext._jvm
        self._saved: dict[str, Any] | None = None
        log4j = self._jvm.org.apache.logging.log4j
        log4j.core.config.Configurator.setLevel(CONNECTS, log4j.Level.ERROR)

    def on(self) -> None:
        if self._saved is not None:
            return
        log4j = self._jvm.org.apache.logging.log4j
        configurator = log4j.core.config.Configurator
        self._saved = {name: log4j.LogManager.getLogger(name).getLevel() for name in NOISY}
        for name in NOISY:
            configurator.setLevel(name, log4j.Level.OFF)

    def off(self) -> None:
        if self._saved is None:
            return
        configurator = self._jvm.org.apache.logging.log4j.core.config.Configurator
        for name, level in self._saved.items():
            configurator.setLevel(name, level)
        self._saved = None
