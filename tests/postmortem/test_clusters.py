"""The query commands on a store of two clusters with the same group names: each answers
about one cluster, the only one by default, and says which exist when it must choose."""

from __future__ import annotations

import pytest

from tests.fixtures.batches import batch
from tests.postmortem.histories import Run, minutes, rebalancing_group, run_json, write


def test_each_cluster_answers_for_itself(
    run: Run, database_url: str, billing: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'billing' (3 generations, cluster `default`) beside another cluster's 'billing':
    a storm of 7 generations on the same coordinator partition. Each command answers for
    the cluster it is given, the default cluster's answers as they were alone."""
    alone = {
        "postmortem": run("postmortem", "billing", "--json"),
        "owner": run("owner", "orders", "9", "--at", "2026-03-01T12:30:00Z", "--json"),
        "storms": run("storms", "--json"),
    }
    stormy = rebalancing_group("billing", minutes(0, 1, 2, 3, 4, 5, 6), source_partition=35)
    write(database_url, batch(1, generations=stormy), cluster="east")

    status, out, err = run("postmortem", "billing")
    assert (status, out) == (2, "")
    assert err == (
        "groupscope postmortem: the store holds 2 clusters (default, east): give --cluster NAME\n"
    )
    assert run("postmortem", "billing", "--json", "--cluster", "default") == alone["postmortem"]
    assert (
        run(
            "owner", "orders", "9", "--at", "2026-03-01T12:30:00Z", "--json", "--cluster", "default"
        )
        == alone["owner"]
    )
    assert run("storms", "--json", "--cluster", "default") == alone["storms"]

    east = run_json(run, "postmortem", "billing", "--cluster", "east")
    assert east["cluster"] == "east"
    assert [g["generation"] for g in east["generations"]] == [1, 2, 3, 4, 5, 6, 7]
    assert run_json(run, "storms", "--cluster", "east") == [
        {
            "cluster": "east",
            "group": "billing",
            "rebalances": 6,
            "start": "2026-03-01T12:01:00Z",
            "end": "2026-03-01T12:06:00Z",
        }
    ]
    status, _, err = run(
        "owner", "orders", "9", "--at", "2026-03-01T12:30:00Z", "--cluster", "east"
    )
    assert status == 1 and "orders-9 was not assigned in any group of cluster 'east'" in err

    owners = run_json(
        run, "owner", "orders", "9", "--at", "2026-03-01T12:30:00Z", "--cluster", "default"
    )
    assert owners and {o["cluster"] for o in owners} == {"default"}

    monkeypatch.setenv("GROUPSCOPE_CLUSTER", "east")
    assert run_json(run, "postmortem", "billing") == east
    status, _, err = run("storms", "--cluster", "west")
    assert status == 2
    assert err == (
        "groupscope storms: --cluster 'west': the store holds no such cluster; "
        "it holds default, east\n"
    )
