"""dashboards/grafana/dashboards/*.json are what services/dashboards generates
(`make dashboards`)."""

from __future__ import annotations

from services import dashboards


def test_the_committed_dashboards_equal_what_the_code_generates() -> None:
    assert dashboards.stale() == [], "run 'make dashboards' and commit dashboards/grafana/"


def test_every_dashboard_is_generated() -> None:
    assert sorted(dashboards.DASHBOARDS) == sorted(
        p.name for p in dashboards.DIRECTORY.glob("*.json")
    )
