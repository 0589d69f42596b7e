"""Scenario runs shared by the simulator tests (each run takes well under a second)."""

from __future__ import annotations

import pytest

from tests.simulator.helpers import Run, run

ALL = (
    "steady",
    "rolling-restart",
    "rolling-restart-static",
    "crash-loop",
    "scale-out",
    "scale-in",
    "slow-consumer",
    "eager-vs-cooperative",
    "subscription-change",
    "partitions-added",
    "kip848",
    "mixed",
)


@pytest.fixture(scope="session")
def scenario_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    runs = {}
    for name in ALL:
        runs[name] = run(tmp_path_factory.mktemp(name), name)
    runs["many-groups"] = run(
        tmp_path_factory.mktemp("many"),
        "many-groups",
        groups=50,
        duration_ms=60_000,
        churn=0.2,
        commits_per_second=500,
    )
    runs["sticky"] = run(
        tmp_path_factory.mktemp("sticky"), "eager-vs-cooperative,scale-in", assignor="sticky"
    )
    runs["roundrobin"] = run(tmp_path_factory.mktemp("rr"), "scale-out", assignor="roundrobin")
    runs["static-cooperative"] = run(
        tmp_path_factory.mktemp("static-coop"),
        "crash-loop,slow-consumer,rolling-restart,subscription-change",
        assignor="cooperative-sticky",
        static="true",
        transactional=0.2,
        aborted=0.5,
        delete_after="9m",
    )
    return runs
