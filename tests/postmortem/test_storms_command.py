"""`groupscope storms`: groups that rebalanced at least K times within a window."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from services.store.database import create_store_engine
from tests.fixtures.batches import batch
from tests.postmortem.histories import Run, ago, minutes, rebalancing_group, run_json, write


def seed_storms(database_url: str) -> None:
    """'flappy': 6 rebalances a minute apart, quiet, then 5 more; 'calm': 3 an hour apart.

    A group's first generation is not a rebalance, so 7 generations make 6 rebalances.
    """
    flappy = rebalancing_group(
        "flappy", minutes(0, 1, 2, 3, 4, 5, 6, 120, 121, 122, 123, 124), source_partition=1
    )
    calm = rebalancing_group("calm", minutes(0, 60, 120, 180), source_partition=2)
    write(database_url, batch(1, generations=[*flappy, *calm]))


def test_storms_json_contract_worst_first(run: Run, database_url: str) -> None:
    seed_storms(database_url)
    assert run_json(run, "storms") == [
        {
            "cluster": "default",
            "group": "flappy",
            "rebalances": 6,
            "start": "2026-03-01T12:01:00Z",
            "end": "2026-03-01T12:06:00Z",
        },
        {
            "cluster": "default",
            "group": "flappy",
            "rebalances": 5,
            "start": "2026-03-01T14:00:00Z",
            "end": "2026-03-01T14:04:00Z",
        },
    ]


def test_window_and_threshold_are_configurable(run: Run, database_url: str) -> None:
    seed_storms(database_url)
    assert run_json(run, "storms", "--min-rebalances", "7") == []
    assert run_json(run, "storms", "--window", "3m") == []
    wide = run_json(run, "storms", "--window", "3h", "--min-rebalances", "3")
    assert [(s["group"], s["rebalances"]) for s in wide] == [("flappy", 11), ("calm", 3)]


def test_since_and_until_bound_the_search(run: Run, database_url: str) -> None:
    seed_storms(database_url)
    later = run_json(run, "storms", "--since", "2026-03-01T13:00:00Z")
    assert [(s["group"], s["rebalances"]) for s in later] == [("flappy", 5)]
    earlier = run_json(run, "storms", "--until", "2026-03-01T13:00:00Z")
    assert [(s["group"], s["rebalances"]) for s in earlier] == [("flappy", 6)]


def test_relative_since(run: Run, database_url: str) -> None:
    now = datetime.now(UTC)
    old = rebalancing_group("old", ago(now, 5, 4.99, 4.98, 4.97, 4.96, 4.95), source_partition=1)
    new = rebalancing_group("new", ago(now, 0.5, 0.49, 0.48, 0.47, 0.46, 0.45), source_partition=2)
    write(database_url, batch(1, generations=[*old, *new]))
    assert [s["group"] for s in run_json(run, "storms", "--since", "2h")] == ["new"]
    # Equally bad storms are listed oldest first.
    assert [s["group"] for s in run_json(run, "storms", "--since", "6h")] == ["old", "new"]


def test_table_for_people_and_no_storm_message(run: Run, database_url: str) -> None:
    status, out, _ = run("storms")
    assert (status, out) == (0, "no storms: no group had 5 rebalances within 10m\n")
    seed_storms(database_url)
    status, out, _ = run("storms")
    header, first, second = out.splitlines()
    assert header.split() == ["GROUP", "REBALANCES", "START", "END", "DURATION"]
    assert first.split() == ["flappy", "6", "2026-03-01T12:01:00Z", "2026-03-01T12:06:00Z", "5m00s"]
    assert second.split()[:2] == ["flappy", "5"]


def test_bad_window_or_threshold_exits_2(run: Run) -> None:
    for args in (["--window", "ten"], ["--window", "0m"], ["--min-rebalances", "0"]):
        status, out, err = run("storms", *args)
        assert (status, out) == (2, ""), args
        assert err.count("\n") == 1, err


def storms_view(database_url: str) -> list[tuple]:
    """The `rebalance_storms` view's (group, rebalances) rows."""
    engine = create_store_engine(database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT group_name, rebalances FROM rebalance_storms")).all()
    finally:
        engine.dispose()
    return [tuple(r) for r in rows]


def test_the_default_view_matches_the_command(run: Run, database_url: str) -> None:
    seed_storms(database_url)
    assert storms_view(database_url) == [
        (s["group"], s["rebalances"]) for s in run_json(run, "storms")
    ]


def test_only_disruptive_rebalances_make_a_storm(run: Run, database_url: str) -> None:
    """'forming': 6 rebalances within a minute, none disruptive (a group forming, leaves,
    epochs moving nothing): no storm. 'mixed': 7 rebalances in 7 minutes of which 2 are
    not disruptive: 5 count, a storm of 5 at the default threshold, not of 7."""
    forming = rebalancing_group(
        "forming",
        minutes(0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6),
        source_partition=3,
        calm=range(2, 8),
    )
    mixed = rebalancing_group(
        "mixed", minutes(0, 1, 2, 3, 4, 5, 6, 7), source_partition=4, calm=(2, 3)
    )
    write(database_url, batch(1, generations=[*forming, *mixed]))
    found = run_json(run, "storms")
    assert [(s["group"], s["rebalances"], s["start"]) for s in found] == [
        ("mixed", 5, "2026-03-01T12:03:00Z")
    ]
    assert run_json(run, "storms", "--min-rebalances", "6") == []
    assert storms_view(database_url) == [("mixed", 5)]
