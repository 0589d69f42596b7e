"""The variables the benchmarks read, in one place, read once and checked
(docs/configuration.md, "Development").

`python -m benchmarks` reads them before it runs anything, so that a typo in
`GROUPSCOPE_BENCH_RECORDS` ends the run in one line instead of twenty minutes into it.
Nothing else under `benchmarks/` reads a `GROUPSCOPE_*` variable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TypeVar

T = TypeVar("T")

STREAM_CASES = ("commits", "rebalances", "restart", "broker", "sources", "filter", "backfill")
SOURCES = ("kafka", "spark-kafka", "burrow")  # the race's contenders (benchmarks/race.py)
ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range")


class BenchSettingsError(ValueError):
    """A variable's value the benchmarks cannot use; the message names it."""


@dataclass(frozen=True, slots=True)
class BenchSettings:
    stream_records: int  # GROUPSCOPE_BENCH_RECORDS
    stream_files: int  # GROUPSCOPE_BENCH_FILES
    stream_backlog: int  # GROUPSCOPE_BENCH_BACKLOG
    stream_cases: tuple[str, ...]  # GROUPSCOPE_BENCH_CASES
    stream_sources: tuple[str, ...]  # GROUPSCOPE_BENCH_SOURCES
    kafka_versions: tuple[str, ...]  # GROUPSCOPE_BENCH_KAFKA_VERSIONS; () the project's
    backfill_minutes: int  # GROUPSCOPE_BENCH_BACKFILL_MINUTES
    commit_seconds: float | None  # GROUPSCOPE_BENCH_COMMIT_SECONDS
    cluster_records: int  # GROUPSCOPE_BENCH_CLUSTER_RECORDS
    sizing_scale: float  # GROUPSCOPE_BENCH_SIZING_SCALE
    exporter_groups: int  # GROUPSCOPE_BENCH_GROUPS
    fleet_groups: int  # GROUPSCOPE_BENCH_FLEET_GROUPS
    fleet_minutes: int  # GROUPSCOPE_BENCH_FLEET_MINUTES
    prune_groups: int  # GROUPSCOPE_BENCH_PRUNE_GROUPS
    prune_days: int  # GROUPSCOPE_BENCH_PRUNE_DAYS
    database_url: str | None  # GROUPSCOPE_BENCH_DATABASE_URL
    assignors: tuple[str, ...]  # GROUPSCOPE_BENCH_ASSIGNOR
    assignor_shape: tuple[int, int]  # GROUPSCOPE_BENCH_ASSIGNOR_SHAPE: topics x partitions


def _read(name: str, default: str, parse: Callable[[str], T], what: str) -> T:
    raw = os.environ.get(name) or default
    try:
        return parse(raw)
    except ValueError:
        raise BenchSettingsError(f"{name}={raw!r}: expected {what}") from None


def _positive(raw: str) -> int:
    value = int(raw.replace("_", ""))
    if value <= 0:
        raise ValueError(raw)
    return value


def _positive_float(raw: str) -> float:
    value = float(raw)
    if not value > 0:
        raise ValueError(raw)
    return value


def _choices(allowed: tuple[str, ...]) -> Callable[[str], tuple[str, ...]]:
    def parse(raw: str) -> tuple[str, ...]:
        chosen = tuple(c.strip() for c in raw.split(",") if c.strip())
        if not chosen or any(c not in allowed for c in chosen):
            raise ValueError(raw)
        return chosen

    return parse


def _versions(raw: str) -> tuple[str, ...]:
    chosen = tuple(v.strip() for v in raw.split(",") if v.strip())
    if any(not re.fullmatch(r"\d+\.\d+\.\d+", v) for v in chosen):
        raise ValueError(raw)
    return chosen


def _list(name: str, default: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated choice of `allowed`."""
    what = f"a comma-separated list of {', '.join(allowed)}"
    return _read(name, default, _choices(allowed), what)


def _shape(raw: str) -> tuple[int, int]:
    topics, partitions = raw.split("x")
    return _positive(topics), _positive(partitions)


@cache
def settings() -> BenchSettings:
    """The benchmarks' settings from the environment; BenchSettingsError names the first
    bad variable."""
    count = "a positive whole number"
    return BenchSettings(
        stream_records=_read("GROUPSCOPE_BENCH_RECORDS", "20000000", _positive, count),
        stream_files=_read("GROUPSCOPE_BENCH_FILES", "1000000", _positive, count),
        stream_backlog=_read("GROUPSCOPE_BENCH_BACKLOG", "4000000", _positive, count),
        stream_cases=_list(
            "GROUPSCOPE_BENCH_CASES", "commits,rebalances,restart,broker", STREAM_CASES
        ),
        stream_sources=_list("GROUPSCOPE_BENCH_SOURCES", ",".join(SOURCES), SOURCES),
        kafka_versions=_read(
            "GROUPSCOPE_BENCH_KAFKA_VERSIONS",
            "",
            _versions,
            "a comma-separated list of Kafka releases (4.3.1,3.9.1)",
        ),
        backfill_minutes=_read("GROUPSCOPE_BENCH_BACKFILL_MINUTES", "10", _positive, count),
        commit_seconds=_read(
            "GROUPSCOPE_BENCH_COMMIT_SECONDS",
            "",
            lambda raw: _positive_float(raw) if raw else None,
            "seconds, a positive number",
        ),
        cluster_records=_read("GROUPSCOPE_BENCH_CLUSTER_RECORDS", "4000000", _positive, count),
        sizing_scale=_read(
            "GROUPSCOPE_BENCH_SIZING_SCALE", "1", _positive_float, "a positive number"
        ),
        exporter_groups=_read("GROUPSCOPE_BENCH_GROUPS", "10000", _positive, count),
        fleet_groups=_read("GROUPSCOPE_BENCH_FLEET_GROUPS", "100000", _positive, count),
        fleet_minutes=_read("GROUPSCOPE_BENCH_FLEET_MINUTES", "2", _positive, count),
        prune_groups=_read("GROUPSCOPE_BENCH_PRUNE_GROUPS", "100", _positive, count),
        prune_days=_read("GROUPSCOPE_BENCH_PRUNE_DAYS", "8", _positive, count),
        database_url=os.environ.get("GROUPSCOPE_BENCH_DATABASE_URL") or None,
        assignors=_list("GROUPSCOPE_BENCH_ASSIGNOR", ",".join(ASSIGNORS), ASSIGNORS),
        assignor_shape=_read(
            "GROUPSCOPE_BENCH_ASSIGNOR_SHAPE",
            "500x2000",
            _shape,
            "TOPICSxPARTITIONS (500x2000)",
        ),
    )
