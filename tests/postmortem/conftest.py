"""Fixtures for postmortem tests: a seeded history and a way to run commands on it."""

from __future__ import annotations

import pytest

from services.cli import main
from tests.fixtures.batches import at, batch, churn, commit, generation, member
from tests.postmortem.histories import Run, write


@pytest.fixture
def run(database_url: str, capsys: pytest.CaptureFixture[str]) -> Run:
    """Run `groupscope ARGS... --database-url <test db>`; returns (status, out, err)."""

    def run_command(*args: str) -> tuple[int, str, str]:
        try:
            status = main([*args, "--database-url", database_url])
        except SystemExit as exc:
            status = exc.code
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run_command


@pytest.fixture
def billing(database_url: str) -> None:
    """Group 'billing', 12 partitions of 'orders', three generations over an hour.

    gen 1 at T0      app-1 0-5, app-2 6-11                     (first seen)
    gen 2 at T0+5m   app-1 0-3, app-2 4-7, app-3 8-11 (joins)  moves 6/4/4/4
    gen 3 at T0+65m  app-1 0-5, app-3 6-11 (app-2 left)        moves 4/2/4/4
    Partition 0's committed offset: 100 at T0-10s, 500 at T0+10m, 900 at T0+66m,
    one micro-batch each.
    """
    g1 = generation(
        1,
        100,
        [member("app-1", {"orders": range(0, 6)}), member("app-2", {"orders": range(6, 12)})],
    )
    g2 = generation(
        2,
        110,
        [
            member("app-1", {"orders": range(0, 4)}),
            member("app-2", {"orders": range(4, 8)}, host="/10.0.0.2"),
            member("app-3", {"orders": range(8, 12)}, host="/10.0.0.3"),
        ],
        time=at(300),
        churn=churn(1, 100, moved=6, from_survivors=4, baseline=4, minimum=4, joined=1),
    )
    g3 = generation(
        3,
        120,
        [
            member("app-1", {"orders": range(0, 6)}),
            member("app-3", {"orders": range(6, 12)}, host="/10.0.0.3"),
        ],
        time=at(3900),
        churn=churn(2, 110, moved=4, from_survivors=2, baseline=4, minimum=4, left=1),
    )
    write(
        database_url,
        batch(1, generations=[g1], offsets=[commit(100, 90, time=at(-10))]),
        batch(2, generations=[g2], offsets=[commit(500, 115, time=at(600))]),
        batch(3, generations=[g3], offsets=[commit(900, 125, time=at(3960))]),
    )
