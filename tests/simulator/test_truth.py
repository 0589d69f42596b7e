"""The ground truth agrees with the records, and with churn counted independently here."""

from __future__ import annotations

from collections import defaultdict

import pytest

from services.codec import decode_record
from tests.simulator.conftest import ALL
from tests.simulator.helpers import by_partition, run


def _identity_assignment(value):
    return {
        (m["group_instance_id"] or m["member_id"]): sorted(
            [a["topic"], p] for a in m["assignment"]["assigned_partitions"] for p in a["partitions"]
        )
        for m in value["members"]
    }


@pytest.mark.parametrize("name", [*ALL, "many-groups", "static-cooperative"])
def test_classic_generations_match_their_group_metadata_records(scenario_runs, name):
    result = scenario_runs[name]
    rows = {(r["partition"], r["offset"]): r for r in result.rows}
    for generation in result.truth["generations"]:
        if generation["group_type"] != "classic":
            continue
        row = rows[(generation["log_partition"], generation["log_offset"])]
        record = decode_record(row["key"], row["value"])
        assert record["record_type"] == "group_metadata"
        value = record["value"]
        assert record["key"]["group"] == generation["group"]
        assert value["generation"] == generation["generation"]
        assert value["protocol"] == generation["protocol"]
        assert value["leader"] == generation["leader"]
        assert row["timestamp"] == generation["time"]
        assert _identity_assignment(value) == generation["assignment"]
        assert sorted(m["member_id"] for m in value["members"]) == sorted(
            m["member_id"] for m in generation["members"]
        )


def _moves(before, after):
    """Partitions present in both whose owner changed: (from surviving, from departed)."""
    old = {tuple(tp): member for member, tps in before.items() for tp in tps}
    surviving = departed = 0
    for member, tps in after.items():
        for tp in map(tuple, tps):
            if tp in old and old[tp] != member:
                if old[tp] in after:
                    surviving += 1
                else:
                    departed += 1
    return surviving, departed


@pytest.mark.parametrize("name", [*ALL, "many-groups", "sticky", "static-cooperative"])
def test_rebalance_episodes_chain_and_count_moves(scenario_runs, name):
    result = scenario_runs[name]
    generations = defaultdict(dict)
    for g in result.truth["generations"]:
        generations[g["group"]][g["generation"]] = g["assignment"]
    episodes = defaultdict(list)
    for r in result.truth["rebalances"]:
        episodes[r["group"]].append(r)
    assert set(episodes) == set(generations)
    for group, rows in episodes.items():
        previous = None
        covered = []
        for number, r in enumerate(rows, 1):
            assert r["episode"] == number
            assert r["from_generation"] == previous
            assert r["generations"][-1] == r["to_generation"]
            covered += r["generations"]
            before = generations[group].get(previous, {})
            after = generations[group][r["to_generation"]]
            surviving, departed = _moves(before, after)
            assert r["moves"] == {
                "total": surviving + departed,
                "from_surviving": surviving,
                "from_departed": departed,
            }
            assert r["joined"] == sorted(set(after) - set(before))
            assert r["left"] == sorted(set(before) - set(after))
            assert r["cooperative"] == (len(r["generations"]) == 2)
            previous = r["to_generation"]
        assert covered == sorted(generations[group])


def committed_from_replay(rows):
    """Last write wins per key; a tombstone deletes; counts the commits that took effect."""
    state = {}
    for row in rows:
        record = decode_record(row["key"], row["value"])
        if record["record_type"] != "offset_commit":
            continue
        key = (record["key"]["group"], record["key"]["topic"], record["key"]["partition"])
        if record["tombstone"]:
            state.pop(key, None)
            continue
        count = state.get(key, {}).get("commits", 0) + 1
        state[key] = {**record["value"], "commits": count}
    return state


@pytest.mark.parametrize(
    "name", ["steady", "mixed", "many-groups", "crash-loop", "static-cooperative"]
)
def test_committed_offsets_summary_matches_the_log(scenario_runs, name):
    result = scenario_runs[name]
    expected = committed_from_replay(result.rows)
    got = {(c["group"], c["topic"], c["partition"]): c for c in result.truth["commits"]}
    assert set(got) == set(expected)
    for key, value in expected.items():
        row = got[key]
        assert (row["offset"], row["leader_epoch"], row["metadata"]) == (
            value["offset"],
            value["leader_epoch"],
            value["metadata"],
        )
        assert (row["commit_timestamp"], row["commits"]) == (
            value["commit_timestamp"],
            value["commits"],
        )


def test_committed_offsets_never_go_back(scenario_runs):
    last = {}
    for _row, rec in scenario_runs["mixed"].decoded():
        if rec["record_type"] == "offset_commit" and not rec["tombstone"]:
            key = tuple(rec["key"].values())
            assert rec["value"]["offset"] >= last.get(key, 0)
            last[key] = rec["value"]["offset"]


def test_aborted_commits_are_gaps_in_the_replay(tmp_path):
    result = run(tmp_path, "steady", transactional=0.5, aborted=0.5, duration_ms=120_000)
    aborted = result.truth["aborted"]
    assert aborted
    present = {(r["partition"], r["offset"]) for r in result.rows}
    missing = set()
    for partition, rows in by_partition(result.rows).items():
        offsets = {r["offset"] for r in rows}
        end = result.summary["next_offsets"][partition]
        missing |= {(partition, o) for o in range(end) if o not in offsets}
    aborted_positions = {(a["log_partition"], a["log_offset"]) for a in aborted}
    assert not aborted_positions & present
    assert aborted_positions <= missing
    # The rest of the gaps are the transactions' end markers, one per transaction: each
    # follows a transactional batch, never an ordinary record.
    markers = missing - aborted_positions
    assert markers
    assert all((p, o - 1) in missing or (p, o - 1) in present for p, o in markers)
    # Aborted commits never take effect: the summary equals the replay's last writes.
    expected = committed_from_replay(result.rows)
    assert {
        (c["group"], c["topic"], c["partition"]): c["offset"] for c in result.truth["commits"]
    } == {k: v["offset"] for k, v in expected.items()}


@pytest.mark.parametrize("name", [*ALL, "many-groups"])
def test_every_moved_partition_has_one_gap_row_that_follows_the_log(scenario_runs, name):
    """One gaps.jsonl row per partition an episode moved; a resumed gap runs from a
    commit of that partition in the log to the next one, after the episode."""
    result = scenario_runs[name]
    rows = defaultdict(list)
    for r in result.truth["gaps"]:
        rows[(r["group"], r["to_generation"])].append(r)
    for r in result.truth["rebalances"]:
        if r["from_generation"] is not None:
            assert len(rows.pop((r["group"], r["to_generation"]), [])) == r["moves"]["total"]
    assert not rows
    commits = defaultdict(list)
    for row, rec in result.decoded():
        if rec["record_type"] == "offset_commit" and rec["value"] is not None:
            key = rec["key"]
            commits[(key["group"], key["topic"], key["partition"])].append(row["timestamp"])
    stabilized = {(r["group"], r["to_generation"]): r["time"] for r in result.truth["rebalances"]}
    for r in result.truth["gaps"]:
        if r["resumed"] is None or r["stopped"] is None:
            continue
        times = commits[(r["group"], r["topic"], r["partition"])]
        i = times.index(r["resumed"])
        assert times[i - 1] == r["stopped"] < r["resumed"]
        assert r["resumed"] >= stabilized[(r["group"], r["to_generation"])]
