"""Every metric the exporter publishes: name, type, labels and meaning.

One table drives the exposition (HELP and TYPE lines), docs/metrics.md (`make docs`)
and the tests that check the alert rules and dashboards only use metrics that exist.
Labels are bounded (docs/architecture.md, "Contracts"): cluster, group, topic, a
rebalance cause from a fixed list, and partition only behind `--per-partition`; never a
member id. Every series of the store's facts carries `cluster` (`groupscope stream
--cluster`, migration 0010): the same group name on two clusters is two series. The
pipeline's series are per cluster; the source it reads (which embeds a bootstrap
address, and changes with it) is only on `pipeline_info`. Time
series follow Prometheus conventions: counters end in `_total`, durations are in
seconds, timestamps are Unix seconds, and a value summed over partitions ends in `_sum`
(as kafka_exporter's kafka_consumergroup_lag_sum), so that it is not read as one
partition's.

A moment is published once, as a `_timestamp_seconds` gauge, and its age is computed in
PromQL (`time() - x`), as Prometheus advises: a "seconds since" gauge would only repeat
it, and be as old as the last scrape. The `..._seconds` ages that remain have no
timestamp twin: group_state_seconds (the state's start is not published) and
pipeline_status_age_seconds (the job's last status report, which is not the last batch
of pipeline_last_batch_timestamp_seconds: an idle job reports without writing batches).
Renames and removals are listed in docs/operations.md, "Upgrades and migrations".
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "groupscope_"


@dataclass(frozen=True)
class Metric:
    """One metric family."""

    name: str
    kind: str  # "gauge" | "counter"
    labels: tuple[str, ...]
    help: str
    per_partition: bool = False  # only with --per-partition

    @property
    def full_name(self) -> str:
        return PREFIX + self.name


GROUP = ("cluster", "group")
GROUP_TOPIC = ("cluster", "group", "topic")
GROUP_TOPIC_PARTITION = ("cluster", "group", "topic", "partition")
CLUSTER = ("cluster",)

METRICS: tuple[Metric, ...] = (
    # Group state, from the latest generation in the history store.
    Metric(
        "group_info",
        "gauge",
        ("cluster", "group", "type", "protocol", "assignor", "state"),
        "Always 1. type: classic, consumer (KIP-848), share or streams; protocol: the "
        "protocol type (consumer, connect, ...); assignor: the protocol/assignor name; "
        "state: stable, empty, rebalancing (a cooperative revocation round not yet "
        "completed) or dead (deleted).",
    ),
    Metric("group_generation", "gauge", GROUP, "Latest generation (group epoch for KIP-848)."),
    Metric("group_members", "gauge", GROUP, "Members in the latest generation."),
    Metric(
        "group_assigned_partitions",
        "gauge",
        GROUP,
        "Partitions assigned in the latest generation.",
    ),
    Metric(
        "group_rebalances_total",
        "counter",
        ("cluster", "group", "cause"),
        "Rebalances recorded, disruptive or not (a cooperative two-round episode counts "
        "once): the group's formation and rebalances that took nothing from a running "
        "member included. cause: the first of scale_out, scale_in, restart, "
        "session_timeout, poll_timeout, subscription_change and partitions_added that "
        "the rebalance's causes settle (not merely possible), else unknown (also for "
        "rebalances stored before causes were); the series of a cause appears at its "
        "first rebalance (cause=unknown at 0 for a group that never rebalanced), so "
        "count a group's rebalances with the sum over cause (the rule "
        "group:groupscope_rebalances:sum) before increase().",
    ),
    Metric(
        "group_disruptive_rebalances_total",
        "counter",
        GROUP,
        "Rebalances in which running members lost partitions, the ones storms count: "
        "eager, every rebalance after the group formed; cooperative and KIP-848, those "
        "that moved partitions away from members that stayed.",
    ),
    Metric(
        "group_partition_moves_total",
        "counter",
        ("cluster", "group", "kind"),
        "Partition moves summed over rebalances. kind=actual: partitions whose owner "
        "changed; kind=baseline: what Kafka's sticky assignor (cooperative-sticky, "
        "uniform for KIP-848) would have moved; kind=minimum: the fewest any balanced "
        "assignment could move.",
    ),
    Metric(
        "group_last_churn_ratio",
        "gauge",
        GROUP,
        "Share of the group's assigned partitions that moved in its last rebalance (0-1).",
    ),
    Metric(
        "group_last_excess_moves",
        "gauge",
        GROUP,
        "Actual minus baseline moves of the last rebalance (0 when unknown).",
    ),
    Metric(
        "group_last_rebalance_commit_gap_seconds",
        "gauge",
        GROUP,
        "The longest a partition moved by the group's last rebalance went without an "
        "offset commit: from its last commit before its new owner held it to its first "
        "commit after (commit timestamps). It can grow while moved partitions have not "
        "committed again; absent until one has, when nothing moved, and for rebalances "
        "stored before the store measured it.",
    ),
    Metric(
        "group_last_rebalance_lag_before_records",
        "gauge",
        GROUP,
        "The group's offset lag (groupscope_lag_sum summed over its topics) at the "
        "exporter's last refresh at or before its last rebalance's window began. The "
        "window is [T - G, T + G], T the rebalance's time and G its longest commit gap "
        "(group_last_rebalance_commit_gap_seconds): it holds every moved partition's "
        "commit gap; it runs to now while a moved partition has not committed again. "
        "Absent where the exporter holds no complete lag sample of the group from "
        "before the window through its end (it started later, the window began before "
        "its last 240 refreshes, a log end was not read), and wherever the commit gap "
        "gauge is.",
    ),
    Metric(
        "group_last_rebalance_lag_peak_records",
        "gauge",
        GROUP,
        "The highest offset lag of the group (summed over its topics) at the exporter's "
        "refreshes from the one of ..._lag_before_records through the first at or after "
        "the end of its last rebalance's window (the latest while it is open): how far "
        "its committed offsets fell behind during the rebalance; peak minus before is "
        "what the rebalance added. Absent as ..._lag_before_records is.",
    ),
    Metric(
        "group_last_rebalance_time_lag_peak_seconds",
        "gauge",
        GROUP,
        "The highest time lag of the group (the largest groupscope_lag_seconds of its "
        "topics) at the same refreshes as ..._lag_peak_records: how old its committed "
        "position got during its last rebalance. Absent as ..._lag_before_records is.",
    ),
    Metric(
        "group_storm",
        "gauge",
        GROUP,
        "1 while the group has had at least --storm-rebalances disruptive rebalances "
        "within the last --storm-window, else 0.",
    ),
    Metric(
        "group_rebalances_in_storm_window",
        "gauge",
        GROUP,
        "Disruptive rebalances within the last --storm-window.",
    ),
    Metric(
        "group_last_rebalance_timestamp_seconds",
        "gauge",
        GROUP,
        "When the last rebalance completed (Unix seconds); its age is "
        "time() - groupscope_group_last_rebalance_timestamp_seconds.",
    ),
    Metric(
        "group_state_seconds",
        "gauge",
        GROUP,
        "Seconds the group has been in its current state (since its latest generation "
        "or deletion).",
    ),
    # Offsets and lag.
    Metric(
        "group_commits_total",
        "counter",
        GROUP,
        "Offset commit records written for the group (every partition of every commit; "
        "tombstones of deleted or expired offsets are not commits).",
    ),
    Metric(
        "group_last_commit_timestamp_seconds",
        "gauge",
        GROUP,
        "Commit timestamp of the group's latest offset commit (Unix seconds); its age "
        "is time() - groupscope_group_last_commit_timestamp_seconds.",
    ),
    Metric(
        "committed_offset_sum",
        "gauge",
        GROUP_TOPIC,
        "Committed offsets of the group on the topic, summed over partitions.",
    ),
    Metric(
        "lag_sum",
        "gauge",
        GROUP_TOPIC,
        "Offset lag: log-end offset minus committed offset, summed over the topic's "
        "committed partitions. The log-end offset is the last stable offset, what a "
        "read_committed consumer can read (the high watermark where no transaction is "
        "open).",
    ),
    Metric(
        "lag_seconds",
        "gauge",
        GROUP_TOPIC,
        "Time lag: the largest, over the topic's partitions, estimated age of the "
        "committed position (interpolated on samples of the last stable offset; 0 when "
        "the group has committed everything a read_committed consumer can read).",
    ),
    Metric(
        "group_lag_status",
        "gauge",
        GROUP,
        "Lag status by Burrow's evaluation rules, the worst of the group's partitions: "
        "1 OK, 2 WARN (committing, but the lag never decreased over the window of the "
        "last 10 commits), 3 ERR (a partition stopped committing, stalled on one offset "
        "or went back); 0 while no partition is judged yet (a window is judged from its "
        "second observed commit). Absent while no partition's lag is known.",
    ),
    Metric(
        "partition_committed_offset",
        "gauge",
        GROUP_TOPIC_PARTITION,
        "Committed offset of one partition.",
        per_partition=True,
    ),
    Metric(
        "partition_lag",
        "gauge",
        GROUP_TOPIC_PARTITION,
        "Offset lag of one partition: its last stable offset minus the committed offset.",
        per_partition=True,
    ),
    Metric(
        "partition_lag_status",
        "gauge",
        GROUP_TOPIC_PARTITION,
        "Lag status of one partition by Burrow's rules: 1 OK, 2 WARN, 4 STOP, 5 STALL, 6 REWIND.",
        per_partition=True,
    ),
    Metric(
        "partition_lag_seconds",
        "gauge",
        GROUP_TOPIC_PARTITION,
        "Time lag of one partition (on samples of its last stable offset).",
        per_partition=True,
    ),
    # Decoding and the pipeline.
    Metric(
        "decode_failures_total",
        "counter",
        ("cluster", "reason"),
        "Records of __consumer_offsets the job could not decode, by reason; each is "
        "kept with its bytes in the decode_failures table.",
    ),
    Metric(
        "pipeline_info",
        "gauge",
        ("cluster", "source"),
        "Always 1: the source the cluster's streaming job reads (kafka:BOOTSTRAP/TOPIC or "
        "a replay directory), from its latest status report. The pipeline's other series "
        "carry only the cluster, so they continue when the job moves to another address.",
    ),
    Metric(
        "pipeline_caught_up",
        "gauge",
        CLUSTER,
        "1 when the streaming job has processed everything its source had available.",
    ),
    Metric(
        "pipeline_records_behind",
        "gauge",
        CLUSTER,
        "Records of the source not yet processed (Kafka sources; 0 when caught up).",
    ),
    Metric(
        "pipeline_input_records_per_second",
        "gauge",
        CLUSTER,
        "Input rate of the last micro-batch, as Spark reports it.",
    ),
    Metric(
        "pipeline_processed_records_per_second",
        "gauge",
        CLUSTER,
        "Processing rate of the last micro-batch, as Spark reports it.",
    ),
    Metric(
        "pipeline_batch_duration_seconds",
        "gauge",
        CLUSTER,
        "Wall time of the last micro-batch (decode, generations, store transaction).",
    ),
    Metric(
        "pipeline_last_batch_timestamp_seconds",
        "gauge",
        CLUSTER,
        "When the last micro-batch was written (Unix seconds).",
    ),
    Metric(
        "pipeline_batches_total",
        "counter",
        CLUSTER,
        "Micro-batches written.",
    ),
    Metric(
        "pipeline_records_total",
        "counter",
        CLUSTER,
        "Records of __consumer_offsets processed.",
    ),
    Metric(
        "pipeline_status_age_seconds",
        "gauge",
        CLUSTER,
        "Seconds since the streaming job last reported its status; grows when the job is down.",
    ),
    Metric(
        "pipeline_stale",
        "gauge",
        CLUSTER,
        "1 when the cluster's streaming job has not reported for more than "
        "--source-stale-after (a job that ended); it no longer counts for /readyz. "
        "`groupscope db forget-source` removes its source's rows.",
    ),
    Metric(
        "pipeline_degraded",
        "gauge",
        CLUSTER,
        "1 while the streaming job reports that it cannot work normally on the source "
        "(the reason is in /readyz and the exporter's log), else 0.",
    ),
    Metric(
        "pipeline_log_resets_total",
        "counter",
        CLUSTER,
        "Times a partition of the source restarted below the offset the job had read "
        "(the offsets topic recreated, the cluster replaced).",
    ),
    # The exporter itself.
    Metric(
        "exporter_refresh_duration_seconds",
        "gauge",
        (),
        "How long the last refresh from the history store took.",
    ),
    Metric(
        "exporter_last_refresh_timestamp_seconds",
        "gauge",
        (),
        "When the metrics were last refreshed (Unix seconds).",
    ),
    Metric(
        "exporter_refresh_errors_total",
        "counter",
        (),
        "Refreshes that failed (the history store was unreachable or not migrated), "
        "counted as each fails; the previous metrics are served meanwhile.",
    ),
    Metric(
        "exporter_lag_poll_duration_seconds",
        "gauge",
        (),
        "How long the last log-end offset poll of the Kafka cluster took.",
    ),
    Metric(
        "exporter_lag_poll_errors_total",
        "counter",
        (),
        "Log-end offset polls that could not read some partition: the cluster was down "
        "or slow, or a topic lacks Describe. A partition of an unknown (deleted) topic is "
        "no failure.",
    ),
    Metric(
        "exporter_lag_partitions",
        "gauge",
        (),
        "Partitions whose log-end offsets the exporter polls.",
    ),
    Metric(
        "exporter_series",
        "gauge",
        (),
        "Samples in the last exposition.",
    ),
)

BY_NAME = {m.full_name: m for m in METRICS}
