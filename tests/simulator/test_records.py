"""Every record decodes with the codec, round-trips byte for byte and sits in its group's
partition at increasing offsets; value versions are the ones a current broker writes."""

from __future__ import annotations

import struct

import pytest

from services.codec import (
    decode_record,
    encode_key,
    encode_record,
    encode_value,
    partition_for,
)
from services.simulator.records import OffsetCommitEncoder
from tests.simulator.conftest import ALL
from tests.simulator.helpers import by_partition

# MetadataVersion.offsetCommitValueVersion / groupMetadataValueVersion on a current
# broker: v3 for both; KIP-848 records are at version 0.
EXPECTED_VALUE_VERSION = {
    "offset_commit": 3,
    "group_metadata": 3,
    "consumer_group_metadata": 0,
    "consumer_group_partition_metadata": 0,
    "consumer_group_member_metadata": 0,
    "consumer_group_target_assignment_metadata": 0,
    "consumer_group_target_assignment_member": 0,
    "consumer_group_current_member_assignment": 0,
}


@pytest.mark.parametrize(
    "name", [*ALL, "many-groups", "sticky", "roundrobin", "static-cooperative"]
)
def test_records_decode_round_trip_and_sit_in_their_partition(scenario_runs, name):
    result = scenario_runs[name]
    assert result.rows, "the scenario wrote nothing"
    for row in result.rows:
        record = decode_record(row["key"], row["value"])
        assert record["record_type"] in EXPECTED_VALUE_VERSION
        assert encode_record(record) == (row["key"], row["value"])
        key = record["key"]
        group = key.get("group", key.get("group_id"))
        assert row["partition"] == partition_for(group, 50)
        assert row["topic"] == "__consumer_offsets"
        if not record["tombstone"]:
            assert record["value_version"] == EXPECTED_VALUE_VERSION[record["record_type"]]


@pytest.mark.parametrize("name", [*ALL, "many-groups"])
def test_offsets_increase_per_partition_and_time_never_goes_back(scenario_runs, name):
    result = scenario_runs[name]
    for partition, rows in by_partition(result.rows).items():
        offsets = [r["offset"] for r in rows]
        assert offsets == sorted(set(offsets)), partition
        assert offsets[-1] < result.summary["next_offsets"][partition]
    stamps = [r["timestamp"] for r in result.rows]
    assert stamps == sorted(stamps)


def test_without_transactions_offsets_have_no_gaps(scenario_runs):
    result = scenario_runs["steady"]
    for partition, rows in by_partition(result.rows).items():
        assert [r["offset"] for r in rows] == list(range(len(rows))), partition


def test_offset_commit_fast_path_matches_the_codec():
    for group in ("g1", "KafkaConsumerDemo", "消费组"):
        encoder = OffsetCommitEncoder(group)
        for topic, partition in (("t", 0), ("orders", 11), ("été", 2**31 - 1)):
            key = {"group": group, "topic": topic, "partition": partition}
            assert encoder.key(topic, partition) == encode_key("offset_commit", key)
        for metadata in ("", "m", "host=a;ü"):
            for offset, epoch, ts in ((0, -1, 0), (42, 5, 1000), (2**40, 2**31 - 1, 2**41)):
                value = {
                    "offset": offset,
                    "leader_epoch": epoch,
                    "metadata": metadata,
                    "commit_timestamp": ts,
                }
                expected = encode_value("offset_commit", 3, value)
                assert encoder.value(offset, epoch, metadata, ts) == expected
    # The hand-written example of docs/codec.md, "groupscope decode": g1/t/3 at offset 42,
    # epoch 5, metadata "m", ts 1000.
    encoder = OffsetCommitEncoder("g1")
    assert encoder.key("t", 3).hex() == "00010002673100017400000003"
    assert encoder.value(42, 5, "m", 1000).hex() == (
        "0003000000000000002a0000000500016d00000000000003e8"
    )


def test_offset_commits_carry_leader_epochs_and_metadata(tmp_path):
    from tests.simulator.helpers import run

    result = run(tmp_path, "steady", metadata="deploy=42", duration_ms=30_000)
    commits = [rec for _, rec in result.decoded() if rec["record_type"] == "offset_commit"]
    assert commits
    assert {c["value"]["metadata"] for c in commits} == {"deploy=42"}
    assert all(c["value"]["leader_epoch"] >= 0 for c in commits)
    assert all(c["value"]["expire_timestamp"] == -1 for c in commits)


def test_group_metadata_embeds_consumer_protocol_v3(scenario_runs):
    result = scenario_runs["eager-vs-cooperative"]
    records = [rec for _, rec in result.decoded() if rec["record_type"] == "group_metadata"]
    members = [m for rec in records for m in rec["value"]["members"]]
    assert members
    for member in members:
        assert member["subscription"]["version"] == 3
        assert member["assignment"]["version"] == 3
        assert member["client_host"].startswith("/")
        assert member["rebalance_timeout"] == 300_000
        assert member["session_timeout"] == 45_000
    cooperative = [
        m
        for rec in records
        if rec["value"]["protocol"] == "cooperative-sticky"
        for m in rec["value"]["members"]
    ]
    # CooperativeStickyAssignor.subscriptionUserData: the INT32 generation.
    for member in cooperative:
        (generation,) = struct.unpack(">i", member["subscription"]["user_data"])
        assert generation == member["subscription"]["generation_id"]
