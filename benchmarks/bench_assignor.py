"""Assignor speed and memory at Kafka's scale (issue 3).

Kafka's Java StickyAssignor, measured on this kind of machine: 500 topics x 2,000
partitions to 2,000 consumers in about 11 s with identical subscriptions, and about 21 s
when the last consumer subscribes only to the first topic. Each case runs the first
assignment, the second round in which every consumer re-sends its owned partitions, and
the rebalance after one consumer leaves, five times over; each line shows the best, median
and worst of the five, and the smallest and largest assignment as a check that the answer
is balanced.

Every timed call starts after ``gc.collect()``: otherwise a call pays, at random, for the
full collection that the million tuples built by the previous call set off.

To iterate on one assignor: ``GROUPSCOPE_BENCH_ASSIGNOR=sticky,cooperative-sticky`` runs
only those (the small table and the cases at scale), and
``GROUPSCOPE_BENCH_ASSIGNOR_SHAPE=100x10000`` sets the topics x partitions of the cases at
scale.
"""

from __future__ import annotations

import gc
import os
import resource
import statistics
import sys
import time

from benchmarks.settings import settings
from services.assignor import assign

CONSUMERS = 2_000


def _members(topics: list[str], consumers: int, variant: bool) -> list[dict]:
    members = [{"id": f"consumer-{i:05d}", "topics": topics} for i in range(consumers)]
    if variant:
        members[-1] = {"id": members[-1]["id"], "topics": topics[:1]}
    return members


def _with_owned(members: list[dict], assignment: dict, generation: int) -> list[dict]:
    return [{**m, "owned": assignment.get(m["id"], []), "generation": generation} for m in members]


REPEATS = 5


def _run(assignor: str, counts: dict, members: list[dict]) -> tuple[float, dict]:
    gc.collect()
    started = time.perf_counter()
    result = assign(assignor, counts, members)
    return time.perf_counter() - started, result


def _report(label: str, times: list[float], result: dict) -> None:
    sizes = [len(p) for p in result.values()]
    print(
        f"  {label:<40} best {min(times):6.2f} s  median {statistics.median(times):6.2f} s"
        f"  worst {max(times):6.2f} s"
        f"   sizes {min(sizes)}..{max(sizes)}",
        flush=True,
    )


def _rounds(assignor: str, counts: dict, members: list[dict]) -> None:
    """First assignment, second round with owned partitions, then one member leaves."""
    labels = (
        "first assignment",
        "second round, owned partitions re-sent",
        "rebalance after one consumer leaves",
    )
    times: list[list[float]] = [[], [], []]
    for _ in range(REPEATS):
        elapsed, first = _run(assignor, counts, members)
        times[0].append(elapsed)
        elapsed, second = _run(assignor, counts, _with_owned(members, first, 1))
        times[1].append(elapsed)
        elapsed, third = _run(assignor, counts, _with_owned(members[1:], second, 2))
        times[2].append(elapsed)
    for label, spent, result in zip(labels, times, (first, second, third), strict=True):
        _report(label, spent, result)


def _scale(assignor: str, variant: bool) -> None:
    topics_count, partitions_count = settings().assignor_shape
    topics = [f"topic-{t:03d}" for t in range(topics_count)]
    counts = dict.fromkeys(topics, partitions_count)
    name = "last consumer on topic 0 only" if variant else "identical subscriptions"
    total = topics_count * partitions_count
    print(f"{assignor}: {total:,} partitions, {CONSUMERS:,} consumers, {name}")
    _rounds(assignor, counts, _members(topics, CONSUMERS, variant))


def _small() -> None:
    counts = {f"topic-{t}": 100 for t in range(100)}
    members = [{"id": f"consumer-{i:03d}", "topics": list(counts)} for i in range(100)]
    print(f"10,000 partitions, 100 consumers (best / median of {REPEATS})")
    for assignor in settings().assignors:
        second = _with_owned(members, assign(assignor, counts, members), 1)
        leave = _with_owned(members[1:], assign(assignor, counts, second), 2)
        cells = []
        for label, group in (("first", members), ("owned re-sent", second), ("one left", leave)):
            times = [_time_once(assignor, counts, group) for _ in range(REPEATS)]
            cells.append(f"{label} {min(times):.3f} / {statistics.median(times):.3f} s")
        print(f"  {assignor:<20} " + "   ".join(cells), flush=True)


def _others_at_scale() -> None:
    others = [
        a for a in ("range", "roundrobin", "uniform", "server-range") if a in settings().assignors
    ]
    if not others:
        return
    topics_count, partitions_count = settings().assignor_shape
    topics = [f"topic-{t:03d}" for t in range(topics_count)]
    counts = dict.fromkeys(topics, partitions_count)
    members = _members(topics, CONSUMERS, False)
    print(
        f"first assignment, {topics_count * partitions_count:,} partitions, {CONSUMERS:,} consumers"
    )
    for assignor in others:
        times = []
        for _ in range(REPEATS):
            elapsed, result = _run(assignor, counts, members)
            times.append(elapsed)
        _report(assignor, times, result)


def _time_once(assignor: str, counts: dict, members: list[dict]) -> float:
    return _run(assignor, counts, members)[0]


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    print(_load(), flush=True)
    _small()
    for assignor in ("sticky", "cooperative-sticky"):
        if assignor in settings().assignors:
            for variant in (False, True):
                _scale(assignor, variant)
    _others_at_scale()
    maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS of this process, all runs) {maxrss_mb:,.0f} MiB")
    print(_load())


if __name__ == "__main__":
    sys.exit(main())
