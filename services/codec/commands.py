"""`groupscope decode` and `groupscope partition-for`."""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import sys
from typing import Any, TextIO

from services.settings import env

DECODE_EPILOG = """\
input, one JSON object per line:
  {"key": "<hex>", "value": "<hex>" | null, "partition": 12, "offset": 345,
   "timestamp": 1700000000000}
  (partition, offset and timestamp are optional and copied to the output)

output, one JSON object per line:
  {"record_type": "offset_commit", "key_version": 1, "value_version": 3, "tombstone": false,
   "key": {"group": ..., "topic": ..., "partition": ...},
   "value": {"offset": ..., "leader_epoch": ..., "metadata": ..., "commit_timestamp": ...}}
  Bytes are printed as hex. A line that cannot be decoded gives {"error": "...", "line": N}
  and decoding goes on; the exit status is 0 unless the input itself cannot be read.

examples:
  kcat -C -b localhost:9092 -t __consumer_offsets -e -J \\
    | jq -c '{key: .key, value: .payload}' | groupscope decode --input-format base64
  echo '{"key": "000200026731", "value": null}' | groupscope decode   # group g1 deleted
"""

PARTITION_EPILOG = """\
Kafka stores a group's offsets and metadata in partition
abs(javaHash(group)) % offsets.topic.num.partitions of __consumer_offsets; that partition's
leader is the group's coordinator.

examples:
  groupscope partition-for KafkaConsumerDemo            # 35
  groupscope partition-for payments --partitions 100
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    decode = subparsers.add_parser(
        "decode",
        help="decode __consumer_offsets records (JSON Lines in, JSON Lines out)",
        description="Decode __consumer_offsets records read as JSON Lines on stdin: offset "
        "commits, classic group metadata with each member's subscription and assignment, "
        "and KIP-848 consumer, share and streams group records.",
        epilog=DECODE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    decode.add_argument(
        "--input-format",
        choices=("hex", "base64"),
        default=env("GROUPSCOPE_INPUT_FORMAT", "hex"),
        help="how key and value bytes are written in the input (default: hex; "
        "env GROUPSCOPE_INPUT_FORMAT)",
    )
    decode.set_defaults(func=run_decode)

    pf = subparsers.add_parser(
        "partition-for",
        help="the __consumer_offsets partition (coordinator) of a group",
        description="Print the __consumer_offsets partition that holds a group, exactly as "
        "Kafka computes it (Utils.abs(groupId.hashCode()) % partitions).",
        epilog=PARTITION_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pf.add_argument("group", help="the consumer group id")
    pf.add_argument(
        "--partitions",
        type=int,
        default=env("GROUPSCOPE_OFFSETS_PARTITIONS", "50"),
        help="offsets.topic.num.partitions of the cluster (default: 50; "
        "env GROUPSCOPE_OFFSETS_PARTITIONS)",
    )
    pf.set_defaults(func=run_partition_for)


def run_partition_for(args: argparse.Namespace) -> int:
    from services.cli import UsageError
    from services.codec import partition_for

    if args.partitions <= 0:
        raise UsageError(f"--partitions must be a positive number, got {args.partitions}")
    print(partition_for(args.group, args.partitions))
    return 0


def _to_json(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def decode_line(line: str, input_format: str) -> dict[str, Any]:
    """One input line to one output object; raises ValueError with a reason."""
    from services.codec import decode_record

    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(obj, dict) or "key" not in obj:
        raise ValueError('expected an object with "key" and "value"')
    key = _bytes_field(obj, "key", input_format)
    if key is None:
        raise ValueError('"key" must not be null')
    value = _bytes_field(obj, "value", input_format)
    record = decode_record(key, value)
    for extra in ("partition", "offset", "timestamp"):
        if extra in obj:
            record[extra] = obj[extra]
    return record


def _bytes_field(obj: dict[str, Any], name: str, input_format: str) -> bytes | None:
    text = obj.get(name)
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f'"{name}" must be a {input_format} string or null')
    try:
        if input_format == "hex":
            return bytes.fromhex(text)
        return base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        raise ValueError(f'"{name}" is not valid {input_format}') from None


def decode_stream(source: TextIO, sink: TextIO, input_format: str) -> tuple[int, int]:
    """Decode every line of `source` into `sink`; returns (decoded, failed)."""
    from services.codec import DecodeError

    decoded = failed = 0
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            out = decode_line(line, input_format)
            decoded += 1
        except (ValueError, DecodeError) as exc:
            out = {"error": str(exc), "line": number}
            failed += 1
        sink.write(json.dumps(out, default=_to_json, ensure_ascii=False))
        sink.write("\n")
    return decoded, failed


def run_decode(args: argparse.Namespace) -> int:
    try:
        decoded, failed = decode_stream(sys.stdin, sys.stdout, args.input_format)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"groupscope decode: cannot read the input: {exc}", file=sys.stderr)
        return 1
    if failed:
        print(f"groupscope decode: {decoded} decoded, {failed} failed", file=sys.stderr)
    return 0
