"""Render a store snapshot and the lag into Prometheus text exposition format (0.0.4).

The exporter renders once per refresh and serves the same bytes to every scrape, so a
scrape of 10,000 groups costs a memory copy, not 150,000 samples' formatting. Only the
families that follow the clock (seconds since a stored time, staleness, the exporter's
own counters) are rendered per scrape, from the last snapshot's timestamps: they keep
moving, and the refresh errors keep counting, while the store is unreachable. Names,
types, labels and help come from `services.exporter.catalogue`; the output is checked
against prometheus-client's parser in the tests and scraped by a real Prometheus.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from services.exporter.catalogue import BY_NAME, METRICS, PREFIX, Metric
from services.exporter.lag import LagResult
from services.exporter.lagstatus import ERR
from services.exporter.snapshot import StoreSnapshot
from services.store.batch import CAUSES

Sample = tuple[str, float | int]  # (rendered label set, value)
SERIES = BY_NAME[PREFIX + "exporter_series"]

# Seconds since a stored timestamp, per label set: rendered at scrape time.
AGES = (
    "group_state_seconds",
    "pipeline_status_age_seconds",
)
EXPORTER = (
    "exporter_refresh_duration_seconds",
    "exporter_last_refresh_timestamp_seconds",
    "exporter_refresh_errors_total",
    "exporter_lag_poll_duration_seconds",
    "exporter_lag_poll_errors_total",
    "exporter_lag_partitions",
)
CLOCKED = frozenset((*AGES, "pipeline_stale", *EXPORTER, SERIES.name))


def escape(value: str) -> str:
    """A label value as the text format wants it."""
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def labels(**pairs: str) -> str:
    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in pairs.items()) + "}"


def number(value: float | int) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


@dataclass
class ExporterStats:
    """The exporter's own health, rendered with the rest."""

    refresh_seconds: float = 0.0
    last_refresh: float = 0.0
    refresh_errors: int = 0
    lag_poll_seconds: float = 0.0
    lag_poll_errors: int = 0
    lag_partitions: int = 0


@dataclass(frozen=True)
class Options:
    per_partition: bool = False
    storm_rebalances: int = 5
    source_stale_after_s: float = 600.0


@dataclass
class Rendered:
    """One refresh's exposition: the bytes every scrape shares, and what the clocked
    families are computed from at scrape time."""

    static: bytes
    static_samples: int
    # family name -> (the heads of its sample lines, the Unix times they count from)
    since: dict[str, tuple[list[str], np.ndarray]]
    stale_after_s: float

    @property
    def clocked_samples(self) -> int:
        statuses = len(self.since["pipeline_status_age_seconds"][0])
        ages = sum(len(heads) for heads, _ in self.since.values())
        return ages + statuses + len(EXPORTER) + 1

    @property
    def samples(self) -> int:
        return self.static_samples + self.clocked_samples

    def clocked(self, stats: ExporterStats, now: float) -> bytes:
        """The clocked families' text as of `now`."""
        out: list[str] = []
        for name in AGES:
            heads, times = self.since[name]
            ages = np.round(np.maximum(now - times, 0.0), 3).tolist()
            out.append(_head(BY_NAME[PREFIX + name]))
            out.extend(f"{h} {a}\n" for h, a in zip(heads, ages, strict=True))  # finite floats
        heads, updated = self.since["pipeline_status_age_seconds"]
        stale = BY_NAME[PREFIX + "pipeline_stale"]
        prefix = len(PREFIX + "pipeline_status_age_seconds")
        out.append(_head(stale))
        out.extend(
            f"{stale.full_name}{h[prefix:]} {int(s)}\n"
            for h, s in zip(heads, (now - updated > self.stale_after_s).tolist(), strict=True)
        )
        for name, value in zip(EXPORTER, _stats_values(stats), strict=True):
            out.append(_family_text(BY_NAME[PREFIX + name], [("", value)]))
        out.append(_family_text(SERIES, [("", self.samples)]))
        return "".join(out).encode("utf-8")


def render(
    snapshot: StoreSnapshot,
    lag: LagResult | None,
    stats: ExporterStats,
    options: Options,
) -> tuple[bytes, int]:
    """The exposition text as of the snapshot's time, and its sample count."""
    rendered = prepare(snapshot, lag, options)
    return rendered.static + rendered.clocked(stats, snapshot.taken_at), rendered.samples


def prepare(snapshot: StoreSnapshot, lag: LagResult | None, options: Options) -> Rendered:
    """Render every family that does not follow the clock; keep the rest's timestamps."""
    families = _families(snapshot, lag, options)
    # Each family encoded as it is rendered: joining the text first and encoding it
    # after held three copies of the exposition at once (150 MB each at 100,000 groups).
    out: list[bytes] = []
    count = 0
    for metric in METRICS:
        if (metric.per_partition and not options.per_partition) or metric.name in CLOCKED:
            continue
        samples = families[metric.name]
        out.append(_family_text(metric, samples).encode("utf-8"))
        count += len(samples)
    return Rendered(
        b"".join(out),
        count,
        _since(snapshot),
        options.source_stale_after_s,
    )


def _head(metric: Metric) -> str:
    return f"# HELP {metric.full_name} {metric.help}\n# TYPE {metric.full_name} {metric.kind}\n"


def _stats_values(stats: ExporterStats) -> tuple[float | int, ...]:
    """The exporter's own values, in the order of EXPORTER."""
    return (
        stats.refresh_seconds,
        stats.last_refresh,
        stats.refresh_errors,
        stats.lag_poll_seconds,
        stats.lag_poll_errors,
        stats.lag_partitions,
    )


def _since(snap: StoreSnapshot) -> dict[str, tuple[list[str], np.ndarray]]:
    """Per age family, the sample line heads and the stored times they count from."""
    found: dict[str, tuple[list[str], list[float]]] = {name: ([], []) for name in AGES}

    def add(name: str, label_text: str, time: float) -> None:
        heads, times = found[name]
        heads.append(PREFIX + name + label_text)
        times.append(time)

    for g in snap.groups:
        gl = labels(cluster=g.cluster, group=g.name)
        since = g.state_since
        if since is not None:
            add("group_state_seconds", gl, since)
    for p in snap.pipeline:
        add("pipeline_status_age_seconds", labels(cluster=p.cluster), p.updated_at)
    return {
        name: (heads, np.array(times, dtype=np.float64)) for name, (heads, times) in found.items()
    }


def _family_text(metric: Metric, samples: Iterable[Sample]) -> str:
    return _head(metric) + "".join(f"{metric.full_name}{ls} {number(v)}\n" for ls, v in samples)


def _families(
    snap: StoreSnapshot, lag: LagResult | None, options: Options
) -> dict[str, list[Sample]]:
    """The samples of every family that does not follow the clock (see `_since`)."""
    f: dict[str, list[Sample]] = {m.name: [] for m in METRICS}
    for g in snap.groups:
        key = (g.cluster, g.name)
        gl = labels(cluster=g.cluster, group=g.name)
        state = g.current_state
        f["group_info"].append(
            (
                labels(
                    cluster=g.cluster,
                    group=g.name,
                    type=g.type or "unknown",
                    protocol=g.protocol_type or "",
                    assignor=g.assignor or "",
                    state=state,
                ),
                1,
            )
        )
        if g.generation is not None:
            f["group_generation"].append((gl, g.generation))
            f["group_members"].append((gl, g.members or 0))
            f["group_assigned_partitions"].append((gl, g.partitions or 0))
        totals = snap.rebalances.get(key)
        f["group_rebalances_total"].extend(_by_cause(gl, snap.rebalance_causes.get(key)))
        f["group_disruptive_rebalances_total"].append((gl, totals.disruptive if totals else 0))
        for kind, value in (
            ("actual", totals.moved if totals else 0),
            ("baseline", totals.baseline if totals else 0),
            ("minimum", totals.minimum if totals else 0),
        ):
            f["group_partition_moves_total"].append((f'{gl[:-1]},kind="{kind}"}}', value))
        in_window = totals.in_window if totals else 0
        f["group_rebalances_in_storm_window"].append((gl, in_window))
        f["group_storm"].append((gl, int(in_window >= options.storm_rebalances)))
        last = snap.last_rebalances.get(key)
        if last is not None:
            f["group_last_rebalance_timestamp_seconds"].append((gl, last.time))
            if last.partitions:
                f["group_last_churn_ratio"].append((gl, min(last.moved / last.partitions, 1.0)))
            excess = last.moved - last.baseline if last.baseline is not None else 0
            f["group_last_excess_moves"].append((gl, max(excess, 0)))
            if last.gap is not None:
                f["group_last_rebalance_commit_gap_seconds"].append((gl, last.gap))
        f["group_commits_total"].append((gl, g.commits_total))
        if g.last_commit is not None:
            f["group_last_commit_timestamp_seconds"].append((gl, g.last_commit))
    _offset_families(f, snap, lag, options)
    for cluster, reason, n in snap.failures:
        f["decode_failures_total"].append((labels(cluster=cluster, reason=reason), n))
    for p in snap.pipeline:
        sl = labels(cluster=p.cluster)
        f["pipeline_info"].append((labels(cluster=p.cluster, source=p.source), 1))
        f["pipeline_caught_up"].append((sl, int(p.caught_up)))
        if p.records_behind is not None:
            f["pipeline_records_behind"].append((sl, p.records_behind))
        if p.input_rate is not None:
            f["pipeline_input_records_per_second"].append((sl, p.input_rate))
        if p.processed_rate is not None:
            f["pipeline_processed_records_per_second"].append((sl, p.processed_rate))
        if p.last_batch_seconds is not None:
            f["pipeline_batch_duration_seconds"].append((sl, p.last_batch_seconds))
        if p.last_batch_time is not None:
            f["pipeline_last_batch_timestamp_seconds"].append((sl, p.last_batch_time))
        f["pipeline_batches_total"].append((sl, p.batches_total))
        f["pipeline_records_total"].append((sl, p.records_total))
        f["pipeline_degraded"].append((sl, int(p.degraded)))
        f["pipeline_log_resets_total"].append((sl, p.log_resets_total))
    return f


def _by_cause(group_labels: str, counts: dict[str, int] | None) -> list[Sample]:
    """A group's rebalances by primary cause, in CAUSES order: a sample per cause seen,
    or `cause="unknown"` 0 for a group that never rebalanced, so that every group has a
    series and the samples sum to its rebalances. `group_labels`: the group's label set."""
    counts = counts or {}
    seen = [(c, counts[c]) for c in CAUSES if counts.get(c)] or [("unknown", 0)]
    return [(f'{group_labels[:-1]},cause="{c}"}}', n) for c, n in seen]


def _offset_families(
    f: dict[str, list[Sample]], snap: StoreSnapshot, lag: LagResult | None, options: Options
) -> None:
    """Committed offsets, lag and time lag per group and topic (and per partition)."""
    offsets = snap.offsets
    if not len(offsets):
        return
    pairs = offsets.pairs
    n_pairs = len(pairs)
    committed = np.zeros(n_pairs, np.int64)
    np.add.at(committed, offsets.pair, offsets.committed)
    # `labels()` written out: a pair per (cluster, group, topic) makes this the render's
    # longest loop, where the keyword call is several times slower than the f-string
    # (`python -m benchmarks exporter`).
    pair_labels = [
        f'{{cluster="{escape(c)}",group="{escape(g)}",topic="{escape(t)}"}}' for c, g, t in pairs
    ]
    f["committed_offset_sum"].extend(zip(pair_labels, committed.tolist(), strict=True))
    partition_labels: list[str] = []
    if options.per_partition:
        partition_labels = [
            f'{pair_labels[pair][:-1]},partition="{partition}"}}'
            for pair, partition in zip(
                offsets.pair.tolist(), offsets.partition.tolist(), strict=True
            )
        ]
        f["partition_committed_offset"].extend(
            zip(partition_labels, offsets.committed.tolist(), strict=True)
        )
    if lag is None:
        return
    known = ~np.isnan(lag.lag)
    has_lag = np.bincount(offsets.pair[known], minlength=n_pairs) > 0
    lag_sum = np.bincount(offsets.pair[known], weights=lag.lag[known], minlength=n_pairs)
    seconds = np.full(n_pairs, -np.inf)
    np.maximum.at(seconds, offsets.pair[known], lag.seconds[known])
    for i in np.nonzero(has_lag)[0].tolist():
        f["lag_sum"].append((pair_labels[i], int(lag_sum[i])))
        f["lag_seconds"].append((pair_labels[i], round(float(seconds[i]), 3)))
    for i in np.nonzero(known)[0].tolist() if partition_labels else ():
        f["partition_lag"].append((partition_labels[i], int(lag.lag[i])))
        f["partition_lag_seconds"].append((partition_labels[i], round(float(lag.seconds[i]), 3)))
    if lag.status is not None:
        _lag_status_families(f, snap, lag.status, known, partition_labels)
    for key in sorted(lag.rebalance):
        r = lag.rebalance[key]
        gl = labels(cluster=key[0], group=key[1])
        f["group_last_rebalance_lag_before_records"].append((gl, r.before))
        f["group_last_rebalance_lag_peak_records"].append((gl, r.peak))
        f["group_last_rebalance_time_lag_peak_seconds"].append((gl, r.peak_seconds))


def _lag_status_families(
    f: dict[str, list[Sample]],
    snap: StoreSnapshot,
    status: np.ndarray,
    known: np.ndarray,
    partition_labels: list[str],
) -> None:
    """Each group's worst partition status (STOP, STALL and REWIND as ERR; 0 while none
    is judged yet), and each partition's with --per-partition, wherever the lag is
    known (services.exporter.lagstatus)."""
    offsets = snap.offsets
    group = offsets.pair_group[offsets.pair]
    worst = np.full(len(offsets.groups), -1, np.int64)
    np.maximum.at(worst, group[known], np.minimum(status[known], ERR))
    for g in np.nonzero(worst >= 0)[0].tolist():
        cluster, name = offsets.groups[g]
        f["group_lag_status"].append((labels(cluster=cluster, group=name), int(worst[g])))
    for i in np.nonzero(known)[0].tolist() if partition_labels else ():
        f["partition_lag_status"].append((partition_labels[i], int(status[i])))
