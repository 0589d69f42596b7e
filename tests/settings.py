"""The variables the tests read, in one place (docs/configuration.md, "Development").

Read when asked, not at import, because tests set them with `monkeypatch`. Nothing
else under `tests/` reads a `GROUPSCOPE_*` variable: a test that starts `groupscope`
passes variables to it, which is not reading them.

A required part (Apache Kafka and Java, Prometheus) that cannot be had skips the test
on a developer's machine and fails it where the matching `GROUPSCOPE_REQUIRE_*`
variable is set, as `.ci/run` does: CI never passes by skipping.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_KAFKA = "GROUPSCOPE_REQUIRE_KAFKA"
REQUIRE_PROMETHEUS = "GROUPSCOPE_REQUIRE_PROMETHEUS"


def _set(name: str) -> bool:
    """Set to anything but empty or 0."""
    return os.environ.get(name, "") not in ("", "0")


def kafka_required() -> bool:
    """GROUPSCOPE_REQUIRE_KAFKA: the `real_kafka` tests (and those needing Java or
    Kafka's jars) fail instead of skipping."""
    return _set(REQUIRE_KAFKA)


def prometheus_required() -> bool:
    """GROUPSCOPE_REQUIRE_PROMETHEUS: the Prometheus tests fail instead of skipping."""
    return _set(REQUIRE_PROMETHEUS)


def external_database_url() -> str | None:
    """GROUPSCOPE_TEST_DATABASE_URL: a maintenance database of an external PostgreSQL
    server instead of the embedded one."""
    return os.environ.get("GROUPSCOPE_TEST_DATABASE_URL") or None


def external_bootstrap_servers() -> str | None:
    """GROUPSCOPE_TEST_BOOTSTRAP_SERVERS: a running Kafka-protocol broker instead of
    tansu."""
    return os.environ.get("GROUPSCOPE_TEST_BOOTSTRAP_SERVERS") or None


def kafka_unavailable(reason: str) -> NoReturn:
    """Skip the test for `reason`, or fail it where GROUPSCOPE_REQUIRE_KAFKA is set."""
    _unavailable(reason, kafka_required(), REQUIRE_KAFKA)


def prometheus_unavailable(reason: str) -> NoReturn:
    """Skip the test for `reason`, or fail it where GROUPSCOPE_REQUIRE_PROMETHEUS is set."""
    _unavailable(reason, prometheus_required(), REQUIRE_PROMETHEUS)


def _unavailable(reason: str, required: bool, variable: str) -> NoReturn:
    if required:
        pytest.fail(f"{reason} ({variable} is set)", pytrace=False)
    pytest.skip(reason)
