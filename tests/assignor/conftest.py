"""The ``kafka_assignors`` fixture: Apache Kafka's own assignors in a JVM (``kafka_java``)."""

from tests.assignor.kafka_java import kafka_assignors

__all__ = ["kafka_assignors"]
