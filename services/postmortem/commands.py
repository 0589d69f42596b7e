"""`groupscope postmortem`, `owner` and `storms`: questions about a group's history."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from services.store.options import (
    add_cluster_argument,
    add_database_url_argument,
    store_command,
)

TIME_HELP = "ISO 8601 (2026-03-01T12:00:00Z; no zone means UTC) or a time ago: 30m, 2h, 1d"

POSTMORTEM_EPILOG = """\
examples:
  groupscope postmortem billing
      every stored generation of group 'billing', oldest first
  groupscope postmortem billing --since 2h
      the last two hours
  groupscope postmortem billing --since 2026-03-01T09:00Z --until 2026-03-01T10:00Z --json
  groupscope postmortem billing --cluster prod-eu
      group 'billing' of the cluster whose job runs with --cluster prod-eu

columns: MOVES a/s/b/m are partitions that changed owner (actual), those taken from
members that stayed (surv), what Kafka's sticky assignor would have moved (baseline)
and the fewest any balanced assignment could move (min). DISRUPTS: running members
lost partitions (only those rebalances count in storms). COMMITTED is the committed
offsets the group advanced during the generation, summed over partitions. Members show
as client id#end of member id (a static member by its group instance id); a list that
does not fit shows as counts (+3 -3). The table fits 120 columns; --wide adds the
assignor and leader and shows full times and every member, as --json does.

exit status: 0 found; 1 unknown group or nothing in the range; 2 bad input (also: a
store of several clusters and no --cluster, or a cluster it does not hold).
"""

OWNER_EPILOG = """\
examples:
  groupscope owner orders 3 --at 2026-03-01T09:41:00Z
      which member of which group owned orders-3 then
  groupscope owner orders 3 --at 45m --group billing --json

With --json, nobody found prints [] (the reason goes to stderr).

exit status: 0 found; 1 unknown group or nobody owned it then; 2 bad input (also: a
store of several clusters and no --cluster, or a cluster it does not hold).
"""

STORMS_EPILOG = """\
A storm is at least --min-rebalances rebalances of one group within --window;
overlapping windows merge into one storm. A cooperative two-step rebalance counts once.

examples:
  groupscope storms
      every storm in the stored history, worst first (defaults: 5 within 10m)
  groupscope storms --since 24h --window 5m --min-rebalances 3 --json

exit status: 0, also when there was no storm (it says so, or prints [] with --json);
1 database unavailable; 2 bad input (also: a store of several clusters and no
--cluster, or a cluster it does not hold).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    postmortem = _parser(
        subparsers,
        "postmortem",
        help="timeline of a group's generations, members and partition moves",
        description=(
            "Print the timeline of a consumer group: each generation's time, leader and "
            "assignor, the members that joined or left (client id and host), partitions "
            "moved against the sticky baseline and the minimum, the time since the "
            "previous rebalance and the committed-offset progress."
        ),
        epilog=POSTMORTEM_EPILOG,
        func=run_postmortem,
    )
    postmortem.add_argument("group", metavar="GROUP", help="consumer group id")
    postmortem.add_argument("--since", metavar="T", help=f"from this time on; {TIME_HELP}")
    postmortem.add_argument("--until", metavar="T", help=f"before this time; {TIME_HELP}")
    postmortem.add_argument(
        "--wide",
        action="store_true",
        help="every detail: full times, assignor, leader, each member that joined or left",
    )

    owner = _parser(
        subparsers,
        "owner",
        help="who owned a partition at a given time",
        description="Print which member of which group owned TOPIC-PARTITION at time T.",
        epilog=OWNER_EPILOG,
        func=run_owner,
    )
    owner.add_argument("topic", metavar="TOPIC")
    owner.add_argument("partition", metavar="PARTITION", help="partition number")
    owner.add_argument("--at", metavar="T", required=True, help=TIME_HELP)
    owner.add_argument("--group", metavar="G", help="only this consumer group")

    storms = _parser(
        subparsers,
        "storms",
        help="groups that rebalanced too often, worst first",
        description="List rebalance storms: groups with many rebalances in a short window.",
        epilog=STORMS_EPILOG,
        func=run_storms,
    )
    storms.add_argument("--since", metavar="T", help=f"from this time on; {TIME_HELP}")
    storms.add_argument("--until", metavar="T", help=f"before this time; {TIME_HELP}")
    storms.add_argument(
        "--window", metavar="D", default="10m", help="storm window: 90s, 10m, 1h (default 10m)"
    )
    storms.add_argument(
        "--min-rebalances",
        metavar="K",
        default="5",
        help="rebalances within the window that make a storm (default 5)",
    )


def _parser(
    subparsers: argparse._SubParsersAction,
    name: str,
    *,
    help: str,
    description: str,
    epilog: str,
    func: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        name,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    add_database_url_argument(parser)
    add_cluster_argument(
        parser,
        "the Kafka cluster to answer about, as its job's --cluster names it (env "
        "GROUPSCOPE_CLUSTER; default: the store's only cluster; a store of several needs it)",
        default=False,
    )
    parser.set_defaults(func=func)
    return parser


def _whole_number(value: str, what: str, minimum: int) -> int:
    """A whole number from `minimum` to 2**31-1 (Kafka's partition numbers are int32, as is
    the storm query's rebalance count)."""
    from services.cli import UsageError
    from services.limits import INT32_MAX

    # isascii: "²" is a digit to str.isdigit; the length keeps int() off its 4300-digit
    # limit.
    digits = value.isascii() and value.isdigit() and len(value) <= 10
    if not digits or not minimum <= int(value) <= INT32_MAX:
        raise UsageError(
            f"{what} must be a whole number from {minimum} to {INT32_MAX}, not {value!r}"
        )
    return int(value)


@store_command
def run_postmortem(args: argparse.Namespace) -> int:
    from services.postmortem import queries, render

    since, until = _time_range(args)
    return _answer(
        args,
        lambda conn, cluster: (cluster, queries.timeline(conn, args.group, since, until, cluster)),
        lambda found: render.timeline_json(args.group, found[1], found[0]),
        lambda found: render.timeline_text(args.group, found[1], wide=args.wide),
    )


@store_command
def run_owner(args: argparse.Namespace) -> int:
    from services.postmortem import queries, render

    partition = _whole_number(args.partition, "PARTITION", 0)
    at = _time(args.at, "--at")
    return _answer(
        args,
        lambda conn, cluster: (
            cluster,
            queries.owners(conn, args.topic, partition, at, args.group, cluster),
        ),
        lambda found: render.owners_json(found[1], found[0]),
        lambda found: render.owners_text(found[1]),
        empty=[],
    )


@store_command
def run_storms(args: argparse.Namespace) -> int:
    from services.cli import UsageError
    from services.postmortem import queries, render
    from services.postmortem.timeparse import parse_duration

    since, until = _time_range(args)
    minimum = _whole_number(args.min_rebalances, "--min-rebalances", 1)
    try:
        window = parse_duration(args.window)
    except ValueError as exc:
        raise UsageError(f"--window: {exc}") from None
    return _answer(
        args,
        lambda conn, cluster: (
            cluster,
            queries.storms(conn, since, until, window, minimum, cluster),
        ),
        lambda found: render.storms_json(found[1], found[0]),
        lambda found: (
            render.storms_text(found[1])
            or f"no storms: no group had {minimum} rebalances within {args.window}"
        ),
    )


def _answer(args: argparse.Namespace, ask, as_json, as_text, empty: object = None) -> int:
    """Run one query against the chosen database and cluster and print its answer. When
    there is none, the reason goes to stderr and, with --json, `empty` to stdout (if not
    None)."""
    from services.postmortem.queries import NotFound
    from services.store.clusters import choose, known_clusters
    from services.store.database import open_database
    from services.store.revision import require_head

    with open_database(args.database_url, existing=True) as engine:
        require_head(engine)
        cluster = choose(args.cluster, known_clusters(engine))
        with engine.connect() as conn:
            try:
                answer = ask(conn, cluster)
            except NotFound as exc:
                print(f"groupscope {args.command}: {exc}", file=sys.stderr)
                if args.json and empty is not None:
                    print(json.dumps(empty))
                return 1
    print(json.dumps(as_json(answer), indent=2) if args.json else as_text(answer))
    return 0


def _time(value: str, option: str):
    from services.cli import UsageError
    from services.postmortem.timeparse import parse_time

    try:
        return parse_time(value)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def _time_range(args: argparse.Namespace):
    from services.cli import UsageError

    since = _time(args.since, "--since") if args.since else None
    until = _time(args.until, "--until") if args.until else None
    if since and until and since >= until:
        raise UsageError("--since must be earlier than --until")
    return since, until
