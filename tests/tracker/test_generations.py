"""Generation tracking and churn, from codec records to store generations (no Spark)."""

from __future__ import annotations

from datetime import UTC, datetime

from services.codec import decode_record, encode_key, encode_value
from services.tracker import GenerationTracker, Position

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def tp(topic: str, *partitions: int) -> list[dict]:
    return [{"topic": topic, "partitions": list(partitions)}]


def member(mid: str, assigned: list[dict], topics=("t",), instance=None) -> dict:
    return {
        "member_id": mid,
        "group_instance_id": instance,
        "client_id": f"client-{mid}",
        "client_host": "/10.0.0.1",
        "rebalance_timeout": 300_000,
        "session_timeout": 45_000,
        "subscription": {
            "version": 3,
            "topics": list(topics),
            "user_data": None,
            "owned_partitions": [],
            "generation_id": -1,
            "rack_id": None,
        },
        "assignment": {"version": 3, "assigned_partitions": assigned, "user_data": None},
    }


def classic(group: str, generation: int, protocol: str, members: list[dict]) -> dict:
    key = encode_key("group_metadata", {"group": group})
    value = encode_value(
        "group_metadata",
        3,
        {
            "protocol_type": "consumer",
            "generation": generation,
            "protocol": protocol,
            "leader": members[0]["member_id"] if members else None,
            "current_state_timestamp": generation * 1000,
            "members": members,
        },
    )
    return decode_record(key, value)


def feed(tracker: GenerationTracker, records: list[dict], start: int = 0) -> None:
    for i, record in enumerate(records, start=start):
        tracker.add(record, Position(7, i, T0))


def test_eager_range_join_counts_moves_against_sticky_and_minimum() -> None:
    """Range with 6 partitions: 2 members (0-2, 3-5), then a third joins (0-1, 2-3, 4-5).

    Range moves partitions 2, 4 and 5 (3 moves, all from survivors); sticky would hand
    the newcomer one partition from each member (2 moves), which is also the minimum.
    """
    tracker = GenerationTracker()
    feed(
        tracker,
        [
            classic(
                "g", 1, "range", [member("a", tp("t", 0, 1, 2)), member("b", tp("t", 3, 4, 5))]
            ),
            classic(
                "g",
                2,
                "range",
                [
                    member("a", tp("t", 0, 1)),
                    member("b", tp("t", 2, 3)),
                    member("c", tp("t", 4, 5)),
                ],
            ),
        ],
    )
    generations, events = tracker.drain()
    assert [g.generation for g in generations] == [1, 2]
    assert generations[0].rebalance is None
    churn = generations[1].rebalance
    assert (churn.members_joined, churn.members_left) == (1, 0)
    assert (churn.moved, churn.moves_from_survivors) == (3, 3)
    assert (churn.baseline_moves, churn.baseline_assignor, churn.minimum_moves) == (2, "sticky", 2)
    assert churn.from_generation == 1 and churn.from_source_offset == 0
    assert not churn.cooperative_episode
    assert events == []


def test_cooperative_revoke_then_assign_is_one_episode() -> None:
    """cooperative-sticky: gen 2 revokes t-3 from a (unassigned), gen 3 gives it to c."""
    tracker = GenerationTracker()
    feed(
        tracker,
        [
            classic("co", 1, "cooperative-sticky", [member("a", tp("t", 0, 1, 2, 3))]),
            classic(
                "co",
                2,
                "cooperative-sticky",
                [member("a", tp("t", 0, 1)), member("c", [])],
            ),
            classic(
                "co",
                3,
                "cooperative-sticky",
                [member("a", tp("t", 0, 1)), member("c", tp("t", 2, 3))],
            ),
        ],
    )
    generations, _ = tracker.drain()
    assert generations[1].rebalance is None  # the revocation round carries no churn
    episode = generations[2].rebalance
    assert episode.cooperative_episode
    assert episode.from_generation == 1  # measured from before the revocation
    assert (episode.moved, episode.moves_from_survivors, episode.members_joined) == (2, 2, 1)
    assert episode.baseline_moves == 2 and episode.minimum_moves == 2


def test_a_cooperative_episode_lasts_until_every_revoked_partition_is_owned() -> None:
    """As Kafka 4.3 did with Java consumers: c joins a and b (gen 3). Gen 4 revokes t-2 from
    a and t-5 from b, but gen 5 began before b's SyncGroup was answered: b never saw gen 4,
    still owned t-5 when it joined gen 5 and revokes it there, while c gets t-2. Gen 6 gives
    c t-5. One episode from gen 3 to gen 6, two moves, as the baseline; closed at gen 5 it
    counted one move against a baseline of two."""
    tracker = GenerationTracker()
    protocol = "cooperative-sticky"
    a, b = tp("t", 0, 1), tp("t", 3, 4)
    feed(
        tracker,
        [
            classic(
                "co", 3, protocol, [member("a", tp("t", 0, 1, 2)), member("b", tp("t", 3, 4, 5))]
            ),
            classic("co", 4, protocol, [member("a", a), member("b", b), member("c", [])]),
            classic("co", 5, protocol, [member("a", a), member("b", b), member("c", tp("t", 2))]),
            classic(
                "co", 6, protocol, [member("a", a), member("b", b), member("c", tp("t", 2, 5))]
            ),
        ],
    )
    generations, _ = tracker.drain()
    assert [g.rebalance for g in generations[1:3]] == [None, None]
    assert [g.state for g in generations] == [None, "rebalancing", "rebalancing", None]
    episode = generations[3].rebalance
    assert episode.cooperative_episode and episode.from_generation == 3
    assert (episode.moved, episode.baseline_moves, episode.minimum_moves) == (2, 2, 2)


def test_a_deleted_topics_partitions_do_not_hold_an_episode_open() -> None:
    """Gen 2 revokes t-3 (for c) while topic u, deleted, is assigned no more: gen 3 closes
    the episode although u's partitions stay unowned."""
    tracker = GenerationTracker()
    protocol = "cooperative-sticky"
    topics = ("t", "u")
    feed(
        tracker,
        [
            classic("co", 1, protocol, [member("a", tp("t", 0, 1, 2, 3) + tp("u", 0), topics)]),
            classic(
                "co", 2, protocol, [member("a", tp("t", 0, 1), topics), member("c", [], topics)]
            ),
            classic(
                "co",
                3,
                protocol,
                [member("a", tp("t", 0, 1), topics), member("c", tp("t", 2, 3), topics)],
            ),
        ],
    )
    generations, _ = tracker.drain()
    assert generations[1].rebalance is None
    assert generations[2].rebalance.cooperative_episode


def test_static_member_restart_keeps_its_identity() -> None:
    """A restarted static member gets a new member id but is the same member."""
    tracker = GenerationTracker()
    feed(
        tracker,
        [
            classic("s", 1, "range", [member("a-1", tp("t", 0, 1), instance="host-a")]),
            classic("s", 2, "range", [member("a-2", tp("t", 0, 1), instance="host-a")]),
        ],
    )
    churn = tracker.drain()[0][1].rebalance
    assert (churn.members_joined, churn.members_left, churn.moved) == (0, 0, 0)


def test_departed_member_moves_are_not_from_survivors() -> None:
    tracker = GenerationTracker()
    feed(
        tracker,
        [
            classic("d", 1, "range", [member("a", tp("t", 0)), member("b", tp("t", 1))]),
            classic("d", 2, "range", [member("a", tp("t", 0, 1))]),
        ],
    )
    churn = tracker.drain()[0][1].rebalance
    assert (churn.moved, churn.moves_from_survivors, churn.members_left) == (1, 0, 1)


def test_replayed_records_are_skipped() -> None:
    records = [
        classic("r", 1, "range", [member("a", tp("t", 0))]),
        classic("r", 2, "range", [member("a", tp("t", 0)), member("b", [])]),
    ]
    tracker = GenerationTracker()
    feed(tracker, records)
    assert len(tracker.drain()[0]) == 2
    feed(tracker, records)  # the same positions again, as after a crash
    assert tracker.drain()[0] == []


def test_group_tombstone_is_a_deletion_event() -> None:
    tracker = GenerationTracker()
    feed(tracker, [classic("x", 1, "range", [member("a", tp("t", 0))])])
    tracker.add(
        decode_record(encode_key("group_metadata", {"group": "x"}), None), Position(7, 5, T0)
    )
    generations, events = tracker.drain()
    assert len(generations) == 1
    assert events[0].deleted and events[0].group == "x"
    assert "x" not in tracker.last


TOPIC_ID = "Vx1c0Q2nQx2mCq1BfO3_Xw"


def kip848(kind: str, key: dict, value: dict | None) -> dict:
    return decode_record(encode_key(kind, key), encode_value(kind, 0, value) if value else None)


def member_meta(mid: str, regex: str | None = None, assignor: str = "uniform") -> dict:
    """A member subscribed to "stock" by name, or only to `regex`."""
    return kip848(
        "consumer_group_member_metadata",
        {"group_id": "k", "member_id": mid},
        {
            "instance_id": None,
            "rack_id": None,
            "client_id": f"c-{mid}",
            "client_host": "/h",
            "subscribed_topic_names": [] if regex else ["stock"],
            "subscribed_topic_regex": regex,
            "rebalance_timeout_ms": 1000,
            "server_assignor": assignor,
        },
    )


def target(mid: str, partitions: list[int]) -> dict:
    return kip848(
        "consumer_group_target_assignment_member",
        {"group_id": "k", "member_id": mid},
        {"topic_partitions": [{"topic_id": TOPIC_ID, "partitions": partitions}]},
    )


def epoch(n: int) -> list[dict]:
    return [
        kip848("consumer_group_metadata", {"group_id": "k"}, {"epoch": n}),
    ]


def target_epoch(n: int) -> dict:
    return kip848(
        "consumer_group_target_assignment_metadata", {"group_id": "k"}, {"assignment_epoch": n}
    )


def partition_metadata() -> dict:
    return kip848(
        "consumer_group_partition_metadata",
        {"group_id": "k"},
        {
            "topics": [
                {
                    "topic_id": TOPIC_ID,
                    "topic_name": "stock",
                    "num_partitions": 4,
                    "partition_metadata": [],
                }
            ]
        },
    )


def kip848_records(*, named: bool) -> list[dict]:
    """One member with every partition of "stock" at epoch 1; a second joins at epoch 2.
    `named`: with the ConsumerGroupPartitionMetadata record Kafka 4.3 no longer writes."""
    return [
        member_meta("m1"),
        *([partition_metadata()] if named else []),
        *epoch(1),
        target("m1", [0, 1, 2, 3]),
        target_epoch(1),
        member_meta("m2"),
        *epoch(2),
        target("m1", [0, 1]),
        target("m2", [2, 3]),
        target_epoch(2),
    ]


def test_kip848_epochs_map_topic_ids_and_use_uniform() -> None:
    records = kip848_records(named=True)
    tracker = GenerationTracker()
    feed(tracker, records)
    generations, _ = tracker.drain()
    assert [g.generation for g in generations] == [1, 2]
    first, second = generations
    assert first.group_type == "consumer" and first.assignor == "uniform"
    assert first.source_offset == 2  # the ConsumerGroupMetadata record's position
    assert {m.member_id: dict(m.assignment) for m in second.members} == {
        "m1": {"stock": [0, 1]},
        "m2": {"stock": [2, 3]},
    }
    churn = second.rebalance
    assert churn.baseline_assignor == "uniform"
    assert (churn.moved, churn.members_joined, churn.minimum_moves) == (2, 1, 2)


def test_kip848_regex_members_subscribe_to_the_topics_their_regex_resolved_to() -> None:
    """A member subscribed by regex names no topic; the coordinator's
    ConsumerGroupRegularExpression record says which topics the regex matched. The
    baseline and the minimum run on those: with no topics both said 0 moves, whatever
    the group moved."""
    regex = kip848(
        "consumer_group_regular_expression",
        {"group_id": "k", "regular_expression": "^st.*"},
        {"topics": ["stock"], "version": 1, "timestamp": 0},
    )
    records = [
        member_meta(r["key"]["member_id"], "^st.*")
        if r["record_type"] == "consumer_group_member_metadata"
        else r
        for r in kip848_records(named=True)
    ]
    tracker = GenerationTracker()
    feed(tracker, [regex, *records])
    _, second = tracker.drain()[0]
    assert [m.subscribed_topics for m in second.members] == [("stock",), ("stock",)]
    churn = second.rebalance
    assert (churn.moved, churn.baseline_moves, churn.minimum_moves) == (2, 2, 2)
    gone = kip848(
        "consumer_group_regular_expression", {"group_id": "k", "regular_expression": "^st.*"}, None
    )
    feed(tracker, [gone, *epoch(3), target_epoch(3)], start=20)
    (third,), _ = tracker.drain()
    assert [m.subscribed_topics for m in third.members] == [(), ()]


def test_a_kip848_range_groups_baseline_is_the_brokers_range_assignor() -> None:
    """m0 joins m1 and m2 of a group using the broker's `range` assignor: ranges by
    member id move three partitions where a sticky (uniform) assignor would move two.
    The baseline is `server-range`, which moves three too: no excess."""
    records = [
        member_meta("m1", assignor="range"),
        member_meta("m2", assignor="range"),
        *epoch(1),
        target("m1", [0, 1, 2]),
        target("m2", [3, 4, 5]),
        target_epoch(1),
        member_meta("m0", assignor="range"),
        *epoch(2),
        target("m0", [0, 1]),
        target("m1", [2, 3]),
        target("m2", [4, 5]),
        target_epoch(2),
    ]
    tracker = GenerationTracker()
    tracker.topic_names.update({TOPIC_ID: "stock"})
    feed(tracker, records)
    (_, second), _ = tracker.drain()
    assert second.assignor == "range"
    churn = second.rebalance
    assert churn.baseline_assignor == "server-range"
    assert (churn.moved, churn.baseline_moves, churn.minimum_moves) == (3, 3, 2)


def test_kip848_topic_ids_are_named_by_the_trackers_cluster_wide_map() -> None:
    """Kafka 4.3 writes no partition metadata: the names given to the tracker (by the
    job, from the cluster) name the targets, and the uniform baseline runs on them."""
    records = kip848_records(named=False)
    tracker = GenerationTracker()
    assert tracker.unnamed_topic_ids(records) == {TOPIC_ID}
    tracker.topic_names.update({TOPIC_ID: "stock"})
    assert tracker.unnamed_topic_ids(records) == set()
    feed(tracker, records)
    generations, _ = tracker.drain()
    first, second = generations
    assert {m.member_id: dict(m.assignment) for m in first.members} == {
        "m1": {"stock": [0, 1, 2, 3]}
    }
    assert {m.member_id: dict(m.assignment) for m in second.members} == {
        "m1": {"stock": [0, 1]},
        "m2": {"stock": [2, 3]},
    }
    churn = second.rebalance
    # Keyed by id, the baseline saw "stock" with no partitions and moved all four.
    assert (churn.moved, churn.baseline_moves, churn.minimum_moves) == (2, 2, 2)


def test_kip848_targets_kept_from_earlier_batches_are_unnamed_until_named() -> None:
    tracker = GenerationTracker()
    feed(tracker, kip848_records(named=False)[:3])  # a target, no epoch completed yet
    assert tracker.unnamed_topic_ids() == {TOPIC_ID}
    named = GenerationTracker()
    feed(named, kip848_records(named=True)[:4])  # the group's own metadata names it
    assert named.unnamed_topic_ids() == set()


# Ids that order "y" < "x" < "z" (Uuid.compareTo, and HashSet order): not the names' order.
IDS = {"x": "AAAAAAAAAAIAAAAAAAAAAQ", "y": "AAAAAAAAAAEAAAAAAAAAAQ", "z": "AAAAAAAAAAMAAAAAAAAAAQ"}


def test_the_uniform_baseline_orders_topics_by_their_ids() -> None:
    """m2 joins m0 (on "z" and "x") and m1 (on "y"). Which partitions Kafka's uniform
    assignor takes from whom depends on the topics' ids; with these ids it moves four
    partitions, where ids in name order would move three. The targets below are Kafka's
    answer for these ids (as `services.assignor.assign` gives it, which the differential
    tests hold equal to Kafka's UniformAssignor); the baseline must agree: excess 0."""

    def meta(mid: str, topics: list[str]) -> dict:
        return kip848(
            "consumer_group_member_metadata",
            {"group_id": "k", "member_id": mid},
            {
                "instance_id": None,
                "rack_id": None,
                "client_id": f"c-{mid}",
                "client_host": "/h",
                "subscribed_topic_names": topics,
                "subscribed_topic_regex": None,
                "rebalance_timeout_ms": 1000,
                "server_assignor": "uniform",
            },
        )

    def owns(mid: str, parts: dict[str, list[int]]) -> dict:
        value = [{"topic_id": IDS[t], "partitions": ps} for t, ps in parts.items()]
        return kip848(
            "consumer_group_target_assignment_member",
            {"group_id": "k", "member_id": mid},
            {"topic_partitions": value},
        )

    records = [
        meta("m0", ["z", "x"]),
        meta("m1", ["y"]),
        *epoch(1),
        owns("m0", {"x": [0, 1, 2, 3], "z": [0, 1, 2]}),
        owns("m1", {"y": [0, 1, 2, 3]}),
        target_epoch(1),
        meta("m2", ["z", "y", "x"]),
        *epoch(2),
        owns("m0", {"x": [0], "z": [0, 1, 2]}),
        owns("m1", {"y": [0, 1, 3]}),
        owns("m2", {"x": [1, 2, 3], "y": [2]}),
        target_epoch(2),
    ]
    tracker = GenerationTracker()
    tracker.topic_names.update({i: t for t, i in IDS.items()})
    feed(tracker, records)
    (_, second), _ = tracker.drain()
    churn = second.rebalance
    assert churn.baseline_assignor == "uniform"
    assert (churn.moved, churn.baseline_moves) == (4, 4)
