"""Helpers for the dashboard tests: the dashboards' queries, Grafana's variable and macro
substitution and PromQL metric names. The YAML files are read with PyYAML.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "dashboards"
RULES = DASHBOARDS / "prometheus" / "rules.yml"
RULES_TEST = DASHBOARDS / "prometheus" / "rules.test.yml"
PROMETHEUS_CONFIG = DASHBOARDS / "prometheus" / "prometheus.yml"
GRAFANA = DASHBOARDS / "grafana"
DASHBOARD_FILES = sorted((GRAFANA / "dashboards").glob("*.json"))
DATASOURCES = GRAFANA / "provisioning" / "datasources" / "groupscope.yml"
PROVIDERS = GRAFANA / "provisioning" / "dashboards" / "groupscope.yml"

# What Grafana substitutes for the range and interval variables in the tests: the data
# of an end-to-end run spans well under an hour, scraped every second.
PROMQL_BUILTINS = {"__rate_interval": "30s", "__interval": "5s", "__range": "1h"}


@dataclass(frozen=True)
class Query:
    """One query of a dashboard: a panel target or an annotation."""

    dashboard: str
    panel: str
    ref: str
    datasource: dict[str, str]
    text: str  # PromQL expr or raw SQL
    fmt: str | None = None

    @property
    def is_sql(self) -> bool:
        return self.datasource.get("type") == "postgres"

    def __str__(self) -> str:
        return f"{self.dashboard} / {self.panel} / {self.ref}"


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def dashboards() -> dict[str, dict[str, Any]]:
    return {path.name: load(path) for path in DASHBOARD_FILES}


def all_panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those nested in collapsed rows."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def queries(name: str, dashboard: dict[str, Any]) -> Iterator[Query]:
    for panel in all_panels(dashboard):
        for target in panel.get("targets", []):
            ds = target.get("datasource") or panel["datasource"]
            text = target.get("expr") if "expr" in target else target.get("rawSql")
            yield Query(name, panel["title"], target["refId"], ds, text, target.get("format"))
    for annotation in dashboard.get("annotations", {}).get("list", []):
        target = annotation.get("target")
        if target and target.get("rawSql"):
            yield Query(
                name, f"annotation {annotation['name']}", target["refId"],
                annotation["datasource"], target["rawSql"], target.get("format"),
            )  # fmt: skip


def variables(dashboard: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The dashboard's template variables of a type: "query", "datasource", "textbox"."""
    return [v for v in dashboard["templating"]["list"] if v["type"] == kind]


def textbox_defaults() -> dict[str, list[str]]:
    """The default of every text box variable (the storm settings), as SQL values."""
    return {
        v["name"]: [v["current"]["value"]]
        for d in dashboards().values()
        for v in variables(d, "textbox")
    }


def resolve_datasource(dashboard: dict[str, Any], ref: dict[str, str]) -> dict[str, str]:
    """A data source reference with a `${variable}` uid resolved to the default of that
    datasource variable (what Grafana queries until someone picks another)."""
    m = re.fullmatch(r"\$\{(\w+)\}", ref["uid"])
    if not m:
        return ref
    [variable] = [v for v in variables(dashboard, "datasource") if v["name"] == m.group(1)]
    assert variable["query"] == ref["type"], (ref, variable)
    return {"type": ref["type"], "uid": variable["current"]["value"]}


def every_query() -> list[Query]:
    return [q for name, d in dashboards().items() for q in queries(name, d)]


# --- variables --------------------------------------------------------------------------
VARIABLE = re.compile(r"\$(?:\{(\w+)(?::(\w+))?\}|(\w+))")


def variables_used(text: str) -> set[str]:
    """Names of the $var, ${var} and ${var:format} references in `text`."""
    return {m.group(1) or m.group(3) for m in VARIABLE.finditer(text)}


def substitute_promql(expr: str, values: dict[str, str]) -> str:
    """Grafana's interpolation of a Prometheus query: one value per variable (a regex
    matcher takes a single value as it is; these test values have no regex characters)."""

    def replace(m: re.Match) -> str:
        name = m.group(1) or m.group(3)
        if name in PROMQL_BUILTINS:
            return PROMQL_BUILTINS[name]
        return values[name]

    return VARIABLE.sub(replace, expr)


def _sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def substitute_sql(sql: str, values: dict[str, list[str]], start: str, end: str) -> str:
    """Grafana's interpolation of a PostgreSQL query: the time macros over [start, end]
    (ISO 8601) and variables (`${v:sqlstring}` quotes and joins the values)."""
    sql = re.sub(r"\$__timeFilter\((\w+)\)", rf"\1 BETWEEN '{start}' AND '{end}'", sql)
    sql = sql.replace("$__timeFrom()", f"'{start}'").replace("$__timeTo()", f"'{end}'")
    if "$__" in sql:
        raise AssertionError(f"a Grafana macro the tests do not know: {sql}")

    def replace(m: re.Match) -> str:
        name, fmt = m.group(1) or m.group(3), m.group(2)
        if fmt != "sqlstring":
            raise AssertionError(f"use ${{{name}:sqlstring}} in SQL, not {m.group(0)}")
        return ",".join(_sql_literal(v) for v in values[name])

    return VARIABLE.sub(replace, sql)


# --- PromQL -----------------------------------------------------------------------------
PROMQL_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The metric names an expression selects (not its functions, labels or keywords)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    s = re.sub(r"\{[^}]*\}", " ", s)  # label matchers
    s = re.sub(r"\[[^\]]*\]", " ", s)  # ranges and subqueries
    s = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names = set()
    for m in re.finditer(r"(?<![\w:.])[A-Za-z_:][\w:]*", s):
        if s[m.end() :].lstrip().startswith("("):  # a function or an aggregation
            continue
        if m.group().lower() not in PROMQL_KEYWORDS:
            names.add(m.group())
    return names


# --- simple YAML ------------------------------------------------------------------------
