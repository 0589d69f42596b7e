"""Lag status per partition and per group, by Burrow's consumer lag evaluation rules.

Burrow (LinkedIn) judges a group without lag thresholds, from a sliding window of each
partition's last commits, and many on-call rotations are built on its statuses. This
module follows its published rules (the wiki page "Consumer Lag Evaluation Rules") as its
evaluator implements them (`core/internal/evaluator/caching.go`, `calculatePartitionStatus`
and the rule functions; the tests carry that file's test cases):

- The **window** of a partition holds its last `intervals` (10) commits: the committed
  offset, the commit's timestamp, and the lag when the commit was seen (the log-end
  offset then, minus the offset, never below 0; unknown while no log-end offset is).
  A commit less than `min_distance_s` (1 s) after the previous one replaces it, as
  Burrow's storage does. The exporter sees commits when it reads the store, so commits
  between two refreshes count as one: the window is of observed commits.
- A partition whose **current lag** is 0 is OK. Otherwise, in this order:
  STOP when the time since the last commit is longer than the window's span (first to
  last commit), unless the log end was at or below the last committed offset at some
  point in the recent log-end samples; then, only if no lag in the window is 0: REWIND
  when an offset in the window went backwards, STALL when every offset in the window is
  the same, WARN when the lag never decreased from one commit to the next. Else OK.
- A **group** is the worst of its partitions, where STOP, STALL and REWIND count as
  ERR (Burrow's group statuses are OK, WARN and ERR).

Codes are Burrow's `StatusConstant`s, so dashboards and alerts compare numbers: OK 1,
WARN 2, ERR 3, STOP 4, STALL 5, REWIND 6; 0 (Burrow's NOTFOUND) where a partition is not
judged yet: its current lag is unknown, or its window holds fewer than `MIN_COMMITS`
observed commits (a window fills as the exporter observes commits, from its start).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.exporter.lag import CHUNK
from services.exporter.rows import RowIndex, extend

OK, WARN, ERR, STOP, STALL, REWIND = 1, 2, 3, 4, 5, 6
NAMES = {OK: "OK", WARN: "WARN", ERR: "ERR", STOP: "STOP", STALL: "STALL", REWIND: "REWIND"}
INTERVALS = 10
MIN_DISTANCE_S = 1.0
# A window is judged from its second observed commit: one commit has no span, and
# would read as STOP (or STALL) for any partition with lag the moment the exporter
# first sees it. Burrow's windows fill from history; ours fill as commits are observed.
MIN_COMMITS = 2


def group_status(partition_statuses: np.ndarray) -> int:
    """The worst partition status, STOP, STALL and REWIND reading as ERR; OK for none."""
    if not len(partition_statuses):
        return OK
    return int(np.minimum(partition_statuses, ERR).max())


class CommitWindows:
    """Every partition's window of its last `intervals` observed commits, as arrays.

    Rows are keyed by int64 partition keys (`RowIndex`); a window is right-aligned: its
    `count[r]` newest entries are the last columns of row r.
    """

    def __init__(
        self,
        intervals: int = INTERVALS,
        min_distance_s: float = MIN_DISTANCE_S,
        min_commits: int = MIN_COMMITS,
    ) -> None:
        if not 1 <= min_commits <= intervals:
            raise ValueError("a window holds at least one commit, and min_commits of them")
        self.intervals = intervals
        self.min_commits = min_commits
        self.min_distance_ms = min_distance_s * 1000.0
        self.index = RowIndex()
        self.pair_ids: dict[tuple[str, ...], int] = {}
        self.offsets = np.zeros((0, intervals), np.int64)
        self.times = np.zeros((0, intervals), np.float64)  # commit timestamps, ms
        self.lags = np.zeros((0, intervals), np.float64)  # NaN: no log-end offset known
        self.count = np.zeros(0, np.int64)

    def __len__(self) -> int:
        return len(self.index)

    def keys(self, pairs: Sequence[tuple[str, ...]], pair: np.ndarray, partition: np.ndarray):
        """Stable int64 keys of the partitions (`pairs[pair[i]]`, `partition[i]`): an id
        per (cluster, group, topic) in the high bits, the partition (an int32) in the low
        31."""
        ids = np.fromiter(
            (self.pair_ids.setdefault(p, len(self.pair_ids)) for p in pairs), np.int64, len(pairs)
        )
        return (ids[pair] << 31) | partition.astype(np.int64)

    def observe(
        self, keys: np.ndarray, offsets: np.ndarray, commit_ms: np.ndarray, lag: np.ndarray
    ) -> np.ndarray:
        """Add each partition's latest commit (offset, timestamp in ms, lag seen now; NaN
        where unknown) to its window if it is a new one; returns each key's row."""
        rows = self.index.rows_of(keys)
        new = rows < 0
        if new.any():
            added = len(np.nonzero(new)[0])
            self.offsets = extend(self.offsets, added)
            self.times = extend(self.times, added)
            self.lags = extend(self.lags, added)
            self.count = np.concatenate([self.count, np.zeros(added, np.int64)])
            rows[new] = self.index.add(keys[new])
        lag = np.maximum(lag, 0.0)
        last_time = np.where(self.count[rows] > 0, self.times[rows, -1], -np.inf)
        last_offset = self.offsets[rows, -1]
        seen = (self.count[rows] > 0) & (commit_ms == last_time) & (offsets == last_offset)
        late = commit_ms < last_time
        fresh = ~seen & ~late
        close = fresh & (commit_ms - last_time < self.min_distance_ms)
        self._put(rows[close], offsets[close], commit_ms[close], lag[close])
        shift = fresh & ~close
        r = rows[shift]
        if len(r):
            for array in (self.offsets, self.times, self.lags):
                array[r, :-1] = array[r, 1:]
            self.count[r] = np.minimum(self.count[r] + 1, self.intervals)
            self._put(r, offsets[shift], commit_ms[shift], lag[shift])
        return rows

    def _put(self, rows: np.ndarray, offsets: np.ndarray, times: np.ndarray, lag: np.ndarray):
        self.offsets[rows, -1] = offsets
        self.times[rows, -1] = times
        self.lags[rows, -1] = lag

    def evaluate(
        self,
        rows: np.ndarray,
        current_lag: np.ndarray,
        recent_log_end_min: np.ndarray,
        now_s: float,
    ) -> np.ndarray:
        """Status code per row: `current_lag` is the lag now (NaN: unknown, status 0),
        `recent_log_end_min` the lowest log-end offset among the recent samples (-1:
        none), `now_s` the time of evaluation (Unix seconds). A window with fewer than
        `min_commits` commits is not judged (0)."""
        status = np.zeros(len(rows), np.int64)
        # In blocks, as OffsetHistory.lag does: the rules' (rows x window) temporaries of
        # 500,000 partitions at once would cost hundreds of MB per refresh.
        for start in range(0, len(rows), CHUNK):
            block = slice(start, start + CHUNK)
            r = rows[block]
            status[block] = partition_status(
                self.offsets[r],
                self.times[r],
                self.lags[r],
                self.count[r],
                current_lag[block],
                recent_log_end_min[block],
                now_s,
            )
        status[self.count[rows] < self.min_commits] = 0
        return status


def partition_status(
    offsets: np.ndarray,
    times: np.ndarray,
    lags: np.ndarray,
    count: np.ndarray,
    current_lag: np.ndarray,
    recent_log_end_min: np.ndarray,
    now_s: float,
) -> np.ndarray:
    """`calculatePartitionStatus` over many right-aligned windows at once (see the
    module docstring); 0 where the current lag is unknown."""
    n, depth = offsets.shape
    status = np.full(n, OK, np.int64)
    status[np.isnan(current_lag)] = 0
    valid = np.arange(depth)[None, :] >= (depth - count)[:, None]
    pairs = valid[:, 1:] & valid[:, :-1]
    first_time = times[np.arange(n), np.clip(depth - count, 0, depth - 1)]
    last_time, last_offset = times[:, -1], offsets[:, -1]
    stopped = (now_s * 1000.0 - last_time) > (last_time - first_time)
    recent_zero = (recent_log_end_min >= 0) & (recent_log_end_min <= last_offset)
    ever_zero = (valid & (lags == 0)).any(axis=1)
    rewind = (pairs & (offsets[:, 1:] < offsets[:, :-1])).any(axis=1)
    stalled = ~(pairs & (offsets[:, 1:] != offsets[:, :-1])).any(axis=1)
    known = valid & ~np.isnan(lags)
    # Each entry's previous known lag (Burrow skips entries without one).
    last_known = np.where(known, np.arange(depth)[None, :], -1)
    np.maximum.accumulate(last_known, axis=1, out=last_known)
    previous = np.full((n, depth), -1, np.int64)
    previous[:, 1:] = last_known[:, :-1]
    before = np.take_along_axis(lags, np.maximum(previous, 0), axis=1)
    decreased = (known & (previous >= 0) & (lags < before)).any(axis=1)
    lagging = (current_lag > 0) & (count > 0)
    is_stop = lagging & stopped & ~recent_zero
    judged = lagging & ~is_stop & ~ever_zero
    status[judged & ~decreased] = WARN
    status[judged & stalled] = STALL
    status[judged & rewind] = REWIND
    status[is_stop] = STOP
    return status
