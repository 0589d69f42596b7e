"""Which groups need the commits around their group records, and the bucket tables that
give a commit its segment without sorting (`spark_jobs/evidence.py`). No Spark: the
lookup below is the one the job's SQL makes, checked against a binary search."""

from __future__ import annotations

import bisect
import random
from datetime import UTC, datetime

from services.store.batch import OffsetCommit
from services.tracker import Position
from spark_jobs import evidence

T = datetime(2026, 1, 1, tzinfo=UTC)


def segment(groups: dict, buckets: dict, group: str, offset: int) -> int:
    """What `evidence.segment_ends` computes in SQL for a commit of `group` at `offset`."""
    first, width, count, records = groups[group]
    k = (offset - first) // width
    if k < 0:
        return 0
    if k >= count:
        return records
    before, inside = buckets[(group, k)]
    return before + sum(b < offset for b in inside)


def test_a_commits_segment_is_the_number_of_its_groups_records_before_it() -> None:
    rng = random.Random(3)
    bounds = {}
    for g in range(40):
        start = rng.randrange(0, 10_000)
        # bursts of records close together, quiet stretches between, as in a crash loop
        offsets = sorted({start + rng.randrange(0, 50_000) for _ in range(rng.randrange(1, 60))})
        offsets += [offsets[-1] + i for i in range(1, rng.randrange(1, 8))]
        bounds[f"g{g}"] = offsets
    bounds["quiet"] = []
    group_rows, bucket_rows = evidence.bucket_rows(bounds)
    groups = {bytes(n).decode(): rest for n, *rest in group_rows}
    buckets = {(bytes(n).decode(), k): (before, inside) for n, k, before, inside in bucket_rows}
    assert len(bucket_rows) <= sum(len(o) for o in bounds.values())
    for group, offsets in bounds.items():
        probes = [rng.randrange(-100, 70_000) for _ in range(500)]
        probes += offsets + [o + 1 for o in offsets] + [o - 1 for o in offsets]
        for o in probes:
            if o in offsets:
                continue  # a commit never sits where a group record does
            assert segment(groups, buckets, group, o) == bisect.bisect(offsets, o), (group, o)


def commit(group: str, partition: int, offset: int, commits: int) -> OffsetCommit:
    return OffsetCommit(group, "t", partition, 7, 3, offset, T, commits=commits)


def record(group: str, offset: int, kind: str = "group_metadata") -> tuple[dict, Position]:
    key = {"group": group} if kind == "group_metadata" else {"group_id": group}
    return {"record_type": kind, "key": key, "value": {}}, Position(3, offset, T)


def test_only_groups_whose_latest_commit_is_not_enough_need_the_second_job() -> None:
    records = [
        *(record("a", 100), record("a", 300)),  # two generations: a rebalance
        *(record("b", 100), record("b", 200)),
        record("c", 500),
        record("g", 100),  # one generation of a group seen before
        record("h", 100),  # the first generation of a new group: no rebalance
        record("k", 100, "consumer_group_member_metadata"),  # KIP-848: not generations
        record("k", 110, "consumer_group_target_assignment_metadata"),
        record("k", 120, "consumer_group_current_member_assignment"),
        record("m", 100, "consumer_group_target_assignment_metadata"),
        record("m", 110, "consumer_group_target_assignment_metadata"),
    ]
    commits = [
        commit("a", 0, 400, commits=5),  # several commits, the latest after a record
        commit("b", 0, 400, commits=1),  # one commit: the latest is the only one
        commit("c", 0, 400, commits=9),  # all before the group's first record
        commit("d", 0, 400, commits=9),  # no records, but a moved partition waits
        commit("e", 0, 400, commits=9),  # no records, nothing waits
        commit("f", 1, 400, commits=9),  # waits on another partition
        commit("g", 0, 400, commits=9),
        commit("h", 0, 400, commits=9),
        commit("k", 0, 400, commits=9),
        commit("m", 0, 400, commits=9),
    ]
    waiting = {"d": {("t", 0)}, "f": {("t", 0)}}
    assert evidence.needed(records, commits, waiting, known={"g"}) == {
        "a": [100, 300],
        "d": [],
        "g": [100],
        "m": [100, 110],
    }
