"""The overview dashboard (overview.json): every consumer group, storms, churn against
the sticky baseline, lag, and the groupscope pipeline itself."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as builders
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as models

from services.dashboards.panels import (
    CHURN,
    EXCESS,
    FLAG,
    GROUP_DASHBOARD,
    PROMETHEUS_UID,
    PROMETHEUS_VARIABLE,
    TIME_LAG,
    bargauge_panel,
    dashboard,
    data_links,
    datasource_variable,
    drill_down,
    in_a_storm,
    levels,
    link,
    prom,
    query_variable,
    row,
    stat_panel,
    storm_cells,
    storm_series,
    table_panel,
    timeseries_panel,
    unit,
    value_map,
)


def build() -> builders.Dashboard:
    return (
        dashboard(
            "groupscope-overview",
            "groupscope: overview",
            "Kafka consumer groups: rebalance storms, churn against Kafka's sticky assignor, "
            "lag and the health of the groupscope pipeline.",
        )
        .link(link("Consumer group", GROUP_DASHBOARD, "Per-group drill-down"))
        .with_variable(
            datasource_variable(PROMETHEUS_VARIABLE, "prometheus", PROMETHEUS_UID, "Prometheus")
        )
        .with_variable(
            query_variable(
                "cluster",
                "Kafka clusters (the streaming jobs' --cluster)",
                "label_values(groupscope_group_info, cluster)",
                multi=True,
                all_value=".*",
            )
        )
        .with_variable(
            query_variable(
                "group",
                "Consumer groups",
                'label_values(groupscope_group_info{cluster=~"$cluster"}, group)',
                multi=True,
                all_value=".*",
            )
        )
        .with_variable(
            query_variable(
                "topic",
                "Topics the selected groups commit offsets for",
                'label_values(groupscope_committed_offset_sum{cluster=~"$cluster", '
                'group=~"$group"}, topic)',
                multi=True,
                all_value=".*",
            )
        )
        .with_row(row("Consumer groups"))
        .with_panel(
            stat_panel(
                "Groups",
                "Consumer groups in the history store that have not been deleted.",
                [
                    prom(
                        'count(groupscope_group_info{cluster=~"$cluster", group=~"$group", '
                        'state!="dead"})'
                    )
                ],
                (3, 5),
            )
        )
        .with_panel(
            stat_panel(
                "Groups in a storm",
                (
                    "Groups in a rebalance storm: the exporter's storm flag, "
                    "groupscope_group_storm, set while a group has had "
                    "--storm-rebalances disruptive rebalances within --storm-window (5 "
                    "within 10m by default), as the storm alert reads it."
                ),
                [prom('sum(groupscope_group_storm{cluster=~"$cluster", group=~"$group"})')],
                (3, 5),
                steps=FLAG,
            )
        )
        .with_panel(
            stat_panel(
                "Disruptive rebalances",
                (
                    "Rebalances of the selected groups during the time range in "
                    "which running members lost partitions, the ones storms count "
                    "(a cooperative two-round episode counts once; a group's "
                    "formation and leaves that took nothing from anyone do not)."
                ),
                [
                    prom(
                        "sum(increase(groupscope_group_disruptive_rebalances_total"
                        '{cluster=~"$cluster", group=~"$group"}[$__range]))'
                    )
                ],
                (3, 5),
                decimals=0,
            )
        )
        .with_panel(
            stat_panel(
                "Excess moves",
                (
                    "Partition moves during the time range beyond what Kafka's "
                    "sticky assignor would have made (actual minus baseline)."
                ),
                [
                    prom(
                        'sum(increase(groupscope_group_partition_moves_total{cluster=~"$cluster", '
                        'group=~"$group", '
                        'kind="actual"}[$__range])) - '
                        'sum(increase(groupscope_group_partition_moves_total{cluster=~"$cluster", '
                        'group=~"$group", '
                        'kind="baseline"}[$__range]))'
                    )
                ],
                (3, 5),
                steps=levels(orange=10, red=100),
                decimals=0,
            )
        )
        .with_panel(
            stat_panel(
                "Worst time lag",
                (
                    "The largest estimated age of a committed position over the "
                    "selected groups and topics."
                ),
                [
                    prom(
                        'max(groupscope_lag_seconds{cluster=~"$cluster", group=~"$group", '
                        'topic=~"$topic"})'
                    )
                ],
                (3, 5),
                unit="s",
                steps=TIME_LAG,
            )
        )
        .with_panel(
            stat_panel(
                "Pipeline",
                (
                    "Whether the streaming job has processed everything "
                    "__consumer_offsets had (every source)."
                ),
                [prom('min(groupscope_pipeline_caught_up{cluster=~"$cluster"})')],
                (3, 5),
                mappings=value_map(("behind", "red"), ("caught up", "green")),
            )
        )
        .with_panel(
            timeseries_panel(
                "Groups by state",
                (
                    "stable, empty (no members), rebalancing (a cooperative "
                    "revocation round not yet completed), dead (deleted)."
                ),
                [
                    prom(
                        'count by (state) (groupscope_group_info{cluster=~"$cluster", '
                        'group=~"$group"})',
                        "{{state}}",
                    )
                ],
                (6, 5),
                stacked=True,
            )
        )
        .with_panel(
            table_panel(
                "Consumer groups",
                "One row per group; click a group for its drill-down dashboard.",
                [
                    prom(
                        'groupscope_group_info{cluster=~"$cluster", group=~"$group"}',
                        table_format=True,
                    ),
                    prom(
                        'groupscope_group_members{cluster=~"$cluster", group=~"$group"}',
                        table_format=True,
                    ),
                    prom(
                        'groupscope_group_generation{cluster=~"$cluster", group=~"$group"}',
                        table_format=True,
                    ),
                    prom(
                        'groupscope_group_rebalances_in_storm_window{cluster=~"$cluster", '
                        'group=~"$group"}',
                        table_format=True,
                    ),
                    prom(
                        'groupscope_group_last_churn_ratio{cluster=~"$cluster", group=~"$group"}',
                        table_format=True,
                    ),
                    prom(
                        (
                            "sum by (cluster, group) "
                            '(groupscope_lag_sum{cluster=~"$cluster", group=~"$group", '
                            'topic=~"$topic"})'
                        ),
                        table_format=True,
                    ),
                    prom(
                        (
                            "max by (cluster, group) "
                            '(groupscope_lag_seconds{cluster=~"$cluster", '
                            'group=~"$group", '
                            'topic=~"$topic"})'
                        ),
                        table_format=True,
                    ),
                    prom(
                        "time() - groupscope_group_last_rebalance_timestamp_seconds"
                        '{cluster=~"$cluster", group=~"$group"}',
                        table_format=True,
                    ),
                    prom(
                        'groupscope_group_storm{cluster=~"$cluster", group=~"$group"}',
                        table_format=True,
                    ),
                ],
                (24, 9),
                overrides=[
                    ("group", [data_links(drill_down("${__value.text}"))]),
                    ("last churn ratio", [unit("percentunit")]),
                    ("time lag", [unit("s")]),
                    ("since last rebalance", [unit("s")]),
                    ("storm", storm_cells()),
                ],
                transformations=[
                    models.DataTransformerConfig(id_val="merge", options={}),
                    models.DataTransformerConfig(
                        id_val="organize",
                        options={
                            "excludeByName": {
                                "Time": True,
                                "__name__": True,
                                "job": True,
                                "instance": True,
                                "Value #A": True,
                            },
                            "indexByName": {
                                "group": 0,
                                "state": 1,
                                "type": 2,
                                "protocol": 3,
                                "assignor": 4,
                            },
                            "renameByName": {
                                "Value #B": "members",
                                "Value #C": "generation",
                                "Value #D": "disruptive in storm window",
                                "Value #E": "last churn ratio",
                                "Value #F": "offset lag",
                                "Value #G": "time lag",
                                "Value #H": "since last rebalance",
                                "Value #I": "storm",
                            },
                        },
                    ),
                ],
            )
        )
        .with_row(row("Rebalance storms"))
        .with_panel(
            timeseries_panel(
                "Rebalances within the storm window",
                (
                    "Per group, disruptive rebalances within the exporter's last "
                    "--storm-window (10m by default); the red series are the "
                    "groups in a storm (the exporter's storm flag, as its "
                    "--storm-rebalances and --storm-window set it)."
                ),
                [
                    prom(
                        'groupscope_group_rebalances_in_storm_window{cluster=~"$cluster", '
                        'group=~"$group"}',
                        "{{cluster}}/{{group}}",
                    ),
                    in_a_storm(
                        'cluster=~"$cluster", group=~"$group"', "{{cluster}}/{{group}} in a storm"
                    ),
                ],
                (12, 8),
                step=True,
                links=[drill_down()],
                overrides_by_query=[("B", storm_series())],
            )
        )
        .with_panel(
            timeseries_panel(
                "Disruptive rebalances",
                "Disruptive rebalances (running members lost partitions) per group over time.",
                [
                    prom(
                        (
                            "sum by (cluster, group) (increase("
                            "groupscope_group_disruptive_rebalances_total"
                            '{cluster=~"$cluster", group=~"$group"}[$__rate_interval]))'
                        ),
                        "{{cluster}}/{{group}}",
                    )
                ],
                (12, 8),
                draw=common.GraphDrawStyle.BARS,
                stacked=True,
                links=[drill_down()],
            )
        )
        .with_row(row("Churn against the sticky baseline"))
        .with_panel(
            timeseries_panel(
                "Partition moves: actual, sticky baseline, minimum",
                (
                    "Partitions that changed owner, what Kafka's sticky assignor "
                    "(cooperative-sticky; uniform for KIP-848) would have moved, "
                    "and the fewest any balanced assignment could move, summed "
                    "over the selected groups."
                ),
                [
                    prom(
                        (
                            "sum by (kind) "
                            '(increase(groupscope_group_partition_moves_total{cluster=~"$cluster", '
                            'group=~"$group"}[$__rate_interval]))'
                        ),
                        "{{kind}}",
                    )
                ],
                (8, 8),
                draw=common.GraphDrawStyle.BARS,
            )
        )
        .with_panel(
            timeseries_panel(
                "Excess moves by group",
                (
                    "Actual minus sticky-baseline moves: the churn a better "
                    "assignor or static membership would have saved."
                ),
                [
                    prom(
                        (
                            "sum by (cluster, group) "
                            '(increase(groupscope_group_partition_moves_total{cluster=~"$cluster", '
                            'group=~"$group", '
                            'kind="actual"}[$__rate_interval])) - sum by (cluster, group) '
                            '(increase(groupscope_group_partition_moves_total{cluster=~"$cluster", '
                            'group=~"$group", '
                            'kind="baseline"}[$__rate_interval]))'
                        ),
                        "{{cluster}}/{{group}}",
                    )
                ],
                (8, 8),
                draw=common.GraphDrawStyle.BARS,
                stacked=True,
                links=[drill_down()],
            )
        )
        .with_panel(
            bargauge_panel(
                "Last rebalance: churn ratio (worst 10)",
                "Share of each group's partitions that moved in its last rebalance.",
                [
                    prom(
                        'topk(10, groupscope_group_last_churn_ratio{cluster=~"$cluster", '
                        'group=~"$group"})',
                        "{{cluster}}/{{group}}",
                    )
                ],
                (4, 8),
                unit="percentunit",
                steps=CHURN,
            )
        )
        .with_panel(
            bargauge_panel(
                "Last rebalance: excess moves (worst 10)",
                "Actual minus sticky-baseline moves of each group's last rebalance.",
                [
                    prom(
                        (
                            "topk(10, "
                            'groupscope_group_last_excess_moves{cluster=~"$cluster", '
                            'group=~"$group"})'
                        ),
                        "{{cluster}}/{{group}}",
                    )
                ],
                (4, 8),
                steps=EXCESS,
            )
        )
        .with_row(row("Lag"))
        .with_panel(
            bargauge_panel(
                "Worst time lag (top 10)",
                "Estimated age of the committed position, worst group and topic pairs.",
                [
                    prom(
                        (
                            'topk(10, groupscope_lag_seconds{cluster=~"$cluster", '
                            'group=~"$group", topic=~"$topic"})'
                        ),
                        "{{cluster}}/{{group}} / {{topic}}",
                    )
                ],
                (6, 8),
                unit="s",
                steps=TIME_LAG,
            )
        )
        .with_panel(
            bargauge_panel(
                "Worst offset lag (top 10)",
                (
                    "Log-end offset minus committed offset, summed over "
                    "partitions, worst group and topic pairs."
                ),
                [
                    prom(
                        'topk(10, groupscope_lag_sum{cluster=~"$cluster", '
                        'group=~"$group", topic=~"$topic"})',
                        "{{cluster}}/{{group}} / {{topic}}",
                    )
                ],
                (6, 8),
                unit="short",
                steps=levels(orange=1000),
            )
        )
        .with_panel(
            timeseries_panel(
                "Offset lag by group",
                "Offset lag summed over each group's selected topics.",
                [
                    prom(
                        (
                            "sum by (cluster, group) "
                            '(groupscope_lag_sum{cluster=~"$cluster", group=~"$group", '
                            'topic=~"$topic"})'
                        ),
                        "{{cluster}}/{{group}}",
                    )
                ],
                (6, 8),
                unit="short",
                links=[drill_down()],
            )
        )
        .with_panel(
            timeseries_panel(
                "Commit rate by group",
                "Offset commit records per second (every partition of every commit).",
                [
                    prom(
                        (
                            "sum by (cluster, group) "
                            '(rate(groupscope_group_commits_total{cluster=~"$cluster", '
                            'group=~"$group"}[$__rate_interval]))'
                        ),
                        "{{cluster}}/{{group}}",
                    )
                ],
                (6, 8),
                unit="cps",
                links=[drill_down()],
            )
        )
        .with_row(row("Pipeline and exporter"))
        .with_panel(
            stat_panel(
                "Caught up",
                "1 when the streaming job has processed everything its source had available.",
                [prom('groupscope_pipeline_caught_up{cluster=~"$cluster"}', "{{cluster}}")],
                (3, 7),
                mappings=value_map(("behind", "red"), ("caught up", "green")),
            )
        )
        .with_panel(
            stat_panel(
                "Records behind",
                "Records of __consumer_offsets not yet processed (Kafka sources).",
                [prom('groupscope_pipeline_records_behind{cluster=~"$cluster"}', "{{cluster}}")],
                (3, 7),
                unit="short",
                steps=levels(orange=100000, red=1000000),
            )
        )
        .with_panel(
            stat_panel(
                "Job status age",
                "Seconds since the streaming job last reported; grows while it is down.",
                [
                    prom(
                        'groupscope_pipeline_status_age_seconds{cluster=~"$cluster"}', "{{cluster}}"
                    )
                ],
                (3, 7),
                unit="s",
                steps=TIME_LAG,
            )
        )
        .with_panel(
            stat_panel(
                "Decode failures",
                (
                    "Records of __consumer_offsets that could not be decoded "
                    "during the time range; see the decode_failures table."
                ),
                [
                    prom(
                        'sum(increase(groupscope_decode_failures_total{cluster=~"$cluster"}[$__range]))'
                    )
                ],
                (3, 7),
                steps=FLAG,
                decimals=0,
                no_value="0",
            )
        )
        .with_panel(
            timeseries_panel(
                "Job input and processing rate",
                (
                    "Spark's input and processing rates of the last micro-batch, "
                    "and records stored per second."
                ),
                [
                    prom(
                        'groupscope_pipeline_input_records_per_second{cluster=~"$cluster"}',
                        "input {{cluster}}",
                    ),
                    prom(
                        'groupscope_pipeline_processed_records_per_second{cluster=~"$cluster"}',
                        "processed {{cluster}}",
                    ),
                    prom(
                        'rate(groupscope_pipeline_records_total{cluster=~"$cluster"}[$__rate_interval])',
                        "stored {{cluster}}",
                    ),
                ],
                (6, 7),
                unit="rps",
            )
        )
        .with_panel(
            timeseries_panel(
                "Batch duration and exporter refresh",
                (
                    "Wall time of the last micro-batch, of the exporter's last "
                    "refresh from the store, and of its last log-end offset poll."
                ),
                [
                    prom(
                        'groupscope_pipeline_batch_duration_seconds{cluster=~"$cluster"}',
                        "batch {{cluster}}",
                    ),
                    prom("groupscope_exporter_refresh_duration_seconds", "exporter refresh"),
                    prom("groupscope_exporter_lag_poll_duration_seconds", "log-end offset poll"),
                ],
                (6, 7),
                unit="s",
            )
        )
        .with_panel(
            timeseries_panel(
                "Decode failures by reason",
                (
                    "Undecodable records per reason; each is kept with its bytes "
                    "in the decode_failures table."
                ),
                [
                    prom(
                        (
                            "sum by (cluster, reason) "
                            '(increase(groupscope_decode_failures_total{cluster=~"$cluster"}[$__rate_interval]))'
                        ),
                        "{{cluster}}: {{reason}}",
                    )
                ],
                (8, 7),
                draw=common.GraphDrawStyle.BARS,
            )
        )
        .with_panel(
            timeseries_panel(
                "Micro-batches",
                "Micro-batches written by the streaming job.",
                [
                    prom(
                        'increase(groupscope_pipeline_batches_total{cluster=~"$cluster"}[$__rate_interval])',
                        "{{cluster}}",
                    )
                ],
                (8, 7),
                draw=common.GraphDrawStyle.BARS,
            )
        )
        .with_panel(
            timeseries_panel(
                "Exporter series and errors",
                (
                    "Size of the exposition, refresh and poll errors, and how "
                    "many partitions the exporter polls."
                ),
                [
                    prom("groupscope_exporter_series", "samples exposed"),
                    prom(
                        "increase(groupscope_exporter_refresh_errors_total[$__rate_interval])",
                        "refresh errors",
                    ),
                    prom(
                        "increase(groupscope_exporter_lag_poll_errors_total[$__rate_interval])",
                        "log-end offset poll errors",
                    ),
                    prom("groupscope_exporter_lag_partitions", "partitions polled"),
                ],
                (8, 7),
            )
        )
    )
