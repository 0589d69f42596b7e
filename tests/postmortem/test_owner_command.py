"""`groupscope owner TOPIC PARTITION --at T`: who owned a partition then."""

from __future__ import annotations

import itertools
import json

import pytest
from sqlalchemy import text

from services.postmortem.queries import NotFound, owners
from services.store.database import create_store_engine
from tests.fixtures.batches import at, batch, generation, member
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


# `partition_ownership` asked as `owners` asked it before it had SQL of its own.
VIEW_OWNERS = text(
    "SELECT group_name, member, generation, valid_from, valid_until "
    "FROM partition_ownership "
    "WHERE cluster = :cluster AND topic = :topic AND partition = :partition "
    "AND valid_from <= :at AND (valid_until IS NULL OR valid_until > :at) "
    "AND (CAST(:group AS text) IS NULL OR group_name = :group) "
    "ORDER BY group_name, member"
)


def test_owner_answers_as_the_partition_ownership_view(run: Run, database_url: str) -> None:
    """The edges of "valid from its time until the group's next generation in (time,
    source_offset) order": two generations at one time (the later record wins), a next
    generation exactly at T (it owns from T), a group whose current generation no longer
    holds the topic though an older one did, one group name on two clusters (each its
    own history; east's source offsets equal default's), and a topic name JSON escapes.
    `owners` gives the view's rows for every question on that grid."""
    odd = "über/orders"  # not a Kafka name, but a corrupt record's could be stored
    twins = [
        generation(1, 200, [member("a-1", {"orders": [0]})], group="twins"),
        generation(2, 201, [member("b-1", {"orders": [0], odd: [0]})], group="twins"),
        generation(3, 202, [member("c-1", {"orders": [0, 1]})], group="twins", time=at(600)),
    ]
    moved = [
        generation(1, 300, [member("m-1", {"orders": [0]})], group="moved"),
        generation(2, 301, [member("m-2", {"payments": [0]})], group="moved", time=at(300)),
    ]
    east = [
        generation(7, 200, [member("e-1", {"orders": [0]})], group="twins", time=at(100)),
        generation(8, 201, [member("e-2", {"orders": [1]})], group="twins", time=at(500)),
    ]
    write(database_url, *(batch(i, generations=[g]) for i, g in enumerate(twins + moved, 1)))
    write(database_url, *(batch(i, generations=[g]) for i, g in enumerate(east, 1)), cluster="east")

    def owned(*args: str, cluster: str = "default") -> list[tuple[str, str, int, str, str | None]]:
        status, out, err = run("owner", *args, "--cluster", cluster, "--json")
        assert status in (0, 1), err
        return [
            (f["group"], f["member"], f["generation"], f["from"], f["until"])
            for f in json.loads(out)
        ]

    t0, t600 = "2026-03-01T12:00:00Z", "2026-03-01T12:10:00Z"
    assert owned("orders", "0", "--at", t0) == [
        ("moved", "m-1", 1, t0, "2026-03-01T12:05:00Z"),
        ("twins", "b-1", 2, t0, t600),
    ]
    assert owned("orders", "0", "--at", "2026-03-01T12:09:59.999Z", "--group", "twins") == [
        ("twins", "b-1", 2, t0, t600)
    ]
    assert owned("orders", "0", "--at", t600) == [("twins", "c-1", 3, t600, None)]
    assert owned("payments", "0", "--at", t600) == [
        ("moved", "m-2", 2, "2026-03-01T12:05:00Z", None)
    ]
    assert owned(odd, "0", "--at", "2026-03-01T12:05:00Z") == [("twins", "b-1", 2, t0, t600)]
    assert owned("orders", "0", "--at", "2026-03-01T12:06:40Z", cluster="east") == [
        ("twins", "e-1", 7, "2026-03-01T12:01:40Z", "2026-03-01T12:08:20Z")
    ]
    assert owned("orders", "0", "--at", "2026-03-01T12:09:00Z", cluster="east") == []

    engine = create_store_engine(database_url)
    try:
        with engine.connect() as conn:
            for cluster, topic, partition, group, seconds in itertools.product(
                ("default", "east"),
                ("orders", "payments", odd),
                (0, 1),
                (None, "twins"),
                (-1, 0, 99, 100, 299, 300, 499, 500, 599.999, 600, 86_400),
            ):
                question = {"cluster": cluster, "topic": topic, "partition": partition}
                question |= {"group": group, "at": at(seconds)}
                try:
                    found = owners(conn, topic, partition, at(seconds), group, cluster)
                except NotFound:
                    found = []
                assert [
                    (o.group, o.member, o.generation, o.valid_from, o.valid_until) for o in found
                ] == [tuple(row) for row in conn.execute(VIEW_OWNERS, question)], question
    finally:
        engine.dispose()
