"""`groupscope lag-status`: Burrow-style lag status, asked of a running exporter."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from services.settings import env

EPILOG = """\
Statuses follow Burrow's consumer lag evaluation rules over each partition's window of
its last 10 commits (docs/metrics.md, groupscope_group_lag_status):
  OK      lag 0 now, or 0 at some commit in the window, or decreasing
  WARN    committing, but the lag never decreased over the window (falling behind)
  STOP    no commit for longer than the window spans, with lag (the consumer is gone)
  STALL   committing the same offset over and over, with lag (stuck on a record)
  REWIND  a committed offset went back
A group is its worst partition, STOP, STALL and REWIND counting as ERR. The windows live
in the exporter (they need the log-end offsets it polls), so this asks it over HTTP.
One group's view also says how far it fell behind during its last rebalance (its lag
before, at its peak, and its peak time lag), where the exporter sampled all of it
(docs/metrics.md, groupscope_group_last_rebalance_lag_peak_records).

examples:
  groupscope lag-status                       # every group, worst first
  groupscope lag-status payments              # each partition of one group
  groupscope lag-status --json | jq '.groups[] | select(.status != "OK")'
  groupscope lag-status --exporter http://exporter:9308 payments
"""

ORDER = {"ERR": 0, "WARN": 1, "OK": 2}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lag-status",
        help="lag status by Burrow's rules (OK, WARN, ERR; STOP, STALL, REWIND)",
        description="Show each group's lag status by Burrow's evaluation rules, or one "
        "group's partitions, as the running exporter judged them at its last refresh.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "group",
        nargs="?",
        help="one group: its partitions and windows, and how far it fell behind during its "
        "last rebalance",
    )
    parser.add_argument(
        "--exporter",
        metavar="URL",
        default=env("GROUPSCOPE_EXPORTER_URL", "http://127.0.0.1:9308"),
        help="the exporter to ask (env GROUPSCOPE_EXPORTER_URL; default http://127.0.0.1:9308)",
    )
    parser.add_argument(
        "--cluster",
        metavar="NAME",
        default=env("GROUPSCOPE_CLUSTER"),
        help="with GROUP: the cluster it is on, when groups of that name are on several "
        "(env GROUPSCOPE_CLUSTER); without GROUP: list only that cluster's groups",
    )
    parser.add_argument("--json", action="store_true", help="print the exporter's JSON")
    parser.set_defaults(func=run)


def fetch(
    base: str, group: str | None, timeout: float = 10.0, cluster: str | None = None
) -> dict[str, Any]:
    """The exporter's /status document; UsageError with one line when it cannot be had."""
    from services.cli import UsageError

    if not base.startswith(("http://", "https://")):
        raise UsageError(f"--exporter must be an http:// or https:// URL, not {base!r}")
    url = base.rstrip("/") + "/status"
    if group is not None:
        query = {"group": group} | ({"cluster": cluster} if cluster is not None else {})
        url += "?" + urllib.parse.urlencode(query)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            document: dict[str, Any] = json.load(response)
            return document
    except urllib.error.HTTPError as exc:
        try:
            reason = json.load(exc).get("error") or exc.reason
        except (json.JSONDecodeError, AttributeError):
            reason = exc.reason
        raise UsageError(f"{url}: {reason}") from None
    except (urllib.error.URLError, OSError, json.JSONDecodeError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(f"the exporter at {base} did not answer: {reason}") from None


def run(args: argparse.Namespace) -> int:
    document = fetch(args.exporter, args.group, cluster=args.cluster)
    if args.group is None and args.cluster is not None:
        document["groups"] = [g for g in document["groups"] if g["cluster"] == args.cluster]
    if args.json:
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.group is None:
        sys.stdout.write(groups_text(document))
    else:
        sys.stdout.write(group_text(document))
    return 0


def groups_text(document: dict[str, Any]) -> str:
    from services.postmortem.render import name, table

    groups = sorted(document["groups"], key=lambda g: (ORDER[g["status"]], g["group"]))
    if not groups:
        return f"no group has a lag status yet (as of {document['taken_at']})\n"
    clusters = {g["cluster"] for g in groups}
    rows = [
        (
            name(g["group"] if len(clusters) == 1 else f"{g['cluster']}/{g['group']}"),
            g["status"],
            g["partitions"],
            " ".join(f"{k} {v}" for k, v in sorted(g["partitions_by_status"].items())),
            g["total_lag"],
            f"{name(g['worst']['topic'], 30)}-{g['worst']['partition']} {g['worst']['status']}",
        )
        for g in groups
    ]
    headers = ("GROUP", "STATUS", "PARTITIONS", "BY STATUS", "TOTAL LAG", "WORST PARTITION")
    return f"lag status as of {document['taken_at']}\n\n" + table(headers, rows) + "\n"


def group_text(document: dict[str, Any]) -> str:
    from services.postmortem.render import name, table

    rows = [
        (
            name(p["topic"], 40),
            p["partition"],
            p["status"],
            p["lag"],
            p["committed_offset"],
            len(p["window"]),
            " ".join("-" if w["lag"] is None else str(w["lag"]) for w in p["window"][-5:]),
        )
        for p in document["partitions"]
    ]
    headers = ("TOPIC", "PARTITION", "STATUS", "LAG", "COMMITTED", "COMMITS", "LAG AT COMMITS")
    head = (
        f"group {name(document['group'])}: {document['status']}, total lag "
        f"{document['total_lag']} (as of {document['taken_at']})\n"
    )
    rebalance = document.get("last_rebalance_lag")  # absent from older exporters
    if rebalance is not None:
        head += (
            f"last rebalance: lag {rebalance['before']} before, {rebalance['peak']} at its "
            f"peak, peak time lag {rebalance['peak_time_lag_seconds']}s\n"
        )
    return head + "\n" + table(headers, rows) + "\n"
