"""`groupscope decode` and `groupscope partition-for`, run as a user runs them."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

from services.codec import encode_key, encode_value

KEY = encode_key("offset_commit", {"group": "payments", "topic": "orders", "partition": 3})
VALUE = encode_value(
    "offset_commit", 3, {"offset": 42, "leader_epoch": 1, "metadata": "", "commit_timestamp": 7}
)


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_decode_json_lines_with_errors_in_between() -> None:
    lines = [
        json.dumps({"key": KEY.hex(), "value": VALUE.hex(), "partition": 12, "offset": 5}),
        "this is not json",
        json.dumps({"key": KEY.hex(), "value": VALUE.hex()[:-4]}),
        json.dumps({"key": encode_key("group_metadata", {"group": "g"}).hex(), "value": None}),
    ]
    result = run("decode", stdin="\n".join(lines) + "\n")
    assert result.returncode == 0
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(out) == 4
    assert out[0]["record_type"] == "offset_commit"
    assert out[0]["key"] == {"group": "payments", "topic": "orders", "partition": 3}
    assert out[0]["value"]["offset"] == 42
    assert (out[0]["partition"], out[0]["offset"]) == (12, 5)
    assert out[1]["line"] == 2 and "not JSON" in out[1]["error"]
    assert out[2]["line"] == 3 and "commit_timestamp" in out[2]["error"]
    assert out[3]["tombstone"] is True and out[3]["record_type"] == "group_metadata"
    assert "2 failed" in result.stderr


def test_decode_base64_input() -> None:
    line = json.dumps(
        {"key": base64.b64encode(KEY).decode(), "value": base64.b64encode(VALUE).decode()}
    )
    result = run("decode", "--input-format", "base64", stdin=line + "\n")
    assert json.loads(result.stdout)["value"]["commit_timestamp"] == 7


def test_decode_prints_bytes_as_hex() -> None:
    key = encode_key("consumer_group_metadata", {"group_id": "g"})
    value = bytes.fromhex("000000000007010502abcd")
    result = run("decode", stdin=json.dumps({"key": key.hex(), "value": value.hex()}) + "\n")
    assert json.loads(result.stdout)["value"]["unknown_tagged_fields"] == {"5": "abcd"}


def test_partition_for() -> None:
    assert run("partition-for", "KafkaConsumerDemo").stdout.strip() == "35"
    assert run("partition-for", "KafkaConsumerDemo", "--partitions", "7").stdout.strip() == str(
        2039247585 % 7
    )


def test_partition_for_bad_count_is_one_line_and_exit_2() -> None:
    result = run("partition-for", "g", "--partitions", "-3")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "--partitions" in result.stderr


def test_help_teaches() -> None:
    result = run("decode", "--help")
    assert result.returncode == 0
    assert "examples:" in result.stdout and "--input-format" in result.stdout
