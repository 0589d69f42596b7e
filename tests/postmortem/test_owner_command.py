"""`groupscope owner TOPIC PARTITION --at T`: who owned a partition then."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.batches import batch, generation, member
from tests.postmortem.histories import Run, run_json, write


@pytest.mark.usefixtures("billing")
@pytest.mark.parametrize(
    ("at", "owner", "generation"),
    [
        ("2026-03-01T12:04:59Z", "app-2", 1),
        # A generation owns its partitions from its own time on.
        ("2026-03-01T12:05:00Z", "app-3", 2),
        ("2026-03-01T13:00:00Z", "app-3", 2),
        ("2026-03-02T00:00:00Z", "app-3", 3),
    ],
)
def test_owner_at_a_time(run: Run, at: str, owner: str, generation: int) -> None:
    (found,) = run_json(run, "owner", "orders", "9", "--at", at)
    assert (found["member"], found["generation"], found["group"]) == (owner, generation, "billing")
    assert (found["topic"], found["partition"]) == ("orders", 9)


@pytest.mark.usefixtures("billing")
def test_owner_json_has_the_validity_interval(run: Run) -> None:
    (found,) = run_json(run, "owner", "orders", "5", "--at", "2026-03-01T12:30:00Z")
    assert found == {
        "cluster": "default",
        "group": "billing",
        "topic": "orders",
        "partition": 5,
        "member": "app-2",
        "member_id": "app-2",
        "group_instance_id": None,
        "client_id": "app",
        "host": "/10.0.0.2",
        "generation": 2,
        "from": "2026-03-01T12:05:00Z",
        "until": "2026-03-01T13:05:00Z",
    }


@pytest.mark.usefixtures("billing")
def test_owner_lists_every_group_unless_one_is_named(run: Run, database_url: str) -> None:
    other = generation(4, 500, [member("etl-1", {"orders": [9]})], group="etl")
    write(database_url, batch(9, generations=[other]))
    at = "2026-03-01T12:30:00Z"
    assert [f["group"] for f in run_json(run, "owner", "orders", "9", "--at", at)] == [
        "billing",
        "etl",
    ]
    only = run_json(run, "owner", "orders", "9", "--at", at, "--group", "etl")
    assert [(f["group"], f["member"]) for f in only] == [("etl", "etl-1")]


@pytest.mark.usefixtures("billing")
def test_owner_table_for_people(run: Run) -> None:
    status, out, _ = run("owner", "orders", "9", "--at", "2026-03-01T12:30:00Z")
    assert status == 0
    header, row = out.splitlines()
    assert header.split() == ["GROUP", "MEMBER", "CLIENT", "ID", "HOST", "GEN", "FROM", "UNTIL"]
    assert row.split() == [
        "billing",
        "app-3",
        "app",
        "/10.0.0.3",
        "2",
        "2026-03-01T12:05:00Z",
        "2026-03-01T13:05:00Z",
    ]


@pytest.mark.usefixtures("billing")
def test_nobody_owned_it_exits_1(run: Run) -> None:
    status, _, err = run("owner", "orders", "12", "--at", "2026-03-01T12:30:00Z")
    assert status == 1
    assert "orders-12 was not assigned in any group at 2026-03-01T12:30:00Z" in err
    status, _, err = run("owner", "orders", "1", "--at", "2026-03-01T11:00:00Z")
    assert status == 1


@pytest.mark.usefixtures("billing")
def test_unknown_group_exits_1(run: Run) -> None:
    status, _, err = run("owner", "orders", "1", "--at", "2h", "--group", "nope")
    assert status == 1
    assert "unknown group 'nope'" in err


@pytest.mark.parametrize(
    "args",
    [
        ["orders", "-1", "--at", "2h"],
        ["orders", "x", "--at", "2h"],
        ["orders", "1", "--at", "noon"],
        ["orders", "1"],
    ],
)
def test_bad_input_exits_2(run: Run, args: list[str]) -> None:
    status, out, err = run("owner", *args)
    assert (status, out) == (2, "")
    assert err.strip()


@pytest.mark.usefixtures("billing")
def test_json_prints_an_empty_list_when_nobody_owned_it(run: Run) -> None:
    for args in (
        ("orders", "12", "--at", "2026-03-01T12:30:00Z"),
        ("orders", "1", "--at", "2h", "--group", "nope"),
    ):
        status, out, err = run("owner", *args, "--json")
        assert status == 1
        assert json.loads(out) == []
        assert err.startswith("groupscope owner: ")
