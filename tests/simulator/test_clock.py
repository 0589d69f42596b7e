"""The wall clock runs in real time and stamps records with the current time."""

from __future__ import annotations

import time

from services.simulator import Params, ReplayDirectory, build, read_replay, simulate
from services.simulator.engine import DEFAULT_START_MS


def test_wall_clock_runs_in_real_time(tmp_path):
    specs, _ = build(["steady"], Params({"commit_interval": "200ms", "members": "1"}), None)
    before = time.time() * 1000
    summary = simulate(specs, ReplayDirectory(tmp_path), str(tmp_path), 4_500, wall_clock=True)
    after = time.time() * 1000
    assert after - before >= 4_400  # the first generation comes after 3 s
    rows = read_replay(tmp_path)
    assert rows
    assert before - 50 <= summary["start"] <= rows[0]["timestamp"] <= rows[-1]["timestamp"] <= after


def test_simulated_clock_fast_forwards_from_a_fixed_epoch(tmp_path):
    specs, _ = build(["steady"], Params(), None)
    started = time.perf_counter()
    summary = simulate(specs, ReplayDirectory(tmp_path), str(tmp_path), 3_600_000)
    assert time.perf_counter() - started < 10
    rows = read_replay(tmp_path)
    assert summary["start"] == DEFAULT_START_MS
    assert rows[-1]["timestamp"] - rows[0]["timestamp"] > 3_500_000
