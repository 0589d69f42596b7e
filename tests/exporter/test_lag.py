"""Offset and time lag: the interpolation on log-end offset samples, and the poller
against a real Kafka-protocol broker."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

from services.exporter.lag import LagPollError, LogEndPoller, OffsetHistory
from tests.fixtures.kafka import KafkaBroker, running_tansu

TOPICS = ["orders"]


def key(h: OffsetHistory, partition: int = 0) -> np.ndarray:
    return h.keys(TOPICS, np.array([0]), np.array([partition]))


def history(samples: list[tuple[int, float]], depth: int = 5) -> OffsetHistory:
    h = OffsetHistory(depth)
    for offset, t in samples:
        h.record(key(h), np.array([offset]), t)
    return h


def lag_of(h: OffsetHistory, committed: int, now: float) -> tuple[float, float]:
    result = h.lag(h.rows_of(key(h)), np.array([committed]), now)
    return float(result.lag[0]), float(result.seconds[0])


def test_interpolates_between_the_samples_that_bracket_the_committed_offset() -> None:
    h = history([(100, 1000.0), (200, 1010.0), (400, 1020.0)])
    # offset 300 was appended halfway between t=1010 (LEO 200) and t=1020 (LEO 400)
    assert lag_of(h, 300, now=1030.0) == (100.0, 15.0)
    assert lag_of(h, 200, now=1030.0) == (200.0, 20.0)


def test_caught_up_is_zero_and_a_commit_ahead_of_the_sample_is_not_negative() -> None:
    h = history([(100, 1000.0), (200, 1010.0)])
    assert lag_of(h, 200, now=1050.0) == (0.0, 0.0)
    assert lag_of(h, 250, now=1050.0) == (0.0, 0.0)


def test_a_flat_log_advances_the_newest_sample_instead_of_adding_one() -> None:
    h = history([(100, 1000.0), (200, 1010.0), (200, 1100.0), (200, 1200.0)])
    # the log ended at 100 until t=1000 and at 200 from t=1010 (seen until t=1200):
    # 150 was appended halfway between 1000 and 1010
    assert lag_of(h, 150, now=1300.0) == (50.0, 295.0)
    assert h.offsets[0].tolist() == [100, 100, 100, 100, 200]
    assert h.first[0, -1] + h.epoch == 1010.0
    assert h.last[0, -1] + h.epoch == 1200.0
    # and a commit at 200 is caught up, however long the log stayed there
    assert lag_of(h, 200, now=1300.0) == (0.0, 0.0)


def test_older_than_the_history_extrapolates_at_the_average_rate() -> None:
    h = history([(1000, 1000.0), (1100, 1010.0), (1200, 1020.0)])  # 10 records/s
    offset_lag, seconds = lag_of(h, 900, now=1020.0)
    assert offset_lag == 300.0
    assert seconds == pytest.approx(30.0)  # 100 records before t=1000 at 10/s


def test_one_sample_gives_the_history_age_as_a_lower_bound() -> None:
    h = history([(500, 1000.0)])
    assert lag_of(h, 400, now=1060.0) == (100.0, 60.0)


def test_a_log_that_shrank_starts_a_new_history() -> None:
    h = history([(100, 1000.0), (200, 1010.0), (5, 1020.0)])
    assert h.offsets[0].tolist() == [5] * 5
    assert h.first[0].tolist() == [20.0] * 5
    assert lag_of(h, 0, now=1030.0) == (5.0, 10.0)


def test_unknown_partitions_have_no_lag() -> None:
    h = history([(100, 1000.0)])
    result = h.lag(np.array([-1, 0]), np.array([10, 10]), 1000.0)
    assert math.isnan(result.lag[0]) and math.isnan(result.seconds[0])
    assert result.lag[1] == 90.0


def test_partitions_that_were_not_read_keep_their_history() -> None:
    h = history([(100, 1000.0), (200, 1010.0)])
    h.record(key(h), np.array([-1]), 1020.0)  # the poll failed for it
    assert h.offsets[0, -2:].tolist() == [100, 200]
    assert h.last[0, -1] + h.epoch == 1010.0


def test_keys_are_stable_across_polls_whatever_the_topic_order() -> None:
    h = OffsetHistory(3)
    h.record(h.keys(["a", "b"], np.array([0, 1, 1]), np.array([0, 0, 7])), np.array([5, 6, 7]), 1)
    keys = h.keys(["b", "a", "c"], np.array([0, 1, 0, 2]), np.array([7, 0, 0, 0]))
    rows = h.rows_of(keys)
    assert h.offsets[rows[:3], -1].tolist() == [7, 5, 6]
    assert rows[3] == -1


def test_vectorized_over_many_partitions_equals_one_by_one() -> None:
    rng = np.random.default_rng(7)
    n = 300
    h = OffsetHistory(6)
    keys = h.keys(["t"], np.zeros(n, np.int64), np.arange(n))
    leo = rng.integers(0, 50, n)
    for step in range(10):
        leo = leo + rng.integers(0, 30, n) * (rng.random(n) < 0.7)
        h.record(keys, leo, 1000.0 + 5 * step)
    committed = np.maximum(leo - rng.integers(0, 400, n), 0)
    rows = h.rows_of(keys)
    together = h.lag(rows, committed, 1100.0)
    for i in range(n):
        alone = h.lag(rows[i : i + 1], committed[i : i + 1], 1100.0)
        assert together.lag[i] == alone.lag[0]
        assert together.seconds[i] == pytest.approx(alone.seconds[0])
    assert (together.seconds >= 0).all()


def test_history_needs_two_samples() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        OffsetHistory(1)


def test_poller_reads_log_end_offsets_from_a_real_broker(kafka_broker) -> None:
    topic = kafka_broker.create_topic(partitions=3)
    kafka_broker.produce(topic, [0, 1] * 3 + [0])
    poller = LogEndPoller({"bootstrap.servers": kafka_broker.bootstrap_servers})
    got = poller([topic, "no-such-topic-xyz"], np.array([0, 0, 0, 1]), np.array([0, 1, 2, 0]))
    assert got.tolist() == [4, 3, 0, -1]


@pytest.mark.broker
def test_a_poll_of_a_stopped_broker_fails_and_keeps_nothing_stale(tmp_path: Path) -> None:
    """A broker that is down makes every partition's poll fail: that is a failed poll
    (the exporter counts it and GroupscopeLagPollFailing fires), not a poll of unknown
    topics, which a deleted topic's surviving commits would be."""
    with running_tansu(tmp_path) as bootstrap:
        broker = KafkaBroker(bootstrap)
        topic = broker.create_topic(partitions=2)
        broker.produce(topic, [0, 0, 1])
        poller = LogEndPoller({"bootstrap.servers": bootstrap}, timeout_s=2.0)
        assert poller([topic], np.array([0, 0]), np.array([0, 1])).tolist() == [2, 1]
    started = time.monotonic()
    with pytest.raises(LagPollError, match="of 2 partitions not read") as failed:
        poller([topic], np.array([0, 0]), np.array([0, 1]))
    assert failed.value.ends.tolist() == [-1, -1]
    assert time.monotonic() - started < 10.0
