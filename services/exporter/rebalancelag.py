"""How far a group fell behind during its latest rebalance, from the exporter's own lag.

The store knows when a rebalance happened and how long its moved partitions went
without an offset commit (`rebalances.gap_*`, services/tracker/cost.py), but not lag:
that needs log-end offsets, which only the exporter polls. So the exporter keeps, per
group, the lag it published at each of its last `SAMPLES_KEPT` refreshes: the lag sum
over the group's committed partitions (`groupscope_lag_sum` summed over topics) and its
time lag (the largest `groupscope_lag_seconds`). A sample is *complete* when every
committed partition of the group had its log end read by that refresh's poll; one that
was not (an outage, a missing Describe, a deleted topic) would understate the lag, and
is no sample.

**The window** of the group's latest rebalance, at time T (its generation record) with
G the longest commit gap of its moved partitions (the gauge
`groupscope_group_last_rebalance_commit_gap_seconds`), is [T - G, T + G]. Every moved
partition's gap ends after T (its new owner cannot commit before the generation record,
and a KIP-848 handover is at or after it) and lasts at most G, so none starts before
T - G; a classic group's gaps all contain T, so they end by T + G. While a moved
partition has not committed since the handover, the window runs to now. A KIP-848
partition handed over late (its old owner slow to revoke) can resume after T + G.

Over the window, from the exporter's samples:
- *before*: the lag sum at the last complete sample at or before T - G;
- *peak*: the highest lag sum from that sample through the first sample at or after
  the window's end (or the latest sample while it is open);
- *peak time lag*: the highest time lag over the same samples.

There is no value unless every sample from the one before the window through the one
after it is complete, and the first of them is held: an exporter that started later, a
window whose start rolled out of the samples, a group whose lag was unknown meanwhile
get no value (and no series), never a partial one. The samples are those of the
refreshes: a refresh that failed (the store was down) left none, and a peak between two
refreshes is not seen. A window that has ended is judged once and kept while the group's
latest rebalance stays the same, however old it gets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from services.exporter.lag import LagResult
from services.exporter.snapshot import GroupKey, LastRebalance, Offsets, StoreSnapshot

# Refreshes whose per-group lag is kept: an hour at the default --interval of 15 s, and
# 16 bytes per group and refresh (38 MB for 10,000 groups). Float64 both, so that a peak
# is the very value the exporter published at its refresh.
SAMPLES_KEPT = 240


@dataclass(frozen=True, slots=True)
class RebalanceLag:
    """How far a group fell behind during a rebalance (see the module docstring)."""

    before: int  # records
    peak: int  # records
    peak_seconds: float


@dataclass(frozen=True, slots=True)
class Window:
    start: float
    end: float
    final: bool  # the window has ended: its value will not change


def window(last: LastRebalance, now: float) -> Window | None:
    """The window of a rebalance as of `now`; None while no moved partition has a
    measured commit gap (nothing moved, none committed again yet, or stored before the
    store measured gaps), as the commit gap gauge is absent then."""
    if last.gap is None:
        return None
    start = last.time - last.gap
    if last.waiting:
        return Window(start, now, False)
    end = last.time + last.gap
    return Window(start, min(end, now), end <= now)


def over(
    times: np.ndarray, lag: np.ndarray, seconds: np.ndarray, start: float, end: float
) -> RebalanceLag | None:
    """The rebalance lag of a window [start, end] from samples at ascending `times`, each
    with its lag sum (NaN: no complete sample) and time lag; None unless the samples
    from the last one at or before `start` through the first one at or after `end` are
    all held and complete."""
    if end < start:  # the window lies after now: the broker's clock is ahead
        return None
    first = int(np.searchsorted(times, start, side="right")) - 1
    last = int(np.searchsorted(times, end, side="left"))
    if first < 0 or last >= len(times):
        return None
    span = lag[first : last + 1]
    if np.isnan(span).any():
        return None
    return RebalanceLag(
        int(span[0]), int(span.max()), round(float(seconds[first : last + 1].max()), 3)
    )


class GroupLagSamples:
    """Each group's lag sum and time lag at the exporter's last `depth` refreshes: a ring
    of rows (one per refresh) by columns (one per group), NaN where a refresh has no
    complete sample of the group."""

    def __init__(self, depth: int = SAMPLES_KEPT) -> None:
        if depth < 2:
            raise ValueError("the samples need at least 2 refreshes")
        self.depth = depth
        self.columns: dict[GroupKey, int] = {}
        self.times = np.full(depth, np.nan)
        self.lag = np.full((depth, 0), np.nan)
        self.seconds = np.full((depth, 0), np.nan)
        self.next = 0  # the row the next refresh writes
        self.count = 0

    def record(
        self, at: float, groups: list[GroupKey], lag: np.ndarray, seconds: np.ndarray
    ) -> None:
        """One refresh at `at`: `lag[i]` and `seconds[i]` of `groups[i]` (NaN: not
        complete); every other group has no sample at `at`."""
        if len(self.columns) > 2 * len(groups) + 1024:
            self._keep(groups)  # groups that left the store leave the samples
        for g in groups:
            self.columns.setdefault(g, len(self.columns))
        added = len(self.columns) - self.lag.shape[1]
        if added:
            self.lag = np.hstack([self.lag, np.full((self.depth, added), np.nan)])
            self.seconds = np.hstack([self.seconds, np.full((self.depth, added), np.nan)])
        row = self.next
        self.times[row] = at
        self.lag[row] = np.nan
        self.seconds[row] = np.nan
        columns = np.fromiter((self.columns[g] for g in groups), np.int64, len(groups))
        self.lag[row, columns] = lag
        self.seconds[row, columns] = seconds
        self.next = (row + 1) % self.depth
        self.count = min(self.count + 1, self.depth)

    def _keep(self, groups: list[GroupKey]) -> None:
        kept = [g for g in groups if g in self.columns]
        columns = [self.columns[g] for g in kept]
        self.lag = self.lag[:, columns]
        self.seconds = self.seconds[:, columns]
        self.columns = {g: i for i, g in enumerate(kept)}

    def rows(self) -> np.ndarray:
        """The rows held, oldest first."""
        return (np.arange(self.count) + self.next - self.count) % self.depth

    def of(
        self, group: GroupKey, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(times, lag sums, time lags) of `group`'s samples, oldest first (all NaN for a
        group never sampled); `rows`: `self.rows()`, if the caller has it."""
        rows = self.rows() if rows is None else rows
        column = self.columns.get(group)
        if column is None:
            nothing = np.full(len(rows), np.nan)
            return self.times[rows], nothing, nothing
        return self.times[rows], self.lag[rows, column], self.seconds[rows, column]


def group_totals(
    offsets: Offsets, lag: LagResult, read: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per group of `offsets.groups`: its lag sum and time lag (the largest of its
    partitions'), NaN where some committed partition's lag is unknown or its log end
    was not read by this poll (`read`, per committed row)."""
    n = len(offsets.groups)
    group = offsets.pair_group[offsets.pair]
    known = ~np.isnan(lag.lag) & read
    complete = np.bincount(group[~known], minlength=n) == 0
    # (float64 even where no row is known: bincount then gives integers)
    total = np.bincount(group[known], weights=lag.lag[known], minlength=n).astype(np.float64)
    seconds = np.zeros(n)
    np.maximum.at(seconds, group[known], lag.seconds[known])
    total[~complete] = np.nan
    seconds[~complete] = np.nan
    return total, seconds


class RebalanceLagWatch:
    """The exporter's samples of every group's lag, and the rebalance lag of each
    group's latest rebalance (services.exporter.app calls `update` every refresh)."""

    def __init__(self, depth: int = SAMPLES_KEPT) -> None:
        self.samples = GroupLagSamples(depth)
        # group -> (the rebalance as judged, its value): windows that have ended
        self.final: dict[GroupKey, tuple[LastRebalance, RebalanceLag | None]] = {}

    def update(
        self, snapshot: StoreSnapshot, lag: LagResult, read: np.ndarray, now: float
    ) -> dict[GroupKey, RebalanceLag]:
        """Record this refresh's samples (taken at `now`); return the rebalance lag of
        every group that has one."""
        offsets = snapshot.offsets
        total, seconds = group_totals(offsets, lag, read)
        self.samples.record(now, offsets.groups, total, seconds)
        out: dict[GroupKey, RebalanceLag] = {}
        final: dict[GroupKey, tuple[LastRebalance, RebalanceLag | None]] = {}
        rows = self.samples.rows()
        for group, last in snapshot.last_rebalances.items():
            judged = self.final.get(group)
            if judged is not None and judged[0] == last:
                value = judged[1]
                final[group] = judged
            else:
                w = window(last, now)
                if w is None:
                    continue
                value = over(*self.samples.of(group, rows), w.start, w.end)
                if w.final:
                    final[group] = (last, value)
            if value is not None:
                out[group] = value
        self.final = final
        return out
