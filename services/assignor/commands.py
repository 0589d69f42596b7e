"""``groupscope assign`` and ``groupscope whatif``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

ASSIGN_EPILOG = """\
input (stdin), one JSON object:
  {"assignor": "cooperative-sticky",
   "partitions_per_topic": {"orders": 6, "payments": 3},
   "members": [
     {"id": "c1", "topics": ["orders", "payments"], "owned": [["orders", 0]],
      "generation": 4, "rack": "eu-1a", "group_instance_id": null},
     {"id": "c2", "topics": ["orders"]}],
   "partition_racks": {"orders": [["eu-1a", "eu-1b"], ...]},    (optional)
   "topic_ids": {"orders": "f8Hq2bTQR3OQmcfYxZYQnQ", ...}}       (optional)
  assignors: range, roundrobin, sticky, cooperative-sticky (client side), uniform and
  server-range (KIP-848, server side). "owned" is what the member reports it owns (for
  sticky: its previous assignment); generation null or -1 means none. "topic_ids" (as
  kafka-topics.sh --describe prints them) matter to uniform only, which orders topics by
  id as the broker does; without them, ids that order like the names stand in.

output:
  {"assignment": {"c1": [["orders", 0], ...], "c2": [...]}}

Bad input (unknown assignor, malformed JSON, a negative partition count, a member owning
a partition twice) exits 2 with a one-line reason.

examples:
  echo '{"assignor": "range", "partitions_per_topic": {"t": 10},
         "members": [{"id": "C0", "topics": ["t"]}, {"id": "C1", "topics": ["t"]},
                     {"id": "C2", "topics": ["t"]}]}' | groupscope assign
  # {"assignment": {"C0": [["t", 0], ["t", 1], ["t", 2], ["t", 3]], "C1": ..., "C2": ...}}
"""

WHATIF_EPILOG = """\
input (stdin), one JSON object:
  {"partitions_per_topic": {"orders": 12},
   "members": [{"id": "c1", "topics": ["orders"]}, {"id": "c2", "topics": ["orders"]},
               {"id": "c3", "topics": ["orders"]}],
   "steps": [{"join": {"id": "c4", "topics": ["orders"]}},
             {"crash": "c1"},
             {"leave": "c2"},
             {"subscribe": {"id": "c3", "topics": ["orders", "audit"]}},
             {"partitions": {"orders": 24}}],
   "assignors": ["range", "roundrobin", "sticky", "cooperative-sticky"]}   (optional)

Each assignor starts from its own first assignment and carries its own assignment from
step to step. A move is a partition whose owner changed; "minimum" is the fewest moves any
balanced assignment could make from the previous assignment (of cooperative-sticky, else
sticky, else uniform, else the first assignor; --json also gives it per assignor). A
cooperative-sticky step counts both rounds of its rebalance.

examples:
  groupscope whatif < rolling-deploy.json
  groupscope whatif --json --assignors range,cooperative-sticky < scenario.json
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    assign = subparsers.add_parser(
        "assign",
        help="run one of Kafka's assignors on a group (JSON in, JSON out)",
        description="Compute the assignment Kafka's assignor would produce for a group: the "
        "same partitions to the same members, with Kafka's tie-breaks.",
        epilog=ASSIGN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    assign.set_defaults(func=run_assign)

    whatif = subparsers.add_parser(
        "whatif",
        help="replay membership changes and compare each assignor's partition moves",
        description="Replay a group through joins, leaves, crashes, subscription changes "
        "and added partitions, and show how many partitions each assignor moves per step "
        "next to the physical minimum.",
        epilog=WHATIF_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    whatif.add_argument("--json", action="store_true", help="print JSON instead of a table")
    whatif.add_argument(
        "--assignors",
        help='comma-separated assignors to compare (default: the scenario\'s "assignors", '
        "else range, roundrobin, sticky, cooperative-sticky)",
    )
    whatif.set_defaults(func=run_whatif)


def _read_json() -> Any:
    from services.cli import UsageError

    try:
        return json.load(sys.stdin)
    except json.JSONDecodeError as exc:
        raise UsageError(f"malformed JSON on stdin: {exc}") from None


def run_assign(args: argparse.Namespace) -> int:
    from services.assignor import AssignmentError, assign
    from services.assignor.api import check_assignor
    from services.cli import UsageError

    scenario = _read_json()
    if not isinstance(scenario, dict):
        raise UsageError("the input must be a JSON object")
    try:
        result = assign(
            check_assignor(scenario.get("assignor")),
            scenario.get("partitions_per_topic") or {},
            scenario.get("members") or [],
            scenario.get("partition_racks"),
            scenario.get("topic_ids"),
        )
    except AssignmentError as exc:
        raise UsageError(str(exc)) from None
    json.dump({"assignment": result}, sys.stdout)
    sys.stdout.write("\n")
    return 0


def run_whatif(args: argparse.Namespace) -> int:
    from services.assignor import AssignmentError
    from services.assignor.whatif import replay
    from services.cli import UsageError

    scenario = _read_json()
    assignors = args.assignors.split(",") if args.assignors else None
    try:
        rows = replay(scenario, assignors)
    except AssignmentError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        json.dump({"steps": rows}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_table(rows))
    return 0


def render_table(rows: list[dict[str, Any]]) -> str:
    """One row per step: event, members, each assignor's moves, the minimum."""
    if not rows:
        return "no steps\n"
    names = list(rows[0]["moves"])
    header = ["step", "event", "members", *names, "minimum"]
    body = [
        [str(r["step"]), r["event"], str(r["members"])]
        + [str(r["moves"][a]["total"]) for a in names]
        + [str(r["minimum"]["total"])]
        for r in rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = []
    for line in [header, *body]:
        cells = [
            cell.ljust(w) if i == 1 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"
