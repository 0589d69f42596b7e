"""The Prometheus configuration that docker-compose mounts, and the paths it mounts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.dashboards.grafana import (
    DASHBOARDS,
    DATASOURCES,
    PROMETHEUS_CONFIG,
    PROVIDERS,
    RULES,
)

MOUNTED_RULES = "/etc/prometheus/rules.yml"


def test_promtool_check_config(promtool_binary: str, tmp_path: Path) -> None:
    """The file as shipped, with the rules path that docker-compose mounts pointed at the
    repository's rules file."""
    text = PROMETHEUS_CONFIG.read_text()
    assert MOUNTED_RULES in text
    copy = tmp_path / "prometheus.yml"
    copy.write_text(text.replace(MOUNTED_RULES, str(RULES)))
    result = subprocess.run(
        [promtool_binary, "check", "config", str(copy)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 1 rule files found" in result.stdout


def test_config_scrapes_the_exporter_and_loads_the_rules() -> None:
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    assert config["rule_files"] == [MOUNTED_RULES]
    [job] = config["scrape_configs"]
    assert job["job_name"] == "groupscope"
    assert job["static_configs"] == [{"targets": ["exporter:9308"]}]


def test_the_paths_docker_compose_mounts_exist() -> None:
    """./dashboards/prometheus/prometheus.yml, ./dashboards/prometheus/rules.yml,
    ./dashboards/grafana/provisioning and ./dashboards/grafana/dashboards."""
    assert (DASHBOARDS / "prometheus" / "prometheus.yml").is_file()
    assert (DASHBOARDS / "prometheus" / "rules.yml").is_file()
    provisioning = DASHBOARDS / "grafana" / "provisioning"
    assert DATASOURCES.parent.parent == provisioning and DATASOURCES.is_file()
    assert PROVIDERS.parent.parent == provisioning and PROVIDERS.is_file()
    assert sorted(p.name for p in (DASHBOARDS / "grafana" / "dashboards").iterdir()) == [
        "group.json",
        "overview.json",
    ]
