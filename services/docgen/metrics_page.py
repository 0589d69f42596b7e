"""`docs/metrics.md`: the exporter's metric catalogue as a page."""

from __future__ import annotations

from services.exporter.catalogue import METRICS, Metric

HEADER = """\
# Metrics

<!-- Generated from services/exporter/catalogue.py by `make docs`; do not edit. -->

For whoever writes queries, alerts and dashboards on groupscope's metrics. The exporter
serves them on `/metrics` (see [operations](operations.md#the-exporter) for the
endpoints and [alerts and dashboards](alerts-and-dashboards.md) for what ships with
them).

Every name starts with `groupscope_`. Labels are bounded: `group`, `topic`, and
`partition` only with `--per-partition`; never a member id. `reason` values are bounded
categories without numbers (e.g. `OffsetCommitValue v3: truncated`, `unknown record
type`); `source` names the job's source (one per job). prometheus-client's standard
collectors are there too, under their usual names: `process_resident_memory_bytes`,
`process_cpu_seconds_total`, `process_open_fds` and so on, `python_info` and
`python_gc_*` (before #18, `groupscope_exporter_process_*`).

| metric | type | labels | meaning |
|---|---|---|---|
"""

FOOTER = """
`groupscope_group_commits_total` counts offset commit records (tombstones included), every
one exactly once: the job keeps only a batch's latest commit per partition but counts the
ones it superseded, and a replayed batch adds nothing. Rates:
`rate(groupscope_group_commits_total[5m])`.
"""


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def row(metric: Metric) -> str:
    labels = ", ".join(metric.labels) or "-"
    meaning = metric.help + (" (with `--per-partition`)" if metric.per_partition else "")
    return f"| `{metric.full_name}` | {metric.kind} | {labels} | {cell(meaning)} |\n"


def render() -> str:
    return HEADER + "".join(row(m) for m in METRICS) + FOOTER
