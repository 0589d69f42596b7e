"""The Prometheus rules: promtool checks and unit tests, and a real Prometheus loading
them (every alert labelled and annotated, every metric from the exporter's catalogue)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from services.exporter.catalogue import BY_NAME
from tests.dashboards.grafana import RULES, RULES_TEST, metric_names
from tests.fixtures.prometheus import Prometheus

RUNBOOK_URL = "https://github.com/groupscope/groupscope/blob/main/docs/alerts-and-dashboards.md#"
ALERTS_PAGE = RULES.parents[2] / "docs" / "alerts-and-dashboards.md"
ALERTS = re.findall(r"^\s*- alert: (\w+)$", RULES.read_text(), re.M)
SEVERITIES = {"critical", "warning", "info"}


def promtool(binary: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [binary, *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )


def test_the_rules_file_defines_the_alerts_the_issue_asks_for() -> None:
    assert len(ALERTS) == len(set(ALERTS)) >= 10
    for needed in (
        "GroupscopeRebalanceStorm",
        "GroupscopeExcessChurn",
        "GroupscopeGroupStuckEmpty",
        "GroupscopeGroupStuckRebalancing",
        "GroupscopeLagGrowing",
        "GroupscopeTimeLagHigh",
        "GroupscopeCommitsStopped",
        "GroupscopeDecodeFailures",
        "GroupscopePipelineBehind",
        "GroupscopePipelineDown",
    ):
        assert needed in ALERTS


def test_promtool_check_rules(promtool_binary: str) -> None:
    result = promtool(promtool_binary, "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(ALERTS) + 3} rules found" in result.stdout


def test_promtool_unit_tests_pass(promtool_binary: str) -> None:
    result = promtool(promtool_binary, "test", "rules", str(RULES_TEST))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def with_expr(rules: str, alert: str, expr: str) -> str:
    """The rules file with `alert`'s expression (one line or a `|` block) replaced."""
    lines = rules.splitlines()
    start = lines.index(f"      - alert: {alert}")
    at = next(i for i in range(start, len(lines)) if lines[i].strip().startswith("expr:"))
    end = at + 1
    if lines[at].rstrip().endswith("|"):
        indent = len(lines[at]) - len(lines[at].lstrip())
        while end < len(lines) and (
            not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
        ):
            end += 1
    head = lines[at][: lines[at].index("expr:")]
    return "\n".join([*lines[:at], f"{head}expr: {expr}", *lines[end:]]) + "\n"


@pytest.mark.parametrize("alert", ALERTS)
def test_the_unit_tests_catch_an_alert_that_always_or_never_fires(
    alert: str, promtool_binary: str, tmp_path: Path
) -> None:
    """Every alert's tests include a case where it must fire and one where it must not:
    replacing its expression by one that always (or never) holds fails them."""
    shutil.copy(RULES_TEST, tmp_path / "rules.test.yml")
    rules = RULES.read_text()
    for expr in ("vector(1)", "vector(1) == 0"):
        (tmp_path / "rules.yml").write_text(with_expr(rules, alert, expr))
        result = promtool(promtool_binary, "test", "rules", "rules.test.yml", cwd=tmp_path)
        assert result.returncode != 0, f"{alert} with `{expr}` still passes its tests"
        assert f"alertname: {alert}," in result.stdout + result.stderr


@pytest.fixture(scope="module")
def idle_prometheus(start_prometheus) -> Prometheus:
    """Prometheus with the rules, scraping nothing that answers."""
    return start_prometheus("127.0.0.1:9", rule_files=[RULES])


def loaded_rules(server: Prometheus) -> list[dict]:
    def evaluated() -> list[dict] | None:
        groups = server.rule_groups()
        rules = [r for g in groups for r in g["rules"]]
        return (
            rules
            if rules and all(r.get("lastEvaluation", "0001")[:4] != "0001" for r in rules)
            else None
        )

    return server.wait_for(evaluated, 30, "one evaluation of every rule")


def test_prometheus_loads_and_evaluates_every_rule(idle_prometheus: Prometheus) -> None:
    groups = idle_prometheus.rule_groups()
    assert [g["name"] for g in groups] == ["groupscope"]
    rules = loaded_rules(idle_prometheus)
    assert sorted(r["name"] for r in rules if r["type"] == "alerting") == sorted(ALERTS)
    for rule in rules:
        assert rule["health"] == "ok", rule


def test_every_alert_has_a_severity_a_summary_a_description_and_a_runbook_url(
    idle_prometheus: Prometheus,
) -> None:
    page = ALERTS_PAGE.read_text()
    for rule in loaded_rules(idle_prometheus):
        if rule["type"] != "alerting":
            continue
        name, annotations = rule["name"], rule["annotations"]
        assert rule["labels"].get("severity") in SEVERITIES, name
        assert set(annotations) == {"summary", "description", "runbook_url"}, name
        description = annotations["description"]
        assert "\n" not in description and len(description) > 80, name
        assert "Threshold" in description, f"{name}: explain the threshold"
        # The runbook is the alert's row of the docs, by a stable anchor that exists.
        assert annotations["runbook_url"] == RUNBOOK_URL + name.lower(), name
        assert f'<a id="{name.lower()}"></a>{name} |' in page, name
        # An alert about groups names its group in both text annotations.
        per_group = any(
            "group" in BY_NAME[m].labels for m in metric_names(rule["query"]) if m in BY_NAME
        )
        if per_group:
            for key in ("summary", "description"):
                assert "{{ $labels.group }}" in annotations[key], f"{name} {key}"


def test_rules_use_only_metrics_of_the_exporter_catalogue_and_up(
    idle_prometheus: Prometheus,
) -> None:
    rules = loaded_rules(idle_prometheus)
    recorded = {r["name"] for r in rules if r["type"] == "recording"}
    assert recorded and all(":" in name for name in recorded)  # the naming convention
    used: set[str] = set()
    for rule in rules:
        names = metric_names(rule["query"])
        assert names, rule["query"]
        # Besides, Prometheus's own `up` of the groupscope scrape job (exporter down).
        known = set(BY_NAME) | recorded | {"up"}
        assert names <= known, f"{rule['name']}: {names - known}"
        used |= names
    # Per-partition series exist only behind --per-partition: alerts must not need them.
    assert not {m for m in used if m in BY_NAME and BY_NAME[m].per_partition}
