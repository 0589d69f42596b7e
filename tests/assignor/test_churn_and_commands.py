"""Churn math and the ``groupscope assign`` / ``groupscope whatif`` commands."""

from __future__ import annotations

import io
import itertools
import json
import random
from collections import Counter

import pytest

from services.assignor import AssignmentError, assign, minimum_moves, moves
from services.cli import main
from tests.assignor.helpers import member, tps


def test_moves_split_by_whether_the_previous_owner_stayed():
    before = {"a": tps("t-0, t-1"), "b": tps("t-2, t-3"), "gone": tps("t-4")}
    after = {"a": tps("t-0, t-2"), "b": tps("t-3, t-4"), "new": tps("t-1")}
    assert moves(before, after).as_dict() == {"total": 3, "from_surviving": 2, "from_departed": 1}


def test_partitions_only_on_one_side_are_not_moves():
    assert moves({"a": tps("t-0")}, {"a": [], "b": tps("t-1")}).total == 0


def test_minimum_moves_identical_subscriptions():
    # 10 partitions, 3 members: shares 4, 3, 3. "a" owns 6, must give up 2 (it may keep 4).
    before = {"a": tps("t-0, t-1, t-2, t-3, t-4, t-5"), "b": tps("t-6, t-7, t-8, t-9")}
    least = minimum_moves(before, ["a", "b", "c"], {"t": 10})
    assert least.as_dict() == {"total": 3, "from_surviving": 3, "from_departed": 0}


def test_minimum_moves_counts_departed_and_unsubscribed_partitions():
    before = {"a": tps("t-0, u-0"), "gone": tps("t-1")}
    members = [member("a", ["t"]), member("b", ["t", "u"])]
    least = minimum_moves(before, members, {"t": 2, "u": 1})
    assert (least.from_surviving, least.from_departed) == (1, 1)


def test_minimum_moves_is_never_above_stickys_moves():
    counts = {"t1": 5, "t2": 3}
    members = [member("a", ["t1"]), member("b", ["t1", "t2"]), member("c", ["t2"])]
    before = assign("roundrobin", counts, members)
    after = assign(
        "sticky", counts, [{**m, "owned": before[m["id"]], "generation": 1} for m in members]
    )
    assert minimum_moves(before, members, counts).total <= moves(before, after).total


def test_assign_raises_for_bad_input():
    with pytest.raises(AssignmentError, match="unknown assignor"):
        assign("fair", {"t": 1}, [member("a", ["t"])])
    with pytest.raises(AssignmentError, match="negative"):
        assign("range", {"t": -1}, [member("a", ["t"])])
    with pytest.raises(AssignmentError, match="twice"):
        assign("sticky", {"t": 2}, [member("a", ["t"], tps("t-0, t-0"))])
    with pytest.raises(AssignmentError, match="appears twice"):
        assign("sticky", {"t": 2}, [member("a", ["t"]), member("a", ["t"])])
    for topics in (5, "t", {"t": 1}, ["t", 1]):
        with pytest.raises(AssignmentError, match="topics must be a list"):
            assign("range", {"t": 2}, [{"id": "a", "topics": topics}])
    for racks in (["a"], {"t": "ab"}, {"t": [["a"]]}, {"t": ["a", "b"]}):
        with pytest.raises(AssignmentError, match="partition_racks"):
            assign("range", {"t": 2}, [member("a", ["t"], rack="a")], racks)
    for owned in ([1], ["ab"], [["t", True]], [["t", -1]], "t-0"):
        with pytest.raises(AssignmentError, match="member 'a'"):
            assign("sticky", {"t": 2}, [{"id": "a", "topics": ["t"], "owned": owned}])


def run_cli(monkeypatch, capsys, argv, stdin):
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_assign_command(monkeypatch, capsys):
    scenario = {
        "assignor": "range",
        "partitions_per_topic": {"t": 3},
        "members": [{"id": "C0", "topics": ["t"]}, {"id": "C1", "topics": ["t"]}],
    }
    code, out, _ = run_cli(monkeypatch, capsys, ["assign"], json.dumps(scenario))
    assert code == 0
    assert json.loads(out) == {"assignment": {"C0": [["t", 0], ["t", 1]], "C1": [["t", 2]]}}


@pytest.mark.parametrize(
    ("stdin", "reason"),
    [
        ('{"assignor": "nope", "members": []}', "unknown assignor"),
        ("{not json", "malformed JSON"),
        ('{"assignor": "range", "partitions_per_topic": {"t": -3}, "members": []}', "negative"),
        (
            '{"assignor": "sticky", "partitions_per_topic": {"t": 3}, "members": '
            '[{"id": "a", "topics": ["t"], "owned": [["t", 1], ["t", 1]]}]}',
            "twice",
        ),
    ],
)
def test_assign_command_rejects_bad_input(monkeypatch, capsys, stdin, reason):
    code, out, err = run_cli(monkeypatch, capsys, ["assign"], stdin)
    assert code == 2 and out == ""
    assert reason in err and err.count("\n") == 1


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
@pytest.mark.parametrize("owned", [5, 2.5, True])
def test_assign_command_rejects_owned_that_is_not_a_list(monkeypatch, capsys, assignor, owned):
    """A scalar as ``owned`` was iterated, and the command ended in a traceback."""
    scenario = {
        "assignor": assignor,
        "partitions_per_topic": {"t": 3},
        "members": [{"id": "a", "topics": ["t"], "owned": owned}],
    }
    code, out, err = run_cli(monkeypatch, capsys, ["assign"], json.dumps(scenario))
    assert code == 2 and out == ""
    assert err.endswith("member 'a': owned must be a list of [topic, partition]\n")
    assert err.count("\n") == 1


@pytest.mark.parametrize("entry", [5, 2.5, True, {"r": 1}])
def test_assign_command_rejects_a_rack_entry_that_is_not_a_list(monkeypatch, capsys, entry):
    """A scalar where a partition's list of replica racks belongs was iterated, and the
    command ended in a TypeError traceback."""
    scenario = {
        "assignor": "sticky",
        "partitions_per_topic": {"t": 2},
        "partition_racks": {"t": [["r0"], entry]},
        "members": [{"id": "a", "topics": ["t"], "rack": "r0"}],
    }
    code, out, err = run_cli(monkeypatch, capsys, ["assign"], json.dumps(scenario))
    assert code == 2 and out == ""
    assert err.endswith("partition_racks['t']: each entry is a list of rack names\n")
    assert err.count("\n") == 1


def test_assign_command_orders_uniform_topics_by_the_given_ids(monkeypatch, capsys):
    """The ids put "y" before "x" (Uuid and HashSet order), so the member subscribed to
    both takes a partition of "y", the reverse of what the names alone give."""
    scenario = {
        "assignor": "uniform",
        "partitions_per_topic": {"x": 1, "y": 1},
        "members": [{"id": "A", "topics": ["x", "y"]}, {"id": "B", "topics": ["x", "y"]}],
    }
    code, out, _ = run_cli(monkeypatch, capsys, ["assign"], json.dumps(scenario))
    assert code == 0 and json.loads(out)["assignment"] == {"A": [["x", 0]], "B": [["y", 0]]}
    scenario["topic_ids"] = {"x": "AAAAAAAAAAIAAAAAAAAAAQ", "y": "AAAAAAAAAAEAAAAAAAAAAQ"}
    code, out, _ = run_cli(monkeypatch, capsys, ["assign"], json.dumps(scenario))
    assert code == 0 and json.loads(out)["assignment"] == {"A": [["y", 0]], "B": [["x", 0]]}


@pytest.mark.parametrize(
    ("ids", "reason"),
    [
        ({"x": "not-a-uuid"}, "topic id 'not-a-uuid' is not a Kafka Uuid"),
        ({"x": "AAAAAAAAAAIAAAAAAAAA"}, "is not a Kafka Uuid (22 base64 characters)"),
        ({"x": 7}, "topic 'x': its id must be a string, not 7"),
        (["x"], "topic ids must map topic names to ids"),
        (
            {"x": "AAAAAAAAAAIAAAAAAAAAAQ", "y": "AAAAAAAAAAIAAAAAAAAAAQ"},
            "topics 'x' and 'y' have the same id",
        ),
    ],
)
def test_assign_command_rejects_bad_topic_ids_in_one_line(monkeypatch, capsys, ids, reason):
    scenario = {
        "assignor": "uniform",
        "partitions_per_topic": {"x": 1, "y": 1},
        "members": [{"id": "A", "topics": ["x", "y"]}],
        "topic_ids": ids,
    }
    code, out, err = run_cli(monkeypatch, capsys, ["assign"], json.dumps(scenario))
    assert code == 2 and out == ""
    assert reason in err and err.count("\n") == 1


WHATIF = {
    "partitions_per_topic": {"orders": 12},
    "members": [{"id": f"c{i}", "topics": ["orders"]} for i in range(3)],
    "steps": [{"join": {"id": "c3", "topics": ["orders"]}}, {"crash": "c0"}],
}


def test_whatif_json(monkeypatch, capsys):
    code, out, _ = run_cli(monkeypatch, capsys, ["whatif", "--json"], json.dumps(WHATIF))
    assert code == 0
    steps = json.loads(out)["steps"]
    assert [s["event"] for s in steps] == ["join c3", "crash c0"]
    # A fourth member joining 12 partitions takes 3; sticky moves exactly those.
    assert steps[0]["moves"]["sticky"]["total"] == 3 == steps[0]["minimum"]["total"]
    # c0 held 3 or 4 partitions (a balanced 12/4 split: 3); all of them must move.
    assert steps[1]["moves"]["sticky"]["from_departed"] == 3
    assert steps[1]["moves"]["sticky"]["from_surviving"] == 0
    assert steps[0]["moves"]["range"]["total"] > steps[0]["minimum"]["total"]


def test_whatif_table(monkeypatch, capsys):
    code, out, _ = run_cli(
        monkeypatch, capsys, ["whatif", "--assignors", "range,sticky"], json.dumps(WHATIF)
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["step", "event", "members", "range", "sticky", "minimum"]
    assert lines[1].split()[:3] == ["1", "join", "c3"]


def test_whatif_rejects_unknown_members(monkeypatch, capsys):
    bad = {**WHATIF, "steps": [{"leave": "nobody"}]}
    code, _, err = run_cli(monkeypatch, capsys, ["whatif"], json.dumps(bad))
    assert code == 2 and "nobody" in err


@pytest.mark.parametrize("command", ["assign", "whatif"])
def test_help_teaches(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "groupscope " + command in out


def brute_force_fewest_moves(before, members, counts, shares):
    """Try every assignment with exactly ``shares`` partitions per member."""
    partitions = [
        (t, p)
        for t, c in counts.items()
        for p in range(c)
        if any(t in m["topics"] for m in members)
    ]
    owner = {tp: m for m, parts in before.items() for tp in parts}
    choices = [[m["id"] for m in members if tp[0] in m["topics"]] for tp in partitions]
    best = None
    for pick in itertools.product(*choices):
        if Counter(pick) != Counter({m: n for m, n in shares.items() if n}):
            continue
        moved = sum(
            1
            for tp, m in zip(partitions, pick, strict=True)
            if owner.get(tp) not in (None, m) and owner.get(tp) in shares
        )
        best = moved if best is None else min(best, moved)
    return best


@pytest.mark.parametrize("seed", range(25))
def test_minimum_moves_matches_brute_force_with_differing_subscriptions(seed):
    rng = random.Random(seed)
    topics = ["a", "b", "c"]
    counts = {t: rng.randint(1, 3) for t in topics}
    members = [member(f"m{i}", rng.sample(topics, rng.randint(1, 3))) for i in range(3)]
    if all(set(m["topics"]) == set(members[0]["topics"]) for m in members):
        members[0]["topics"] = ["a"] if members[0]["topics"] != ["a"] else ["b"]
    previous = [member(f"m{i}", topics) for i in range(4)]
    before = assign("roundrobin", counts, previous)
    reported = [{**m, "owned": before.get(m["id"], [])} for m in members]
    shares = {m: len(p) for m, p in assign("sticky", counts, reported).items()}
    expected = brute_force_fewest_moves(before, members, counts, shares)
    assert minimum_moves(before, members, counts).from_surviving == expected
