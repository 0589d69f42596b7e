"""The KIP-848 group: epochs, the uniform target assignment, reconciliation invariants."""

from __future__ import annotations

from services.assignor import assign

GROUP = "kip848-0"
STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS = 0, 1, 2  # MemberState


def _partitions(entries, names):
    return sorted((names[e["topic_id"]], p) for e in entries for p in e["partitions"])


def replay_group(records):
    """Apply the group's records in log order, checking the invariants at each step."""
    names: dict[str, str] = {}
    counts: dict[str, int] = {}
    members: dict[str, list[str]] = {}  # member id -> subscribed topics, in join order
    targets: dict[str, list] = {}
    previous: dict[str, list] = {}  # the targets of the last assignment epoch
    current: dict[str, dict] = {}
    epoch = assignment_epoch = 0
    targets_checked = 0
    for _, rec in records:
        kind, key, value = rec["record_type"], rec["key"], rec["value"]
        if kind == "consumer_group_metadata":
            assert value["epoch"] == epoch + 1
            epoch = value["epoch"]
        elif kind == "consumer_group_partition_metadata":
            names = {t["topic_id"]: t["topic_name"] for t in value["topics"]}
            counts = {t["topic_name"]: t["num_partitions"] for t in value["topics"]}
            assert all(len(t) == 22 for t in names)
        elif kind == "consumer_group_member_metadata":
            if value is None:
                members.pop(key["member_id"])
            else:
                members[key["member_id"]] = value["subscribed_topic_names"]
        elif kind == "consumer_group_target_assignment_member":
            if value is None:
                targets.pop(key["member_id"], None)
            else:
                targets[key["member_id"]] = _partitions(value["topic_partitions"], names)
        elif kind == "consumer_group_target_assignment_metadata":
            assert value["assignment_epoch"] == epoch
            assignment_epoch = epoch
            expected = assign(
                "uniform",
                counts,
                # TargetAssignmentBuilder: each member's current target is its "owned".
                [{"id": m, "topics": t, "owned": previous.get(m, [])} for m, t in members.items()],
            )
            assert {m: sorted(tps) for m, tps in expected.items()} == {
                m: targets.get(m, []) for m in members
            }
            previous = dict(targets)
            targets_checked += 1
        elif kind == "consumer_group_current_member_assignment":
            if value is None:
                current.pop(key["member_id"])
                continue
            member = key["member_id"]
            state = {
                "epoch": value["member_epoch"],
                "state": value["state"],
                "assigned": _partitions(value["assigned_partitions"], names),
                "pending": _partitions(value["partitions_pending_revocation"], names),
            }
            assert state["epoch"] <= assignment_epoch
            if state["state"] == STABLE:
                assert state["epoch"] == assignment_epoch
                assert state["assigned"] == targets[member] and not state["pending"]
            elif state["state"] == UNREVOKED_PARTITIONS:
                assert state["pending"] and state["epoch"] < assignment_epoch
            else:
                assert state["state"] == UNRELEASED_PARTITIONS
                assert set(state["assigned"]) < set(targets[member])
            current[member] = state
            held = [tp for s in current.values() for tp in (*s["assigned"], *s["pending"])]
            assert len(held) == len(set(held)), "a partition is owned by two members"
    return current, targets, assignment_epoch, targets_checked


def test_kip848_records_follow_the_protocol(scenario_runs):
    result = scenario_runs["kip848"]
    records = [
        (row, rec)
        for row, rec in result.group_records(GROUP)
        if rec["record_type"] != "offset_commit"
    ]
    current, targets, epoch, checked = replay_group(records)
    assert checked >= 5
    # After the last change every member has reconciled to the final target.
    assert current and set(current) == set(targets)
    for member, state in current.items():
        assert state == {
            "epoch": epoch,
            "state": STABLE,
            "assigned": targets[member],
            "pending": [],
        }


def test_kip848_members_reconcile_by_revoking_first(scenario_runs):
    result = scenario_runs["kip848"]
    states = [
        rec["value"]["state"]
        for _, rec in result.group_records(GROUP, "consumer_group_current_member_assignment")
        if not rec["tombstone"]
    ]
    assert UNREVOKED_PARTITIONS in states and UNRELEASED_PARTITIONS in states


def test_kip848_departures_tombstone_the_members_records(scenario_runs):
    result = scenario_runs["kip848"]
    left = {
        e["details"]["member_id"]
        for e in result.events(GROUP)
        if e["kind"] in ("leave", "session-timeout")
    }
    assert len(left) == 2
    for member in left:
        kinds = [
            rec["record_type"]
            for _, rec in result.group_records(GROUP)
            if rec["tombstone"] and rec["key"].get("member_id") == member
        ]
        assert kinds == [
            "consumer_group_current_member_assignment",
            "consumer_group_target_assignment_member",
            "consumer_group_member_metadata",
        ]


def test_kip848_generations_are_target_assignments(scenario_runs):
    result = scenario_runs["kip848"]
    rows = {(r["partition"], r["offset"]): r for r in result.rows}
    from services.codec import decode_record

    generations = [g for g in result.truth["generations"] if g["group"] == GROUP]
    assert [g["generation"] for g in generations] == list(range(1, len(generations) + 1))
    for g in generations:
        row = rows[(g["log_partition"], g["log_offset"])]
        record = decode_record(row["key"], row["value"])
        assert record["record_type"] == "consumer_group_target_assignment_metadata"
        assert record["value"]["assignment_epoch"] == g["generation"]
        assert g["protocol"] == "uniform"
