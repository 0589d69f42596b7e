"""rate(), irate() and increase() only on counters, in the alert rules and the dashboards.

On a gauge these functions read every decrease as a counter reset and invent growth;
deriv() (or delta()) is the function for gauges. Each call's argument may hold several
metrics (`increase(sum(x_total)[5m:])`): all must be counters of the exporter's
catalogue, or recording rules that record only counters.
"""

from __future__ import annotations

import re

import pytest
import yaml

from services.exporter.catalogue import BY_NAME
from tests.dashboards.grafana import RULES, every_query, metric_names

COUNTER_ONLY = re.compile(r"\b(rate|irate|increase)\s*\(")


def calls(expr: str) -> list[tuple[str, str]]:
    """Every (function, argument text) of rate(), irate() and increase() in `expr`."""
    found = []
    for m in COUNTER_ONLY.finditer(expr):
        depth, at = 1, m.end()
        while depth:
            if at == len(expr):
                raise AssertionError(f"unbalanced parentheses: {expr}")
            depth += {"(": 1, ")": -1}.get(expr[at], 0)
            at += 1
        found.append((m.group(1), expr[m.end() : at - 1]))
    return found


def rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def rule_expressions() -> dict[str, str]:
    """Every rule's expression by its name (`record` or `alert`)."""
    return {r.get("record") or r["alert"]: r["expr"] for r in rules()}


def recorded_rules() -> dict[str, str]:
    return {r["record"]: r["expr"] for r in rules() if "record" in r}


def is_counter(name: str, recorded: dict[str, str]) -> bool:
    """A catalogue counter, or a recording rule whose metrics are all counters."""
    if name in recorded:
        names = metric_names(recorded[name])
        return bool(names) and all(is_counter(n, recorded) for n in names)
    metric = BY_NAME.get(name)
    return metric is not None and metric.kind == "counter"


def offenders(expr: str, recorded: dict[str, str]) -> list[str]:
    return [
        f"{function}() of {name}"
        for function, argument in calls(expr)
        for name in sorted(metric_names(argument))
        if not is_counter(name, recorded)
    ]


def expressions() -> list[tuple[str, str]]:
    """(where, PromQL) for every rule and every Prometheus query of the dashboards."""
    rules = [(f"rules.yml {name}", expr) for name, expr in rule_expressions().items()]
    panels = [(str(q), q.text) for q in every_query() if not q.is_sql]
    return rules + panels


def test_the_check_finds_gauges_under_counter_functions() -> None:
    recorded = recorded_rules()
    assert offenders("rate(groupscope_lag_sum[5m])", recorded) == ["rate() of groupscope_lag_sum"]
    assert offenders('sum(irate(groupscope_lag_seconds{group="a"}[1m])) by (topic)', recorded)
    assert offenders("increase(group:groupscope_lag:sum[1h])", recorded)
    assert offenders("increase(nonexistent_total[1h])", recorded)
    assert not offenders("increase(sum(groupscope_group_rebalances_total)[5m:])", recorded)
    assert not offenders("increase(group:groupscope_rebalances:sum[1h])", recorded)
    assert not offenders(
        "deriv(groupscope_lag_sum[15m]) > 0 and groupscope_lag_sum > 1000", recorded
    )


def test_there_are_expressions_and_counter_functions_to_check() -> None:
    found = [call for _, expr in expressions() for call in calls(expr)]
    assert len(expressions()) > 50
    assert {function for function, _ in found} >= {"rate", "increase"}


@pytest.mark.parametrize(("where", "expr"), expressions(), ids=lambda v: v[:60])
def test_counter_functions_only_take_counters(where: str, expr: str) -> None:
    assert offenders(expr, recorded_rules()) == [], where
