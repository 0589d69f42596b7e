"""Names come from clients and are stored as they came: the text tables must show a
control character as an escape and shorten a very long name, the JSON must keep both
exact (a real PostgreSQL holds the history)."""

from __future__ import annotations

from tests.fixtures.batches import at, batch, churn, generation, member
from tests.postmortem.histories import Run, rebalancing_group, run_json, write

HOST = "/10.0.0.9\nFORGED 2026-03-01T12:00:00Z  1  range"
CLIENT = "billing-service-" + "x" * 40 + "-end"
GROUP = "reports\u202egnp.evil"
LONG_GROUP = "a-consumer-group-whose-name-goes-on-" + "and-on-" * 10 + "end"


def seed(database_url: str) -> None:
    """Group GROUP: app-1 alone, then app-2 (from HOST, client CLIENT) joins."""
    g1 = generation(1, 100, [member("app-1", {"orders": range(0, 4)})], group=GROUP)
    g2 = generation(
        2,
        110,
        [
            member("app-1", {"orders": range(0, 2)}),
            member("app-2", {"orders": range(2, 4)}, host=HOST, client_id=CLIENT),
        ],
        group=GROUP,
        time=at(300),
        churn=churn(1, 100, moved=2, from_survivors=2, baseline=2, minimum=2, joined=1),
    )
    write(database_url, batch(1, generations=[g1, g2]))


def test_postmortem_table_escapes_and_shortens_names(run: Run, database_url: str) -> None:
    seed(database_url)
    status, out, err = run("postmortem", GROUP)
    assert status == 0, err
    lines = out.splitlines()
    assert len(lines) == 6  # summary (2 lines), blank, header, two generations: nothing forged
    assert lines[0].startswith("group reports\\u202egnp.evil: 2 generations")
    assert lines[5].endswith("  +app-2")
    status, out, err = run("postmortem", GROUP, "--wide")
    assert status == 0, err
    lines = out.splitlines()
    assert len(lines) == 5  # summary, blank, header, two generations: nothing forged
    assert lines[0].startswith("group reports\\u202egnp.evil: 2 generations")
    assert f"+app-2 ({CLIENT}@/10.0.0.9\\nFORGED 2026-03-01T12:00:00Z  1  range)" in lines[4]


def test_postmortem_json_keeps_names_exact(run: Run, database_url: str) -> None:
    seed(database_url)
    answer = run_json(run, "postmortem", GROUP)
    assert answer["group"] == GROUP
    (joined,) = answer["generations"][1]["joined_members"]
    assert (joined["host"], joined["client_id"]) == (HOST, CLIENT)


def test_owner_table_escapes_and_json_keeps_the_host(run: Run, database_url: str) -> None:
    seed(database_url)
    status, out, err = run("owner", "orders", "3", "--at", "2026-03-01T12:10:00Z")
    assert status == 0, err
    _header, row = out.splitlines()
    assert row.split()[:2] == [GROUP.replace("\u202e", "\\u202e"), "app-2"]
    assert "/10.0.0.9\\nFORGED" in row and CLIENT not in row
    assert len(row.split()[2]) == 40  # the client id, cut to 40 with an ellipsis
    (found,) = run_json(run, "owner", "orders", "3", "--at", "2026-03-01T12:10:00Z")
    assert (found["host"], found["client_id"], found["group"]) == (HOST, CLIENT, GROUP)


def test_storms_table_shortens_a_long_group_name(run: Run, database_url: str) -> None:
    storm = rebalancing_group(LONG_GROUP, [at(60 * m) for m in range(7)], source_partition=3)
    write(database_url, batch(1, generations=storm))
    status, out, err = run("storms")
    assert status == 0, err
    _header, row = out.splitlines()
    assert row.startswith("a-consumer-group-wh…on-and-on-and-on-end  ")
    assert LONG_GROUP not in out
    assert [s["group"] for s in run_json(run, "storms")] == [LONG_GROUP]
