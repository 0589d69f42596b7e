"""Shared test configuration: fixture plugins live in tests/fixtures/."""

pytest_plugins = [
    "tests.fixtures.spark",
    "tests.fixtures.postgres",
    "tests.fixtures.kafka",
    "tests.fixtures.real_kafka",
    "tests.fixtures.prometheus",
    "tests.fixtures.spark_cluster",
]
