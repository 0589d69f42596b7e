"""Helpers that seed postmortem histories through the repository API and read answers."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from datetime import datetime, timedelta

from services.store.batch import BatchWrite, Generation
from services.store.clusters import DEFAULT_CLUSTER
from services.store.database import create_store_engine
from services.store.repository import HistoryStore
from tests.fixtures.batches import at, churn, generation, member

Run = Callable[..., tuple[int, str, str]]


def run_json(run: Run, *args: str) -> object:
    status, out, err = run(*args, "--json")
    assert status == 0, err
    return json.loads(out)


def write(database_url: str, *batches: BatchWrite, cluster: str = DEFAULT_CLUSTER) -> None:
    engine = create_store_engine(database_url)
    try:
        store = HistoryStore(engine, cluster=cluster)
        for b in batches:
            store.write_batch(b)
    finally:
        engine.dispose()


def rebalancing_group(
    name: str,
    times: list[datetime],
    *,
    source_partition: int,
    calm: Collection[int] = (),
) -> list[Generation]:
    """A group whose generations happen at `times`, each a rebalance from the last; those
    to the generations numbered in `calm` (from 1) disrupt nobody (`Churn.disruptive`)."""
    generations = []
    for number, when in enumerate(times, start=1):
        previous = (
            churn(number - 1, number - 1, moved=1, disruptive=number not in calm)
            if number > 1
            else None
        )
        generations.append(
            generation(
                number,
                number,
                [member(f"{name}-{number}", {"t": [0]})],
                group=name,
                time=when,
                churn=previous,
                source_partition=source_partition,
            )
        )
    return generations


def minutes(*values: float) -> list[datetime]:
    return [at(60 * v) for v in values]


def ago(now: datetime, *hours: float) -> list[datetime]:
    return [now - timedelta(hours=h) for h in hours]
