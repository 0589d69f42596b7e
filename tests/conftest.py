"""Shared test configuration: fixture plugins live in tests/fixtures/.

Every test belongs to a tier, a marker that says which real part it starts, so that
`pytest -m unit` (`make test-fast`) is a quick loop and `-m "unit or postgres"` picks
parts (docs/testing.md, "Running them"). The tiers come from the fixtures a test uses
(`FIXTURE_TIERS`); tests that start a part themselves (a `groupscope stream` subprocess,
a JVM) say so with a module-level `pytestmark`. A test with no other tier is `unit`.
"""

from __future__ import annotations

import pytest

pytest_plugins = [
    "tests.fixtures.spark",
    "tests.fixtures.postgres",
    "tests.fixtures.kafka",
    "tests.fixtures.real_kafka",
    "tests.fixtures.prometheus",
    "tests.fixtures.spark_cluster",
]

UNIT = "unit"
HEAVY_TIERS = ("spark", "postgres", "broker", "prometheus", "cluster", "real_kafka")

# The fixture that starts (or finds) each real part. `fixturenames` holds a test's
# fixtures transitively, so `database_url` or `start_prometheus` count through these.
FIXTURE_TIERS = {
    "spark": "spark",
    "postgres_server": "postgres",
    "data_dir": "postgres",  # a directory for an embedded server the test starts itself
    "kafka_broker": "broker",
    "prometheus_binary": "prometheus",
    "promtool_binary": "prometheus",
    "real_kafka": "real_kafka",
    "start_real_kafka": "real_kafka",
    "spark_cluster": "cluster",
}


def heavy_tiers(item: pytest.Item) -> set[str]:
    """The tiers other than `unit` that `item` belongs to: marked, or by its fixtures."""
    marked = {tier for tier in HEAVY_TIERS if item.get_closest_marker(tier) is not None}
    fixtures = set(getattr(item, "fixturenames", ()))
    return marked | {tier for name, tier in FIXTURE_TIERS.items() if name in fixtures}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks each test with its tiers before `-m` deselects any (hence `tryfirst`)."""
    for item in items:
        tiers = heavy_tiers(item)
        if not tiers:
            item.add_marker(UNIT)
            continue
        if item.get_closest_marker(UNIT) is not None:
            raise pytest.UsageError(
                f"{item.nodeid} is marked unit but needs {', '.join(sorted(tiers))}"
            )
        for tier in tiers:
            if item.get_closest_marker(tier) is None:
                item.add_marker(tier)
