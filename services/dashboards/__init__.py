"""groupscope's Grafana dashboards as code: dashboards/grafana/dashboards/*.json are what
this package generates (`make dashboards`, or `python -m services.dashboards`), and
tests/dashboards/test_generated.py fails when the committed files differ.

Built with grafana-foundation-sdk, Grafana Labs' own dashboards-as-code library, rather
than grafanalib. The evidence, as of 2026-11:

- maintenance: grafana-foundation-sdk is generated from Grafana's schemas by Grafana Labs
  and released with them (the last release 2026-01, one build per Grafana version and one
  for Grafana "next", which is what the stack's Grafana 12.4 reads); grafanalib's last
  release, 0.7.1, is of 2024-01, and its panels predate the current schemas.
- Python 3.11: both install on it; the SDK ships type hints (py.typed), so mypy checks
  this package as it does the rest of services/; grafanalib has none.
- coverage: the SDK types the stat, time series, bar gauge and table panels, Prometheus
  targets and the datasource, query and text box variables this project uses. It has no
  builder for PostgreSQL targets (nor does it type annotation targets beyond Grafana's
  own data source); panels.Sql and panels.SqlAnnotation supply them through the SDK's
  Dataquery and AnnotationTarget types, as the SDK intends for other data sources.
  grafanalib has SQL targets, but not the datasource variables by uid this change needs.

The SDK's versions are `<timestamp>` for Grafana "next" and `<timestamp>!<grafana
version>` for the older Grafanas; pyproject.toml asks for the former (`<1!0`), since a
plain `pip install grafana-foundation-sdk` would pick a Grafana 10.1 build.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import dashboard as builders
from grafana_foundation_sdk.cog.encoder import JSONEncoder

from services.dashboards import group, overview

ROOT = Path(__file__).resolve().parents[2]
DIRECTORY = ROOT / "dashboards" / "grafana" / "dashboards"
DASHBOARDS: dict[str, Callable[[], builders.Dashboard]] = {
    "overview.json": overview.build,
    "group.json": group.build,
}


def as_json(board: builders.Dashboard) -> dict[str, Any]:
    """The dashboard as Grafana's JSON model. Panel ids follow the panels' order; a query
    variable's `definition` (the string Grafana's editor shows) repeats its query, a field
    the SDK's variable model does not have."""
    model: dict[str, Any] = json.loads(json.dumps(board.build(), cls=JSONEncoder))
    for number, panel in enumerate(model["panels"], start=1):
        panel["id"] = number
    for variable in model["templating"]["list"]:
        if variable["type"] == "query":
            variable["definition"] = variable["query"]
    return model


def render(name: str) -> str:
    return json.dumps(as_json(DASHBOARDS[name]()), indent=2, ensure_ascii=False) + "\n"


def stale() -> list[str]:
    """The committed dashboards that differ from what the code generates."""
    return [
        name
        for name in DASHBOARDS
        if not (DIRECTORY / name).exists() or (DIRECTORY / name).read_text() != render(name)
    ]


def write() -> list[str]:
    """Write every dashboard; returns the names of those that changed."""
    changed = stale()
    for name in changed:
        (DIRECTORY / name).write_text(render(name))
    return changed
