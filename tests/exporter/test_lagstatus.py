"""Lag status by Burrow's rules: the evaluator's own test cases, and the windows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.exporter.lagstatus import (
    ERR,
    OK,
    REWIND,
    STALL,
    STOP,
    WARN,
    CommitWindows,
    group_status,
    partition_status,
)

N = math.nan


def steps(*entries: tuple[int, int, float]) -> list[tuple[int, int, float]]:
    return list(entries)


def still(lags: list[int]) -> list[tuple[int, int, float]]:
    """Offset 1000 committed every 100 s with these lags."""
    return [(1000, (i + 1) * 100000, lag) for i, lag in enumerate(lags)]


RISING = steps(
    (1000, 100000, 0), (2000, 200000, 50), (3000, 300000, 100), (4000, 400000, 150),
    (5000, 500000, 200),
)  # fmt: skip
RISING_LAGGED = steps(
    (1000, 100000, 50), (2000, 200000, 100), (3000, 300000, 150), (4000, 400000, 200),
    (5000, 500000, 250),
)  # fmt: skip
# Burrow #290/#303: one commit a second, always caught up when seen.
CAUGHT_UP = [(792748079 + i, 1512224618356 + t, 0) for i, t in enumerate(
    [0, 1006, 2010, 3011, 4014, 5017, 6022, 7023, 8027, 9027, 10027, 11032, 12035, 13038, 14041]
)]  # fmt: skip

# Burrow's evaluator test cases (core/internal/evaluator/caching_test.go, `tests`, in
# order): the window (offset, commit timestamp in ms, lag or NaN), the broker's recent
# offsets, the current lag, now (s), and the status calculatePartitionStatus returns.
BURROW_CASES = [
    # 0: zero lag somewhere in the window
    (RISING, [5200], 200, 600, OK),
    # 1: 400 s since the last commit is not more than the window's 400 s span
    (RISING, [5200], 200, 900, OK),
    # 2: 500 s since the last commit: stopped, even though lag was 0 at the start
    (RISING, [5200], 200, 1000, STOP),
    # 3: stopped with lag all along
    (RISING_LAGGED, [5250], 250, 1000, STOP),
    # 4: the offset never moves, but lag was 0 once
    (still([0, 50, 100, 150, 200]), [1200], 200, 600, OK),
    # 5: the offset never moves and the lag grows
    (still([100, 150, 200, 250, 300]), [1300], 300, 600, STALL),
    # 6: stalled even with a constant lag
    (still([100] * 5), [1100], 100, 600, STALL),
    # 7: the offset went back: rewind, though the lag decreased at the end
    (steps((1000, 100000, 100), (2000, 200000, 150), (3000, 300000, 200), (2000, 400000, 1250),
           (4000, 500000, 300)), [4300], 300, 600, REWIND),
    # 8: a current lag of 0 is OK whatever the window says
    (RISING_LAGGED, [5250], 0, 1000, OK),
    # 9: caught up at every commit, but commits stopped while new data arrived
    (CAUGHT_UP, [792749024, 792749000, 792748800, 792748600, 792748500], 931, 1512224650, STOP),
    # 10: the same, but the broker was at the last commit recently: not stopped yet
    (CAUGHT_UP, [792748094, 792748093, 792748093, 792748093], 1, 1512224650, OK),
    # 11: case 0 with commits whose lag is unknown in between
    ([(1000 + 500 * i, 100000 + 50000 * i, N if i % 2 else 50 * (i // 2)) for i in range(10)],
     [5700], 200, 600, OK),
]  # fmt: skip


def window_arrays(window: list[tuple[int, int, float]], depth: int):
    """One right-aligned window row of `depth` columns (Burrow keeps up to 15 here)."""
    pad = depth - len(window)
    offsets = np.array([[0] * pad + [o for o, _, _ in window]], np.int64)
    times = np.array([[0.0] * pad + [float(t) for _, t, _ in window]])
    lags = np.array([[N] * pad + [float(lag) for _, _, lag in window]])
    return offsets, times, lags, np.array([len(window)])


@pytest.mark.parametrize(
    ("window", "brokers", "current", "now", "expected"),
    BURROW_CASES,
    ids=[f"burrow-{i}" for i in range(len(BURROW_CASES))],
)
def test_burrows_own_cases(window, brokers, current, now, expected) -> None:
    offsets, times, lags, count = window_arrays(window, 16)
    status = partition_status(
        offsets, times, lags, count, np.array([float(current)]), np.array([min(brokers)]), now
    )
    assert status.tolist() == [expected]


def test_every_case_at_once_gives_each_its_own_status() -> None:
    """The rules are evaluated row by row over arrays: many windows of different lengths
    side by side must not leak into each other."""
    rows = [window_arrays(case[0], 16) for case in BURROW_CASES]
    offsets, times, lags, count = (np.concatenate(parts) for parts in zip(*rows, strict=True))
    current = np.array([float(c[2]) for c in BURROW_CASES])
    brokers = np.array([min(c[1]) for c in BURROW_CASES])
    # One `now` per call: evaluate the cases that share one together.
    for now in sorted({c[3] for c in BURROW_CASES}):
        pick = np.array([c[3] == now for c in BURROW_CASES])
        got = partition_status(
            offsets[pick], times[pick], lags[pick], count[pick], current[pick], brokers[pick], now
        )
        assert got.tolist() == [c[4] for c in BURROW_CASES if c[3] == now]


def test_an_unknown_current_lag_has_no_status_and_no_window_is_ok() -> None:
    offsets, times, lags, count = window_arrays(RISING_LAGGED, 10)
    assert partition_status(
        offsets, times, lags, count, np.array([N]), np.array([-1]), 1000
    ).tolist() == [0]
    empty = partition_status(
        np.zeros((1, 10), np.int64),
        np.zeros((1, 10)),
        np.full((1, 10), N),
        np.array([0]),
        np.array([5.0]),
        np.array([-1]),
        1000,
    )
    assert empty.tolist() == [OK]


def test_a_group_is_its_worst_partition_with_stop_stall_and_rewind_as_err() -> None:
    assert group_status(np.array([], np.int64)) == OK
    assert group_status(np.array([OK, WARN, OK])) == WARN
    for worst in (STOP, STALL, REWIND):
        assert group_status(np.array([OK, worst, WARN])) == ERR


def observe(windows: CommitWindows, key: int, offset: int, ms: float, lag: float) -> int:
    rows = windows.observe(np.array([key]), np.array([offset]), np.array([ms]), np.array([lag]))
    return int(rows[0])


def test_the_window_keeps_the_last_commits_and_drops_repeats_and_late_ones() -> None:
    windows = CommitWindows(intervals=3, min_distance_s=1.0)
    row = observe(windows, 7, 100, 10_000, 5)
    assert observe(windows, 7, 100, 10_000, 9) == row  # the same commit seen again
    assert windows.count[row] == 1 and windows.lags[row, -1] == 5
    observe(windows, 7, 150, 20_000, -3)  # a negative lag is stored as 0
    observe(windows, 7, 90, 15_000, 1)  # older than the last: ignored
    observe(windows, 7, 160, 20_500, 2)  # within 1 s of the last: replaces it
    assert windows.count[row] == 2
    assert windows.offsets[row, -2:].tolist() == [100, 160]
    assert windows.lags[row, -2:].tolist() == [5, 2]
    observe(windows, 7, 200, 30_000, 4)
    observe(windows, 7, 300, 40_000, 6)
    assert windows.count[row] == 3
    assert windows.offsets[row].tolist() == [160, 200, 300]
    assert windows.times[row].tolist() == [20_500, 30_000, 40_000]


def test_windows_of_new_and_known_partitions_are_kept_apart() -> None:
    windows = CommitWindows(intervals=4, min_commits=1)
    first = windows.observe(
        np.array([3, 1]), np.array([10, 20]), np.array([1000.0, 1000.0]), np.array([1.0, 2.0])
    )
    again = windows.observe(
        np.array([1, 2, 3]),
        np.array([25, 5, 12]),
        np.array([5000.0, 5000.0, 5000.0]),
        np.array([0.0, N, 3.0]),
    )
    assert again[0] == first[1] and again[2] == first[0] and again[1] not in first
    assert windows.offsets[again[0], -2:].tolist() == [20, 25]
    assert windows.offsets[again[2], -2:].tolist() == [10, 12]
    assert windows.count[again].tolist() == [2, 1, 2]
    assert math.isnan(windows.lags[again[1], -1])
    status = windows.evaluate(again, np.array([4.0, 1.0, 3.0]), np.array([-1, -1, -1]), 6.0)
    # key 1: lag 0 at its last commit: OK; key 2: one commit, lag unknown then, 1 s
    # since it, span 0: STOP; key 3: lag grew 1 -> 3 and 1 s since the last commit is
    # not more than the 4 s span: WARN.
    assert status.tolist() == [OK, STOP, WARN]


def test_a_window_of_one_commit_is_not_judged_by_default() -> None:
    """One observed commit has no span: with lag it would read as STOP the moment the
    exporter first sees the partition. From the second commit on, it is judged."""
    windows = CommitWindows()
    row = observe(windows, 1, 100, 1000.0, 50)
    judge = lambda: windows.evaluate(np.array([row]), np.array([50.0]), np.array([-1]), 60.0)  # noqa: E731
    assert judge().tolist() == [0]
    observe(windows, 1, 100, 11_000.0, 50)
    assert judge().tolist() == [STOP]
