"""How far a group fell behind during its latest rebalance: the window, the samples that
cover it (or do not), and the exporter's bookkeeping of them, on hand-built samples.
End to end, with a real broker, group and job: tests/exporter/test_real_kafka_lag.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.exporter.catalogue import BY_NAME
from services.exporter.lag import LagResult
from services.exporter.rebalancelag import (
    SAMPLES_KEPT,
    GroupLagSamples,
    RebalanceLag,
    RebalanceLagWatch,
    Window,
    group_totals,
    over,
    window,
)
from services.exporter.snapshot import LastRebalance, Offsets, StoreSnapshot

NAN = math.nan
TIMES = np.array([0.0, 10.0, 20.0, 30.0, 40.0, 50.0])
LAG = np.array([5.0, 6.0, 30.0, 80.0, 40.0, 10.0])
SECONDS = np.array([1.0, 1.5, 12.0, 21.0, 9.0, 2.0])

C = "default"  # the cluster of every group here


def test_before_is_the_last_sample_at_the_start_and_the_peak_runs_through_the_end() -> None:
    # [12, 35]: from the sample at 10 (before) through the one at 40 (the first after 35)
    assert over(TIMES, LAG, SECONDS, 12.0, 35.0) == RebalanceLag(6, 80, 21.0)
    # a sample exactly at the start is the one before; one exactly at the end closes it
    assert over(TIMES, LAG, SECONDS, 20.0, 20.0) == RebalanceLag(30, 30, 12.0)
    assert over(TIMES, LAG, SECONDS, 10.0, 20.0) == RebalanceLag(6, 30, 12.0)
    # the peak is never below the lag before, and samples outside do not count
    assert over(TIMES, LAG, SECONDS, 41.0, 50.0) == RebalanceLag(40, 40, 9.0)


def test_no_value_without_samples_from_before_the_start_through_the_end() -> None:
    # the exporter started (or the start rolled out) after the window began
    assert over(TIMES[2:], LAG[2:], SECONDS[2:], 12.0, 35.0) is None
    # not sampled at or after the end yet
    assert over(TIMES, LAG, SECONDS, 12.0, 55.0) is None
    # a window after the latest sample (the broker's clock ahead of the exporter's)
    assert over(TIMES, LAG, SECONDS, 60.0, 50.0) is None
    # no samples at all
    empty = np.zeros(0)
    assert over(empty, empty, empty, 12.0, 35.0) is None


def test_an_incomplete_sample_inside_the_window_leaves_no_value_one_outside_does() -> None:
    for i in (1, 2, 4):  # before, inside, the one after the end
        lag = LAG.copy()
        lag[i] = NAN
        assert over(TIMES, lag, SECONDS, 12.0, 35.0) is None, i
    lag = LAG.copy()
    lag[[0, 5]] = NAN  # before the sample before, after the sample after
    assert over(TIMES, lag, SECONDS, 12.0, 35.0) == RebalanceLag(6, 80, 21.0)


def last(time: float = 1000.0, gap: float | None = 20.0, waiting: int = 0) -> LastRebalance:
    return LastRebalance(time, moved=2, baseline=1, partitions=4, gap=gap, waiting=waiting)


def test_the_window_holds_every_commit_gap_and_stays_open_while_one_is() -> None:
    assert window(last(), now=1100.0) == Window(980.0, 1020.0, True)
    # its end not reached yet: up to now, judged again later
    assert window(last(), now=1010.0) == Window(980.0, 1010.0, False)
    # a moved partition still waits for its first commit: up to now
    assert window(last(waiting=1), now=5000.0) == Window(980.0, 5000.0, False)
    # no gap measured (nothing moved, none resumed yet, stored before gaps were): none
    assert window(last(gap=None), now=1100.0) is None
    assert window(last(gap=None, waiting=3), now=1100.0) is None


def test_the_samples_are_a_ring_of_refreshes_by_group() -> None:
    samples = GroupLagSamples(depth=4)
    for i in range(6):
        groups = [(C, "a"), (C, "b")] if i != 3 else [(C, "a")]  # b has no offsets at refresh 3
        samples.record(
            float(i),
            groups,
            np.array([i * 10.0, i + 0.5])[: len(groups)],
            np.ones(2)[: len(groups)],
        )
    times, lag, _ = samples.of((C, "a"))
    assert times.tolist() == [2.0, 3.0, 4.0, 5.0] and lag.tolist() == [20.0, 30.0, 40.0, 50.0]
    times, lag, _ = samples.of((C, "b"))
    assert lag[[0, 2, 3]].tolist() == [2.5, 4.5, 5.5] and math.isnan(lag[1])
    assert np.isnan(samples.of((C, "never"))[1]).all()


def test_groups_that_left_the_store_leave_the_samples() -> None:
    samples = GroupLagSamples(depth=3)
    many = [(C, f"g{i}") for i in range(1100)]
    samples.record(0.0, many, np.zeros(1100), np.zeros(1100))
    samples.record(1.0, [(C, "g7"), (C, "new")], np.array([7.0, 1.0]), np.zeros(2))
    assert set(samples.columns) == {(C, "g7"), (C, "new")} and samples.lag.shape == (3, 2)
    assert samples.of((C, "g7"))[1].tolist() == [0.0, 7.0]
    assert np.isnan(samples.of((C, "new"))[1][0])


def offsets(groups: dict[str, int]) -> Offsets:
    """`groups[g]` partitions of topic t for each group g of cluster C, committed at 0."""
    pair_group = np.arange(len(groups))
    pair = np.repeat(pair_group, list(groups.values()))
    partition = np.concatenate([np.arange(n) for n in groups.values()])
    return Offsets(
        groups=[(C, g) for g in groups],
        topics=[(C, "t")],
        pair_group=pair_group,
        pair_topic=np.zeros(len(groups), np.int64),
        pair=pair,
        topic=np.zeros(len(pair), np.int64),
        partition=partition,
        committed=np.zeros(len(pair), np.int64),
        commit_ms=np.zeros(len(pair), np.int64),
    )


def test_a_group_total_is_only_complete_with_every_partitions_log_end_read() -> None:
    o = offsets({"a": 2, "b": 2, "c": 1})
    lag = LagResult(np.array([3.0, 4.0, 5.0, NAN, 6.0]), np.array([1.0, 7.0, 2.0, NAN, 0.0]))
    read = np.array([True, True, True, True, False])
    total, seconds = group_totals(o, lag, read)
    assert total[0] == 7.0 and seconds[0] == 7.0  # the sum, and the oldest partition
    assert math.isnan(total[1]) and math.isnan(seconds[1])  # a lag unknown
    assert math.isnan(total[2]) and math.isnan(seconds[2])  # a log end not read this poll


class Refreshes:
    """The watch fed refreshes of one group of two partitions, every 10 s from `start`."""

    def __init__(self, depth: int = SAMPLES_KEPT, start: float = 0.0) -> None:
        self.watch = RebalanceLagWatch(depth)
        self.offsets = offsets({"g": 2})
        self.now = start - 10.0

    def refresh(
        self, lag: tuple[float, float], rebalance: LastRebalance | None, read: bool = True
    ) -> RebalanceLag | None:
        self.now += 10.0
        snapshot = StoreSnapshot(
            self.now, [], {}, {(C, "g"): rebalance} if rebalance else {}, [], [], self.offsets
        )
        result = LagResult(np.array(lag), np.array(lag) / 10)
        out = self.watch.update(snapshot, result, np.array([read, True]), self.now)
        return out.get((C, "g"))


def test_the_watch_follows_an_open_window_and_keeps_an_ended_one() -> None:
    run = Refreshes(depth=8)
    for lag in ((1, 1), (1, 2), (2, 2)):  # t = 0, 10, 20
        assert run.refresh(lag, None) is None
    # the store shows a rebalance at t=25 with a gap of 8 s that a partition still
    # waits out: the window [17, now]
    waiting = last(time=25.0, gap=8.0, waiting=1)
    assert run.refresh((40, 10), waiting) == RebalanceLag(3, 50, 4.0)  # t = 30
    assert run.refresh((90, 20), waiting) == RebalanceLag(3, 110, 9.0)  # t = 40
    # it resumed: the gap is 30 s, the window [-5, 55]; nothing before -5 is held
    resumed = last(time=25.0, gap=30.0)
    assert run.refresh((5, 5), resumed) is None  # t = 50
    # the other way: resumed with a gap of 12 s, window [13, 37] from the samples at
    # 10 (lag 3) through 40 (110): ended, judged once
    run = Refreshes(depth=8)
    for lag in ((1, 1), (1, 2), (2, 2), (40, 10), (90, 20)):
        run.refresh(lag, None)
    ended = last(time=25.0, gap=12.0)
    value = RebalanceLag(3, 110, 9.0)
    assert run.refresh((0, 0), ended) == value  # t = 50
    for _ in range(10):  # the samples roll out of the ring; the value stays
        assert run.refresh((500, 500), ended) == value
    assert run.watch.samples.of((C, "g"))[0][0] > 13.0
    # a later rebalance replaces it, judged on the samples held
    later = last(time=125.0, gap=4.0)
    assert run.refresh((7, 0), later) == RebalanceLag(1000, 1000, 50.0)  # t = 160


def test_no_value_where_the_exporter_did_not_cover_the_rebalance() -> None:
    # it started after the window [13, 37] began: judged once as nothing, and stays so
    run = Refreshes(start=20.0)
    ended = last(time=25.0, gap=12.0)
    for _ in range(5):
        assert run.refresh((5, 5), ended) is None
    # a log end not read inside the window
    run = Refreshes()
    for lag, read in (((1, 1), True), ((1, 2), True), ((9, 9), False), ((2, 2), True)):
        run.refresh(lag, None, read)
    assert run.refresh((2, 2), last(time=25.0, gap=12.0)) is None  # [13, 37]
    # no log-end offsets at all: the group's lag was never known
    run = Refreshes()
    for _ in range(4):
        run.refresh((NAN, NAN), None)
    assert run.refresh((NAN, NAN), last(time=25.0, gap=12.0)) is None


def test_the_help_says_how_many_refreshes_are_kept() -> None:
    before = BY_NAME["groupscope_group_last_rebalance_lag_before_records"]
    assert f"its last {SAMPLES_KEPT} refreshes" in before.help


@pytest.mark.parametrize("depth", [0, 1])
def test_the_ring_holds_two_refreshes_at_least(depth: int) -> None:
    with pytest.raises(ValueError):
        GroupLagSamples(depth)


def test_lag_status_of_a_group_says_how_far_it_fell_behind_where_known() -> None:
    from services.exporter.status_command import group_text

    document = {
        "group": "payments",
        "status": "OK",
        "total_lag": 0,
        "taken_at": "2026-11-27T07:00:00Z",
        "partitions": [],
    }
    assert "last rebalance" not in group_text(document)  # an exporter without it
    assert "last rebalance" not in group_text({**document, "last_rebalance_lag": None})
    rebalance = {"before": 3, "peak": 1200, "peak_time_lag_seconds": 41.5}
    text = group_text({**document, "last_rebalance_lag": rebalance})
    assert "last rebalance: lag 3 before, 1200 at its peak, peak time lag 41.5s\n" in text


def test_published_per_group_where_known_and_nowhere_else() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from services.exporter.exposition import ExporterStats, Options, render

    o = offsets({"a": 1, 'b"2': 1})
    snapshot = StoreSnapshot(100.0, [], {}, {}, [], [], o)
    lag = LagResult(np.zeros(2), np.zeros(2), rebalance={(C, 'b"2'): RebalanceLag(3, 1200, 41.5)})
    text, _ = render(snapshot, lag, ExporterStats(), Options())
    found = {
        (s.name, tuple(s.labels.items())): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
        if s.name.startswith("groupscope_group_last_rebalance_")
    }
    assert found == {
        (
            "groupscope_group_last_rebalance_lag_before_records",
            (("cluster", C), ("group", 'b"2')),
        ): 3,
        (
            "groupscope_group_last_rebalance_lag_peak_records",
            (("cluster", C), ("group", 'b"2')),
        ): 1200,
        (
            "groupscope_group_last_rebalance_time_lag_peak_seconds",
            (("cluster", C), ("group", 'b"2')),
        ): 41.5,
    }
