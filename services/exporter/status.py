"""The exporter's `/status` documents: Burrow-style lag status per group and partition.

The windows of commits that the statuses are judged on live in the exporter (they need
the log-end history it polls), so the CLI (`groupscope lag-status`) asks the exporter,
as Burrow's users ask Burrow's HTTP API. `/status` lists every group with its status,
its partitions by status and its worst partition; `/status?group=NAME` gives each of the
group's partitions with its status, lag and window (`&cluster=NAME` when groups of that
name are on several clusters), and how far the group fell behind during its last
rebalance where the exporter sampled it (`last_rebalance_lag`,
services/exporter/rebalancelag.py; null elsewhere). Every group carries its cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from services.exporter.lagstatus import NAMES, CommitWindows, group_status
from services.exporter.rebalancelag import RebalanceLag
from services.exporter.snapshot import GroupKey, Offsets


@dataclass(frozen=True)
class StatusView:
    """What one refresh judged: per committed row its lag, status (0: not judged) and
    window row (-1: none)."""

    taken_at: float
    offsets: Offsets
    lag: np.ndarray
    status: np.ndarray
    window_rows: np.ndarray
    rebalance: dict[GroupKey, RebalanceLag] = field(default_factory=dict)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _partition(view: StatusView, i: int) -> dict[str, Any]:
    o = view.offsets
    return {
        "topic": o.topics[int(o.topic[i])][1],
        "partition": int(o.partition[i]),
        "status": NAMES[int(view.status[i])],
        "lag": int(view.lag[i]),
        "committed_offset": int(o.committed[i]),
    }


def groups_document(view: StatusView) -> dict[str, Any]:
    """Every group with a judged partition: status, counts by status, worst partition."""
    o = view.offsets
    judged = np.nonzero(view.status > 0)[0]
    group_of = o.pair_group[o.pair]
    by_group: dict[int, list[int]] = {}
    for i in judged.tolist():
        by_group.setdefault(int(group_of[i]), []).append(i)
    groups = []
    for g in sorted(by_group, key=lambda g: o.groups[g]):
        rows = np.array(by_group[g])
        statuses = view.status[rows]
        worst = int(rows[np.lexsort((-view.lag[rows], -statuses))[0]])
        counts: dict[str, int] = {}
        for code in statuses.tolist():
            counts[NAMES[code]] = counts.get(NAMES[code], 0) + 1
        cluster, name = o.groups[g]
        groups.append(
            {
                "cluster": cluster,
                "group": name,
                "status": NAMES[group_status(statuses)],
                "partitions": len(rows),
                "total_lag": int(view.lag[rows].sum()),
                "partitions_by_status": counts,
                "worst": _partition(view, worst),
            }
        )
    return {"taken_at": _iso(view.taken_at), "groups": groups}


class AmbiguousGroupError(ValueError):
    """A group name on several clusters, asked for without one."""


def group_document(
    view: StatusView, windows: CommitWindows, group: str, cluster: str | None = None
) -> dict[str, Any] | None:
    """One group's partitions with their windows (oldest commit first); None if the
    group (of `cluster`, if given) has no judged partition. `AmbiguousGroupError` when
    no cluster is given and the name is on several."""
    o = view.offsets
    found = [i for i, (c, name) in enumerate(o.groups) if name == group and cluster in (None, c)]
    if len(found) > 1:
        clusters = ", ".join(o.groups[i][0] for i in found)
        raise AmbiguousGroupError(f"group {group!r} is on clusters {clusters}: give the cluster")
    if not found:
        return None
    g = found[0]
    rows = np.nonzero((o.pair_group[o.pair] == g) & (view.status > 0))[0]
    if not len(rows):
        return None
    partitions = []
    for i in rows.tolist():
        entry = _partition(view, i)
        w = int(view.window_rows[i])
        count = int(windows.count[w])
        entry["window"] = [
            {
                "offset": int(windows.offsets[w, j]),
                "timestamp": _iso(windows.times[w, j] / 1000.0),
                "lag": None if np.isnan(windows.lags[w, j]) else int(windows.lags[w, j]),
            }
            for j in range(windows.intervals - count, windows.intervals)
        ]
        partitions.append(entry)
    return {
        "taken_at": _iso(view.taken_at),
        "cluster": o.groups[g][0],
        "group": group,
        "status": NAMES[group_status(view.status[rows])],
        "total_lag": int(view.lag[rows].sum()),
        "last_rebalance_lag": _rebalance_lag(view.rebalance.get(o.groups[g])),
        "partitions": partitions,
    }


def _rebalance_lag(value: RebalanceLag | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {
        "before": value.before,
        "peak": value.peak,
        "peak_time_lag_seconds": value.peak_seconds,
    }
