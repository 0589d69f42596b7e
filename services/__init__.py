"""groupscope: observability for Apache Kafka consumer groups."""

__version__ = "0.1.0"
