"""The consumer-group dashboard (group.json): one group's generations, members, churn,
lag and commits from Prometheus, with the postmortem views of the history store
(PostgreSQL)."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as builders
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as models

from services.dashboards.panels import (
    CHURN,
    EXCESS,
    FLAG,
    OVERVIEW_DASHBOARD,
    POSTGRES,
    POSTGRES_UID,
    POSTGRES_VARIABLE,
    PROMETHEUS_UID,
    PROMETHEUS_VARIABLE,
    STORM_REBALANCES,
    STORM_WINDOW,
    Sql,
    SqlAnnotation,
    cell_colour,
    dashboard,
    datasource_variable,
    in_a_storm,
    levels,
    link,
    prom,
    query_variable,
    row,
    stat_panel,
    storm_series,
    storm_variable,
    table_panel,
    timeseries_panel,
    unit,
    value_map,
)

REBALANCES = (
    "SELECT time AS \"time\", 'generation ' || generation || coalesce(': ' || moves_actual "
    "|| ' moved, sticky baseline ' || moves_sticky_baseline, '') AS text FROM group_timeline "
    "WHERE cluster = ${cluster:sqlstring} AND group_name = ${group:sqlstring} AND "
    "$__timeFilter(time) ORDER BY time"
)

# One row per rebalance: its causes (possible ones marked "?") and their explanations,
# and its cost: the commit gaps of the partitions it moved and how many of those have
# not committed since. causes is NULL for rebalances stored before revision 0006, the
# gaps before 0008.
CAUSES = (
    "SELECT time, generation, moves_actual AS moved, disruptive, CASE WHEN causes IS NULL "
    "THEN 'not recorded' ELSE coalesce((SELECT string_agg((c->>'cause') || CASE WHEN "
    "(c->>'possible')::boolean THEN '?' ELSE '' END, ', ') FROM "
    "jsonb_array_elements(causes) c), 'unknown') END AS causes, (SELECT "
    "string_agg(c->>'explanation', '; ') FROM jsonb_array_elements(causes) c) AS "
    'explanation, extract(epoch FROM gap_max) AS "longest commit gap", extract(epoch '
    'FROM gap_median) AS "median commit gap", gap_waiting AS "waiting to commit" '
    "FROM group_timeline WHERE cluster = ${cluster:sqlstring} AND group_name = "
    "${group:sqlstring} AND "
    "moves_actual IS NOT NULL AND $__timeFilter(time) ORDER BY time DESC LIMIT 500"
)


def build() -> builders.Dashboard:
    return (
        dashboard(
            "groupscope-group",
            "groupscope: consumer group",
            "One consumer group: its generations, members, churn against Kafka's sticky "
            "assignor and the minimum, lag and commits, with the postmortem views of the "
            "history store (PostgreSQL).",
        )
        .link(link("Overview", OVERVIEW_DASHBOARD, "All consumer groups"))
        .annotation(
            builders.AnnotationQuery()
            .name("Rebalances")
            .datasource(POSTGRES)
            .enable(True)
            .hide(False)
            .icon_color("orange")
            .target(SqlAnnotation(REBALANCES))
        )
        .with_variable(
            datasource_variable(PROMETHEUS_VARIABLE, "prometheus", PROMETHEUS_UID, "Prometheus")
        )
        .with_variable(
            datasource_variable(POSTGRES_VARIABLE, "postgres", POSTGRES_UID, "History store")
        )
        .with_variable(
            query_variable(
                "cluster",
                "Kafka cluster (the streaming job's --cluster)",
                "label_values(groupscope_group_info, cluster)",
                multi=False,
            )
        )
        .with_variable(
            query_variable(
                "group",
                "Consumer group",
                'label_values(groupscope_group_info{cluster="$cluster"}, group)',
                multi=False,
            )
        )
        .with_variable(
            query_variable(
                "topic",
                "Topics the group commits offsets for",
                'label_values(groupscope_committed_offset_sum{cluster="$cluster", '
                'group="$group"}, topic)',
                multi=True,
            )
        )
        .with_variable(storm_variable("storm_rebalances", STORM_REBALANCES, "rebalances"))
        .with_variable(storm_variable("storm_window", STORM_WINDOW, "window"))
        .with_row(row("State"))
        .with_panel(
            stat_panel(
                "State",
                (
                    "stable, empty (no members), rebalancing (a cooperative "
                    "revocation round not yet completed) or dead (deleted)."
                ),
                [prom('groupscope_group_info{cluster="$cluster", group="$group"}', "{{state}}")],
                (3, 4),
                show_name=True,
            )
        )
        .with_panel(
            stat_panel(
                "Assignor",
                (
                    "The protocol (assignor) of the latest generation and the "
                    "group type (classic or consumer for KIP-848)."
                ),
                [
                    prom(
                        'groupscope_group_info{cluster="$cluster", group="$group"}',
                        "{{assignor}} ({{type}})",
                    )
                ],
                (3, 4),
                show_name=True,
            )
        )
        .with_panel(
            stat_panel(
                "Generation",
                "Latest generation (group epoch for KIP-848).",
                [prom('groupscope_group_generation{cluster="$cluster", group="$group"}')],
                (2, 4),
            )
        )
        .with_panel(
            stat_panel(
                "Members",
                "Members of the latest generation.",
                [prom('groupscope_group_members{cluster="$cluster", group="$group"}')],
                (2, 4),
            )
        )
        .with_panel(
            stat_panel(
                "Partitions",
                "Partitions assigned in the latest generation.",
                [prom('groupscope_group_assigned_partitions{cluster="$cluster", group="$group"}')],
                (2, 4),
            )
        )
        .with_panel(
            stat_panel(
                "Storm",
                (
                    "STORM while the exporter's storm flag (groupscope_group_storm) "
                    "is set: the group has had --storm-rebalances rebalances within "
                    "--storm-window (5 within 10m by default)."
                ),
                [prom('groupscope_group_storm{cluster="$cluster", group="$group"}')],
                (2, 4),
                steps=FLAG,
                mappings=value_map(("no storm", "green"), ("STORM", "red")),
            )
        )
        .with_panel(
            stat_panel(
                "Since last rebalance",
                "Seconds since the group's last rebalance completed.",
                [
                    prom(
                        "time() - "
                        'groupscope_group_last_rebalance_timestamp_seconds{cluster="$cluster", '
                        'group="$group"}'
                    )
                ],
                (3, 4),
                unit="s",
            )
        )
        .with_panel(
            stat_panel(
                "Since last commit",
                (
                    "Seconds since the group's latest offset commit; the "
                    "commits-stopped alert fires after 15 minutes while the group "
                    "has members and lag."
                ),
                [
                    prom(
                        "time() - "
                        'groupscope_group_last_commit_timestamp_seconds{cluster="$cluster", '
                        'group="$group"}'
                    )
                ],
                (3, 4),
                unit="s",
                steps=levels(orange=300, red=900),
            )
        )
        .with_panel(
            stat_panel(
                "In this state for",
                (
                    "Seconds since the latest generation (or deletion): how long "
                    "the group has been in its state."
                ),
                [prom('groupscope_group_state_seconds{cluster="$cluster", group="$group"}')],
                (2, 4),
                unit="s",
            )
        )
        .with_panel(
            stat_panel(
                "Lag status",
                (
                    "Burrow's lag evaluation rules over each partition's last 10 "
                    "commits, the worst partition: OK, WARN (the lag never "
                    "decreased), ERR (a partition stopped, stalled or went back). "
                    "`groupscope lag-status GROUP` shows the partitions."
                ),
                [prom('groupscope_group_lag_status{cluster="$cluster", group="$group"}')],
                (2, 4),
                steps=levels(orange=2, red=3),
                mappings=value_map(
                    ("-", "text"), ("OK", "green"), ("WARN", "orange"), ("ERR", "red")
                ),
            )
        )
        .with_row(row("Generations and members"))
        .with_panel(
            timeseries_panel(
                "Generation and members",
                (
                    "The generation (right axis) steps up on every rebalance; "
                    "members on the left axis."
                ),
                [
                    prom(
                        'groupscope_group_generation{cluster="$cluster", group="$group"}',
                        "generation",
                    ),
                    prom('groupscope_group_members{cluster="$cluster", group="$group"}', "members"),
                ],
                (12, 8),
                step=True,
                overrides=[
                    (
                        "generation",
                        [models.DynamicConfigValue(id_val="custom.axisPlacement", value="right")],
                    )
                ],
            )
        )
        .with_panel(
            timeseries_panel(
                "Rebalances and storm window",
                (
                    "Disruptive rebalances (running members lost partitions: the "
                    "ones storms count) over time and within the exporter's last "
                    "--storm-window, and every recorded rebalance (formation, "
                    "leaves and epochs that moved nothing included); the red "
                    "series is set while the group is in a storm (the exporter's "
                    "storm flag, as its --storm-rebalances and --storm-window set it)."
                ),
                [
                    prom(
                        "increase(groupscope_group_disruptive_rebalances_total"
                        '{cluster="$cluster", group="$group"}[$__rate_interval])',
                        "disruptive rebalances",
                    ),
                    prom(
                        'groupscope_group_rebalances_in_storm_window{cluster="$cluster", '
                        'group="$group"}',
                        "disruptive in storm window",
                    ),
                    in_a_storm('cluster="$cluster", group="$group"', "in a storm"),
                    prom(
                        # Summed over cause before increase(): a cause's series starts at
                        # its first rebalance, which its own increase() would miss.
                        "increase(sum(groupscope_group_rebalances_total"
                        '{cluster="$cluster", group="$group"})[$__rate_interval:])',
                        "all rebalances",
                    ),
                ],
                (12, 8),
                overrides_by_query=[("C", storm_series())],
            )
        )
        .with_panel(
            table_panel(
                "Generation timeline (history store)",
                (
                    "Every generation of the group from the group_timeline view: "
                    "who joined and left (member @ host), partitions moved / "
                    "taken from members that stayed / what Kafka's sticky "
                    "assignor would have moved / the fewest any balanced "
                    "assignment could move, and how far committed offsets "
                    "advanced meanwhile (0: the group stalled). The same as "
                    "`groupscope postmortem GROUP`."
                ),
                [
                    Sql(
                        "SELECT time, generation, assignor, leader, member_count AS "
                        "members, moves_actual AS moved, moves_from_survivors AS "
                        '"from survivors", moves_sticky_baseline AS "sticky '
                        'baseline", moves_minimum AS minimum, moves_excess AS excess, '
                        'extract(epoch FROM since_previous) AS "since previous", '
                        'committed_progress AS "committed progress", (SELECT '
                        "string_agg((m->>'member') || coalesce(' @' || (m->>'host'), "
                        "''), ', ') FROM jsonb_array_elements(joined_members) m) AS "
                        "joined, (SELECT string_agg((m->>'member') || coalesce(' @' "
                        "|| (m->>'host'), ''), ', ') FROM "
                        'jsonb_array_elements(left_members) m) AS "left" FROM '
                        "group_timeline WHERE cluster = ${cluster:sqlstring} AND "
                        "group_name = ${group:sqlstring} AND "
                        "$__timeFilter(time) ORDER BY time DESC LIMIT 500"
                    )
                ],
                (24, 10),
                overrides=[
                    ("since previous", [unit("s")]),
                    (
                        "excess",
                        cell_colour(
                            "color-text",
                            (
                                (None, "green"),
                                (1, "red"),
                            ),
                        ),
                    ),
                ],
            )
        )
        .with_panel(
            timeseries_panel(
                "Rebalances by cause",
                (
                    "Recorded rebalances so far, each counted once under its primary "
                    "cause: the first of scale_out, scale_in, restart, session_timeout, "
                    "poll_timeout, subscription_change and partitions_added that its "
                    "causes settle, else unknown (only possible causes, or stored "
                    "before causes were). A band that grows is a cause that keeps "
                    "recurring; the table beside lists each rebalance."
                ),
                [
                    prom(
                        "sum by (cause) "
                        '(groupscope_group_rebalances_total{cluster="$cluster", '
                        'group="$group"})',
                        "{{cause}}",
                    )
                ],
                (8, 8),
                step=True,
                stacked=True,
            )
        )
        .with_panel(
            table_panel(
                "Rebalance causes and costs (history store)",
                (
                    "Why each rebalance in the time range happened (group_timeline's "
                    "causes): every cause the evidence settles, and those it leaves "
                    "possible marked with a ?, never a guess; the explanations name "
                    "the members and timeouts. The same as the CAUSES column of "
                    "`groupscope postmortem GROUP`. What it cost: the longest and the "
                    "median commit gap (seconds) of the partitions it moved, and how "
                    "many of them have not committed since (the postmortem's GAP)."
                ),
                [Sql(CAUSES)],
                (16, 8),
                overrides=[
                    ("longest commit gap", [unit("s")]),
                    ("median commit gap", [unit("s")]),
                ],
            )
        )
        .with_row(row("Churn: moves against the sticky baseline and the minimum"))
        .with_panel(
            timeseries_panel(
                "Moves per rebalance (history store)",
                (
                    "For each rebalance: partitions that changed owner, what "
                    "Kafka's sticky assignor would have moved, and the physical "
                    "minimum. Actual far above the baseline is churn a better "
                    "assignor or static membership saves."
                ),
                [
                    Sql(
                        (
                            'SELECT time AS "time", moves_actual AS actual, '
                            'moves_sticky_baseline AS "sticky baseline", moves_minimum AS '
                            "minimum FROM group_timeline WHERE cluster = "
                            "${cluster:sqlstring} AND group_name = ${group:sqlstring} "
                            "AND moves_actual IS NOT NULL AND "
                            "$__timeFilter(time) ORDER BY time"
                        ),
                        time_series=True,
                    )
                ],
                (7, 8),
                draw=common.GraphDrawStyle.POINTS,
            )
        )
        .with_panel(
            timeseries_panel(
                "Moves (exporter counters)",
                "The same comparison from the exporter's counters.",
                [
                    prom(
                        (
                            "sum by (kind) "
                            '(increase(groupscope_group_partition_moves_total{cluster="$cluster", '
                            'group="$group"}[$__rate_interval]))'
                        ),
                        "{{kind}}",
                    )
                ],
                (4, 8),
                draw=common.GraphDrawStyle.BARS,
            )
        )
        .with_panel(
            stat_panel(
                "Last rebalance: churn ratio",
                "Share of the assigned partitions that moved in the last rebalance.",
                [prom('groupscope_group_last_churn_ratio{cluster="$cluster", group="$group"}')],
                (3, 8),
                unit="percentunit",
                steps=CHURN,
            )
        )
        .with_panel(
            stat_panel(
                "Last rebalance: excess moves",
                "Actual minus sticky-baseline moves of the last rebalance.",
                [prom('groupscope_group_last_excess_moves{cluster="$cluster", group="$group"}')],
                (3, 8),
                steps=EXCESS,
            )
        )
        .with_panel(
            stat_panel(
                "Last rebalance: commit gap",
                (
                    "The longest a partition moved by the last rebalance went without an "
                    "offset commit, from its last commit before its new owner held it to "
                    "its first commit after: what the rebalance cost. It includes the "
                    "commit interval; no value while nothing moved or no moved partition "
                    "has committed again."
                ),
                [
                    prom(
                        'groupscope_group_last_rebalance_commit_gap_seconds{cluster="$cluster", '
                        'group="$group"}'
                    )
                ],
                (3, 8),
                unit="s",
            )
        )
        .with_panel(
            stat_panel(
                "Last rebalance: lag",
                (
                    "How far the committed offsets fell behind during the last rebalance, "
                    "from the exporter's own lag samples: the offset lag (summed over "
                    "topics) before its moved partitions stopped committing, and the "
                    "highest until they all committed again. No value where the exporter "
                    "did not sample the whole rebalance (it started later, or the "
                    "rebalance began before its last 240 refreshes)."
                ),
                [
                    prom(
                        'groupscope_group_last_rebalance_lag_before_records{cluster="$cluster", '
                        'group="$group"}',
                        "before",
                    ),
                    prom(
                        'groupscope_group_last_rebalance_lag_peak_records{cluster="$cluster", '
                        'group="$group"}',
                        "peak",
                    ),
                ],
                (4, 8),
                unit="short",
            )
        )
        .with_row(row("Lag and commits"))
        .with_panel(
            timeseries_panel(
                "Offset lag",
                "Log-end offset minus committed offset, summed over each topic's partitions.",
                [
                    prom(
                        'groupscope_lag_sum{cluster="$cluster", group="$group", topic=~"$topic"}',
                        "{{topic}}",
                    )
                ],
                (8, 8),
                unit="short",
            )
        )
        .with_panel(
            timeseries_panel(
                "Time lag",
                (
                    "Estimated age of the committed position (worst partition of "
                    "each topic); the dashed line is the alert threshold."
                ),
                [
                    prom(
                        'groupscope_lag_seconds{cluster="$cluster", group="$group", '
                        'topic=~"$topic"}',
                        "{{topic}}",
                    )
                ],
                (8, 8),
                unit="s",
                steps=levels(red=300),
            )
        )
        .with_panel(
            timeseries_panel(
                "Consumption and commit rate",
                (
                    "How fast committed offsets advance (messages/s per topic) "
                    "and offset commit records per second."
                ),
                [
                    prom(
                        (
                            # A gauge (a sum over partitions, which can drop when an
                            # offset expires): deriv(), since rate() reads a drop as a
                            # counter reset.
                            'deriv(groupscope_committed_offset_sum{cluster="$cluster", '
                            'group="$group", '
                            'topic=~"$topic"}[$__rate_interval])'
                        ),
                        "consumed {{topic}}",
                    ),
                    prom(
                        'rate(groupscope_group_commits_total{cluster="$cluster", '
                        'group="$group"}[$__rate_interval])',
                        "commit records",
                    ),
                ],
                (8, 8),
                unit="short",
            )
        )
        .with_panel(
            timeseries_panel(
                "Committed offsets by partition (history store)",
                (
                    "Each partition's committed offset at its last commit of each "
                    "minute (offset_history_entries); a flat line while the group "
                    "has members is a stall."
                ),
                [
                    Sql(
                        (
                            'SELECT coalesce(commit_timestamp, minute) AS "time", '
                            "topic || '-' || partition AS metric, committed_offset AS "
                            "value FROM offset_history_entries WHERE cluster = "
                            "${cluster:sqlstring} AND group_name = ${group:sqlstring} "
                            "AND topic IN (${topic:sqlstring}) AND "
                            "$__timeFilter(minute) ORDER BY 1"
                        ),
                        time_series=True,
                    )
                ],
                (12, 9),
                unit="short",
                step=True,
            )
        )
        .with_panel(
            table_panel(
                "Partition owners at the end of the time range (history store)",
                (
                    "Who owned each partition at the end of the selected time "
                    "range (partition_ownership); move the range's end to see an "
                    "earlier moment."
                ),
                [
                    Sql(
                        "SELECT topic, partition, member, client_id, client_host, "
                        "generation, valid_from FROM partition_ownership WHERE "
                        "cluster = ${cluster:sqlstring} AND group_name = "
                        "${group:sqlstring} AND topic IN "
                        "(${topic:sqlstring}) AND valid_from <= $__timeTo() AND "
                        "(valid_until IS NULL OR valid_until > $__timeTo()) ORDER BY "
                        "topic, partition"
                    )
                ],
                (12, 9),
            )
        )
        .with_row(row("Rebalance storms (history store)"))
        .with_panel(
            table_panel(
                "Rebalance storms",
                (
                    "Runs of at least $storm_rebalances disruptive rebalances within "
                    "$storm_window in the time range (rebalance_storms_between), "
                    "overlapping windows merged. Set the two variables to the "
                    "exporter's --storm-rebalances and --storm-window (5 and 10m "
                    "by default)."
                ),
                [
                    Sql(
                        "SELECT storm_start, storm_end, rebalances, extract(epoch "
                        "FROM storm_end - storm_start) AS duration FROM "
                        "rebalance_storms_between($__timeFrom(), $__timeTo(), "
                        "${storm_window:sqlstring}::interval, "
                        "${storm_rebalances:sqlstring}::integer) WHERE cluster = "
                        "${cluster:sqlstring} AND group_name = ${group:sqlstring} ORDER "
                        "BY storm_start DESC"
                    )
                ],
                (24, 6),
                overrides=[("duration", [unit("s")])],
            )
        )
    )
