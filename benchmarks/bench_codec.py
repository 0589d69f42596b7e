"""Codec throughput on one core: `python -m benchmarks codec`.

Targets (issue "Foundation and the codec"): offset commits >= 500,000 records/s, pure
Python; group metadata with 10 consumer members, embedded data included, >= 50,000
records/s. Group metadata is measured with the C accelerator (services/codec/_speedups.c,
when built) and with the pure-Python decoders alone.

The inputs are built first and then frozen out of the garbage collector (`gc.freeze`), so
that the collector does not walk the fixture on every pass; decoded records are dropped
as they are made, as a streaming consumer does. Each figure is the median of 5 runs.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext

from services.codec import (
    decode_record,
    encode_assignment,
    encode_key,
    encode_subscription,
    encode_value,
)
from services.codec.records import accelerated, pure_python

RUNS = 5


def rate(name: str, records: Sequence[tuple[bytes, bytes | None]]) -> float:
    def once() -> float:
        started = time.perf_counter()
        for key, value in records:
            decode_record(key, value)
        return len(records) / (time.perf_counter() - started)

    once()  # warm the decoder tables
    figures = [once() for _ in range(RUNS)]
    median = statistics.median(figures)
    print(f"{name:74s} {median:>10,.0f} records/s  (min {min(figures):,.0f})", flush=True)
    return median


def offset_commits(n: int, rnd: random.Random) -> list[tuple[bytes, bytes | None]]:
    out = []
    for i in range(n):
        key = encode_key(
            "offset_commit",
            {
                "group": f"service-{i % 400}-consumer",
                "topic": f"events.domain-{i % 37}.v1",
                "partition": i % 64,
            },
        )
        value = encode_value(
            "offset_commit",
            3,
            {
                "offset": rnd.getrandbits(40),
                "leader_epoch": rnd.randrange(50),
                "metadata": "",
                "commit_timestamp": 1_700_000_000_000 + i,
            },
        )
        out.append((key, value))
    return out


def member(index: int, generation: int, rnd: random.Random) -> dict:
    owned = sorted(rnd.sample(range(64), 6))
    return {
        "member_id": f"consumer-{index}-{rnd.getrandbits(64):016x}-4d2c-9f1a-0123456789ab",
        "group_instance_id": None,
        "client_id": f"consumer-{index}",
        "client_host": f"/10.1.{index}.{rnd.randrange(255)}",
        "rebalance_timeout": 300_000,
        "session_timeout": 45_000,
        "subscription": encode_subscription(
            {
                "version": 3,
                "topics": ["orders", "payments"],
                "user_data": None,
                "owned_partitions": [{"topic": "orders", "partitions": owned}],
                "generation_id": generation - 1,
                "rack_id": None,
            }
        ),
        "assignment": encode_assignment(
            {
                "version": 3,
                "assigned_partitions": [
                    {"topic": "orders", "partitions": owned},
                    {"topic": "payments", "partitions": [index, index + 10]},
                ],
                "user_data": None,
            }
        ),
    }


def group_record(group: str, generation: int, members: list[dict]) -> tuple[bytes, bytes]:
    return encode_key("group_metadata", {"group": group}), encode_value(
        "group_metadata",
        3,
        {
            "protocol_type": "consumer",
            "generation": generation,
            "protocol": "cooperative-sticky",
            "leader": members[0]["member_id"],
            "current_state_timestamp": 1_700_000_000_000 + generation,
            "members": members,
        },
    )


def distinct_groups(n: int, rnd: random.Random) -> list[tuple[bytes, bytes | None]]:
    """Worst case: every member's every byte differs from every other record's."""
    return [group_record(f"group-{i}", i, [member(m, i, rnd) for m in range(10)]) for i in range(n)]


def rebalancing_groups(groups: int, generations: int, rnd: random.Random) -> list:
    """Realistic: each group's generations keep most members; 2 of 10 change per rebalance.

    Records are in time order, groups interleaved, as one partition of
    `__consumer_offsets` holds them.
    """
    members = [[member(m, 1, rnd) for m in range(10)] for _ in range(groups)]
    out = []
    for generation in range(1, generations + 1):
        for g in range(groups):
            for index in rnd.sample(range(10), 2):
                members[g][index] = member(index, generation, rnd)
            out.append(group_record(f"group-{g}", generation, list(members[g])))
    return out


def timed_encode(n: int) -> None:
    started = time.perf_counter()
    for i in range(n):
        encode_key("offset_commit", {"group": "g", "topic": "t", "partition": i & 63})
        encode_value("offset_commit", 3, {"offset": i, "leader_epoch": 1, "commit_timestamp": i})
    figure = n / (time.perf_counter() - started)
    print(f"{'encode offset commit (key + value v3)':74s} {figure:>10,.0f} records/s")


def main(argv: Sequence[str] = ()) -> None:
    rnd = random.Random(7)
    groups = "decode group metadata, 10 members"
    c_note = " (C accelerator)" if accelerated() else " (accelerator NOT BUILT)"
    cases: list[tuple[str, Callable[[], list], bool]] = [
        ("decode offset commits (v3, 300k distinct)", lambda: offset_commits(300_000, rnd), False),
        (f"{groups}, all bytes distinct{c_note}", lambda: distinct_groups(20_000, rnd), False),
        (
            f"{groups}, 2 change per rebalance{c_note}",
            lambda: rebalancing_groups(200, 100, rnd),
            False,
        ),
        (f"{groups}, all bytes distinct (pure Python)", lambda: distinct_groups(20_000, rnd), True),
        (
            f"{groups}, 2 change per rebalance (pure Python)",
            lambda: rebalancing_groups(200, 100, rnd),
            True,
        ),
    ]
    for name, build, pure in cases:
        records = build()
        gc.collect()
        gc.freeze()
        with pure_python() if pure else nullcontext():
            rate(name, records)
        gc.unfreeze()
        del records
    timed_encode(200_000)


if __name__ == "__main__":
    main()
