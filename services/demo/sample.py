"""`groupscope demo --sample`: what the codec alone sees in a capture of `__consumer_offsets`.

Decodes the bundled sample (or `--input`, in `groupscope decode`'s line format) without
Spark or a database, and prints record types, each group's coordinator partition
(checked against where its records were), the latest generation of each group with its
members and assignment, and the records that failed to decode.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from importlib import resources
from typing import Any


def _partitions(assignment: dict[str, Any]) -> str:
    parts = assignment.get("assigned_partitions") or []
    return ", ".join(f"{tp['topic']}-{p}" for tp in parts for p in tp["partitions"]) or "-"


def run(args: argparse.Namespace) -> int:
    from services.cli import UsageError
    from services.codec import DecodeError, partition_for
    from services.codec.commands import decode_line
    from services.postmortem.render import table

    if args.partitions <= 0:
        raise UsageError(f"--partitions must be positive, got {args.partitions}")
    if args.input:
        try:
            lines = args.input.read_text().splitlines()
        except OSError as exc:
            raise UsageError(f"cannot read {args.input}: {exc.strerror}") from None
    else:
        sample = resources.files("services.demo") / "data" / "consumer-offsets.jsonl"
        lines = sample.read_text().splitlines()

    types: Counter[str] = Counter()
    groups: dict[str, dict[str, Any]] = {}
    failures: list[list[Any]] = []
    for number, line in enumerate(lines, start=1):
        try:
            record = decode_line(line, "hex")
        except (ValueError, DecodeError) as exc:
            failures.append([number, json.loads(line).get("offset", "?"), exc])
            continue
        types[record["record_type"]] += 1
        if record["record_type"] == "unknown":
            continue
        name = record["key"].get("group", record["key"].get("group_id"))
        group = groups.setdefault(name, {"partitions": set(), "latest": None, "kind": "classic"})
        group["partitions"].add(record.get("partition"))
        if record["record_type"].startswith("consumer_group"):
            group["kind"] = "consumer (KIP-848)"
        if record["record_type"] in ("group_metadata", "consumer_group_metadata"):
            group["latest"] = record

    print(f"Decoded {sum(types.values())} records, {len(failures)} failed.\n")
    print(table(["record type", "count"], sorted(types.items())))
    rows = []
    for name, g in sorted(groups.items()):
        expected = partition_for(name, args.partitions)
        seen = sorted(p for p in g["partitions"] if p is not None)
        check = "ok" if seen in ([], [expected]) else f"MISMATCH: found in {seen}"
        latest = g["latest"]
        if latest is None:
            state = "offsets only"
        elif latest["tombstone"]:
            state = "deleted"
        elif latest["record_type"] == "group_metadata":
            v = latest["value"]
            state = f"generation {v['generation']}, {len(v['members'])} members, {v['protocol']}"
        else:
            state = f"group epoch {latest['value']['epoch']}"
        rows.append([name, g["kind"], expected, check, state])
    print("\nGroups")
    print(table(["group", "type", "coordinator partition", "check", "latest"], rows))
    for name, g in sorted(groups.items()):
        latest = g["latest"]
        if latest and latest["record_type"] == "group_metadata" and not latest["tombstone"]:
            members = [
                [m["member_id"], m["client_id"], m["client_host"], _partitions(m["assignment"])]
                for m in latest["value"]["members"]
            ]
            print(f"\n{name}: generation {latest['value']['generation']}")
            print(table(["member", "client", "host", "assigned"], members))
    if failures:
        print("\nRecords that failed to decode (counted and skipped)")
        print(table(["line", "offset", "reason"], failures))
    return 0
