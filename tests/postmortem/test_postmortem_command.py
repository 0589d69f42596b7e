"""`groupscope postmortem GROUP`: the timeline, as a table and as the JSON contract."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.fixtures.batches import at, batch, generation, member
from tests.postmortem.histories import Run, ago, run_json, write

CONTRACT_KEYS = {"generation", "time", "assignor", "leader", "members", "joined", "left", "moves"}
MOVES_KEYS = {"actual", "from_survivors", "sticky_baseline", "minimum"}


@pytest.mark.usefixtures("billing")
def test_json_timeline_follows_the_contract(run: Run) -> None:
    answer = run_json(run, "postmortem", "billing")
    assert answer["group"] == "billing"
    gens = answer["generations"]
    assert [g["generation"] for g in gens] == [1, 2, 3]
    assert all(g.keys() >= CONTRACT_KEYS for g in gens)
    assert [g["time"] for g in gens] == [
        "2026-03-01T12:00:00Z",
        "2026-03-01T12:05:00Z",
        "2026-03-01T13:05:00Z",
    ]
    assert gens[0]["moves"] is None
    assert [g["members"] for g in gens] == [
        ["app-1", "app-2"],
        ["app-1", "app-2", "app-3"],
        ["app-1", "app-3"],
    ]
    assert [(g["joined"], g["left"]) for g in gens] == [
        ([], []),
        (["app-3"], []),
        ([], ["app-2"]),
    ]
    moves = [{k: g["moves"][k] for k in MOVES_KEYS} for g in gens[1:]]
    assert moves == [
        {"actual": 6, "from_survivors": 4, "sticky_baseline": 4, "minimum": 4},
        {"actual": 4, "from_survivors": 2, "sticky_baseline": 4, "minimum": 4},
    ]
    assert all(g["assignor"] == "range" and g["leader"] == "app-1" for g in gens)


@pytest.mark.usefixtures("billing")
def test_json_timeline_adds_member_details_gaps_and_offset_progress(run: Run) -> None:
    gens = run_json(run, "postmortem", "billing")["generations"]
    assert gens[1]["joined_members"] == [
        {"member": "app-3", "member_id": "app-3", "client_id": "app", "host": "/10.0.0.3"}
    ]
    assert gens[2]["left_members"][0]["host"] == "/10.0.0.2"
    assert [g["since_previous_seconds"] for g in gens] == [None, 300.0, 3600.0]
    # Partition 0 went 100 -> 500 during generation 2 and 500 -> 900 during generation 3.
    assert [g["committed_progress"] for g in gens] == [0, 400, 400]


@pytest.mark.usefixtures("billing")
def test_table_for_people_is_aligned(run: Run) -> None:
    status, out, _ = run("postmortem", "billing")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == (
        "group billing: 3 generations, 2026-03-01T12:00:00Z to 2026-03-01T13:05:00Z; assignor range"
    )
    assert lines[1] == (
        "2 rebalances (2 disruptive), 10 partition moves (2 more than the sticky baseline)"
    )
    header, *rows = lines[3:]
    assert len(rows) == 3
    time_column, disrupts = header.index("TIME"), header.index("DISRUPTS")
    assert [row[time_column:].split()[0] for row in rows] == [
        "2026-03-01T12:00:00Z",
        "2026-03-01T12:05:00Z",
        "2026-03-01T13:05:00Z",
    ]
    assert [row[disrupts:].split()[0] for row in rows] == ["-", "yes", "yes"]
    assert "(first seen)" in rows[0]
    assert "6/4/4/4" in rows[1] and rows[1].endswith("  +app-3")
    assert rows[2].endswith("  -app-2")
    # --wide: the assignor, the leader and each member with its client and host.
    status, out, _ = run("postmortem", "billing", "--wide")
    assert status == 0
    header, *rows = out.splitlines()[2:]
    assignor_column = header.index("ASSIGNOR")
    assert all(row[assignor_column:].startswith("range") for row in rows)
    assert "+app-3 (app@/10.0.0.3)" in rows[1] and "-app-2 (app@/10.0.0.2)" in rows[2]


@pytest.mark.usefixtures("billing")
def test_since_and_until_limit_the_timeline(run: Run) -> None:
    answer = run_json(
        run,
        "postmortem",
        "billing",
        "--since",
        "2026-03-01T12:01:00Z",
        "--until",
        "2026-03-01T13:05",
    )
    assert [g["generation"] for g in answer["generations"]] == [2]
    # Joins and moves still compare with the generation before the range.
    assert answer["generations"][0]["joined"] == ["app-3"]


def test_relative_times_count_back_from_now(run: Run, database_url: str) -> None:
    now = datetime.now(UTC)
    gens = [
        generation(n, n, [member(f"c-{n}", {"t": [0]})], time=when)
        for n, when in enumerate(ago(now, 3, 1.5, 0.25), start=1)
    ]
    write(database_url, batch(1, generations=gens))
    assert [
        g["generation"]
        for g in run_json(run, "postmortem", "billing", "--since", "2h")["generations"]
    ] == [2, 3]
    assert [
        g["generation"]
        for g in run_json(run, "postmortem", "billing", "--since", "30m")["generations"]
    ] == [3]
    assert [
        g["generation"]
        for g in run_json(run, "postmortem", "billing", "--until", "1h")["generations"]
    ] == [1, 2]


@pytest.mark.usefixtures("billing")
def test_unknown_group_exits_1_with_a_clear_message(run: Run) -> None:
    status, out, err = run("postmortem", "payments")
    assert (status, out) == (1, "")
    assert err == (
        "groupscope postmortem: unknown group 'payments': it never appeared in __consumer_offsets\n"
    )


@pytest.mark.usefixtures("billing")
def test_empty_range_exits_1_with_a_clear_message(run: Run) -> None:
    status, _, err = run("postmortem", "billing", "--since", "2026-03-02T00:00:00Z")
    assert status == 1
    assert "no generations of group 'billing' since 2026-03-02T00:00:00Z" in err


def test_a_group_with_commits_but_no_generations_is_an_empty_range(
    run: Run, database_url: str
) -> None:
    from tests.fixtures.batches import commit

    write(database_url, batch(1, offsets=[commit(5, 1, group="etl", time=at(0))]))
    status, _, err = run("postmortem", "etl")
    assert status == 1
    assert "no generations of group 'etl'" in err


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--since", "yesterday"], "--since: not a time: 'yesterday'"),
        (["--until", "5 parsecs"], "--until: not a time"),
        (["--since", "1h", "--until", "2h"], "--since must be earlier than --until"),
    ],
)
def test_bad_times_exit_2_with_one_line(run: Run, args: list[str], reason: str) -> None:
    status, out, err = run("postmortem", "billing", *args)
    assert (status, out) == (2, "")
    assert err.startswith(f"groupscope postmortem: {reason}")
    assert err.count("\n") == 1


def test_a_database_without_the_schema_says_to_upgrade(
    empty_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from services.cli import main

    assert main(["postmortem", "billing", "--database-url", empty_database_url]) == 1
    assert "run 'groupscope db upgrade' first" in capsys.readouterr().err


def test_help_teaches_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    from services.cli import main

    with pytest.raises(SystemExit):
        main(["postmortem", "--help"])
    out = capsys.readouterr().out
    assert "groupscope postmortem billing --since 2h" in out
    assert "--database-url" in out and "GROUPSCOPE_DATABASE_URL" in out


def test_offset_progress_is_unknown_without_offset_history(run: Run, database_url: str) -> None:
    gens = [generation(n, n, [member("c-1", {"t": [0]})], time=at(60 * n)) for n in (1, 2)]
    write(database_url, batch(1, generations=gens))
    answer = run_json(run, "postmortem", "billing")
    assert [g["committed_progress"] for g in answer["generations"]] == [None, None]


def test_offset_progress_follows_every_commit_into_its_generation(
    run: Run, database_url: str
) -> None:
    from tests.fixtures.batches import commit

    gens = [generation(n, 10 * n, [member("c-1", {"t": [0, 1]})], time=at(100 * n)) for n in (1, 2)]
    commits = [
        (0, 10, 50),  # partition, offset, seconds: before generation 1, the baseline
        (1, 7, 60),
        (0, 25, 150),  # generation 1: +15 and +3
        (1, 10, 190),
        (0, 40, 200),  # exactly at generation 2's start: it belongs to generation 2
        (0, 41, 900),
    ]
    batches = [
        batch(i + 2, offsets=[commit(o, 100 + i, partition=p, time=at(s))], time=at(s))
        for i, (p, o, s) in enumerate(commits)
    ]
    write(database_url, batch(1, generations=gens), *batches)
    answer = run_json(run, "postmortem", "billing")
    assert [g["committed_progress"] for g in answer["generations"]] == [18, 16]


def crash_loop_history(group: str) -> list:
    """An eager group of 12 members with Java-style ids (`consumer-<group>-<n>-<uuid>`):
    one member crashes and rejoins (+1 -1) three times, then ten are replaced at once."""
    from tests.fixtures.batches import churn

    def uid(n: int) -> str:
        return f"{n:08x}-1b2c-4d5e-8f90-{n * 7919:012x}"

    def java(n: int, k: int) -> object:
        client = f"consumer-{group}-{k}"
        return member(f"{client}-{uid(n)}", {"orders": [k]}, client_id=client, host="/10.0.0.7")

    members = [java(k, k) for k in range(12)]
    generations = [generation(1, 500, members, group=group, time=at(0))]
    for number in range(2, 5):  # member 0 crashes and comes back with a new member id
        members = [java(100 + number, 0), *members[1:]]
        generations.append(
            generation(
                number,
                500 + number,
                members,
                group=group,
                time=at(30 * number).replace(microsecond=123456),
                churn=churn(number - 1, 499 + number, moved=12, joined=1, left=1),
            )
        )
    members = [*members[:2], *(java(200 + k, k) for k in range(2, 12))]
    generations.append(
        generation(
            5,
            505,
            members,
            group=group,
            time=at(200),
            churn=churn(4, 504, moved=12, joined=10, left=10),
        )
    )
    return generations


def test_the_table_fits_120_columns_and_wide_and_json_keep_everything(
    run: Run, database_url: str
) -> None:
    group = "payments-settlement-eu-west-1"
    write(database_url, batch(1, generations=crash_loop_history(group)))
    status, out, err = run("postmortem", group)
    assert status == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 120, out
    rows = lines[4:]
    assert len(rows) == 5
    # Times to the second; one crash shows as who left and who came back, by client id
    # and the end of the member id; the mass replacement as counts.
    assert rows[1].startswith("2026-03-01T12:01:00Z ")
    label_in = "consumer-0#" + f"{102 * 7919:012x}"[-4:]
    label_out = "consumer-0#" + f"{0:012x}"[-4:]
    assert rows[1].endswith(f"+{label_in} -{label_out}")
    assert rows[4].endswith("  +10 -10")
    labels = [row.split()[-2:] for row in rows[1:4]]
    # Four distinct members: each one that came back is the one that leaves next.
    assert len({label[1:] for pair in labels for label in pair}) == 4
    assert [pair[0][1:] for pair in labels[:-1]] == [pair[1][1:] for pair in labels[1:]]
    # --wide and --json: every member id in full.
    status, wide, _ = run("postmortem", group, "--wide")
    assert status == 0
    last = wide.splitlines()[-1]
    assert last.count(f"+consumer-{group}-") == 10 and last.count(f"-consumer-{group}-") == 10
    assert "2026-03-01T12:01:00.123456Z" in wide
    gens = run_json(run, "postmortem", group)["generations"]
    assert len(gens[-1]["joined"]) == 10 and len(gens[-1]["left_members"]) == 10
    assert [g["moves"]["disruptive"] for g in gens[1:]] == [True] * 4


def test_a_restarted_static_member_keeps_its_short_name(run: Run, database_url: str) -> None:
    """A static member (group instance id) leaves and comes back with a new member id: the
    table names it by its instance id both times; a dynamic member by client id#suffix."""
    from tests.fixtures.batches import churn

    def static(n: int) -> object:
        member_id = f"consumer-ledger-a-{n}f1d0b9e-3c2a-4e8b-9d7f-0a1b2c3d4e5{n}"
        return member(member_id, {"t": [0]}, instance="ledger-a", client_id="consumer-ledger-a")

    dynamic = member(
        "consumer-ledger-2-6f1d0b9e-3c2a-4e8b-9d7f-0a1b2c3d4e5f",
        {"t": [1]},
        client_id="consumer-ledger-2",
    )
    generations = [
        generation(1, 10, [static(1), dynamic], group="ledger"),
        generation(2, 11, [dynamic], group="ledger", time=at(60), churn=churn(1, 10, left=1)),
        generation(
            3, 12, [static(2), dynamic], group="ledger", time=at(90), churn=churn(2, 11, joined=1)
        ),
        generation(4, 13, [static(2)], group="ledger", time=at(120), churn=churn(3, 12, left=1)),
    ]
    write(database_url, batch(1, generations=generations))
    status, out, err = run("postmortem", "ledger")
    assert status == 0, err
    rows = out.splitlines()[-3:]
    assert [row.split()[-1] for row in rows] == ["-ledger-a", "+ledger-a", "-consumer-2#4e5f"]


def test_the_causes_column_fits_120_columns(run: Run, database_url: str) -> None:
    """The crash loop with the causes the tracker gives it (a restart, the timeouts left
    possible): the default table shows them short and still fits 120 columns; --wide
    explains each, and --json keeps them whole."""
    from dataclasses import replace

    from services.store.batch import Cause

    group = "payments-settlement-eu-west-1"
    gone = (
        f"consumer-{group}-0-00000066-1b2c-4d5e-8f90-0000000c5e3a (consumer-{group}-0 @ /10.0.0.7)"
    )
    crash = (
        Cause("restart", f"{gone} came back"),
        Cause("session_timeout", f"{gone} may have timed out", possible=True),
        Cause("poll_timeout", f"{gone} may have exceeded max.poll.interval.ms", possible=True),
    )
    causes = [(), crash, crash[:2], (Cause("scale_out", "members joined"),), crash[1:]]
    generations = [
        replace(g, causes=c) for g, c in zip(crash_loop_history(group), causes, strict=True)
    ]
    write(database_url, batch(1, generations=generations))
    status, out, err = run("postmortem", group)
    assert status == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 120, out
    assert "CAUSES" in lines[3]
    start = lines[3].index("CAUSES")
    cells = [row[start:].split("  ")[0] for row in lines[4:9]]
    assert cells == [
        "-",
        "restart +2?",
        "restart +1?",
        "scale_out",
        "2 possible",
    ]
    assert "--wide or --json explains each" in out
    status, wide, _ = run("postmortem", group, "--wide")
    assert status == 0
    assert "restart session_timeout? poll_timeout?" in wide
    assert f"gen 2: poll_timeout (possible): {gone} may have exceeded" in wide
    gens = run_json(run, "postmortem", group)["generations"]
    assert "causes" not in gens[0]
    assert gens[1]["causes"] == [c.as_dict() for c in crash]


def test_the_gap_column_shows_the_longest_commit_gap(run: Run, database_url: str) -> None:
    """Costs arrive after their rebalances (here in a later batch, one replayed with an
    older state): GAP shows the longest gap, `+` while moved partitions still wait and
    `wait` when none has committed yet; --wide adds the median and the counts, --json
    every figure; a rebalance with no cost (stored before 0008) shows `-` and null."""
    from datetime import timedelta

    from services.store.batch import RebalanceCost

    group = "payments-settlement-eu-west-1"
    generations = crash_loop_history(group)
    write(database_url, batch(1, generations=generations))

    def cost(offset: int, measured: int, waiting: int, *gaps: float) -> RebalanceCost:
        longest, median = (timedelta(seconds=g) for g in gaps) if gaps else (None, None)
        return RebalanceCost(group, 35, offset, measured, waiting, longest, median)

    newer = [cost(502, 12, 0, 53.2, 48.0), cost(503, 10, 2, 125, 51), cost(504, 0, 12)]
    write(
        database_url,
        batch(2, costs=newer),
        batch(3, costs=[cost(502, 3, 9, 40, 40)]),  # an older state, applied late
    )
    status, out, err = run("postmortem", group)
    assert status == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 120, out
    start = lines[3].index("GAP")
    cells = [row[start:].split("  ")[0].strip() for row in lines[4:9]]
    assert cells == ["-", "53s", "2m05s+", "wait", "-"]
    assert "GAP: the longest a moved partition went without an offset commit" in out
    status, wide, _ = run("postmortem", group, "--wide")
    assert status == 0
    assert "53s/48s (12)" in wide and "2m05s/51s (10, 2 waiting)" in wide
    gens = run_json(run, "postmortem", group)["generations"]
    assert "commit_gap" not in gens[0]
    assert [g["commit_gap"] for g in gens[1:]] == [
        {"partitions": 12, "waiting": 0, "max_seconds": 53.2, "median_seconds": 48.0},
        {"partitions": 10, "waiting": 2, "max_seconds": 125.0, "median_seconds": 51.0},
        {"partitions": 0, "waiting": 12, "max_seconds": None, "median_seconds": None},
        None,
    ]
