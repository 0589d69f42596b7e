"""The docs list every metric the exporter publishes and every shipped alert."""

from __future__ import annotations

import re
from pathlib import Path

from services.exporter.catalogue import METRICS

ROOT = Path(__file__).resolve().parents[2]


def test_every_metric_and_alert_is_documented() -> None:
    metrics = (ROOT / "docs" / "metrics.md").read_text()
    missing = [m.full_name for m in METRICS if f"`{m.full_name}`" not in metrics]
    assert missing == []
    alerts_page = (ROOT / "docs" / "alerts-and-dashboards.md").read_text()
    rules = (ROOT / "dashboards" / "prometheus" / "rules.yml").read_text()
    alerts = re.findall(r"^\s*- alert:\s*(\S+)", rules, re.MULTILINE)
    assert len(alerts) >= 8
    # Each row carries the anchor its runbook_url points at.
    rows = [f'| <a id="{a.lower()}"></a>{a} |' for a in alerts]
    assert [row for row in rows if row not in alerts_page] == []
