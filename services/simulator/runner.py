"""Run group specs through the coordinator simulation into a sink and the ground truth."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from services.simulator.classic import ClassicGroup
from services.simulator.consumer import ConsumerGroup
from services.simulator.engine import DEFAULT_START_MS, Scheduler
from services.simulator.group import Context, SimGroup
from services.simulator.log import CoordinatorLog, Sink
from services.simulator.model import GroupSpec
from services.simulator.params import ParamError, Params
from services.simulator.replay import DEFAULT_ROWS_PER_FILE, ReplayDirectory
from services.simulator.scenarios import build, scenario_names
from services.simulator.truth import GroundTruth

OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions


def simulate(
    specs: Sequence[GroupSpec],
    sink: Sink,
    truth_dir: str | None,
    duration_ms: int,
    seed: int = 0,
    start_ms: int | None = None,
    wall_clock: bool = False,
    partitions: int = OFFSETS_PARTITIONS,
    progress: Callable[[int, int], None] | None = None,
    label: str = "",
) -> dict[str, Any]:
    """Simulate `specs` for `duration_ms`; returns the summary also written to the truth.

    Each group draws from its own random stream, seeded by `seed` and its name, so a
    group's history does not depend on which other groups run beside it. `progress` is
    called now and then with (simulated ms elapsed, records so far).
    """
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError("group names must be unique")
    if start_ms is None:
        start_ms = int(time.time() * 1000) if wall_clock else DEFAULT_START_MS
    scheduler = Scheduler(start_ms, wall_clock)
    log = CoordinatorLog(sink, partitions)
    truth = GroundTruth(truth_dir)
    ctx = Context(scheduler, log, truth)
    groups: list[SimGroup] = []
    for spec in specs:
        kind = ConsumerGroup if spec.protocol == "consumer" else ClassicGroup
        groups.append(kind(spec, ctx, random.Random(f"{seed}:{spec.name}")))
    for g in groups:
        g.start()
    end = start_ms + duration_ms
    report = None
    if progress is not None:

        def report(now: int) -> None:
            progress(now - start_ms, log.records)

    scheduler.run(end, report)
    sink.close()
    summary = {
        "scenario": label,
        "seed": seed,
        "start": start_ms,
        "end": end,
        "records": log.records,
        "partitions": partitions,
        "next_offsets": log.next_offsets,
        "groups": [
            {"group": g.name, "group_type": g.group_type, "log_partition": g.log_partition}
            for g in groups
        ],
    }
    for g in groups:
        for row in g.offsets.unresolved():
            truth.gap(row)
    commits = (row for g in sorted(groups, key=lambda g: g.name) for row in g.offsets.committed())
    truth.close(commits, summary)
    return summary


def run_scenario(
    scenario: str,
    out: str | os.PathLike,
    seed: int = 0,
    duration_ms: int | None = None,
    groups: int | None = None,
    fmt: str = "parquet",
    rows_per_file: int = DEFAULT_ROWS_PER_FILE,
    **settings: Any,
) -> dict[str, Any]:
    """Run named scenarios (comma-separated) into the replay directory `out`, with its
    ground truth; `settings` are the `--set` keys. Returns the summary.

    Raises `ParamError` for unknown scenarios, bad or unused settings.
    """
    names = scenario_names(scenario)
    params = Params({k: str(v) for k, v in settings.items()})
    specs, default_duration = build(names, params, groups)
    if params.unused():
        raise ParamError(f"unknown setting(s) for {scenario}: {', '.join(params.unused())}")
    sink = ReplayDirectory(out, fmt=fmt, rows_per_file=rows_per_file)
    duration = default_duration if duration_ms is None else duration_ms
    return simulate(specs, sink, str(out), duration, seed=seed, label=scenario)
